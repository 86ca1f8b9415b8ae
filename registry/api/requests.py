"""Reading requests: JSON bodies checked against the OpenAPI components, names, numbers."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import jsonschema
from flask import request
from jsonschema.exceptions import ValidationError

from registry.api.openapi import NAME_PATTERN, component_schemas
from registry.errors import BadRequest
from registry.ids import Namespace
from registry.limits import MAX_DEPTH, check_text

_NAME = re.compile(NAME_PATTERN)


@cache
def _validator(component: str) -> jsonschema.Draft202012Validator:
    schema = {"$ref": f"#/components/schemas/{component}", "components": {"schemas": component_schemas()}}
    return jsonschema.Draft202012Validator(schema)


def _where(error: ValidationError) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)


def json_body(component: str) -> dict[str, Any]:
    """The request's JSON body, valid under the named OpenAPI component, or BadRequest."""
    if not request.is_json:
        raise BadRequest("the request body must be JSON (Content-Type: application/json)")
    try:
        body = request.get_json(silent=True)
    except RecursionError:
        raise BadRequest(f"the request body nests deeper than {MAX_DEPTH} levels") from None
    if body is None:
        raise BadRequest("the request body is not valid JSON (or is null)")
    check_text(body)
    error = jsonschema.exceptions.best_match(_validator(component).iter_errors(body))
    if error is not None:
        raise BadRequest(f"invalid {component} at {_where(error)}: {error.message}")
    return dict(body)


def check_name(value: str, what: str) -> str:
    """``value`` if it is a valid group or namespace name; BadRequest naming ``what`` otherwise."""
    if not _NAME.fullmatch(value):
        raise BadRequest(f"invalid {what} {value!r}: use letters, digits, '_', '-' and '.', at most 255")
    return value


def namespace_of(view_args: dict[str, Any] | None) -> Namespace:
    """The namespace of a request: from ``/v1/namespace/{ns}/...`` or ``?namespace=`` ("" default)."""
    from_path = (view_args or {}).get("namespace")
    value = from_path if from_path is not None else request.args.get("namespace", "")
    return Namespace(check_name(value, "namespace") if value else "")


def int_arg(name: str, default: int, low: int, high: int) -> int:
    """An integer query argument within bounds."""
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"query argument {name} must be an integer, not {raw!r}") from None
    if not low <= value <= high:
        raise BadRequest(f"query argument {name} must be between {low} and {high}, not {value}")
    return value
