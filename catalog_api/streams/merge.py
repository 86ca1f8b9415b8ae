"""The state of a table at a cut: the merge of its visible chunks (docs/changelog-tables.md, "Model").

Pure pyarrow and numpy: no Spark, no HTTP. Spark's read tasks, :class:`StreamReader`, the change
feed and compaction share it.

* An **append table** at a cut is every row of its visible data chunks minus the positions its
  visible ``deletes`` chunks name.
* A **primary-key table** at a cut is one row per live key: its changes sorted by (chunk
  ``sequence``, ``sequence.field`` value, chunk order, row position) and merged by the table's
  merge engine: ``deduplicate`` (the last change wins whole; a delete removes the key) or
  ``partial-update`` (the non-null fields of each upsert overwrite the previous row's; a delete
  removes the key and a later upsert starts from nothing), ``aggregation`` (each non-key column is
  its function's aggregate of the upserts since the key's last delete, less the retractions of the
  functions that take them back: :mod:`catalog_api.aggregates`; with ``aggregation.row-count-field``,
  a key whose count column sums to 0 or less is not live; ``avg`` and ``$rows`` merge hidden state
  columns, :func:`with_state`, which rows written without them fill from their visible values) or
  ``first-row`` (the first upsert since the key's last delete wins; later upserts are ignored).

The ``sequence.field`` orders changes within one sequence (one commit); larger wins, and a null
sorts before every value (so a change that carries a value beats one that does not, such as a
delete row whose non-key columns are null); ties keep the order of writing.

Everything is vectorised: one hash aggregation (deduplicate) or one sort (partial-update) over
the key columns, then ``take``; no Python loop runs per row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog_api.aggregates import (
    COUNT_SUFFIX,
    SUM_SUFFIX,
    AggregateError,
    FieldAggregate,
    field_aggregates,
    row_count_field,
    state_columns,
)
from catalog_api.streams.row_kinds import (
    DELETE,
    DELETES_KIND,
    MERGE_ENGINE,
    MERGE_ENGINES,
    OP_COLUMN,
    RETRACT,
    SEQUENCE_FIELD,
    UPSERT,
    primary_key,
    read_position_deletes,
)

if TYPE_CHECKING:
    from catalog_api.model import Chunk

#: The Arrow types of the state columns' Spark types.
_STATE_TYPES = {"double": pa.float64(), "long": pa.int64()}
#: Internal column names (never table columns: ``__`` and the ``streamcat`` prefix).
_ORDER = "__streamcat_order"
_GROUP = "__streamcat_group"


class LayoutError(ValueError):
    """Table properties that do not describe a table Streamcat can merge."""


@dataclass(frozen=True)
class TableLayout:
    """How a table's changes merge: its key columns, ``sequence.field`` and merge engine."""

    key: tuple[str, ...] = ()
    sequence_field: str | None = None
    merge_engine: str = "deduplicate"
    #: the aggregation engine's configured columns (the others aggregate by the default function)
    aggregates: tuple[tuple[str, FieldAggregate], ...] = ()
    #: the aggregation engine's column that counts each key's rows (a key whose count is not positive is gone)
    row_count: str | None = None
    #: the aggregation engine's hidden state columns, (name, Spark type's JSON name): ``aggregates.state_columns``
    state: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_properties(cls, properties: dict[str, str] | None) -> TableLayout:
        """The layout a table's properties declare (no ``primary-key``: an append table)."""
        properties = properties or {}
        engine = (properties.get(MERGE_ENGINE) or "deduplicate").strip().lower()
        if engine not in MERGE_ENGINES:
            raise LayoutError(f"merge-engine must be one of {', '.join(MERGE_ENGINES)}, not {engine!r}")
        sequence = (properties.get(SEQUENCE_FIELD) or "").strip() or None
        try:
            aggregates = tuple(sorted(field_aggregates(properties).items())) if engine == "aggregation" else ()
            state = state_columns(properties) if engine == "aggregation" else ()
        except AggregateError as e:
            raise LayoutError(str(e)) from None
        row_count = row_count_field(properties) if engine == "aggregation" else None
        return cls(primary_key(properties), sequence, engine, aggregates, row_count, state)

    @classmethod
    def keyed(cls, properties: dict[str, str] | None) -> TableLayout | None:
        """The layout of a primary-key table's properties; None for an append table."""
        layout = cls.from_properties(properties)
        return layout if layout.is_keyed else None

    def aggregate_of(self, column: str) -> FieldAggregate:
        """How ``column`` aggregates under the aggregation engine (matched case-insensitively)."""
        lowered = column.lower()
        return next((a for name, a in self.aggregates if name.lower() == lowered), FieldAggregate())

    @property
    def is_keyed(self) -> bool:
        """Whether this is a primary-key table (else an append table)."""
        return bool(self.key)

    @property
    def partial_update(self) -> bool:
        """Whether non-null fields of an upsert overwrite the previous row's (else the whole row wins)."""
        return self.merge_engine == "partial-update"

    @property
    def state_names(self) -> tuple[str, ...]:
        """The names of the hidden state columns (none but for an aggregation table that declares some)."""
        return tuple(name for name, _ in self.state)

    def state_fields(self) -> list[pa.Field]:
        """The hidden state columns as nullable Arrow fields (read by name: their ids mean nothing to Streamcat)."""
        return [pa.field(name, _STATE_TYPES[kind]) for name, kind in self.state]

    def merge_columns(self) -> tuple[str, ...]:
        """The columns a merge needs besides the ones a reader wants: key, sequence field, row count (table
        columns), then the hidden state columns (which no table schema has: :meth:`state_fields`)."""
        if not self.is_keyed:
            return ()
        visible = self.key + ((self.sequence_field,) if self.sequence_field else ()) + (
            (self.row_count,) if self.row_count and self.row_count not in self.state_names else ())
        return visible + self.state_names

    def read_columns(self, wanted: Sequence[str]) -> list[str]:
        """``wanted`` plus the merge columns that are missing from it (matched case-insensitively)."""
        have = {name.lower() for name in wanted}
        return [*wanted, *(c for c in self.merge_columns() if c.lower() not in have)]


# -- the pieces ------------------------------------------------------------------------------------

def split_ops(table: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """(``table`` without ``OP_COLUMN``, each row's kind as an int8 numpy array: all upserts without it)."""
    index = table.schema.get_field_index(OP_COLUMN)
    if index < 0:
        return table, np.zeros(table.num_rows, dtype=np.int8)
    ops = table.column(index).fill_null(UPSERT).to_numpy().astype(np.int8, copy=False)
    return table.remove_column(index), ops


def _find(table: pa.Table, name: str) -> int:
    """The index of ``table``'s column ``name`` (else the one column matching it ignoring case; -1: none)."""
    index = table.schema.get_field_index(name)
    if index >= 0:
        return index
    lowered = [i for i, n in enumerate(table.column_names) if n.lower() == name.lower()]
    return lowered[0] if len(lowered) == 1 else -1


def with_state(table: pa.Table, layout: TableLayout, source: pa.Table | None = None) -> pa.Table:
    """``table`` (a chunk's rows, or merged ones) with ``layout``'s hidden state columns after all its others,
    each of its type: taken from ``table``, else by name from ``source`` (the same rows as their file holds
    them, when ``table`` holds only the reader's columns), else null (rows written without state: the merge
    fills them from the visible values, docs/changelog-tables.md). A table of no columns stays as it is."""
    if not layout.state or not table.num_columns:
        return table
    fields = layout.state_fields()
    names = [f.name for f in fields]
    if table.column_names[-len(names):] == names and all(
            table.schema.field(table.num_columns - len(names) + i).type == f.type for i, f in enumerate(fields)):
        return table
    hidden = {n.lower() for n in names}
    kept = [i for i, n in enumerate(table.column_names) if n.lower() not in hidden]
    columns = [table.column(i) for i in kept]
    out_fields = [table.schema.field(i) for i in kept]
    for f in fields:
        index, holder = _find(table, f.name), table
        if index < 0 and source is not None:
            index, holder = _find(source, f.name), source
        column = holder.column(index) if index >= 0 else pa.chunked_array([pa.nulls(table.num_rows, f.type)])
        columns.append(column if column.type == f.type else column.cast(f.type))
        out_fields.append(f)
    return pa.Table.from_arrays(columns, schema=pa.schema(out_fields, metadata=table.schema.metadata))


def without_state(table: pa.Table, layout: TableLayout) -> pa.Table:
    """``table`` without ``layout``'s hidden state columns: what every reader shows."""
    if not layout.state:
        return table
    hidden = {n.lower() for n in layout.state_names}
    dropped = [n for n in table.column_names if n.lower() in hidden]
    return table.drop_columns(dropped) if dropped else table


def apply_position_deletes(table: pa.Table, deleted: pa.Array | np.ndarray | None, offset: int = 0) -> pa.Table:
    """``table`` (rows ``offset``... of a chunk) without the rows at the chunk positions ``deleted``."""
    if deleted is None or len(deleted) == 0 or table.num_rows == 0:
        return table
    positions = deleted.to_numpy() if isinstance(deleted, pa.Array) else np.asarray(deleted)
    positions = positions[(positions >= offset) & (positions < offset + table.num_rows)] - offset
    if not len(positions):
        return table
    keep = np.ones(table.num_rows, dtype=bool)
    keep[positions] = False
    return table.filter(pa.array(keep))


def _concat(tables: Sequence[pa.Table]) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The tables' rows one after the other, their kinds, and the number of rows of each table."""
    parts, ops = [], []
    for table in tables:
        data, kinds = split_ops(table)
        parts.append(data)
        ops.append(kinds)
    lengths = np.array([t.num_rows for t in parts], dtype=np.int64)
    schema = next((p.schema for p in parts if p.num_columns), parts[0].schema)
    # (an empty chunk may come as a table of no columns at all)
    parts = [p if p.schema.equals(schema) else schema.empty_table() if not p.num_rows and not p.num_columns
             else p.cast(schema) for p in parts]
    combined = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    return combined, (np.concatenate(ops) if ops else np.zeros(0, np.int8)), lengths


def _column(table: pa.Table, name: str) -> pa.ChunkedArray:
    index = table.schema.get_field_index(name)
    if index < 0:
        lowered = [i for i, n in enumerate(table.column_names) if n.lower() == name.lower()]
        if len(lowered) != 1:
            raise LayoutError(f"the rows to merge have no column {name!r} (columns: {', '.join(table.column_names)})")
        index = lowered[0]
    return table.column(index)


def _order(data: pa.Table, lengths: np.ndarray, layout: TableLayout,
           sequences: Sequence[int] | None) -> np.ndarray | None:
    """The rank of each row in change order, or None when that is the order of the rows themselves.

    Without a sequence field the chunks' order (sequence, then commit and position: the snapshot's)
    and the rows' positions are the change order.
    """
    if not layout.sequence_field or data.num_rows == 0:
        return None
    groups = np.repeat(np.asarray(sequences if sequences is not None else range(len(lengths)), dtype=np.int64),
                       lengths)
    ordering = pa.table({_GROUP: groups, "f": _column(data, layout.sequence_field),
                         _ORDER: np.arange(data.num_rows, dtype=np.int64)})
    permutation = pc.sort_indices(ordering, sort_keys=[(_GROUP, "ascending"), ("f", "ascending", "at_start"),
                                                       (_ORDER, "ascending")])
    rank = np.empty(data.num_rows, dtype=np.int64)
    rank[permutation.to_numpy()] = np.arange(data.num_rows, dtype=np.int64)
    return rank


def _integer_like(kind: pa.DataType) -> bool:
    return bool(pa.types.is_integer(kind) or pa.types.is_date(kind) or pa.types.is_timestamp(kind)
                or pa.types.is_time(kind) or pa.types.is_duration(kind))


def _sorted_by_key(data: pa.Table, rank: np.ndarray | None, key: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(row indices sorted by key, then change order; whether each of them starts a new key).

    Both sorts are stable, so rows of one key keep their change order. A single integer-like key
    column sorts in numpy (the common case, and about three times faster than a hash aggregation).
    """
    n = data.num_rows
    in_order = None
    if rank is not None:
        in_order = np.empty_like(rank)
        in_order[rank] = np.arange(n, dtype=np.int64)   # the row at each rank
    columns = [_column(data, k) for k in key]
    new_key = np.empty(n, dtype=bool)
    new_key[0] = True
    if len(columns) == 1 and _integer_like(columns[0].type) and columns[0].null_count == 0:
        column = columns[0]
        bits = pa.int32() if column.type.bit_width == 32 else pa.int64()
        values = column.cast(bits).to_numpy() if not pa.types.is_integer(column.type) else column.to_numpy()
        if in_order is not None:
            values = values[in_order]
        rows = np.argsort(values, kind="stable")
        ordered = values[rows]
        np.not_equal(ordered[1:], ordered[:-1], out=new_key[1:])
        return (rows if in_order is None else in_order[rows]), new_key
    order = rank if rank is not None else np.arange(n, dtype=np.int64)
    keys = pa.table([*columns, pa.array(order)], names=[*(f"k{i}" for i in range(len(key))), _ORDER])
    rows = pc.sort_indices(keys, sort_keys=[*((f"k{i}", "ascending") for i in range(len(key))),
                                            (_ORDER, "ascending")]).to_numpy()
    new_key[1:] = False
    taken = pa.array(rows)
    for column in columns:
        ordered = column.take(taken)
        after, before = ordered.slice(1), ordered.slice(0, n - 1)
        differs = pc.fill_null(pc.not_equal(after, before), False)
        if column.null_count:
            differs = pc.or_(differs, pc.xor(after.is_null(), before.is_null()))
        new_key[1:] |= differs.to_numpy(zero_copy_only=False)
    return rows, new_key


def _deduplicate(data: pa.Table, ops: np.ndarray, rank: np.ndarray | None, key: Sequence[str]) -> pa.Table:
    rows, new_key = _sorted_by_key(data, rank, key)
    last = np.append(new_key[1:], True)
    winners = rows[last]
    keep = np.zeros(data.num_rows, dtype=bool)
    keep[winners[ops[winners] == UPSERT]] = True
    return data.filter(pa.array(keep))


def _partial_update(data: pa.Table, ops: np.ndarray, rank: np.ndarray | None, key: Sequence[str]) -> pa.Table:
    kept, groups = _last_segments(ops, rank, data, key)  # the upserts since each live key's last delete
    if not len(kept):
        return data.slice(0, 0)
    starts = np.flatnonzero(np.append(True, groups[1:] != groups[:-1]))
    positions = np.arange(len(kept), dtype=np.int64)
    taken = data.take(pa.array(kept))
    columns = []
    for column in taken.columns:
        if not column.null_count:
            columns.append(column.take(pa.array(np.append(starts[1:], len(kept)) - 1)))
            continue
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        latest = np.maximum.reduceat(np.where(valid, positions, -1), starts)
        columns.append(column.take(pa.array(latest, mask=latest < 0)))
    return pa.table(columns, schema=taken.schema)


def _last_segments(ops: np.ndarray, rank: np.ndarray | None, data: pa.Table,
                   key: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The rows since each live key's last delete (deletes excluded), in key then change order, and a
    group number per such row (one group per live key, numbered from 0 in that order)."""
    rows, new_key = _sorted_by_key(data, rank, key)
    kinds = ops[rows]
    after_delete = np.zeros(len(rows), dtype=bool)
    after_delete[1:] = kinds[:-1] == DELETE
    segment = np.cumsum(new_key | after_delete) - 1
    key_id = np.cumsum(new_key) - 1
    key_last = np.append(new_key[1:], True)
    live = kinds[key_last] != DELETE
    keep = (segment == segment[key_last][key_id]) & live[key_id] & (kinds != DELETE)
    kept_segment = segment[keep]
    starts = np.append(True, kept_segment[1:] != kept_segment[:-1]) if len(kept_segment) else np.zeros(0, bool)
    return rows[keep], np.cumsum(starts) - 1


def _first_row(data: pa.Table, ops: np.ndarray, rank: np.ndarray | None, key: Sequence[str]) -> pa.Table:
    rows, groups = _last_segments(ops, rank, data, key)
    if not len(rows):
        return data.slice(0, 0)
    firsts = np.flatnonzero(np.append(True, groups[1:] != groups[:-1]))
    return data.take(pa.array(rows[firsts]))


#: pyarrow's hash aggregation and its options per engine function (applied to the upserts).
_HASH = {
    "sum": ("sum", pc.ScalarAggregateOptions(min_count=1)),
    "product": ("product", pc.ScalarAggregateOptions(min_count=1)),
    "count": ("sum", pc.ScalarAggregateOptions(min_count=1)),
    "min": ("min", None), "max": ("max", None),
    "first_value": ("first", pc.ScalarAggregateOptions(skip_nulls=False)),
    "first_non_null_value": ("first", pc.ScalarAggregateOptions(skip_nulls=True)),
    "last_value": ("last", pc.ScalarAggregateOptions(skip_nulls=False)),
    "last_non_null_value": ("last", pc.ScalarAggregateOptions(skip_nulls=True)),
    "bool_and": ("all", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
    "bool_or": ("any", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
}


def _per_group(values: pa.ChunkedArray | pa.Array, groups: np.ndarray, count: int, function: str,
               options: pc.ScalarAggregateOptions | None) -> pa.Array:
    """``function`` of ``values`` per group, as an array of ``count`` entries (null for a group with no rows)."""
    if not len(groups):
        return pa.nulls(count, values.type)
    table = pa.table({"g": pa.array(groups, pa.int64()), "v": values})
    done = table.group_by("g", use_threads=False).aggregate([("v", function, options)])
    found = done.column(f"v_{function}").combine_chunks()
    if len(found) == count:
        return found
    where = np.full(count, -1, np.int64)
    where[done.column("g").to_numpy()] = np.arange(done.num_rows)
    return found.take(pa.array(where, mask=where < 0))


def _aggregate_column(values: pa.ChunkedArray, retract: np.ndarray, state: np.ndarray, groups: np.ndarray,
                      count: int, aggregate: FieldAggregate) -> pa.Array:
    kind = values.type
    if aggregate.function == "count":
        # a written value counts 1 (0 when null); a state row (compaction output) holds its count
        counted = pc.if_else(values.is_valid(), pa.scalar(1, kind), pa.scalar(0, kind))
        values = pc.if_else(pa.array(state), values, counted) if state.any() else counted
    upserts = pa.array(~retract)
    taken_back = aggregate.retracts and retract.any()
    if aggregate.function == "listagg":
        kept = pc.and_(upserts, values.is_valid()).to_numpy(zero_copy_only=False)
        if not kept.any():
            return pa.nulls(count, kind)
        lists = _per_group(values.filter(pa.array(kept)), groups[kept], count, "list", None)
        return pc.binary_join(lists, aggregate.delimiter).cast(kind)
    if aggregate.function == "product" and taken_back:
        made = _per_group(values.filter(upserts), groups[~retract], count, "product", _HASH["product"][1])
        undone = _per_group(values.filter(pa.array(retract)), groups[retract], count, "product",
                            _HASH["product"][1])
        undone = pc.fill_null(undone, pa.scalar(1, undone.type))
        divided = pc.divide(made, undone) if pa.types.is_integer(made.type) else pc.divide(
            made.cast(pa.float64()), undone.cast(pa.float64()))
        return divided.cast(kind)
    if aggregate.function in ("sum", "count") and taken_back:
        values = pc.if_else(pa.array(retract), pc.negate_checked(values), values)
    elif retract.any():
        # a retraction of a function that cannot take it back: the writers refuse it unless ignore-retract
        # is set; whatever is stored is skipped here, so the table stays readable
        values, groups = values.filter(upserts), groups[~retract]
    function, options = _HASH[aggregate.function]
    return _per_group(values, groups, count, function, options).cast(kind)


def _aggregate_state(taken: pa.Table, retract: np.ndarray, state: np.ndarray, groups: np.ndarray, count: int,
                     layout: TableLayout) -> dict[str, pa.Array]:
    """The merged hidden state columns of ``taken`` and the ``avg`` columns they give, by lower-cased name.

    Fill rule: a row whose ``$sum`` (``$count``, ``$rows``) is null, as in every file written without state,
    holds its visible value as one sample (``$count`` 1, 0 when the value is null; ``$rows`` 1). Each then
    sums, a retraction negated; an ``avg`` is ``$sum / $count``, null unless ``$count`` is positive.
    """
    summed = FieldAggregate("sum")
    found: dict[str, pa.Array] = {}
    for column, aggregate in layout.aggregates:
        if aggregate.function != "avg":
            continue
        visible, sums, counts = (_find(taken, name) for name in (column, column + SUM_SUFFIX, column + COUNT_SUFFIX))
        if sums < 0 or counts < 0:
            raise LayoutError(f"the rows to merge lack the state columns of avg column {column}")
        value = taken.column(visible).cast(pa.float64()) if visible >= 0 else \
            pa.chunked_array([pa.nulls(taken.num_rows, pa.float64())])
        one = pc.if_else(value.is_valid(), pa.scalar(1, pa.int64()), pa.scalar(0, pa.int64()))
        total = _aggregate_column(pc.coalesce(taken.column(sums), value), retract, state, groups, count, summed)
        samples = _aggregate_column(pc.coalesce(taken.column(counts), one), retract, state, groups, count, summed)
        names = taken.column_names
        found[names[sums].lower()], found[names[counts].lower()] = total, samples
        if visible >= 0:
            live = pc.fill_null(pc.greater(samples, 0), False)
            mean = pc.if_else(live, pc.divide(total, samples.cast(pa.float64())), pa.scalar(None, pa.float64()))
            found[names[visible].lower()] = mean.cast(taken.schema.field(visible).type)
    if layout.row_count is not None and layout.row_count in layout.state_names:
        rows = _find(taken, layout.row_count)
        if rows < 0:
            raise LayoutError(f"the rows to merge lack the state column {layout.row_count}")
        found[layout.row_count.lower()] = _aggregate_column(
            pc.fill_null(taken.column(rows), pa.scalar(1, pa.int64())), retract, state, groups, count, summed)
    return found


def _aggregation(data: pa.Table, ops: np.ndarray, rank: np.ndarray | None, layout: TableLayout,
                 state: np.ndarray) -> pa.Table:
    rows, groups = _last_segments(ops, rank, data, layout.key)
    if not len(rows):
        return data.slice(0, 0)
    count = int(groups[-1]) + 1
    taken = data.take(pa.array(rows))
    retract = ops[rows] == RETRACT
    state = state[rows]
    firsts = pa.array(np.flatnonzero(np.append(True, groups[1:] != groups[:-1])))
    keys = {k.lower() for k in layout.key}
    stated = _aggregate_state(taken, retract, state, groups, count, layout)
    columns = []
    for name, column in zip(taken.column_names, taken.columns, strict=True):
        if name.lower() in keys:
            columns.append(column.take(firsts))
        elif name.lower() in stated:
            columns.append(stated[name.lower()])
        else:
            columns.append(_aggregate_column(column, retract, state, groups, count, layout.aggregate_of(name)))
    merged = pa.table(columns, schema=taken.schema)
    if layout.row_count is None:
        return merged
    # the one place a key whose rows all left (its count summed to 0) stops being live, on every path:
    # reads, the change feed (a delete) and compaction (the key is not written) all merge here
    return merged.filter(pc.fill_null(pc.greater(_column(merged, layout.row_count), 0), False))


def refuse_retractions(table: pa.Table, ops: pa.Array | np.ndarray | None, layout: TableLayout) -> None:
    """Raise LayoutError when ``table``'s changes retract values of a column whose function cannot take them
    back and that does not ignore retractions (what a writer checks before it commits)."""
    if layout.merge_engine != "aggregation" or ops is None:
        return
    kinds = ops.to_numpy(zero_copy_only=False) if isinstance(ops, pa.Array) else np.asarray(ops)
    retract = kinds == RETRACT
    if not retract.any():
        return
    # key columns are no inputs, and hidden state columns are sums, which take any retraction back
    exempt = {k.lower() for k in layout.key} | {n.lower() for n in layout.state_names}
    for name in table.column_names:
        aggregate = layout.aggregate_of(name)
        if name.lower() in exempt or aggregate.retracts or aggregate.ignore_retract:
            continue
        if table.column(name).filter(pa.array(retract)).null_count < int(retract.sum()):
            raise LayoutError(f"column {name} aggregates by {aggregate.function}, which cannot take back a "
                              f"retraction (a delete or an update's before-image); set "
                              f"'fields.{name}.ignore-retract' = 'true' to skip retractions")


def premerge(table: pa.Table, ops: pa.Array | None, layout: TableLayout) -> tuple[pa.Table, pa.Array | None]:
    """The changes of one commit, pre-merged as docs/changelog-tables.md wants them written.

    ``table`` holds the changes in write order (``ops``: their row kinds, None for all upserts). Under
    ``deduplicate`` each key keeps its last change; under ``partial-update`` a key's upserts merge
    (non-null fields overwrite) and a delete among them stays first (delete, then the merged upserts
    after it); under ``first-row`` a key keeps its first upsert after its last delete (and that delete);
    under ``aggregation`` and with a ``sequence.field`` nothing is merged. The returned ops are None when
    every row upserts.
    """
    if layout.sequence_field is not None or table.num_rows <= 1:
        return table, row_kinds_or_none(ops)
    if layout.merge_engine == "partial-update":
        return _premerge_partial(table, ops, layout.key)
    if layout.merge_engine == "aggregation":
        # every change is kept, in order (a count counts inputs); StreamWriter.write_changes has refused the
        # retractions a column cannot take back when they were written
        return table, row_kinds_or_none(ops)
    if layout.merge_engine == "first-row":
        return _premerge_first_row(table, ops, layout.key)
    keys = table.select(list(layout.key)).append_column("__row", pa.array(range(table.num_rows), pa.int64()))
    last = keys.group_by(list(layout.key), use_threads=False).aggregate([("__row", "max")])
    if last.num_rows == table.num_rows:
        return table, row_kinds_or_none(ops)
    rows = pc.sort_indices(last.column("__row_max"))
    rows = pc.take(last.column("__row_max"), rows)
    return table.take(rows), row_kinds_or_none(None if ops is None else ops.take(rows))


def row_kinds_or_none(ops: pa.Array | None) -> pa.Array | None:
    """``ops``, or None when every row upserts (the chunk then needs no row-kind column)."""
    if ops is None or not pc.any(pc.not_equal(ops, UPSERT)).as_py():
        return None
    return ops


def _premerge_partial(table: pa.Table, ops: pa.Array | None, key: Sequence[str]) -> tuple[pa.Table, pa.Array | None]:
    rows = table.to_pylist()
    kinds = [UPSERT] * len(rows) if ops is None else ops.to_pylist()
    # per key: (deleted in this commit, merged upsert or None), in order of the key's first change
    merged: dict[tuple[Any, ...], tuple[dict[str, Any] | None, dict[str, Any] | None]] = {}
    for row, kind in zip(rows, kinds, strict=True):
        ident = tuple(row[k] for k in key)
        deleted, upsert = merged.get(ident, (None, None))
        if kind == DELETE:
            merged[ident] = (row, None)
        elif upsert is None:
            merged[ident] = (deleted, row)
        else:
            merged[ident] = (deleted, {c: (v if v is not None else upsert[c]) for c, v in row.items()})
    out_rows: list[dict[str, Any]] = []
    out_ops: list[int] = []
    for deleted, upsert in merged.values():
        if deleted is not None:
            out_rows.append(deleted)
            out_ops.append(DELETE)
        if upsert is not None:
            out_rows.append(upsert)
            out_ops.append(UPSERT)
    result = pa.Table.from_pylist(out_rows, schema=table.schema)
    return result, row_kinds_or_none(pa.array(out_ops, pa.int8()))

def _last_deletes(kinds: np.ndarray, table: pa.Table, key: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For one commit's changes: the rows in key then write order, each one's key number, and per key the
    place (in that order) of its last delete, -1 for a key the commit does not delete."""
    rows, new_key = _sorted_by_key(table, None, key)
    key_id = np.cumsum(new_key) - 1
    places = np.arange(len(rows))
    deleted = kinds[rows] == DELETE
    last_delete = np.full(int(key_id[-1]) + 1, -1, np.int64)
    np.maximum.at(last_delete, key_id[deleted], places[deleted])
    return rows, key_id, last_delete


def _premerge_first_row(table: pa.Table, ops: pa.Array | None, key: Sequence[str]) -> tuple[pa.Table, pa.Array | None]:
    kinds = np.zeros(table.num_rows, np.int8) if ops is None else ops.to_numpy(zero_copy_only=False)
    rows, key_id, last_delete = _last_deletes(kinds, table, key)
    places = np.arange(len(rows))
    upserts = (kinds[rows] == UPSERT) & (places > last_delete[key_id])
    first_upsert = np.full(len(last_delete), len(rows), np.int64)
    np.minimum.at(first_upsert, key_id[upserts], places[upserts])
    deletes = rows[last_delete[last_delete >= 0]]
    firsts = rows[first_upsert[first_upsert < len(rows)]]
    out_ops = np.concatenate([np.full(len(deletes), DELETE, np.int8), np.full(len(firsts), UPSERT, np.int8)])
    return table.take(pa.array(np.concatenate([deletes, firsts]))), row_kinds_or_none(pa.array(out_ops))


# -- merging ---------------------------------------------------------------------------------------

def merge_changes(tables: Sequence[pa.Table], layout: TableLayout, sequences: Sequence[int] | None = None,
                  states: Sequence[bool] | None = None) -> pa.Table:
    """The live rows after applying ``tables`` (chunks' rows, in the snapshot's chunk order) to nothing.

    Each table holds rows of the same columns (``layout``'s key and sequence field among them) and,
    when it has any delete, ``OP_COLUMN``; ``sequences[i]`` is table i's chunk sequence (only the
    ``sequence.field`` needs it: it orders rows within one sequence). The answer has the tables'
    columns without ``OP_COLUMN``: one row per live key for a primary-key layout, every row for an
    append layout (whose position deletes :func:`read_state` applies). ``states[i]`` says table i holds
    merged rows (a compaction's output, an earlier state) rather than written changes: an aggregation
    table's ``count`` takes a state's value as it is, and counts each written value once. An aggregation
    table with hidden state columns (``layout.state``) has them in the answer, last, merged (:func:`with_state`:
    a table may lack them).
    """
    if not tables:
        return pa.table({})
    data, ops, lengths = _concat([with_state(t, layout) for t in tables])
    if not layout.is_keyed:
        return data
    if data.num_rows == 0:
        return data
    rank = _order(data, lengths, layout, sequences)
    if layout.partial_update:
        return _partial_update(data, ops, rank, layout.key)
    if layout.merge_engine == "aggregation":
        state = np.repeat(np.asarray(states if states is not None else [False] * len(tables), bool), lengths)
        return _aggregation(data, ops, rank, layout, state)
    if layout.merge_engine == "first-row":
        return _first_row(data, ops, rank, layout.key)
    return _deduplicate(data, ops, rank, layout.key)


class _Placed(Protocol):
    """What :func:`holds_state` reads of a chunk (a catalog Chunk, or a read task's note of one)."""

    @property
    def commit(self) -> int: ...

    @property
    def sequence(self) -> int | None: ...


def holds_state(chunk: _Placed) -> bool:
    """Whether ``chunk`` is a compaction's output (merged rows, which sort at the compaction's base cut,
    before the compaction's own number) rather than changes a writer wrote."""
    return bool(chunk.sequence and chunk.sequence < chunk.commit)


def is_compacted(chunks: Sequence[Chunk]) -> bool:
    """Whether ``chunks`` (a snapshot's) are one compaction's output and nothing else: one row per key,
    no deletes, so a read needs no merge. A compaction's chunks sort at its base cut, before the
    compaction's own number; every other chunk sorts at the commit that added it."""
    commits = {c.commit for c in chunks}
    return len(commits) == 1 and all(holds_state(c) for c in chunks)


def needs_merge(chunks: Sequence[Chunk], layout: TableLayout) -> bool:
    """Whether reading ``chunks`` takes more than reading each chunk's rows one after the other."""
    if not layout.is_keyed:
        return any(c.kind == DELETES_KIND for c in chunks)
    return bool(chunks) and not is_compacted(chunks)


def read_state(location: str, chunks: Sequence[Chunk], layout: TableLayout,
               read_chunk: Callable[[Chunk], pa.Table]) -> pa.Table:
    """The table's rows at the cut whose snapshot ``chunks`` are (in the snapshot's order).

    ``read_chunk(chunk)`` gives the chunk's rows under the wanted columns (which must include
    ``layout.merge_columns()``: a chunk without a hidden state column may leave it out) plus ``OP_COLUMN`` when
    the chunk has it. An aggregation table's answer holds its hidden state columns last (:func:`without_state`
    drops them). Snapshots that need no merge
    (an append table without deletes, a primary-key table that is one compaction's output) are
    read straight through.
    """
    data_chunks = [c for c in chunks if c.kind != DELETES_KIND]
    if not data_chunks:
        return pa.table({})
    if not needs_merge(chunks, layout):
        tables = [with_state(split_ops(read_chunk(c))[0], layout) for c in data_chunks]
        return _concat(tables)[0]
    if not layout.is_keyed:
        deleted = read_position_deletes(location, [c.path for c in chunks if c.kind == DELETES_KIND])
        return _concat([apply_position_deletes(split_ops(read_chunk(c))[0], deleted.get(c.path))
                        for c in data_chunks])[0]
    return merge_changes([read_chunk(c) for c in data_chunks], layout, [c.sequence or c.commit for c in data_chunks],
                         [holds_state(c) for c in data_chunks])


__all__ = [
    "LayoutError",
    "TableLayout",
    "apply_position_deletes",
    "holds_state",
    "is_compacted",
    "merge_changes",
    "needs_merge",
    "premerge",
    "read_state",
    "refuse_retractions",
    "row_kinds_or_none",
    "split_ops",
    "with_state",
    "without_state",
]
