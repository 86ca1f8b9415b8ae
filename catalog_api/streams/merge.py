"""The state of a table at a cut: the merge of its visible chunks (docs/changelog-tables.md, "Model").

Pure pyarrow and numpy: no Spark, no HTTP. Spark's read tasks, :class:`StreamReader`, the change
feed and compaction share it.

* An **append table** at a cut is every row of its visible data chunks minus the positions its
  visible ``deletes`` chunks name.
* A **primary-key table** at a cut is one row per live key: its changes sorted by (chunk
  ``sequence``, ``sequence.field`` value, chunk order, row position) and merged by the table's
  merge engine: ``deduplicate`` (the last change wins whole; a delete removes the key) or
  ``partial-update`` (the non-null fields of each upsert overwrite the previous row's; a delete
  removes the key and a later upsert starts from nothing).

The ``sequence.field`` orders changes within one sequence (one commit); larger wins, and a null
sorts before every value (so a change that carries a value beats one that does not, such as a
delete row whose non-key columns are null); ties keep the order of writing.

Everything is vectorised: one hash aggregation (deduplicate) or one sort (partial-update) over
the key columns, then ``take``; no Python loop runs per row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog_api.streams.changes import (
    DELETE,
    DELETES_KIND,
    MERGE_ENGINE,
    MERGE_ENGINES,
    OP_COLUMN,
    SEQUENCE_FIELD,
    UPSERT,
    primary_key,
    read_position_deletes,
)

if TYPE_CHECKING:
    from catalog_api.model import Chunk

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

    @classmethod
    def from_properties(cls, properties: dict[str, str] | None) -> TableLayout:
        """The layout a table's properties declare (no ``primary-key``: an append table)."""
        properties = properties or {}
        engine = (properties.get(MERGE_ENGINE) or "deduplicate").strip().lower()
        if engine not in MERGE_ENGINES:
            raise LayoutError(f"merge-engine must be one of {', '.join(MERGE_ENGINES)}, not {engine!r}")
        sequence = (properties.get(SEQUENCE_FIELD) or "").strip() or None
        return cls(primary_key(properties), sequence, engine)

    @property
    def is_keyed(self) -> bool:
        """Whether this is a primary-key table (else an append table)."""
        return bool(self.key)

    @property
    def partial_update(self) -> bool:
        """Whether non-null fields of an upsert overwrite the previous row's (else the whole row wins)."""
        return self.merge_engine == "partial-update"

    def merge_columns(self) -> tuple[str, ...]:
        """The table columns a merge needs besides the ones a reader wants: key and sequence field."""
        if not self.is_keyed:
            return ()
        return self.key + ((self.sequence_field,) if self.sequence_field else ())

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
    rows, new_key = _sorted_by_key(data, rank, key)
    kinds = ops[rows]
    after_delete = np.zeros(len(rows), dtype=bool)
    after_delete[1:] = kinds[:-1] == DELETE
    segment = np.cumsum(new_key | after_delete) - 1
    key_id = np.cumsum(new_key) - 1
    key_last = np.append(new_key[1:], True)
    last_segment = segment[key_last]           # per key: its last segment
    live = kinds[key_last] != DELETE            # per key: whether its last change upserts
    keep = (segment == last_segment[key_id]) & live[key_id]
    kept = rows[keep]                           # the upserts since each live key's last delete, in order
    if not len(kept):
        return data.slice(0, 0)
    kept_segment = segment[keep]
    starts = np.flatnonzero(np.append(True, kept_segment[1:] != kept_segment[:-1]))
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


# -- merging ---------------------------------------------------------------------------------------

def merge_changes(tables: Sequence[pa.Table], layout: TableLayout, sequences: Sequence[int] | None = None) -> pa.Table:
    """The live rows after applying ``tables`` (chunks' rows, in the snapshot's chunk order) to nothing.

    Each table holds rows of the same columns (``layout``'s key and sequence field among them) and,
    when it has any delete, ``OP_COLUMN``; ``sequences[i]`` is table i's chunk sequence (only the
    ``sequence.field`` needs it: it orders rows within one sequence). The answer has the tables'
    columns without ``OP_COLUMN``: one row per live key for a primary-key layout, every row for an
    append layout (whose position deletes :func:`read_state` applies).
    """
    if not tables:
        return pa.table({})
    data, ops, lengths = _concat(tables)
    if not layout.is_keyed:
        return data
    if data.num_rows == 0:
        return data
    rank = _order(data, lengths, layout, sequences)
    if layout.partial_update:
        return _partial_update(data, ops, rank, layout.key)
    return _deduplicate(data, ops, rank, layout.key)


def is_compacted(chunks: Sequence[Chunk]) -> bool:
    """Whether ``chunks`` (a snapshot's) are one compaction's output and nothing else: one row per key,
    no deletes, so a read needs no merge. A compaction's chunks sort at its base cut, before the
    compaction's own number; every other chunk sorts at the commit that added it."""
    commits = {c.commit for c in chunks}
    return len(commits) == 1 and all(c.sequence and c.sequence < c.commit for c in chunks)


def needs_merge(chunks: Sequence[Chunk], layout: TableLayout) -> bool:
    """Whether reading ``chunks`` takes more than reading each chunk's rows one after the other."""
    if not layout.is_keyed:
        return any(c.kind == DELETES_KIND for c in chunks)
    return bool(chunks) and not is_compacted(chunks)


def read_state(location: str, chunks: Sequence[Chunk], layout: TableLayout,
               read_chunk: Callable[[Chunk], pa.Table]) -> pa.Table:
    """The table's rows at the cut whose snapshot ``chunks`` are (in the snapshot's order).

    ``read_chunk(chunk)`` gives the chunk's rows under the wanted columns (which must include
    ``layout.merge_columns()``) plus ``OP_COLUMN`` when the chunk has it. Snapshots that need no merge
    (an append table without deletes, a primary-key table that is one compaction's output) are
    read straight through.
    """
    data_chunks = [c for c in chunks if c.kind != DELETES_KIND]
    if not data_chunks:
        return pa.table({})
    if not needs_merge(chunks, layout):
        tables = [split_ops(read_chunk(c))[0] for c in data_chunks]
        return _concat(tables)[0]
    if not layout.is_keyed:
        deleted = read_position_deletes(location, [c.path for c in chunks if c.kind == DELETES_KIND])
        return _concat([apply_position_deletes(split_ops(read_chunk(c))[0], deleted.get(c.path))
                        for c in data_chunks])[0]
    return merge_changes([read_chunk(c) for c in data_chunks], layout, [c.sequence or c.commit for c in data_chunks])


__all__ = [
    "LayoutError",
    "TableLayout",
    "apply_position_deletes",
    "is_compacted",
    "merge_changes",
    "needs_merge",
    "read_state",
    "split_ops",
]
