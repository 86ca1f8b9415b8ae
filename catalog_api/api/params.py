"""Path names shared by the catalog's blueprints."""

from __future__ import annotations

from typing import Any

from registry.api.requests import check_name


def pull_names(values: dict[str, Any] | None) -> dict[str, str]:
    """Validate the scope, stream and table names of a route's path."""
    names: dict[str, str] = {}
    for key, what in (("scope", "scope name"), ("stream", "stream name"), ("table", "table name")):
        if values and key in values:
            names[key] = check_name(values[key], what)
    return names
