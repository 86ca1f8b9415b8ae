"""Skipping chunks that hold no row passing the pushed filters: by their statistics and by their partition.

Filters arrive as JSON from the catalog shim (``streamcat.filters``): ``{"op": "eq"|"gt"|
"ge"|"lt"|"le"|"startswith", "column", "value"}``, ``{"op": "in", "column", "values"}``,
``{"op": "isnull"|"notnull", "column"}`` and ``{"op": "and"|"or", "left", "right"}``, with
dates as days and timestamps as microseconds since the epoch, the units of a chunk's
``stats`` (see ``catalog_api.streams.chunks.column_stats``) and of partition values. A chunk
is skipped only when its statistics or its partition values rule the filter out; anything
unknown keeps it, and the reader still evaluates every filter on the rows that are read.

Partition pruning projects a filter on a partition field's source column through the field's
transform, inclusively as Iceberg does (a row passing the filter has a partition value passing
the projection: ``ts >= X`` gives ``day >= day(X)``): ``eq``/``in`` through every transform,
ranges through the order-keeping ones (all but bucket), ``startswith`` through identity and
string truncation, ``isnull``/``notnull`` through all (a chunk's rows share its values, and only
a null source gives a null value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol, cast

from .spec import (
    BUCKET,
    DAY,
    HOUR,
    IDENTITY,
    MONTH,
    TRUNCATE,
    YEAR,
    ColumnId,
    PartitionField,
    PartitionSpec,
    SpecId,
    Struct,
    columns_by_id,
    type_name,
)
from .transforms import apply

Filter = dict[str, Any]

# -- statistics -------------------------------------------------------------------------------------------


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


# -- partitions -------------------------------------------------------------------------------------------


class _Unknown(Exception):
    """A filter value the projection cannot judge: the chunk is kept."""


#: The smallest value of each integer type: where integer truncation saturates.
_MINIMUMS = frozenset({-(2**7), -(2**15), -(2**31), -(2**63)})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _project(f: PartitionField, value: Any) -> Any:
    """The transform of a filter value, or :class:`_Unknown` when the value cannot be one of the source's."""
    kind, source_type = f.transform.kind, f.source_type
    if value is None:
        raise _Unknown
    if kind == IDENTITY:
        return value
    if kind in (YEAR, MONTH, DAY):
        if not _is_int(value) or source_type not in ("date", "timestamp", "timestamp_ntz"):
            raise _Unknown  # days or microseconds: only the source type tells
        return apply(f.transform, value, source_type)
    if kind == HOUR:
        if not _is_int(value) or source_type not in (None, "timestamp", "timestamp_ntz"):
            raise _Unknown
        return apply(f.transform, value, source_type)
    if kind == BUCKET:
        if _is_int(value):
            if source_type not in (None, "byte", "short", "integer", "long", "date", "timestamp", "timestamp_ntz"):
                raise _Unknown
        elif isinstance(value, str):
            if source_type not in (None, "string"):
                raise _Unknown
        else:
            raise _Unknown
        return apply(f.transform, value, source_type)
    if kind == TRUNCATE:
        if _is_int(value) and source_type in (None, "byte", "short", "integer", "long"):
            return apply(f.transform, value, source_type)  # without the type, saturating at the long minimum
        if isinstance(value, str) and source_type in (None, "string"):
            return apply(f.transform, value, source_type)
        raise _Unknown  # binary values (base64 text) are not compared
    raise _Unknown


def _compare(op: str | None, p: Any, value: Any) -> bool:
    if op == "lt":
        return bool(p < value)
    if op == "le":
        return bool(p <= value)
    if op == "gt":
        return bool(p > value)
    if op == "ge":
        return bool(p >= value)
    if op == "startswith":
        return p.startswith(value) if isinstance(p, str) and isinstance(value, str) else True
    return True


def _field_may_match(condition: Filter, f: PartitionField, p: Any) -> bool:
    """Whether the rows of a chunk whose value of ``f`` is ``p`` may pass ``condition`` (on ``f``'s source)."""
    op = condition.get("op")
    if op == "isnull":
        return p is None
    if op == "notnull":
        return p is not None
    if p is None:
        return False  # a null source: comparisons, in and startswith never hold
    kind = f.transform.kind
    if kind == TRUNCATE and f.source_type is None and p in _MINIMUMS:
        return True  # maybe a truncation saturated at the minimum of a type the field does not know
    try:
        if op == "eq":
            return bool(p == _project(f, condition["value"]))
        if op == "in":
            projected = []
            for v in condition["values"]:
                try:
                    projected.append(_project(f, v))
                except _Unknown:
                    if v is not None:  # a null in the list matches nothing
                        return True
            return any(p == v for v in projected)
        if kind == BUCKET:
            return True  # buckets keep no order
        value = condition.get("value")
        if value is None:
            return True
        if kind == IDENTITY:  # the partition value is the source value
            return _compare(op, p, value)
        exact_ints = _is_int(value) and _is_int(p)
        if op == "lt":
            # over integers v < X is v <= X - 1, a tighter bound once transformed
            return bool(p <= _project(f, value - 1)) if exact_ints else bool(p <= _project(f, value))
        if op == "le":
            return bool(p <= _project(f, value))
        if op == "gt":
            return bool(p >= _project(f, value + 1)) if exact_ints else bool(p >= _project(f, value))
        if op == "ge":
            return bool(p >= _project(f, value))
        if op == "startswith":
            if not isinstance(value, str) or not isinstance(p, str):
                return True
            if kind == TRUNCATE and f.source_type in (None, "string"):
                assert f.transform.param is not None
                width = f.transform.param
                # a string that starts with the prefix truncates to the prefix's first W code points, or, when
                # the prefix is shorter than W, to something that starts with it
                return p == value[:width] if len(value) >= width else p.startswith(value)
            return True
    except (_Unknown, TypeError, KeyError, ValueError):
        return True
    return True


def _partition_may_match(condition: Filter, by_source: Mapping[str, list[tuple[PartitionField, Any]]]) -> bool:
    op = condition.get("op")
    if op == "and":
        return (_partition_may_match(condition["left"], by_source)
                and _partition_may_match(condition["right"], by_source))
    if op == "or":
        return (_partition_may_match(condition["left"], by_source)
                or _partition_may_match(condition["right"], by_source))
    fields = by_source.get(condition.get("column", ""), [])
    return all(_field_may_match(condition, f, p) for f, p in fields)


def partition_may_match(filters: Sequence[Filter], spec: PartitionSpec, values: Sequence[Any] | None) -> bool:
    """Whether a chunk whose partition values under ``spec`` are ``values`` may hold a row that passes every
    filter. Filters name columns as the fields' ``source`` does (give a spec with current names); the time
    transforms year/month/day judge only when the field knows its source type (a spec from
    :func:`~catalog_api.partitioning.spec.parse_partitioning` or
    :func:`~catalog_api.partitioning.spec.with_current_names`)."""
    if not filters or spec.unpartitioned or values is None or len(values) != len(spec.fields):
        return True
    by_source: dict[str, list[tuple[PartitionField, Any]]] = {}
    for f, value in zip(spec.fields, values, strict=True):
        by_source.setdefault(f.source, []).append((f, value))
    return all(_partition_may_match(condition, by_source) for condition in filters)


class ChunkLike(Protocol):
    """What pruning reads of a chunk (:class:`catalog_api.model.Chunk` has it)."""

    @property
    def stats(self) -> dict[str, Any] | None:
        """The chunk's column statistics (``column_stats``)."""

    @property
    def event_count(self) -> int:
        """Its rows."""

    @property
    def partition(self) -> dict[str, Any] | None:
        """``{"specId", "values"}``, or None when written unpartitioned."""


def _current_spec(spec: PartitionSpec, names: Struct | Mapping[ColumnId, str]) -> PartitionSpec:
    """``spec`` whose fields carry their column's current name (and type, given a schema); fields whose
    column is gone get no name: a filter cannot name them (a new column of the same name is another)."""
    if isinstance(names, dict) and names.get("type") == "struct" and isinstance(names.get("fields"), list):
        columns = columns_by_id(cast(Struct, names))
        named = {fid: str(column["name"]) for fid, column in columns.items()}
        types: dict[ColumnId, str | None] = {fid: type_name(column.get("type")) for fid, column in columns.items()}
    else:
        named, types = dict(cast(Mapping[ColumnId, str], names)), {}
    return replace(spec, fields=tuple(
        replace(f, source=named.get(f.source_id, ""), source_type=types.get(f.source_id, f.source_type))
        for f in spec.fields
    ))


def chunk_may_match(filters: Sequence[Filter], chunk: ChunkLike, specs: Mapping[SpecId, PartitionSpec],
                    names: Struct | Mapping[ColumnId, str], *, by_stats: bool = True) -> bool:
    """Whether ``chunk`` may hold a row that passes every filter, judged by its partition (under its spec in
    ``specs``, the table's specs by id) and, unless ``by_stats`` is false, by its statistics.

    ``names`` gives each source column's current name: the table's current schema (StructType JSON, which
    also gives the source types that year/month/day pruning needs), or a map of field id to name. Tables
    read by merging versions of keys prune by partition only (``by_stats=False``): one chunk's statistics
    cannot prove a key's latest version is elsewhere. Judging many chunks: :class:`ChunkPruner`.
    """
    return ChunkPruner(filters, specs, names).may_match(chunk, by_stats=by_stats)


class ChunkPruner:
    """:func:`chunk_may_match` for the chunks of one scan: the specs get their columns' current names once,
    not once per chunk (a snapshot may hold thousands of chunks)."""

    def __init__(self, filters: Sequence[Filter], specs: Mapping[SpecId, PartitionSpec],
                 names: Struct | Mapping[ColumnId, str]) -> None:
        self.filters = filters
        # the names stored in a spec are those at its making: filters name the columns as they are now
        self.specs = {spec_id: _current_spec(spec, names) for spec_id, spec in specs.items()} if filters else {}

    def may_match(self, chunk: ChunkLike, *, by_stats: bool = True) -> bool:
        """Whether ``chunk`` may hold a row that passes every filter (see :func:`chunk_may_match`)."""
        if not self.filters:
            return True
        if by_stats and not may_match(self.filters, chunk.stats, chunk.event_count):
            return False
        partition = chunk.partition
        if not isinstance(partition, dict):
            return True
        spec_id, values = partition.get("specId"), partition.get("values")
        spec = self.specs.get(spec_id) if isinstance(spec_id, int) else None
        if spec is None or not isinstance(values, list):
            return True
        return partition_may_match(self.filters, spec, values)
