"""Reading chunks as Arrow batches in the table's current schema: the executor side of every scan.

Three kinds of read task (docs/changelog-tables.md):

* :class:`ChunkPartition`: chunks read one after the other (append tables, with their position
  deletes applied; a primary-key table that is one compaction's output; streaming micro-batches);
* :class:`MergePartition`: one key range of a primary-key table, merged
  (``catalog_api.streams.merge``): every chunk whose key statistics overlap the range is read, its
  rows outside the range dropped, and the rest merged, so the tasks share the merge work;
* :class:`FeedPartition`: the change feed of commits, of one key range (primary-key tables) or of
  a few commits (append tables).

Every kind reads a columnar chunk's columns by field id (``catalog_api.schema.resolution``: the
file's Parquet field ids, or its schema version's), so renamed columns keep their data, a column
dropped and added again does not read the old one's, and a column the chunk lacks reads its
EXISTS_DEFAULT; event chunks are decoded likewise (``IdResolvedEvents``).
"""

from __future__ import annotations

import bisect
import functools
import math
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from cachetools import LRUCache
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
from catalog_api.schema.defaults import EXISTS_DEFAULT, exists_defaults
from catalog_api.schema.fieldids import has_field_ids
from catalog_api.schema.resolution import (
    ColumnMap,
    file_columns,
    file_fields,
    has_parquet_ids,
    plan,
    select_batch_columns,
)
from catalog_api.streams.changes import DELETES_KIND, OP_COLUMN, UPSERT
from catalog_api.streams.chunks import ENCODING_ID_KEY
from catalog_api.streams.merge import TableLayout
from registry.credentials import Credentials

from .arrow import conform_batch, empty_columns, records_to_batches, spark_arrow_schema
from .options import SourceOptions

#: Rows per Arrow batch read from a columnar chunk.
PARQUET_BATCH_ROWS = 131_072
#: The metadata columns of an append table's scan: the row's chunk and its position in it.
CHUNK_COLUMN, POS_COLUMN = "_chunk", "_pos"


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


def _ref(chunk: Chunk, shared: bool = False) -> ChunkRef:
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
        group.append(_ref(chunk))
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
        mine = [_ref(c, shared=not keys.holds(c.stats)) for c in chunks
                if c.kind != DELETES_KIND and keys.overlaps(c.stats)]
        if mine:
            partitions.append(MergePartition(len(partitions), mine, keys, layout, table_schema))
    return partitions


def _field(schema: StructType, name: str) -> StructField | None:
    lowered = name.lower()
    return next((f for f in schema.fields if f.name.lower() == lowered), None)


def with_merge_columns(schema: StructType, table_schema: StructType, layout: TableLayout) -> StructType:
    """``schema`` (a scan's columns) plus the key and sequence field columns it lacks, from the table's."""
    fields = list(schema.fields)
    have = {f.name.lower() for f in fields}
    for name in layout.merge_columns():
        found = _field(table_schema, name)
        if found is not None and found.name.lower() not in have:
            fields.append(found)
            have.add(found.name.lower())
    return StructType(fields)


_deserializers: dict[tuple[str, str, str, int, Credentials], Any] = {}
_deserializers_lock = threading.Lock()
_writer_structs: dict[tuple[str, str, str, int, Credentials], dict[str, Any] | None] = {}


def _writer_struct(options: SourceOptions, encoding_id: int) -> dict[str, Any] | None:
    """The Spark schema (with field ids) of the schema version an encoding id names (one lookup per worker
    process: encoding ids never change meaning); None for a schema no table could have."""
    from catalog_api.schema import to_struct
    from registry.errors import BadRequest
    from registry.ids import EncodingId

    key = (options.uri, options.scope, options.stream, encoding_id, options.credentials)
    with _deserializers_lock:
        if key in _writer_structs:
            return _writer_structs[key]
    info = options.registry_client().encoding_info(options.stream, EncodingId(encoding_id)).schema
    try:
        found: dict[str, Any] | None = to_struct(info.format.name, info.data, info.type)
    except BadRequest:
        found = None
    with _deserializers_lock:
        _writer_structs[key] = found
    return found


_id_resolvers: dict[tuple[str, str, str, int, Credentials], Any] = {}


def _id_resolved(options: SourceOptions) -> Any:
    """The table's events decoder (``IdResolvedEvents`` over its Deserializer): one per worker process."""
    from catalog_api.streams.reader import IdResolvedEvents

    deserializer = _deserializer(options)
    key = (options.uri, options.scope, options.stream, int(options.table_version.id), options.credentials)
    with _deserializers_lock:
        found = _id_resolvers.get(key)
        if found is None:
            found = _id_resolvers[key] = IdResolvedEvents(deserializer.client, options.stream,
                                                          deserializer.reader_schema, deserializer)
        return found


def _exists_defaults(schema: StructType) -> dict[str, Any]:
    """The value each column with an EXISTS_DEFAULT reads in rows written before it existed."""
    if not any(EXISTS_DEFAULT in f.metadata for f in schema.fields):
        return {}
    from catalog_api.schema.spark import parse_struct

    return exists_defaults(parse_struct(schema.jsonValue()))


def _deserializer(options: SourceOptions) -> Any:
    """A Deserializer of the table's group reading under its current schema (one per worker process)."""
    from registry.ids import SchemaId
    from registry.serde import Deserializer

    version = options.table_version
    # Keyed by credentials too: a worker serves queries of sessions that may be allowed different things.
    key = (options.uri, options.scope, options.stream, int(version.id), options.credentials)
    with _deserializers_lock:
        found = _deserializers.get(key)
        if found is None:
            registry = options.registry_client()
            reader_schema = registry.schema_by_id(options.stream, SchemaId(version.id))
            found = _deserializers[key] = Deserializer(registry, options.stream, reader_schema, as_dict=True)
        return found


class ChunkReader:
    """Reads chunks of one table under one Spark schema (the table's, pruned to the scan's columns).

    Created on the driver and pickled to the executors: it holds only options and the schema.
    """

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Every row of the partition, as batches of exactly Spark's Arrow schema."""
        if isinstance(partition, MergePartition):
            return self._merged(partition)
        if isinstance(partition, FeedPartition):
            return self._feed(partition)
        if isinstance(partition, ChunkPartition):
            return self._chunks(partition)
        return iter(())

    # -- chunks one after the other ----------------------------------------------------------------

    def _chunks(self, partition: ChunkPartition) -> Iterator[pa.RecordBatch]:
        target = spark_arrow_schema(self.schema)
        meta = [name for name in (CHUNK_COLUMN, POS_COLUMN) if target.get_field_index(name) >= 0]
        schema = StructType([f for f in self.schema.fields if f.name not in meta]) if meta else self.schema
        data = spark_arrow_schema(schema) if meta else target
        deleted: dict[str, pa.Array] = {}
        if partition.deletes:
            from catalog_api.streams.changes import read_position_deletes

            mine = {c.path for c in partition.chunks}
            deleted = {p: v for p, v in read_position_deletes(self.options.table_location, partition.deletes).items()
                       if p in mine}
        for chunk in partition.chunks:
            gone = deleted.get(chunk.path)
            offset = 0
            for batch, ops in self._batches(chunk, schema, data, with_ops=partition.upserts_only):
                rows = batch.num_rows
                keep = None
                if ops is not None and (ops != UPSERT).any():
                    keep = ops == UPSERT
                if gone is not None:
                    positions = gone.to_numpy()
                    positions = positions[(positions >= offset) & (positions < offset + rows)] - offset
                    if len(positions):
                        keep = np.ones(rows, dtype=bool) if keep is None else keep
                        keep[positions] = False
                if meta:
                    batch = _with_position(batch, chunk.path, offset)
                offset += rows
                if keep is not None:
                    batch = batch.filter(pa.array(keep))
                yield conform_batch(batch, target)

    def _batches(self, chunk: ChunkRef, schema: StructType, target: pa.Schema,
                 with_ops: bool = False) -> Iterator[tuple[pa.RecordBatch, np.ndarray | None]]:
        """The chunk's rows as batches of ``target`` (the Arrow form of ``schema``), with their row kinds
        when ``with_ops`` asks and the chunk has them."""
        if chunk.kind == "columnar":
            yield from self._columnar(chunk, schema, target, with_ops)
        elif chunk.kind == "events":
            yield from ((b, None) for b in self._events(chunk, schema, target))
        else:
            raise ValueError(f"chunk {chunk.path} is of kind {chunk.kind!r}, which holds no rows")

    def _columnar(self, chunk: ChunkRef, schema: StructType, target: pa.Schema,
                  with_ops: bool = False) -> Iterator[tuple[pa.RecordBatch, np.ndarray | None]]:
        from catalog_api import storage

        fs, root = storage.resolve(self.options.table_location)
        with fs.open_input_file(f"{root}/{chunk.path}") as source:
            parquet = pq.ParquetFile(source)
            columns = self._column_map(parquet.schema_arrow, schema)
            names = file_columns(columns)
            defaults = _exists_defaults(schema)
            op = OP_COLUMN if with_ops and OP_COLUMN in parquet.schema_arrow.names else None
            if not names and op is None:
                # No wanted column existed when this chunk was written (or none is wanted): rows only.
                for group in range(parquet.num_row_groups):
                    rows = parquet.metadata.row_group(group).num_rows
                    batch = empty_columns(rows)
                    yield (batch if not len(target) else conform_batch(batch, target, defaults)), None
                return
            for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=names + ([op] if op else [])):
                ops = None
                if op is not None:
                    ops = batch.column(op).fill_null(UPSERT).to_numpy(zero_copy_only=False)
                    batch = batch.drop_columns([op])
                batch = select_batch_columns(batch, columns)
                yield (conform_batch(batch, target, defaults) if len(target) else empty_columns(batch.num_rows)), ops

    def _column_map(self, file_schema: pa.Schema, schema: StructType) -> ColumnMap:
        """Which of a chunk's columns feed the scan's (``catalog_api.schema.resolution``): by field id when
        the scan's schema has ids (the file's own, or its schema version's), else by name and former name."""
        reader = schema.jsonValue()
        writer = None
        if has_field_ids(reader) and not has_parquet_ids(file_schema):
            raw = (file_schema.metadata or {}).get(ENCODING_ID_KEY)
            if raw is not None:
                writer = _writer_struct(self.options, int(raw))
        return plan(reader, file_fields(file_schema, writer), ignore_case=True)

    def _events(self, chunk: ChunkRef, schema: StructType, target: pa.Schema) -> Iterator[pa.RecordBatch]:
        from catalog_api.streams.chunks import read_event_chunk

        events: Iterable[memoryview] = read_event_chunk(self.options.table_location, chunk.path)
        if not len(target):
            yield empty_columns(sum(1 for _ in events))
            return
        exact = _id_resolved(self.options)
        # The commit lists the chunk's encoding ids; reading them off the events is for chunks it did not.
        encodings: Iterable[int] = chunk.encodings
        if not encodings:
            events = list(events)
            encodings = {int.from_bytes(e[1:5], "big") for e in events}
        if exact.needs_fixes(encodings):
            records = exact.decode(events)
        else:
            records = exact.deserializer.deserialize_many(bytes(e) for e in events)
        yield from records_to_batches(records, schema, target, self.options.format or "avro")

    def chunk_table(self, chunk: ChunkRef | Chunk, schema: StructType, keys: KeyRange | None = None) -> pa.Table:
        """Every row of a chunk under ``schema`` plus its row kinds (``OP_COLUMN``), optionally only the
        rows whose key lies in ``keys``: what the merge and the change feed work on.

        A chunk that the tasks of other key ranges read too is decoded once per Python worker
        (:func:`_shared_chunks`), sorted by the range's column, and each task slices its range out.
        """
        ref = chunk if isinstance(chunk, ChunkRef) else _ref(chunk, keys is not None and not keys.holds(chunk.stats))
        if keys is None or not ref.shared:
            table = self._chunk_table(ref, schema)
            mask = keys.mask(table) if keys is not None else None
            return table if mask is None else table.filter(mask)
        cache = _shared_chunks()
        entry = (self.options.table_location, ref.path, schema.json(), keys.column)
        table = cache.get(entry)
        if table is None:
            table = self._chunk_table(ref, schema)
            # A stable sort: the changes of one key keep their order of writing, which the merge needs.
            table = table.take(pc.array_sort_indices(table.column(keys.column), null_placement="at_end"))
            if table.nbytes <= cache.maxsize:
                cache[entry] = table
        return keys.slice_sorted(table)

    def _chunk_table(self, ref: ChunkRef, schema: StructType) -> pa.Table:
        target = spark_arrow_schema(schema)
        batches, kinds = [], []
        for batch, ops in self._batches(ref, schema, target, with_ops=True):
            batches.append(batch)
            kinds.append(ops if ops is not None else np.zeros(batch.num_rows, dtype=np.int8))
        table = pa.Table.from_batches(batches, schema=target)
        return table.append_column(OP_COLUMN, pa.array(np.concatenate(kinds) if kinds else np.zeros(0, np.int8),
                                                       pa.int8()))

    # -- primary-key tables ------------------------------------------------------------------------

    def _merged(self, partition: MergePartition) -> Iterator[pa.RecordBatch]:
        from catalog_api.streams.merge import merge_changes

        target = spark_arrow_schema(self.schema)
        schema = with_merge_columns(self.schema, partition.table_schema, partition.layout)
        tables = [self.chunk_table(c, schema, partition.keys) for c in partition.chunks]
        merged = merge_changes(tables, partition.layout, [c.sequence for c in partition.chunks])
        if not len(target):
            yield empty_columns(merged.num_rows)
            return
        for batch in merged.to_batches(max_chunksize=PARQUET_BATCH_ROWS):
            yield conform_batch(batch, target)

    # -- change feeds ------------------------------------------------------------------------------

    def _feed(self, partition: FeedPartition) -> Iterator[pa.RecordBatch]:
        from catalog_api.streams.changelog import FEED_COLUMNS, CommitChanges, change_feed

        target = spark_arrow_schema(self.schema)
        layout = partition.layout
        data = StructType([f for f in self.schema.fields if f.name not in FEED_COLUMNS])
        schema = with_merge_columns(data, partition.table_schema, layout)
        if not schema.fields:
            schema = StructType(partition.table_schema.fields[:1])  # COUNT(*): some column carries the rows
        keys = partition.keys

        def read_chunk(chunk: Chunk) -> pa.Table:
            if keys is not None and not keys.overlaps(chunk.stats):  # none of this task's keys
                return spark_arrow_schema(schema).empty_table().append_column(OP_COLUMN, pa.array([], pa.int8()))
            return self.chunk_table(chunk, schema, keys)

        def snapshot_at(cut: int) -> list[Chunk]:
            if cut == partition.after:
                return partition.state
            options = self.options
            return list(options.catalog_client().snapshot(options.scope, options.stream, cut=cut)[1])

        commits = [CommitChanges.of(c) for c in partition.commits]
        for table in change_feed(self.options.table_location, layout, read_chunk, snapshot_at, partition.after,
                                 commits, spark_arrow_schema(schema)):
            if not len(target):
                yield empty_columns(table.num_rows)
                continue
            for batch in table.to_batches(max_chunksize=PARQUET_BATCH_ROWS):
                yield conform_batch(batch, target)


#: The most Arrow bytes of decoded shared chunks a Python worker keeps (:func:`_shared_chunks`).
SHARED_CHUNK_BYTES = 128 << 20


@functools.cache
def _shared_chunks() -> LRUCache[tuple[str | None, str, str, str], pa.Table]:
    """This worker's decoded chunks that several read tasks of a merge need: (table location, chunk path,
    the scan's schema, the column of its key ranges) -> the chunk's rows and kinds sorted by that
    column, least recently used out first.

    A chunk whose keys spill out of a task's key range (in a table that is not compacted, every chunk
    written since the last compaction spans nearly all keys) is read by the task of every range it
    overlaps. Spark runs the tasks of a scan in a few reused workers, so a worker that keeps the
    decoded rows decodes such a chunk once instead of once per range. Committed chunk files never
    change (a rewrite writes a new file), so an entry never goes stale.
    """
    return LRUCache(maxsize=SHARED_CHUNK_BYTES, getsizeof=lambda table: table.nbytes)


def _with_position(batch: pa.RecordBatch, path: str, offset: int) -> pa.RecordBatch:
    """``batch`` (rows ``offset``... of the chunk ``path``) with the columns ``_chunk`` and ``_pos``."""
    rows = batch.num_rows
    arrays = [*batch.columns, pa.repeat(pa.scalar(path, pa.string()), rows),
              pa.array(np.arange(offset, offset + rows, dtype=np.int64))]
    return pa.RecordBatch.from_arrays(arrays, names=[*batch.schema.names, CHUNK_COLUMN, POS_COLUMN])
