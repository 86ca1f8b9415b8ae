"""Limits on what clients send: nesting depth and characters the databases cannot store."""

from __future__ import annotations

from typing import Any

from registry.errors import BadRequest

#: How deep a request body may nest; deeper bodies are refused before anything recurses.
MAX_DEPTH = 64


def check_text(value: Any, where: str = "$", error: type[BadRequest] = BadRequest, allow_nul: bool = False) -> None:
    """Refuse documents nested deeper than MAX_DEPTH (parsers and checkers recurse) and,
    unless ``allow_nul``, NUL characters in any string (PostgreSQL text cannot hold them; schema
    documents may, as Avro bytes defaults, since schemas are stored as bytes)."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise error(f"the request nests deeper than {MAX_DEPTH} levels at {path}")
        if isinstance(item, str):
            if not allow_nul and "\x00" in item:
                raise error(f"NUL character in {path}")
        elif isinstance(item, dict):
            for key, child in item.items():
                if not allow_nul and "\x00" in key:
                    raise error(f"NUL character in a key of {path}")
                stack.append((child, f"{path}.{key}", depth + 1))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item))


def reject_constant(name: str) -> Any:
    """For ``json.loads(parse_constant=...)``: NaN and Infinity are not JSON, so not schemas."""
    raise ValueError(f"{name} is not a JSON number")
