"""Reading decoded JSON into wire models, with errors that name the field path.

A document that does not fit its model is a BadRequest whose message says where each problem
is (``$.groupProperties.compatibility.policy``) and, for a bad value, the value. Flask-free:
the clients check what they send with it too, and so fail the way the server would.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from registry.errors import BadRequest

M = TypeVar("M", bound=BaseModel)

_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
#: How many of a request's problems one message lists.
_SHOWN = 3


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), "a number")


def _where(loc: tuple[int | str, ...], data: Any) -> str:
    """``loc`` as a JSON path, following ``data``: parts that name no member of the input
    (the tag pydantic adds for the branch of a discriminated union) are not part of it."""
    path, node = "$", data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            path, node = f"{path}[{part}]", node[part]
        elif isinstance(part, str) and isinstance(node, dict) and (part in node or last):
            path, node = f"{path}.{part}", node.get(part)
        elif last:
            path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def message_of(error: ErrorDetails) -> str:
    """What is wrong in one problem pydantic found (the value included, when it is a scalar)."""
    if error["type"] == "value_error" and "error" in error.get("ctx", {}):
        return str(error["ctx"]["error"])
    text = error["msg"]
    value = error.get("input")
    if error["type"] != "missing" and isinstance(value, str | int | float | bool):
        shown = repr(value) if not isinstance(value, str) or len(value) <= 60 else repr(value[:60]) + "..."
        text += f" (got {shown})"
    return text


def explain(error: ValidationError, data: Any) -> str:
    """The problems of ``data`` as one line: where each is, and what is wrong there."""
    problems = error.errors(include_url=False)
    shown = "; ".join(f"at {_where(p['loc'], data)}: {message_of(p)}" for p in problems[:_SHOWN])
    more = len(problems) - _SHOWN
    return shown + (f" (and {more} more)" if more > 0 else "")


def parse_json(model: type[M], data: Any) -> M:
    """``data`` (decoded JSON) as ``model``; BadRequest naming the field path otherwise."""
    name = model.__name__
    if not isinstance(data, dict):
        raise BadRequest(f"invalid {name}: expected a JSON object, not {_json_type(data)}")
    try:
        return model.model_validate(data, by_name=False)
    except ValidationError as e:
        raise BadRequest(f"invalid {name} {explain(e, data)}") from None
