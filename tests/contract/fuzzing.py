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
from hypothesis import strategies as st
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
    """The whole document, as the application serves it. A request the document rules out may also be
    refused with 413: generated strings over their maxLength can make a body longer than the server takes."""
    api = schemathesis.openapi.from_wsgi("/v1/openapi.json", app)
    rejection = api.config.checks.negative_data_rejection
    rejection.expected_statuses = [*rejection.expected_statuses, "413"]
    return api


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


# -- malformed table bodies -------------------------------------------------------------------------------
#
# Schemathesis generates a table's schema from the document: shapes the model allows or rules out, with
# random names. These generators aim at what a schema's rules look at after the model: column names that
# partitioning, keys and changes refer to, field ids and defaults in metadata, types a format cannot carry,
# nesting, and every member missing or of the wrong kind.

#: Column names the bodies use, so that partitioning, keys and changes name columns that exist (or nearly).
COLUMNS = ("id", "ts", "region", "n", "s", "")
#: JSON values of the wrong kind for any member.
ODD = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**64), 2**64), st.floats(allow_nan=False), st.text(max_size=4),
    st.just([]), st.just({}), st.just([1, "a"]),
)
#: Spark type names: valid, of types no format carries, malformed and unknown.
TYPE_NAMES = (
    "long", "integer", "short", "byte", "string", "binary", "boolean", "double", "float", "date", "timestamp",
    "timestamp_ntz", "void", "variant", "decimal", "decimal(10,2)", "decimal(38,38)", "decimal(99,1)", "decimal(5,9)",
    "char(3)", "varchar(0)", "time(6)", "time(9)", "interval day to second", "interval second to day",
    "interval year", "string collate UTF8_LCASE", "geometry", "struct", "array", "Long", "int", "nonsense", "",
)
#: Members of a column's metadata the catalog reads, with values of the right kind and of the wrong kinds.
METADATA = st.dictionaries(
    st.sampled_from(("comment", "parquet.field.id", "streamcat.last-field-id", "CURRENT_DEFAULT", "EXISTS_DEFAULT",
                     "aliases", "x")),
    st.one_of(ODD, st.integers(-2, 5), st.sampled_from(("1", "'a'", "current_date()", "42", "NULL", "x + "))),
    max_size=3,
)


def _maybe_without(member: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Any]:
    """An object of ``member``, now and then with one of its members dropped or replaced by an odd value."""

    @st.composite
    def spoiled(draw: st.DrawFn) -> dict[str, Any]:
        value = dict(draw(member))
        if value and draw(st.integers(0, 5)) == 0:
            key = draw(st.sampled_from(sorted(value)))
            if draw(st.booleans()):
                del value[key]
            else:
                value[key] = draw(ODD)
        return value

    return spoiled()


def _field(types: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    column = _maybe_without(st.fixed_dictionaries({
        "name": st.sampled_from(COLUMNS) | st.text(max_size=3),
        "type": types,
        "nullable": st.booleans(),
    }, optional={"metadata": METADATA}))
    return st.one_of(column, column, column, ODD)


def spark_types() -> st.SearchStrategy[Any]:
    """Spark types in JSON form, nested, of every kind, now and then malformed at any depth."""
    names = st.sampled_from(TYPE_NAMES)

    def nested(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            _maybe_without(st.fixed_dictionaries({
                "type": st.just("struct"), "fields": st.lists(_field(children), max_size=3),
            })),
            _maybe_without(st.fixed_dictionaries({
                "type": st.just("array"), "elementType": children, "containsNull": st.booleans(),
            })),
            _maybe_without(st.fixed_dictionaries({
                "type": st.just("map"), "keyType": children, "valueType": children, "valueContainsNull": st.booleans(),
            })),
            st.fixed_dictionaries({"type": st.sampled_from(("udt", "union", "Struct"))}, optional={"class": st.text()}),
        )

    return st.recursive(names | ODD, nested, max_leaves=6)


def _schemas() -> st.SearchStrategy[Any]:
    return st.one_of(
        _maybe_without(st.fixed_dictionaries({
            "type": st.just("struct"), "fields": st.lists(_field(spark_types()), max_size=5),
        })),
        spark_types(),
    )


def _partitionings() -> st.SearchStrategy[str]:
    """Partitionings in the text form, over the body's columns, missing ones and nested paths."""
    column = st.sampled_from((*COLUMNS, "nope", "s.x", "`id`", "n.element"))
    item = st.one_of(
        column,
        st.builds("{}({})".format, st.sampled_from(("years", "months", "days", "hours", "day", "identity", "nope")),
                  column),
        st.builds("{}({}, {})".format, st.sampled_from(("bucket", "truncate")), st.integers(-1, 2**31), column),
    )
    return st.one_of(st.lists(item, max_size=3).map(", ".join), st.text(max_size=6))


def _table_properties() -> st.SearchStrategy[dict[str, str]]:
    names = st.sampled_from(COLUMNS) | st.just("id, ts") | st.just("nope")
    return st.fixed_dictionaries({}, optional={
        "primary-key": names,
        "sequence.field": names,
        "merge-engine": st.sampled_from(("deduplicate", "partial-update", "nope")),
        "compatibility": st.sampled_from(("FULL", "backward_transitive", "sideways")),
    })


def table_bodies() -> st.SearchStrategy[dict[str, Any]]:
    """``POST .../tables`` bodies whose schema, partitioning and properties are malformed in every way (and
    now and then not): each must be answered 201 or a 4xx, never a 5xx."""
    return st.fixed_dictionaries(
        {"tableName": st.just(FUZZ_TABLE), "schema": _schemas()},
        optional={
            "partitioning": _partitionings(),
            "properties": _table_properties(),
            "format": st.sampled_from(("avro", "protobuf", "json")),
        },
    )


def table_changes() -> st.SearchStrategy[list[Any]]:
    """``PATCH .../tables/{table}`` change lists that name columns that exist, are missing or nested,
    with types of :func:`spark_types`, and members missing or odd."""
    path = st.lists(st.sampled_from((*COLUMNS, "x", "element", "key", "value")), min_size=1, max_size=3)
    types = spark_types()
    change = st.one_of(
        _maybe_without(st.fixed_dictionaries({"op": st.just("addColumn"), "path": path, "type": types}, optional={
            "nullable": st.booleans(),
            "default": st.fixed_dictionaries({"current": st.text(max_size=4)}),
            "position": st.sampled_from(({"after": "id"}, {"first": True}, {"after": "nope"})),
        })),
        _maybe_without(st.fixed_dictionaries({"op": st.just("updateColumnType"), "path": path, "type": types})),
        _maybe_without(st.fixed_dictionaries({"op": st.sampled_from(("dropColumn", "updateColumnPosition")),
                                              "path": path})),
        _maybe_without(st.fixed_dictionaries({"op": st.just("renameColumn"), "path": path,
                                              "newName": st.sampled_from(COLUMNS)})),
        _maybe_without(st.fixed_dictionaries({"op": st.just("updateColumnNullability"), "path": path,
                                              "nullable": st.booleans()})),
        _maybe_without(st.fixed_dictionaries({"op": st.just("updateColumnDefault"), "path": path,
                                              "default": st.sampled_from(("1", "'a'", "", "x +"))})),
        _maybe_without(st.fixed_dictionaries({"op": st.just("setPartitioning"), "partitioning": _partitionings()})),
        _maybe_without(st.fixed_dictionaries({"op": st.just("setProperty"),
                                              "key": st.sampled_from(sorted(_PROPERTY_KEYS)),
                                              "value": st.sampled_from(("id", "ts", "Full", "nope", ""))})),
        ODD,
    )
    return st.lists(change, max_size=4)


#: The table the generated bodies create (and the generated changes alter).
FUZZ_TABLE = "fuzzed"
_PROPERTY_KEYS = {"primary-key", "sequence.field", "merge-engine", "compatibility", "k"}
#: The table the generated changes alter: a primary-key table partitioned by a key column, with nested columns.
ALTERED_TABLE = {
    "tableName": FUZZ_TABLE,
    "schema": {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "region", "type": "string", "nullable": True, "metadata": {}},
        {"name": "s", "type": {"type": "struct", "fields": [
            {"name": "x", "type": "integer", "nullable": True, "metadata": {}}]}, "nullable": True, "metadata": {}},
        {"name": "n", "type": {"type": "array", "elementType": "integer", "containsNull": True}, "nullable": True,
         "metadata": {}},
    ]},
    "partitioning": "bucket(4, id)",
    "properties": {"primary-key": "id, ts"},
}


class TableFuzz:
    """Sends generated table bodies and changes to ``app`` in scope ``scope`` and checks each answer: a
    4xx is a JSON error with a code and a message, and leaves no table behind (or, for a change, the
    table as it was); nothing is a 5xx. Failures are AssertionErrors naming the request."""

    def __init__(self, app: Flask, scope: str = "fuzz") -> None:
        self.http = app.test_client()
        self.base = f"/v1/scopes/{scope}/tables"
        self.http.post("/v1/scopes", json={"scopeName": scope})

    def _refused(self, request: str, response: Any) -> None:
        assert response.status_code < 500, f"{request}: {response.status_code} {response.get_data(as_text=True)}"
        if response.status_code >= 400:
            error = response.get_json()["error"]
            assert error["code"], f"{request}: {response.get_data(as_text=True)}"
            assert error["message"], f"{request}: {response.get_data(as_text=True)}"

    def create(self, body: dict[str, Any]) -> None:
        """POST ``body``; afterwards the table is gone again."""
        request = f"POST {self.base} {json.dumps(body)}"
        response = self.http.post(self.base, json=body)
        self._refused(request, response)
        created = response.status_code == 201
        left = self.http.get(f"{self.base}/{FUZZ_TABLE}").status_code
        assert left == (200 if created else 404), f"{request}: {response.status_code}, then the table answers {left}"
        if created:
            self.http.delete(f"{self.base}/{FUZZ_TABLE}")

    def alter(self, changes: list[Any]) -> None:
        """PATCH ``changes`` onto :data:`ALTERED_TABLE`, made for the purpose and dropped afterwards."""
        assert self.http.post(self.base, json=ALTERED_TABLE).status_code == 201
        path = f"{self.base}/{FUZZ_TABLE}"
        before = self.http.get(path).get_json()
        request = f"PATCH {path} {json.dumps({'changes': changes})}"
        response = self.http.patch(path, json={"changes": changes})
        self._refused(request, response)
        if response.status_code >= 400:
            assert self.http.get(path).get_json() == before, f"{request}: refused, yet the table changed"
        self.http.delete(path)
