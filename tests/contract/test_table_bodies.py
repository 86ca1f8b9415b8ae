"""Malformed table bodies (tests/contract/fuzzing.py's generators): a schema that is not a Spark struct,
columns that are not objects or lack names, odd types and metadata, partitionings and keys naming missing
columns, and changes to missing or nested columns. Each is answered 201 or a 4xx that names what is wrong
and leaves nothing behind; never a 5xx.

Seeded (Hypothesis derandomized) and bounded; ``bench/fuzz.py`` runs the same generators with random seeds.
"""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from hypothesis import given, settings

from tests.contract.fuzzing import SETTINGS, TableFuzz, table_bodies, table_changes

#: Bodies per test: enough to reach each rule (about ten seconds each).
EXAMPLES = 300


@pytest.fixture(scope="module")
def fuzz(app: Flask) -> TableFuzz:
    return TableFuzz(app)


def test_malformed_table_bodies_are_refused_with_a_4xx(fuzz: TableFuzz) -> None:
    @given(body=table_bodies())
    @settings(max_examples=EXAMPLES, derandomize=True, **SETTINGS)
    def create(body: dict[str, Any]) -> None:
        fuzz.create(body)

    create()


def test_malformed_table_changes_are_refused_with_a_4xx(fuzz: TableFuzz) -> None:
    @given(changes=table_changes())
    @settings(max_examples=EXAMPLES // 2, derandomize=True, **SETTINGS)
    def alter(changes: list[Any]) -> None:
        fuzz.alter(changes)

    alter()
