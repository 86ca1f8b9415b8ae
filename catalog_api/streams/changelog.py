"""Change feeds: the changes of the commits in (a, b] as rows (docs/changelog-tables.md, "Change feeds").

Each row is a row of the table's columns plus ``_change_type`` (``insert``, ``update_preimage``,
``update_postimage``, ``delete``), ``_commit_version`` (the commit number) and
``_commit_timestamp`` (its ``createdAt``, as a UTC timestamp). Compaction commits change no row
and are skipped.

* **Primary-key tables.** The feed starts from the merged state at a (:func:`merge.read_state`)
  and applies each commit's changes in change order: an upsert of a live key is an
  ``update_preimage`` (the key's previous row) and ``update_postimage`` (its new row: the upsert,
  or for ``partial-update`` the previous row with the upsert's non-null fields) pair, an upsert of
  a missing key an ``insert``, a delete of a live key a ``delete`` of its last row, a delete of a
  missing key nothing. An overwrite deletes every live key, then applies its chunks.
* **Append tables.** Rows of the chunks a commit adds are inserts; the rows its position deletes
  name, and the live rows of the chunks it removes (an overwrite, a delete of whole chunks), are
  deletes. An UPDATE is a delete and an insert.

Replaying the feed of (a, b] on the state at a gives the state at b. Everything is computed with
vectorised Arrow operations; a commit whose changes touch a key several times is applied in
rounds (the n-th change of every key in round n), and each round only looks at the keys the
commit touches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog_api.model import OVERWRITE, Chunk
from catalog_api.streams.merge import (
    TableLayout,
    _column,
    _concat,
    _order,
    _sorted_by_key,
    apply_position_deletes,
    merge_changes,
    read_state,
    split_ops,
    with_state,
    without_state,
)
from catalog_api.streams.row_kinds import DELETE, DELETES_KIND, OP_COLUMN, UPSERT, read_position_deletes

#: The columns a change feed adds to the table's.
CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP = "_change_type", "_commit_version", "_commit_timestamp"
FEED_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
#: Change types.
INSERT, UPDATE_PREIMAGE, UPDATE_POSTIMAGE, DELETED = "insert", "update_preimage", "update_postimage", "delete"
#: The Arrow types of the feed columns.
FEED_FIELDS = (pa.field(CHANGE_TYPE, pa.string(), nullable=False), pa.field(COMMIT_VERSION, pa.int64(), nullable=False),
               pa.field(COMMIT_TIMESTAMP, pa.timestamp("us", tz="UTC"), nullable=False))

_AT = "__streamcat_at"      # where a feed row sorts within its commit
_TYPE = "__streamcat_type"


@dataclass(frozen=True)
class CommitChanges:
    """One commit as a change feed needs it: its number, time, kind and the chunks it added and removed."""

    number: int
    created_at: int
    kind: str
    added: list[Chunk] = field(default_factory=list)
    removed: list[Chunk] = field(default_factory=list)

    @classmethod
    def of(cls, answer: dict[str, Any]) -> CommitChanges:
        """From one entry of ``CatalogClient.changes``."""
        from catalog_api.api.models import ChunkInfo

        def chunks(key: str) -> list[Chunk]:
            return [ChunkInfo.model_validate(c).to_domain() for c in answer.get(key) or ()]

        return cls(int(answer["number"]), int(answer["createdAt"]), str(answer.get("kind") or "append"),
                   chunks("chunks"), chunks("removed"))


# -- pieces ----------------------------------------------------------------------------------------

def _match(left: pa.Table, right: pa.Table, key: Sequence[str]) -> np.ndarray:
    """For each row of ``left``, the index of the row of ``right`` with the same key (-1: none).
    ``right``'s keys are unique."""
    if left.num_rows == 0 or right.num_rows == 0:
        return np.full(left.num_rows, -1, dtype=np.int64)
    names = [f"k{i}" for i in range(len(key))]
    lhs = pa.table([*(_column(left, k) for k in key), pa.array(np.arange(left.num_rows))], names=[*names, "l"])
    rhs = pa.table([*(_column(right, k) for k in key), pa.array(np.arange(right.num_rows))], names=[*names, "r"])
    joined = lhs.join(rhs, keys=names, join_type="inner", use_threads=False)
    found = np.full(left.num_rows, -1, dtype=np.int64)
    found[joined.column("l").to_numpy()] = joined.column("r").to_numpy()
    return found


def _tagged(table: pa.Table, kind: str, at: np.ndarray) -> pa.Table:
    return table.append_column(_TYPE, pa.array(np.full(table.num_rows, kind, dtype=object), pa.string())) \
                .append_column(_AT, pa.array(at, pa.int64()))


def _overlay(change: pa.Table, previous: pa.Table, key: Sequence[str]) -> pa.Table:
    """partial-update: each row of ``change`` with its null fields taken from the same row of ``previous``."""
    keys = {k.lower() for k in key}
    columns = []
    for name, column in zip(change.column_names, change.columns, strict=True):
        if name.lower() in keys or not column.null_count:
            columns.append(column)
        else:
            columns.append(pc.if_else(column.is_valid(), column, previous.column(name)))
    return pa.table(columns, schema=change.schema)


def _finish(parts: list[pa.Table], schema: pa.Schema, number: int, created_at: int) -> pa.Table:
    """The feed rows of one commit in change order, with the feed columns."""
    parts = [p for p in parts if p.num_rows]
    if not parts:
        rows = _tagged(schema.empty_table(), INSERT, np.zeros(0, np.int64))
    else:
        if any(not p.schema.equals(parts[0].schema) for p in parts):
            nullable = pa.schema([f.with_nullable(True) for f in parts[0].schema])
            parts = [p.cast(nullable) for p in parts]
        rows = pa.concat_tables(parts)
        rows = rows.take(pc.sort_indices(rows, sort_keys=[(_AT, "ascending")]))
    n = rows.num_rows
    kinds = rows.column(_TYPE)
    rows = rows.drop_columns([_TYPE, _AT])
    return (rows.append_column(FEED_FIELDS[0], kinds.cast(pa.string()))
                .append_column(FEED_FIELDS[1], pa.array(np.full(n, number, dtype=np.int64)))
                .append_column(FEED_FIELDS[2], pa.array(np.full(n, created_at * 1000, dtype=np.int64))
                               .cast(pa.timestamp("us", tz="UTC"))))


# -- primary-key tables ----------------------------------------------------------------------------

def _apply_round(state: pa.Table, changes: pa.Table, ops: np.ndarray, at: np.ndarray,
                 layout: TableLayout) -> tuple[pa.Table, list[pa.Table]]:
    """Apply changes of distinct keys to ``state``: (new state, tagged feed rows)."""
    found = _match(changes, state, layout.key)
    live = found >= 0
    upsert = ops == UPSERT
    parts = []
    gone = live & ~upsert
    parts.append(_tagged(state.take(pa.array(found[gone])), DELETED, at[gone] * 2))
    updated = live & upsert
    previous = state.take(pa.array(found[updated]))
    post = changes.filter(pa.array(updated))
    if layout.partial_update:
        post = _overlay(post, previous, layout.key)
    parts.append(_tagged(previous, UPDATE_PREIMAGE, at[updated] * 2))
    parts.append(_tagged(post, UPDATE_POSTIMAGE, at[updated] * 2 + 1))
    inserted = ~live & upsert
    new_rows = changes.filter(pa.array(inserted))
    parts.append(_tagged(new_rows, INSERT, at[inserted] * 2))
    keep = np.ones(state.num_rows, dtype=bool)
    keep[found[live]] = False
    state = pa.concat_tables([state.filter(pa.array(keep)), post, new_rows])
    return state, parts


def keyed_commit(state: pa.Table, tables: Sequence[pa.Table], sequences: Sequence[int] | None,
                 layout: TableLayout, *, overwrite: bool = False) -> tuple[pa.Table, list[pa.Table]]:
    """Apply one commit's change tables (its chunks' rows, in order) to ``state`` (one row per key,
    the same columns without ``OP_COLUMN``): (new state, the commit's feed rows tagged by kind).

    ``sequences`` matter only with a ``sequence.field`` (see :func:`merge.merge_changes`).
    """
    parts: list[pa.Table] = []
    if overwrite:
        parts.append(_tagged(state, DELETED, np.full(state.num_rows, -1, dtype=np.int64)))
        state = state.slice(0, 0)
    sequences = list(sequences) if sequences is not None else list(range(len(tables)))
    nonempty = [i for i, t in enumerate(tables) if t.num_rows]
    if not nonempty:
        return state, parts
    data, ops, lengths = _concat([with_state(tables[i], layout) for i in nonempty])
    sequences = [sequences[i] for i in nonempty]
    if state.num_columns and not data.schema.equals(state.schema):
        # delete rows leave even NOT NULL columns empty: compare and merge under nullable columns
        nullable = pa.schema([f.with_nullable(True) for f in state.schema])
        data, state = data.select(nullable.names).cast(nullable), state.cast(nullable)
    rank = _order(data, lengths, layout, sequences)
    at = rank if rank is not None else np.arange(data.num_rows, dtype=np.int64)
    rows, new_key = _sorted_by_key(data, rank, layout.key)
    # the n-th change of each key goes in round n
    starts = np.flatnonzero(new_key)
    run = np.arange(len(rows)) - np.repeat(starts, np.diff(np.append(starts, len(rows))))
    touched = _match(state, data.take(pa.array(rows[new_key])), layout.key) >= 0
    untouched, current = state.filter(pa.array(~touched)), state.filter(pa.array(touched))
    if layout.merge_engine in ("aggregation", "first-row"):
        # the touched keys' rows before and after the commit: a key's aggregate (or first row) is its
        # earlier state merged with the commit's changes, and a change that moves nothing is no feed row
        changes = data.append_column(pa.field(OP_COLUMN, pa.int8()), pa.array(ops, pa.int8()))
        merged = merge_changes([current, changes], layout, [min(sequences) - 1, max(sequences)], [True, False])
        current, parts_of_commit = _diff(current, merged.select(current.column_names), layout, changed_only=True)
        parts.extend(parts_of_commit)
        return pa.concat_tables([untouched, current]), parts
    for n in range(int(run.max()) + 1):
        picked = np.sort(rows[run == n])
        current, feed = _apply_round(current, data.take(pa.array(picked)), ops[picked], at[picked], layout)
        parts.extend(feed)
    return pa.concat_tables([untouched, current]), parts


# -- append tables ---------------------------------------------------------------------------------

def append_commit(deleted: Sequence[pa.Table], inserted: Sequence[pa.Table]) -> list[pa.Table]:
    """The tagged feed rows of an append table's commit: the rows it deletes, then the ones it adds."""
    parts = [_tagged(split_ops(t)[0], DELETED, np.zeros(t.num_rows, dtype=np.int64)) for t in deleted]
    parts += [_tagged(split_ops(t)[0], INSERT, np.ones(t.num_rows, dtype=np.int64)) for t in inserted]
    return parts


# -- the feed --------------------------------------------------------------------------------------

ReadChunk = Callable[[Chunk], pa.Table]
SnapshotAt = Callable[[int], Sequence[Chunk]]


def change_feed(location: str, layout: TableLayout, read_chunk: ReadChunk, snapshot_at: SnapshotAt,
                after: int, commits: Sequence[CommitChanges], schema: pa.Schema) -> Iterator[pa.Table]:
    """The feed of ``commits`` (the non-compaction commits in (``after``, b], oldest first): one table per
    commit, of ``schema`` (the columns ``read_chunk`` gives, without ``OP_COLUMN``) less an aggregation table's
    hidden state columns (``read_chunk`` gives them when the chunk has them; the feed never shows them) plus the
    feed columns.

    ``read_chunk(chunk)`` reads a chunk's rows (for a primary-key table the key and sequence field must be
    among them; a caller may also filter them to a share of the keys, and the feed is then that share's);
    ``snapshot_at(cut)`` gives the chunks visible at a cut.
    """
    if layout.is_keyed:
        yield from _keyed_feed(location, layout, read_chunk, snapshot_at, after, commits, schema)
    else:
        yield from _append_feed(location, read_chunk, snapshot_at, commits, schema)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    table = split_ops(table)[0]
    if table.num_columns == 0:
        return schema.empty_table()
    return table if table.schema.equals(schema) else table.select(schema.names).cast(schema)


def _keyed_feed(location: str, layout: TableLayout, read_chunk: ReadChunk, snapshot_at: SnapshotAt, after: int,
                commits: Sequence[CommitChanges], schema: pa.Schema) -> Iterator[pa.Table]:
    # the state carries an aggregation table's hidden state columns (the merge needs them); the feed shows none
    inner = with_state(schema.empty_table(), layout).schema
    shown = without_state(schema.empty_table(), layout).schema
    state = _conform(read_state(location, snapshot_at(after), layout, read_chunk), inner) if after > 0 \
        else inner.empty_table()
    for commit in commits:
        data = [c for c in commit.added if c.kind != DELETES_KIND]
        if commit.removed and commit.kind != OVERWRITE:
            # chunks removed by something other than an overwrite: compare whole states, key by key
            after_state = _conform(read_state(location, snapshot_at(commit.number), layout, read_chunk), inner)
            state, parts = _diff(state, after_state, layout)
        else:
            tables = [read_chunk(c) for c in data]
            state, parts = keyed_commit(state, tables, [c.sequence or c.commit for c in data], layout,
                                        overwrite=commit.kind == OVERWRITE)
        yield _finish([without_state(p, layout) for p in parts], shown, commit.number, commit.created_at)


def _differs(left: pa.Table, right: pa.Table, layout: TableLayout) -> np.ndarray:
    """Row by row, whether two tables of the same columns differ in any value (null equal to null) of a column
    the feed shows (not a hidden state column: a change of state alone is no change a reader sees)."""
    differs = np.zeros(left.num_rows, dtype=bool)
    left, right = without_state(left, layout), without_state(right, layout)
    for a, b in zip(left.columns, right.columns, strict=True):
        unequal = pc.fill_null(pc.not_equal(a, b), True)
        both_null = pc.and_(a.is_null(), b.is_null())
        differs |= pc.and_not(unequal, both_null).to_numpy(zero_copy_only=False)
    return differs


def _diff(before: pa.Table, after: pa.Table, layout: TableLayout, *,
          changed_only: bool = False) -> tuple[pa.Table, list[pa.Table]]:
    """The feed rows that turn ``before`` into ``after`` key by key (with ``changed_only``, no update pair for
    a key whose row stayed the same)."""
    found = _match(after, before, layout.key)
    kept = found >= 0
    if changed_only and kept.any():
        same = np.zeros(after.num_rows, dtype=bool)
        same[kept] = ~_differs(after.filter(pa.array(kept)), before.take(pa.array(found[kept])), layout)
        kept &= ~same
        found = np.where(same, -2, found)
    gone = np.ones(before.num_rows, dtype=bool)
    gone[found[kept]] = False
    if changed_only:
        gone[_match(after, before, layout.key)[found == -2]] = False
    inserted = found == -1
    at = np.arange(after.num_rows, dtype=np.int64) * 2
    parts = [_tagged(before.filter(pa.array(gone)), DELETED, np.full(int(gone.sum()), -1, dtype=np.int64)),
             _tagged(before.take(pa.array(found[kept])), UPDATE_PREIMAGE, at[kept]),
             _tagged(after.filter(pa.array(kept)), UPDATE_POSTIMAGE, at[kept] + 1),
             _tagged(after.filter(pa.array(inserted)), INSERT, at[inserted])]
    return after, parts


def _append_feed(location: str, read_chunk: ReadChunk, snapshot_at: SnapshotAt, commits: Sequence[CommitChanges],
                 schema: pa.Schema) -> Iterator[pa.Table]:
    for commit in commits:
        deleted: list[pa.Table] = []
        deletes = [c.path for c in commit.added if c.kind == DELETES_KIND]
        removed = [c for c in commit.removed if c.kind != DELETES_KIND]
        if deletes or removed:
            visible = {c.path: c for c in snapshot_at(commit.number - 1)}
            named = read_position_deletes(location, deletes)
            earlier = read_position_deletes(location, [p for p, c in visible.items() if c.kind == DELETES_KIND]) \
                if removed else {}
            for chunk in removed:   # every row of the chunk still live before this commit
                deleted.append(apply_position_deletes(read_chunk(chunk), earlier.get(chunk.path)))
            for path, positions in named.items():
                source = visible.get(path)
                if source is None:
                    raise LookupError(f"the position deletes of commit {commit.number} name {path}, which was not "
                                      "visible before it")
                deleted.append(read_chunk(source).take(positions))
        inserted = [read_chunk(c) for c in commit.added if c.kind != DELETES_KIND]
        parts = append_commit([_conform(t, schema) for t in deleted], [_conform(t, schema) for t in inserted])
        yield _finish(parts, schema, commit.number, commit.created_at)


def replay(state: pa.Table, feed: pa.Table, layout: TableLayout) -> pa.Table:
    """The state a feed leads to from ``state`` (what a consumer of the feed does; the feed's oracle).

    Primary-key tables: by key. Append tables: rows are matched by value, as a consumer without row
    ids would (a delete removes one equal row).
    """
    if feed.num_rows == 0:
        return state
    kinds = feed.column(CHANGE_TYPE)
    rows = feed.drop_columns(list(FEED_COLUMNS))
    if layout.is_keyed:
        changes = rows.filter(pc.not_equal(kinds, UPDATE_PREIMAGE))
        ops = pc.if_else(pc.equal(kinds.filter(pc.not_equal(kinds, UPDATE_PREIMAGE)), DELETED), DELETE, UPSERT)
        changes = changes.append_column("_streamcat_op", ops.cast(pa.int8()))
        return merge_changes([state.append_column("_streamcat_op", pa.array(np.zeros(state.num_rows, np.int8))),
                              changes], TableLayout(layout.key))
    remaining = state.to_pylist()
    for kind, row in zip(kinds.to_pylist(), rows.to_pylist(), strict=True):
        if kind in (INSERT, UPDATE_POSTIMAGE):
            remaining.append(row)
        else:
            remaining.remove(row)
    return pa.Table.from_pylist(remaining, schema=state.schema)


__all__ = [
    "CHANGE_TYPE",
    "COMMIT_TIMESTAMP",
    "COMMIT_VERSION",
    "DELETED",
    "FEED_COLUMNS",
    "FEED_FIELDS",
    "INSERT",
    "UPDATE_POSTIMAGE",
    "UPDATE_PREIMAGE",
    "CommitChanges",
    "append_commit",
    "change_feed",
    "keyed_commit",
    "replay",
]
