"""Request helpers shared by the catalog's blueprints."""

from __future__ import annotations

from typing import Any

from flask import current_app, request

from registry.api.requests import check_name, int_arg
from registry.errors import BadRequest


def flag(name: str) -> bool:
    """A boolean query argument (``true``/``false``, ``1``/``0``; absent is false)."""
    raw = request.args.get(name, "").lower()
    if raw in ("", "false", "0", "no"):
        return False
    if raw in ("true", "1", "yes"):
        return True
    raise BadRequest(f"query argument {name} must be true or false, not {raw!r}")


def optional_int(name: str) -> int | None:
    """A non-negative integer query argument, or None when absent."""
    if request.args.get(name) in (None, ""):
        return None
    return int_arg(name, 0, 0, 2**62)


def page_limit() -> int:
    """The ``limit`` of a listing (the configured default when absent)."""
    return int_arg("limit", current_app.extensions["streamcat"].settings.list_limit, 1, 10_000)


def pull_names(values: dict[str, Any] | None) -> dict[str, str]:
    """Validate the scope, stream and table names of a route's path."""
    names: dict[str, str] = {}
    for key, what in (("scope", "scope name"), ("stream", "stream name"), ("table", "table name")):
        if values and key in values:
            names[key] = check_name(values[key], what)
    return names
