"""Small value helpers shared by the JSON Schema rule modules (the bottom of the package: no package imports)."""

from __future__ import annotations

from typing import Any, TypeGuard


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _none(value: Any) -> str:
    return "none" if value is None else str(value)


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
