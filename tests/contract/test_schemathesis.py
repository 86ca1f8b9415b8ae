"""The server against its own OpenAPI document, with schemathesis.

Every operation gets generated requests, valid ones and ones the document rules out, on the
in-process application over SQLite (tests/contract/conftest.py). Every answer must be no 5xx,
of a status the document lists for the operation, with the content type and a body the
document describes, and every request the document rules out must be refused. Then the
stateful phase chains operations through the links schemathesis infers (create a scope, then
list its streams...), so that answers about things that exist are checked too, not only 404s.
Seeded and bounded: repeatable, and well under a minute per phase.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.contract.conftest import empty

#: No 5xx; only documented statuses, content types and bodies; and a request the document rules
#: out is refused (4xx): the server is no looser than what it publishes. (Not the converse,
#: positive_data_acceptance: a well-formed request may still be refused for its meaning, such
#: as schema bytes that do not parse, or a location outside the allowed roots.)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
#: Examples per operation: enough to reach the statuses each answers with, few enough that the
#: whole document runs in about half a minute.
EXAMPLES = 12
#: Sequences of calls in the stateful phase, and calls per sequence.
SEQUENCES, STEPS = 60, 15
SETTINGS: dict[str, Any] = {"derandomize": True, "deadline": None, "suppress_health_check": list(HealthCheck)}


@pytest.fixture(scope="module")
def api_schema(app: Flask) -> schemathesis.BaseSchema:
    """The document as the application serves it."""
    return schemathesis.openapi.from_wsgi("/v1/openapi.json", app)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=EXAMPLES, **SETTINGS)
def test_every_operation_answers_as_documented(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS)


def test_sequences_of_operations_answer_as_documented(app: Flask, api_schema: schemathesis.BaseSchema) -> None:
    class Sequences(api_schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            # Each sequence starts from an empty database: what a sequence may call depends on
            # what earlier answers held, and Hypothesis replays sequences while it shrinks them.
            empty(app)

        def validate_response(self, response: schemathesis.Response, case: schemathesis.Case, **_: Any) -> None:
            case.validate_response(response, checks=CHECKS)

    Sequences.run(settings=settings(max_examples=SEQUENCES, stateful_step_count=STEPS, **SETTINGS))
