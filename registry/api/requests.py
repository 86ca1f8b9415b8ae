"""Reading requests: JSON bodies and query strings into wire models, and names from paths."""

from __future__ import annotations

import re
from typing import Any, cast

from flask import request
from pydantic import BaseModel, ValidationError

from registry.api.validation import M, message_of, parse_json
from registry.api.wire import NAME_PATTERN
from registry.errors import BadRequest
from registry.ids import Namespace
from registry.limits import MAX_DEPTH, check_text

_NAME = re.compile(NAME_PATTERN)
#: Each query model as read from an empty query string.
_NO_ARGUMENTS: dict[type[BaseModel], BaseModel] = {}


def json_body(model: type[M]) -> M:
    """The request's JSON body as ``model``, or BadRequest."""
    if not request.is_json:
        raise BadRequest("the request body must be JSON (Content-Type: application/json)")
    try:
        body = request.get_json(silent=True)
    except RecursionError:
        raise BadRequest(f"the request body nests deeper than {MAX_DEPTH} levels") from None
    if body is None:
        raise BadRequest("the request body is not valid JSON (or is null)")
    check_text(body)
    return parse_json(model, body)


def query_args(model: type[M]) -> M:
    """The query string as ``model``. Empty values count as absent, and arguments the route's
    path names (the namespace of ``/v1/namespace/{ns}/...``) are the path's, not the query's."""
    req = request._get_current_object()  # type: ignore[attr-defined]  # once, not a proxy lookup per use
    if not req.args:
        # Most requests have no query string: the model of none is the same every time (models are frozen).
        found = _NO_ARGUMENTS.get(model)
        if found is not None:
            return cast(M, found)
    in_path = req.url_rule.arguments if req.url_rule is not None else set()
    args = {k: v for k, v in req.args.items() if v != "" and k not in in_path}
    try:
        parsed = model.model_validate(args, by_name=False)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        where = f"query argument {first['loc'][0]}" if first["loc"] else "query"
        raise BadRequest(f"invalid {where}: {message_of(first)}") from None
    if not args:
        _NO_ARGUMENTS[model] = parsed
    return parsed


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
