"""Skipping chunks whose statistics prove that no row passes the pushed filters.

Filters arrive as JSON from the catalog shim (``streamcat.filters``): ``{"op": "eq"|"gt"|
"ge"|"lt"|"le"|"startswith", "column", "value"}``, ``{"op": "in", "column", "values"}``,
``{"op": "isnull"|"notnull", "column"}`` and ``{"op": "and"|"or", "left", "right"}``, with
dates as days and timestamps as microseconds since the epoch, the units of a chunk's
``stats`` (see ``catalog_api.streams.chunks.column_stats``). A chunk is skipped only when
its statistics rule the filter out; anything unknown keeps it, and Spark still evaluates
every filter on the rows that are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _between(low: Any, value: Any, high: Any) -> bool:
    return bool(low <= value <= high)


def _may_match(condition: dict[str, Any], columns: dict[str, Any], rows: int | None) -> bool:
    op = condition.get("op")
    if op == "and":
        return _may_match(condition["left"], columns, rows) and _may_match(condition["right"], columns, rows)
    if op == "or":
        return _may_match(condition["left"], columns, rows) or _may_match(condition["right"], columns, rows)
    stats = columns.get(condition.get("column", ""))
    if not isinstance(stats, dict):
        return True
    nulls = stats.get("nulls")
    if op == "isnull":
        return nulls is None or nulls > 0
    all_null = nulls is not None and rows is not None and nulls >= rows
    if op == "notnull":
        return not all_null
    if all_null:
        return False  # comparisons never hold for null
    if "min" not in stats or "max" not in stats:
        return True
    low, high = stats["min"], stats["max"]
    try:
        if op == "eq":
            return _between(low, condition["value"], high)
        if op == "gt":
            return bool(high > condition["value"])
        if op == "ge":
            return bool(high >= condition["value"])
        if op == "lt":
            return bool(low < condition["value"])
        if op == "le":
            return bool(low <= condition["value"])
        if op == "in":
            return any(_between(low, v, high) for v in condition["values"])
        if op == "startswith":
            prefix = condition["value"]
            return bool(low[: len(prefix)] <= prefix <= high[: len(prefix)])
    except (TypeError, KeyError):
        return True  # statistics of another type than the value: cannot judge
    return True


def may_match(filters: Sequence[dict[str, Any]], stats: dict[str, Any] | None, rows: int | None = None) -> bool:
    """Whether a chunk with these statistics may hold a row that passes every filter."""
    if not filters or not stats:
        return True
    columns = stats.get("columns") or {}
    count = stats.get("rows", rows)
    return all(_may_match(f, columns, count) for f in filters)
