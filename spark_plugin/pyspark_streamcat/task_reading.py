"""Reading chunks as Arrow batches in the table's current schema: what Spark's executors run for every read
task the driver planned (:mod:`pyspark_streamcat.scan_planning`).

Every kind of task reads a columnar chunk's columns by field id (``catalog_api.schema.resolution``: the
file's Parquet field ids, or its schema version's), so renamed columns keep their data, a column
dropped and added again does not read the old one's, and a column the chunk lacks reads its
EXISTS_DEFAULT; event chunks are decoded likewise (``IdResolvedEvents``). An aggregation table's hidden state
columns (``with_merge_columns`` adds them to a merge's or a change feed's schema, without field ids) are read
by name, null in a chunk without them; the merge fills and aggregates them, and no batch Spark gets holds them
unless its schema asks.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from cachetools import LRUCache
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import (
    StructType,
)

from catalog_api.model import Chunk
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
from catalog_api.streams.chunks import ENCODING_ID_KEY
from catalog_api.streams.row_kinds import OP_COLUMN, UPSERT
from registry.credentials import Credentials

from .arrow import conform_batch, empty_columns, records_to_batches, spark_arrow_schema
from .options import SourceOptions
from .scan_planning import (
    ChunkPartition,
    ChunkRef,
    FeedPartition,
    KeyRange,
    MergePartition,
    chunk_ref,
    with_merge_columns,
)

#: Rows per Arrow batch read from a columnar chunk.
PARQUET_BATCH_ROWS = 131_072
#: The metadata columns of an append table's scan: the row's chunk and its position in it.
CHUNK_COLUMN, POS_COLUMN = "_chunk", "_pos"


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
            from catalog_api.streams.row_kinds import read_position_deletes

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
            columns = self._column_map(parquet.schema_arrow, schema, chunk.encodings)
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

    def _column_map(self, file_schema: pa.Schema, schema: StructType, recorded: tuple[int, ...] = ()) -> ColumnMap:
        """Which of a chunk's columns feed the scan's (``catalog_api.schema.resolution``): by field id when
        the scan's schema has ids (the file's own, or its schema version's: the footer's encoding id, else the
        one its commit records, ``recorded``), else by name and former name."""
        reader = schema.jsonValue()
        writer = None
        if has_field_ids(reader) and not has_parquet_ids(file_schema):
            raw = (file_schema.metadata or {}).get(ENCODING_ID_KEY)
            if raw is not None or len(recorded) == 1:
                writer = _writer_struct(self.options, int(raw) if raw is not None else recorded[0])
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
        shared = keys is not None and not isinstance(chunk, ChunkRef) and not keys.holds(chunk.stats)
        ref = chunk if isinstance(chunk, ChunkRef) else chunk_ref(chunk, shared)
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
        from catalog_api.streams.merge import holds_state, merge_changes

        target = spark_arrow_schema(self.schema)
        schema = with_merge_columns(self.schema, partition.table_schema, partition.layout)
        tables = [self.chunk_table(c, schema, partition.keys) for c in partition.chunks]
        merged = merge_changes(tables, partition.layout, [c.sequence for c in partition.chunks],
                               [holds_state(c) for c in partition.chunks])
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
