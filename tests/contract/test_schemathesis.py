"""The server against its own OpenAPI document, with schemathesis.

Every operation gets generated requests, valid ones and ones the document rules out, on the
in-process application over SQLite (tests/contract/conftest.py). Every answer must be no 5xx,
of a status the document lists for the operation, with the content type and a body the
document describes, and every request the document rules out must be refused. Then the
stateful phase chains operations through the document's links (declared, such as add a schema
then read it by id or get its encoding id, and those schemathesis infers, such as create a
group then add a schema to it), so that answers about things that exist are checked too, not
only 404s (tests/contract/fuzzing.py says what it walks and how its requests are steered).

Seeded (Hypothesis derandomized: the same examples every run) and bounded: together well under
two minutes. ``bench/fuzz.py`` runs both phases longer, with random seeds.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from flask import Flask
from hypothesis import settings

from tests.contract.conftest import empty
from tests.contract.fuzzing import CHECKS, SETTINGS, document, stateful_document

#: Examples per operation: enough to reach the statuses each answers with, few enough that the
#: whole document runs in about a minute.
EXAMPLES = 12
#: Sequences of calls in the stateful phase, and calls per sequence.
SEQUENCES, STEPS = 60, 15


@pytest.fixture(scope="module")
def api_schema(app: Flask) -> schemathesis.BaseSchema:
    """The document as the application serves it."""
    return document(app)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=EXAMPLES, derandomize=True, **SETTINGS)
def test_every_operation_answers_as_documented(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS)


def test_sequences_of_operations_answer_as_documented(app: Flask) -> None:
    class Sequences(stateful_document(app).as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            # Each sequence starts from an empty database: what a sequence may call depends on
            # what earlier answers held, and Hypothesis replays sequences while it shrinks them.
            empty(app)

        def validate_response(self, response: schemathesis.Response, case: schemathesis.Case, **_: Any) -> None:
            case.validate_response(response, checks=CHECKS)

    Sequences.run(
        settings=settings(max_examples=SEQUENCES, stateful_step_count=STEPS, derandomize=True, **SETTINGS)
    )
