"""What the contract tests and ``bench/fuzz.py`` run: the checks every answer must pass, and the
document the stateful phase walks, steered so that its sequences get past the first request.

Schemathesis generates requests from the document alone. For the per-operation phase that is
the point (every request the document allows or rules out), but a sequence whose first request
is refused for its meaning (an Avro schema that is random bytes, a Spark schema that is not one,
a group of format Any under a policy only Avro can check) ends there, and the links after it
(create a group, add a schema, read it by id, get an encoding id, read the encoding) are never
followed. So the stateful phase walks the Pravega registry and catalog routes with a hook that
makes some of those first requests meaningful; every answer is checked all the same.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import schemathesis
from flask import Flask
from hypothesis import HealthCheck
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.generation import GenerationMode

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
#: Hypothesis settings both phases share (examples and seeds are each caller's).
SETTINGS: dict[str, Any] = {"deadline": None, "suppress_health_check": list(HealthCheck), "database": None}
#: The routes the stateful phase walks: the registry in the default namespace and the catalog (the
#: namespace mirrors and the Confluent API have the per-operation phase; in a sequence they would
#: only spread the same number of steps over twice the operations).
STATEFUL_PATHS = r"^/v1/(groups|scopes|schemas)"
#: A Spark table schema every table format takes.
TABLE_SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]}


def document(app: Flask) -> schemathesis.BaseSchema:
    """The whole document, as the application serves it."""
    return schemathesis.openapi.from_wsgi("/v1/openapi.json", app)


def stateful_document(app: Flask) -> schemathesis.BaseSchema:
    """The part of the document the stateful phase walks, with :func:`steer` on every request."""
    api = document(app).include(path_regex=STATEFUL_PATHS)
    api.hook("map_case")(steer)
    return api


def _encoded(value: Any) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


def steer(_context: Any, case: Any) -> Any:
    """Make a generated request of the stateful phase one the server can accept.

    The namespace query argument is dropped, since the links schemathesis infers do not pass it
    on (a group made in one namespace would be looked for in another); groups of format Any or
    Custom take AllowAny, the one policy besides DenyAll they may have; Avro and JSON schemas
    get content of their format; tables get a Spark schema, and tables and streams the default
    location. Requests generated to be invalid are left as they are: they must be refused.
    """
    meta = case.meta
    if meta is None or meta.generation.mode != GenerationMode.POSITIVE:
        return case
    operation, body = case.operation, case.body
    if isinstance(case.query, dict):
        case.query.pop("namespace", None)
    if not isinstance(body, dict) or operation.method.upper() != "POST":
        return case
    if operation.path == "/v1/groups" and isinstance(body.get("groupProperties"), dict):
        properties = body["groupProperties"]
        fmt = properties.get("serializationFormat")
        if isinstance(fmt, dict) and fmt.get("serializationFormat") in ("Any", "Custom"):
            properties["compatibility"] = {"policy": "AllowAny"}
    elif operation.path.endswith("/schemas") and isinstance(body.get("serializationFormat"), dict):
        name = "R" + re.sub(r"[^A-Za-z0-9]", "", str(body.get("type") or ""))[:20]
        fmt = body["serializationFormat"].get("serializationFormat")
        if fmt == "Avro":
            body.update(type=name, schemaData=_encoded({"type": "record", "name": name, "fields": []}))
        elif fmt == "Json":
            body.update(type=name, schemaData=_encoded({"type": "object", "title": name}))
    elif operation.path.endswith("/tables") and "schema" in body:
        body["schema"] = TABLE_SCHEMA
    if operation.path.endswith(("/tables", "/streams")):
        body.pop("location", None)  # the default location; a generated one is outside every root
    return case
