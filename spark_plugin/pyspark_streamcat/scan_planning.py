"""The plan of a scan, made on the driver: which chunks a scan reads (pruned by partition and statistics), how
they are split into read tasks, and the task descriptions (``InputPartition``) handed to the executors, whose
side is :mod:`pyspark_streamcat.task_reading`.

Three kinds of read task (docs/changelog-tables.md):

* :class:`ChunkPartition`: chunks read one after the other (append tables, with their position
  deletes applied; a primary-key table that is one compaction's output; streaming micro-batches);
* :class:`MergePartition`: one key range of a primary-key table, merged
  (``catalog_api.streams.merge``): every chunk whose key statistics overlap the range is read, its
  rows outside the range dropped, and the rest merged, so the tasks share the merge work;
* :class:`FeedPartition`: the change feed of commits, of one key range (primary-key tables) or of
  a few commits (append tables).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import (
    ByteType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from catalog_api.model import Chunk
from catalog_api.partitioning.pruning import ChunkPruner, may_match
from catalog_api.partitioning.spec import PartitionSpec, SpecId
from catalog_api.streams.merge import TableLayout
from catalog_api.streams.row_kinds import DELETES_KIND


@dataclass(frozen=True)
class ChunkRef:
    """What a read task needs to know of one chunk."""

    path: str
    kind: str
    rows: int
    commit: int
    sequence: int = 0
    #: the encoding ids of the chunk's events, as its commit lists them
    encodings: tuple[int, ...] = ()
    #: whether other read tasks of the same scan read this chunk too (its keys spill out of this task's range)
    shared: bool = False


def chunk_ref(chunk: Chunk, shared: bool = False) -> ChunkRef:
    """What a read task needs of ``chunk``; ``shared``: other tasks of the scan read it too."""
    return ChunkRef(chunk.path, chunk.kind, chunk.event_count, chunk.commit, chunk.sequence or chunk.commit,
                    tuple(chunk.encoding_ids), shared)


class ChunkPartition(InputPartition):
    """One read task: a few chunks, read one after the other.

    ``deletes``: the position-deletes chunks visible at the cut (append tables); ``upserts_only``: drop
    the delete rows of change chunks (a streaming read of a primary-key table).
    """

    def __init__(self, index: int, chunks: Sequence[ChunkRef], deletes: Sequence[str] = (),
                 upserts_only: bool = False) -> None:
        super().__init__(index)
        self.chunks = list(chunks)
        self.deletes = list(deletes)
        self.upserts_only = upserts_only

    def __repr__(self) -> str:
        return f"ChunkPartition({self.value}, {len(self.chunks)} chunks)"


@dataclass(frozen=True)
class KeyRange:
    """Rows whose first key column lies in [low, high) (None: unbounded)."""

    column: str
    low: Any = None
    high: Any = None

    def mask(self, table: pa.Table) -> pa.Array | None:
        """Which rows of ``table`` lie in the range (None: all)."""
        if self.low is None and self.high is None:
            return None
        column = table.column(self.column)
        conditions = []
        if self.low is not None:
            conditions.append(pc.greater_equal(column, pa.scalar(self.low, column.type)))
        if self.high is not None:
            conditions.append(pc.less(column, pa.scalar(self.high, column.type)))
        mask = conditions[0] if len(conditions) == 1 else pc.and_(*conditions)
        return pc.fill_null(mask, False)

    def slice_sorted(self, table: pa.Table) -> pa.Table:
        """The rows of ``table``, sorted by the range's column, that lie in the range: one zero-copy slice
        (the rows :meth:`mask` keeps, which are consecutive in such a table)."""
        mask = self.mask(table)
        if mask is None:
            return table
        kept = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
        return table.slice(int(kept[0]), int(kept[-1] - kept[0] + 1)) if len(kept) else table.slice(0, 0)

    def overlaps(self, stats: dict[str, Any] | None) -> bool:
        """Whether a chunk of these statistics may hold a key in the range."""
        bounds = ((stats or {}).get("columns") or {}).get(self.column) or {}
        if "min" not in bounds or "max" not in bounds:
            return True
        try:
            return not ((self.high is not None and bounds["min"] >= self.high)
                        or (self.low is not None and bounds["max"] < self.low))
        except TypeError:
            return True

    def holds(self, stats: dict[str, Any] | None) -> bool:
        """Whether every key of a chunk of these statistics lies in the range (no other task needs it)."""
        if self.low is None and self.high is None:
            return True
        bounds = ((stats or {}).get("columns") or {}).get(self.column) or {}
        if "min" not in bounds or "max" not in bounds:
            return False
        try:
            return not ((self.low is not None and bounds["min"] < self.low)
                        or (self.high is not None and bounds["max"] >= self.high))
        except TypeError:
            return False


class MergePartition(InputPartition):
    """One read task of a primary-key table: the merge of the keys in ``keys`` over ``chunks``."""

    def __init__(self, index: int, chunks: Sequence[ChunkRef], keys: KeyRange, layout: TableLayout,
                 table_schema: StructType) -> None:
        super().__init__(index)
        self.chunks = list(chunks)
        self.keys = keys
        self.layout = layout
        self.table_schema = table_schema

    def __repr__(self) -> str:
        return f"MergePartition({self.value}, {self.keys.low!r}..{self.keys.high!r}, {len(self.chunks)} chunks)"


class FeedPartition(InputPartition):
    """One task of a change feed: the commits ``commits`` after the cut ``after`` (whose snapshot is
    ``state``), for the keys in ``keys`` (primary-key tables; None: every row)."""

    def __init__(self, index: int, after: int, state: Sequence[Chunk], commits: Sequence[Any],
                 layout: TableLayout, table_schema: StructType, keys: KeyRange | None = None) -> None:
        super().__init__(index)
        self.after = after
        self.state = list(state)
        self.commits = list(commits)
        self.layout = layout
        self.table_schema = table_schema
        self.keys = keys

    def __repr__(self) -> str:
        return f"FeedPartition({self.value}, after {self.after}, {len(self.commits)} commits)"


def _filter_columns(condition: dict[str, Any]) -> set[str]:
    if condition.get("op") in ("and", "or"):
        return _filter_columns(condition["left"]) | _filter_columns(condition["right"])
    return {str(condition.get("column", "")).lower()}


def prune(chunks: Sequence[Chunk], filters: Sequence[dict[str, Any]], key: Sequence[str] = (),
          specs: Mapping[SpecId, PartitionSpec] | None = None,
          schema: dict[str, Any] | None = None) -> list[Chunk]:
    """The chunks whose statistics, and (given the table's ``specs`` by id and current ``schema``) whose
    partitions, do not rule the filters out: for the reads the catalog's plan does not prune (streams).

    A primary-key table's chunk may be skipped by its statistics only through filters on key columns: a
    chunk whose other columns fail a filter may still hold the change that replaces (or deletes) a row
    that passes. Its partition may rule out any filter (its spec's sources are key columns, so all of a
    key's changes are in one partition).
    """
    by_stats = list(filters)
    if key:
        names = {k.lower() for k in key}
        by_stats = [f for f in filters if _filter_columns(f) <= names]
    kept = [c for c in chunks if may_match(by_stats, c.stats, c.event_count)]
    if not specs or schema is None or not filters:
        return kept
    pruner = ChunkPruner(filters, specs, schema)
    return [c for c in kept if pruner.may_match(c, by_stats=False)]


def plan_partitions(chunks: Sequence[Chunk], rows_per_partition: int, *, upserts_only: bool = False,
                    with_deletes: bool = True) -> list[ChunkPartition]:
    """Chunks grouped into read tasks of about ``rows_per_partition`` rows, in commit order.

    A big chunk is a task of its own; small ones (a streaming writer's, a producer's) are
    read together so that a thousand tiny commits do not become a thousand tasks. Position-deletes
    chunks are read by every task (each keeps the positions of its own chunks).
    """
    partitions: list[ChunkPartition] = []
    group: list[ChunkRef] = []
    rows = 0
    deletes = [c.path for c in chunks if c.kind == DELETES_KIND] if with_deletes else []
    for chunk in chunks:
        if chunk.kind == DELETES_KIND:
            continue
        group.append(chunk_ref(chunk))
        rows += chunk.event_count
        if rows >= rows_per_partition:
            partitions.append(ChunkPartition(len(partitions), group, deletes, upserts_only))
            group, rows = [], 0
    if group:
        partitions.append(ChunkPartition(len(partitions), group, deletes, upserts_only))
    return partitions


_RANGED_TYPES = (ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, StringType)


def key_ranges(chunks: Sequence[Chunk], column: str, kind: DataType | None, rows_per_partition: int) -> list[KeyRange]:
    """Ranges of the first key column that split the rows of ``chunks`` into shares of about
    ``rows_per_partition`` rows, estimated from the chunks' statistics (:class:`_KeySpread`).

    A cut goes to the start of a chunk of at least a quarter of a share when one is within half a share
    of the even place, so that a chunk lying between two cuts (the sorted chunks of a bulk load) is read
    by one task, not two; tasks are then a little less even. One range covering everything when the statistics cannot
    tell (a type without order statistics, chunks without them) or the rows fit one share.
    """
    everything = [KeyRange(column)]
    total = sum(c.event_count for c in chunks if c.kind != DELETES_KIND)
    wanted = math.ceil(total / max(1, rows_per_partition))
    if wanted <= 1 or not isinstance(kind, _RANGED_TYPES):
        return everything
    bounds = [((c.stats.get("columns") or {}).get(column) or {}, c.event_count) for c in chunks
              if c.kind != DELETES_KIND and c.event_count]
    if any(b.get("min") is None or b.get("max") is None for b, _ in bounds):
        return everything
    spread = _KeySpread([b["min"] for b, _ in bounds], [b["max"] for b, _ in bounds], [n for _, n in bounds],
                        kind)
    step = total / wanted
    # where a cut may snap to: the starts of chunks big enough for a second read to matter
    starts = sorted({b["min"] for b, n in bounds if n >= step / 4})
    below_starts = np.array([spread.below(s) for s in starts])
    cuts: list[Any] = []
    for _ in range(wanted - 1):
        done = spread.below(cuts[-1]) if cuts else 0.0
        target = done + step
        distance = np.where(below_starts > done, np.abs(below_starts - target), np.inf)
        nearest = int(np.argmin(distance)) if len(starts) else -1
        cut = starts[nearest] if nearest >= 0 and distance[nearest] <= step / 2 else spread.value_at(target)
        if cut is None or (cuts and cut <= cuts[-1]) or spread.below(cut) >= total:
            break
        cuts.append(cut)
    if not cuts:
        return everything
    edges = [None, *cuts, None]
    return [KeyRange(column, edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


class _KeySpread:
    """How many rows of some chunks have a key below a value, estimated from each chunk's minimum and
    maximum key: a numeric key is taken as spread evenly over [min, max] (all at min when the two
    are equal), a string key as half at each end."""

    def __init__(self, lows: list[Any], highs: list[Any], rows: list[int], kind: DataType) -> None:
        self.lows, self.highs, self.kind = lows, highs, kind
        self.numeric = not isinstance(kind, StringType)
        self._rows = np.asarray(rows, dtype=np.float64)
        if self.numeric:
            self._low = np.asarray(lows, dtype=np.float64)
            self._width = np.asarray(highs, dtype=np.float64) - self._low
        else:  # each end sorted, with the rows below each of its positions
            self._candidates = sorted({*lows, *highs})
            self._ends = []
            for ends in (lows, highs):
                order = sorted(range(len(ends)), key=ends.__getitem__)
                halves = np.concatenate([[0.0], np.cumsum(self._rows[order] / 2)])
                self._ends.append(([ends[i] for i in order], halves))

    def below(self, value: Any) -> float:
        """The estimated rows whose key is less than ``value``."""
        if not self.numeric:
            return float(sum(halves[bisect.bisect_left(ends, value)] for ends, halves in self._ends))
        spread = np.clip((float(value) - self._low) / np.where(self._width > 0, self._width, 1.0), 0.0, 1.0)
        share = np.where(self._width > 0, spread, self._low < float(value))
        return float(self._rows @ share)

    def value_at(self, rows: float) -> Any:
        """The least key with at least ``rows`` rows below it (None: there are fewer rows)."""
        if not self.numeric:
            at = bisect.bisect_left(self._candidates, rows, key=self.below)
            return self._candidates[at] if at < len(self._candidates) else None
        low, high = min(self.lows), max(self.highs)
        if isinstance(self.kind, (ByteType, ShortType, IntegerType, LongType)):
            high = int(high) + 1
            if self.below(high) < rows:
                return None
            while low < high:  # the least integer with enough rows below it
                middle = (low + high) // 2
                low, high = (middle + 1, high) if self.below(middle) < rows else (low, middle)
            return low
        low, high = float(low), math.nextafter(float(high), math.inf)
        if self.below(high) < rows:
            return None
        for _ in range(100):
            middle = (low + high) / 2
            if middle in (low, high):
                break
            low, high = (middle, high) if self.below(middle) < rows else (low, middle)
        return high


def plan_merge(chunks: Sequence[Chunk], layout: TableLayout, table_schema: StructType,
               rows_per_partition: int) -> list[MergePartition]:
    """The read tasks of a primary-key table that needs a merge: one per key range."""
    column = _field(table_schema, layout.key[0])
    kind = column.dataType if column is not None else None
    name = column.name if column is not None else layout.key[0]
    partitions: list[MergePartition] = []
    for keys in key_ranges(chunks, name, kind, rows_per_partition):
        mine = [chunk_ref(c, shared=not keys.holds(c.stats)) for c in chunks
                if c.kind != DELETES_KIND and keys.overlaps(c.stats)]
        if mine:
            partitions.append(MergePartition(len(partitions), mine, keys, layout, table_schema))
    return partitions


def _field(schema: StructType, name: str) -> StructField | None:
    lowered = name.lower()
    return next((f for f in schema.fields if f.name.lower() == lowered), None)


#: The Spark types of hidden state columns (``TableLayout.state``).
_STATE_TYPES: dict[str, DataType] = {"double": DoubleType(), "long": LongType()}


def with_merge_columns(schema: StructType, table_schema: StructType, layout: TableLayout) -> StructType:
    """``schema`` (a scan's columns) plus the key, sequence field and row count columns it lacks, from the
    table's, then the hidden state columns of an aggregation table (nullable, without field ids: chunks hold
    them by name; the merge needs them, and no reader is shown them)."""
    fields = list(schema.fields)
    have = {f.name.lower() for f in fields}
    hidden = dict(layout.state)
    for name in layout.merge_columns():
        found = _field(table_schema, name) if name not in hidden else StructField(name, _STATE_TYPES[hidden[name]])
        if found is not None and found.name.lower() not in have:
            fields.append(found)
            have.add(found.name.lower())
    return StructType(fields)
