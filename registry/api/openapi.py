"""The OpenAPI 3.1 document of the whole REST API, generated from the application's routes.

Every route of the app's URL map is looked up in the declarations its view was mounted with
(operations.py), or, for the service endpoints the application shell mounts itself, in
SERVICE_OPERATIONS; the schemas come from the wire models through pydantic. A route without a
declaration is left out, which the tests catch. (Why a builder of our own rather than spectree or
flask-openapi3: docs/decisions.md.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from http import HTTPStatus
from typing import Annotated, Any

from flask import Flask, current_app
from pydantic import BaseModel, Field, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, models_json_schema
from werkzeug.routing import Rule

from registry.api import models as m
from registry.api.operations import Operation, declared
from registry.api.wire import Int32, Name

REF_TEMPLATE = "#/components/schemas/{model}"

#: A path segment is never empty: werkzeug would merge the slashes around it and redirect.
_SEGMENT = Annotated[str, Field(min_length=1)]
#: Path variables of the Flask rules, by converter and name: the name the document gives each,
#: and its type. Others are named as in the rule and typed by their converter (Operation.path
#: declares them otherwise).
PATH_PARAMETERS: dict[tuple[str, str], tuple[str, Any]] = {
    ("default", "namespace"): ("namespace", Name),
    ("default", "group"): ("groupName", Name),
    ("int", "schema_id"): ("schemaId", Int32),
    ("default", "fmt"): ("serializationFormat", m.FormatName),
    ("path", "type_name"): ("type", _SEGMENT),
    ("int", "version"): ("version", Int32),
    ("int", "encoding_id"): ("encodingId", Int32),
    ("default", "scope"): ("scopeName", Name),
    ("default", "stream"): ("streamName", Name),
    ("default", "table"): ("tableName", Name),
}
#: How callers authenticate, when the server asks (STREAMCAT_AUTH): every operation that declares a
#: permission lists these, and may answer 401 and 403.
SECURITY_SCHEMES = {
    "basic": {"type": "http", "scheme": "basic", "description": "a user's name and password"},
    "bearer": {"type": "http", "scheme": "bearer", "description": "an API token (sct_...) or an OIDC JWT"},
}
_BY_CONVERTER: dict[str, Any] = {"int": Annotated[int, Field(ge=0)], "default": _SEGMENT, "path": _SEGMENT}

#: The endpoints of the application shell (not mounted through operations.py), by rule and method.
SERVICE_OPERATIONS: dict[tuple[str, str], Operation] = {
    ("/ping", "get"): Operation("ping", "Liveness check", response=m.Status, errors=()),
    ("/v1/openapi.json", "get"): Operation("openapi", "This document", response=m.OpenApiDocument, errors=()),
    ("/health/live", "get"): Operation("live", "The process answers", response=m.Status, errors=()),
    ("/health/ready", "get"): Operation(
        "ready", "Database reachable and migrated (503 if not)", response=m.Readiness, also=(503,), errors=()
    ),
    ("/metrics", "get"): Operation(
        "metrics", "Prometheus metrics", response={"type": "string"}, media_type="text/plain", errors=()
    ),
}

_INFO = {
    "title": "Streamcat",
    "version": "1",
    "description": "Schema registry (Pravega Schema Registry API) and stream catalog.",
}
_VARIABLE = re.compile(r"<(?:(\w+)(?:\([^)]*\))?:)?(\w+)>")
_CACHE_KEY = "streamcat.openapi"


class _Schemas(GenerateJsonSchema):
    """pydantic's generator, without a title on every property (the names say it already)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _argument(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of a query argument's value, from its field's schema."""
    # A query argument is text or absent, never null: ``X | None`` fields publish as X.
    branches = [b for b in schema.pop("anyOf", []) if b != {"type": "null"}]
    if len(branches) == 1:
        schema.update(branches[0])
    elif branches:
        schema["anyOf"] = branches
    schema.pop("default", None)
    # An empty value means absent (``?namespace=``), so a pattern admits it too; the parameter
    # says allowEmptyValue, which is what covers the arguments that are not strings.
    pattern = schema.get("pattern")
    if pattern is not None and pattern.startswith("^") and pattern.endswith("$"):
        schema["pattern"] = f"^(?:{pattern[1:-1]})?$"
    return schema


def _documented_methods(rule: Rule) -> list[str]:
    """The methods the document lists for ``rule``: HEAD only where a route declares it on its own (Flask
    answers HEAD for every GET route, as the GET)."""
    methods = (rule.methods or set()) - {"OPTIONS"}
    return sorted(methods - {"HEAD"} if "GET" in methods else methods)


def _operations(app: Flask) -> list[tuple[Rule, str, Operation]]:
    found = []
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: (r.rule, r.endpoint)):
        view = app.view_functions.get(rule.endpoint)
        for method in _documented_methods(rule):
            op = (declared(view) if view is not None else None) or SERVICE_OPERATIONS.get((rule.rule, method.lower()))
            if op is not None:
                found.append((rule, method.lower(), op))
    return found


def _path_variable(op: Operation, converter: str, variable: str) -> tuple[str, Any]:
    converter = converter or "default"
    declared_here = op.path.get(variable)
    if declared_here is not None:
        return declared_here
    return PATH_PARAMETERS.get((converter, variable)) or (variable, _BY_CONVERTER.get(converter, _SEGMENT))


def _path_parameters(rule: Rule, op: Operation) -> tuple[str, list[dict[str, Any]]]:
    parameters = []
    for converter, variable in _VARIABLE.findall(rule.rule):
        name, annotation = _path_variable(op, converter, variable)
        schema = TypeAdapter(annotation).json_schema(schema_generator=_Schemas)
        parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
    path = _VARIABLE.sub(lambda match: "{" + _path_variable(op, match.group(1), match.group(2))[0] + "}", rule.rule)
    return path, parameters


def _query_parameters(query: type[BaseModel] | None, in_path: set[str]) -> list[dict[str, Any]]:
    if query is None:
        return []
    schema = query.model_json_schema(ref_template=REF_TEMPLATE, schema_generator=_Schemas)
    required = set(schema.get("required", []))
    parameters = []
    for name, argument in schema["properties"].items():
        if name in in_path:
            continue
        parameters.append(
            {
                "name": name,
                "in": "query",
                "required": name in required,
                "allowEmptyValue": True,
                "schema": _argument(argument),
            }
        )
    return parameters


#: The ``$ref`` of each (model, mode) in the components.
Refs = Mapping[tuple[Any, JsonSchemaMode], dict[str, Any]]


def _content(response: type[BaseModel] | dict[str, Any], media_type: str, refs: Refs) -> dict[str, Any]:
    schema = response if isinstance(response, dict) else refs[(response, "serialization")]
    return {media_type: {"schema": schema}}


def _operation(rule: Rule, op: Operation, refs: Refs, method: str) -> tuple[str, dict[str, Any]]:
    path, parameters = _path_parameters(rule, op)
    bodies = method != "head"  # a HEAD answer has no body, whatever its status
    parameters += _query_parameters(op.query, set(rule.arguments))
    in_namespace = "namespace" in rule.arguments
    responses: dict[str, Any] = {}
    for status in (op.status, *op.also):
        responses[str(status)] = {"description": HTTPStatus(status).phrase}
        if op.response is not None and bodies:
            responses[str(status)]["content"] = _content(op.response, op.media_type, refs)
    if op.links:
        responses[str(op.status)]["links"] = _links(op, in_namespace)
    refusals = (401, 403) if op.permission is not None else ()
    errors = sorted({*op.errors, *((413,) if op.body is not None else ()), *refusals})
    error = refs[(op.error_model or m.Error, "serialization")]
    # An API answers its errors in the JSON flavour of its answers (Confluent's has its own).
    error_type = op.media_type if "json" in op.media_type else "application/json"
    for status in errors:
        responses[str(status)] = {"description": HTTPStatus(status).phrase}
        if bodies:
            responses[str(status)]["content"] = {error_type: {"schema": error}}
    described: dict[str, Any] = {
        "operationId": op.operation_id + ("InNamespace" if in_namespace else ""),
        "summary": op.summary,
        "parameters": parameters,
        "responses": responses,
    }
    if op.permission is not None:
        described["security"] = [{name: []} for name in SECURITY_SCHEMES]
    if op.body is not None:
        described["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": refs[(op.body, "validation")]}},
        }
    return path, described


def _links(op: Operation, in_namespace: bool) -> dict[str, Any]:
    """The operation's links; from a namespace mirror, to the mirror's operations in that namespace."""
    links: dict[str, Any] = {}
    for name, declared_link in op.links.items():
        link = dict(declared_link)
        if in_namespace:
            parameters = {k: v for k, v in link.get("parameters", {}).items() if k != "query.namespace"}
            link["operationId"] = f"{link['operationId']}InNamespace"
            link["parameters"] = {**parameters, "path.namespace": "$request.path.namespace"}
        links[name] = link
    return links


def _check_links(paths: Mapping[str, Mapping[str, Any]]) -> None:
    """Raise ValueError if a link leads to an operation the document lacks."""
    known = {described["operationId"] for methods in paths.values() for described in methods.values()}
    for methods in paths.values():
        for described in methods.values():
            for response in described["responses"].values():
                for name, link in response.get("links", {}).items():
                    if link["operationId"] not in known:
                        raise ValueError(f"link {name} of {described['operationId']} leads to no operation")


def build(app: Flask) -> dict[str, Any]:
    """The document of ``app``'s routes (uncached; :func:`document` caches it)."""
    operations = _operations(app)
    wanted: dict[tuple[type[BaseModel], JsonSchemaMode], None] = {(m.Error, "serialization"): None}
    for _rule, _method, op in operations:
        if op.body is not None:
            wanted[(op.body, "validation")] = None
        if isinstance(op.response, type):
            wanted[(op.response, "serialization")] = None
        if op.error_model is not None:
            wanted[(op.error_model, "serialization")] = None
    refs, definitions = models_json_schema(list(wanted), ref_template=REF_TEMPLATE, schema_generator=_Schemas)
    paths: dict[str, dict[str, Any]] = {}
    for rule, method, op in operations:
        path, described = _operation(rule, op, refs, method)
        paths.setdefault(path, {})[method] = described
    _check_links(paths)
    return {
        "openapi": "3.1.0",
        "info": dict(_INFO),
        "paths": paths,
        "components": {"schemas": definitions.get("$defs", {}), "securitySchemes": dict(SECURITY_SCHEMES)},
    }


def document(app: Flask | None = None) -> dict[str, Any]:
    """The OpenAPI document of ``app`` (the current app by default), built once per app."""
    target: Flask = app if app is not None else current_app._get_current_object()  # type: ignore[attr-defined]
    cached = target.extensions.get(_CACHE_KEY)
    if cached is None:
        cached = target.extensions[_CACHE_KEY] = build(target)
    return dict(cached)
