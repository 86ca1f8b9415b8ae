"""The OpenAPI document describes exactly the routes the server has, with concrete schemas
for every answer and the request constraints the server enforces."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
import requests
from flask import Flask
from openapi_spec_validator import OpenAPIV31SpecValidator

from catalog_api.changes import CHANGE_OPS
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from registry.api.wire import NAME_PATTERN
from registry.model import POLICIES
from registry.pagination import TOKEN_PATTERN


def _flask_routes(app: Flask) -> set[tuple[str, str]]:
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule)
        methods = (rule.methods or set()) - {"OPTIONS"}
        # Flask answers HEAD for every GET route; a route that declares HEAD alone is an operation of its own.
        for method in methods - {"HEAD"} if "GET" in methods else methods:
            routes.add((path, method.lower()))
    return routes


def _normalize(path: str) -> str:
    # Path parameter names differ in style (Flask: schema_id, OpenAPI: schemaId).
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_every_route_is_documented_and_every_documented_route_exists(tmp_path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path}/x.db", warehouse=str(tmp_path)))
    served = {(_normalize(p), m) for p, m in _flask_routes(app)}
    with app.test_client() as http:
        doc = http.get("/v1/openapi.json").get_json()
    documented = {(_normalize(p), m) for p, ops in doc["paths"].items() for m in ops}
    assert served == documented


def test_the_document_is_valid_openapi_3_1_shaped_json(server_url: str) -> None:
    doc = requests.get(f"{server_url}/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    for name, schema in doc["components"]["schemas"].items():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert name
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            assert op["responses"], f"{method} {path} documents no response"
            declared = {p["name"] for p in op["parameters"] if p["in"] == "path"}
            assert declared == set(re.findall(r"\{([^}]+)\}", path)), f"{method} {path}"


# -- the document is generated from the wire models: valid, concrete, and as strict as the server ----

#: Members whose content is free-form by nature: chunk statistics, Spark data types and the
#: fields of a StructType (checked when converted), and the parts of the OpenAPI document itself.
FREE_FORM = {"stats", "type", "fields", "info", "paths", "components"}
LIST_OPERATIONS = {"listGroups", "listGroupsInNamespace", "listScopes", "listStreams", "listTables", "listCommits"}


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The document of an application on SQLite."""
    root = tmp_path_factory.mktemp("openapi")
    app = create_app(Settings(database_url=f"sqlite:///{root}/x.db", warehouse=str(root)))
    with app.test_client() as http:
        found: dict[str, Any] = http.get("/v1/openapi.json").get_json()
    return found


def _operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            yield path, method, op


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _vague(doc: dict[str, Any], schema: Any, where: str, seen: set[str]) -> Iterator[str]:
    """Places in ``schema`` that say nothing about their content (bare objects, empty schemas)."""
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref")
    if ref is not None:
        if ref not in seen:
            yield from _vague(doc, _resolve(doc, schema), where, seen | {ref})
        return
    if where.rsplit(".", 1)[-1].split("[")[0] in FREE_FORM:
        return
    bare_object = (
        schema.get("type") == "object"
        and "properties" not in schema
        and not isinstance(schema.get("additionalProperties"), dict)
    )
    if bare_object or schema == {}:
        yield where
    for name, member in schema.get("properties", {}).items():
        yield from _vague(doc, member, f"{where}.{name}", seen)
    for key in ("items", "additionalProperties"):
        yield from _vague(doc, schema.get(key), f"{where}[{key}]", seen)
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key, []):
            yield from _vague(doc, branch, where, seen)


def test_the_document_validates_as_openapi_3_1(document: dict[str, Any]) -> None:
    OpenAPIV31SpecValidator(document).validate()


def test_every_response_has_a_concrete_schema(document: dict[str, Any]) -> None:
    for path, method, op in _operations(document):
        for status, response in op["responses"].items():
            label = f"{method.upper()} {path} {status}"
            content = response.get("content")
            if content is None:
                assert status in ("201", "204") or method == "head", f"{label} has no body"
                continue
            for media_type, body in content.items():
                schema = body["schema"]
                if "json" not in media_type:
                    assert schema == {"type": "string"}, label
                    continue
                if int(status) >= 400 and op["operationId"] != "ready":  # not ready: a Readiness, saying why
                    assert schema["$ref"].endswith("Error"), label
                assert list(_vague(document, schema, "$", set())) == [], label


def test_every_operation_id_is_unique_and_mirrors_say_so(document: dict[str, Any]) -> None:
    ids = [op["operationId"] for _path, _method, op in _operations(document)]
    assert len(ids) == len(set(ids))
    for path, _method, op in _operations(document):
        assert op["operationId"].endswith("InNamespace") == path.startswith("/v1/namespace/"), path


def _parameter(op: dict[str, Any], name: str, where: str = "query") -> dict[str, Any]:
    found: dict[str, Any] = next(p for p in op["parameters"] if p["name"] == name and p["in"] == where)
    return found


def _or_empty(pattern: str) -> str:
    # An empty query argument means absent, so the published pattern admits it.
    return f"^(?:{pattern[1:-1]})?$"


def test_query_parameters_carry_the_bounds_the_server_enforces(document: dict[str, Any]) -> None:
    by_id = {op["operationId"]: op for _path, _method, op in _operations(document)}
    for op_id in LIST_OPERATIONS:
        assert _parameter(by_id[op_id], "limit")["schema"] == {"type": "integer", "minimum": 1, "maximum": 10_000}
    for op_id in LIST_OPERATIONS - {"listCommits"}:
        token = _parameter(by_id[op_id], "continuationToken")
        assert token["schema"] == {"type": "string", "pattern": _or_empty(TOKEN_PATTERN)}
        assert token["allowEmptyValue"] is True
    namespace = _parameter(by_id["listGroups"], "namespace")["schema"]
    assert namespace == {"type": "string", "pattern": _or_empty(NAME_PATTERN)}
    mirrored = by_id["listGroupsInNamespace"]["parameters"]
    assert [p["in"] for p in mirrored if p["name"] == "namespace"] == ["path"]
    cut = {"type": "integer", "minimum": 0, "maximum": 2**62}
    for name in ("streamCut", "asOfTime", "after"):
        assert _parameter(by_id["listChunks"], name)["schema"] == cut
    assert _parameter(by_id["listCommits"], "after")["schema"] == cut
    flags = {"deleteScope": ("cascade", "purge"), "deleteStream": ("purge",), "dropTable": ("purge",)}
    for op_id, names in flags.items():
        for name in names:
            assert _parameter(by_id[op_id], name)["schema"]["type"] == "boolean"
    version = _parameter(by_id["getSchemaFromVersion"], "version", "path")["schema"]
    assert version == {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}
    assert _parameter(by_id["getGroupProperties"], "groupName", "path")["schema"]["pattern"] == NAME_PATTERN


def test_request_constraints_are_published_as_enforced(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert schemas["CreateGroupRequest"]["properties"]["groupName"]["pattern"] == NAME_PATTERN
    assert schemas["CreateGroupRequest"]["additionalProperties"] is False
    for name in ("version", "id"):
        assert schemas["VersionInfo"]["properties"][name] == {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}
    assert schemas["SchemaInfo-Input"]["properties"]["type"]["maxLength"] == 1024
    assert schemas["SchemaInfo-Input"]["properties"]["schemaData"]["contentEncoding"] == "base64"
    assert schemas["CodecType-Input"]["properties"]["name"]["maxLength"] == 255
    assert schemas["ChunkInfo-Input"]["properties"]["path"]["maxLength"] == 1024
    assert schemas["CommitRequest"]["properties"]["chunks"]["maxItems"] == 100_000
    policy = schemas["Compatibility"]["properties"]["policy"]
    assert policy["enum"] == list(POLICIES)
    changes = schemas["AlterTableRequest"]["properties"]["changes"]["items"]
    assert changes["discriminator"]["propertyName"] == "op"
    assert set(changes["discriminator"]["mapping"]) == set(CHANGE_OPS)
    assert set(schemas["SetProperty"]["required"]) == {"op", "key", "value"}
