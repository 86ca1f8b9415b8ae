"""Reading chunks as Arrow batches in the table's current schema: the executor side of every scan."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from catalog_api.model import Chunk
from registry.credentials import Credentials

from .arrow import conform_batch, empty_columns, records_to_batches, spark_arrow_schema
from .options import SourceOptions
from .pruning import may_match

#: Rows per Arrow batch read from a columnar chunk.
PARQUET_BATCH_ROWS = 131_072


@dataclass(frozen=True)
class ChunkRef:
    """What a read task needs to know of one chunk."""

    path: str
    kind: str
    rows: int
    commit: int


class ChunkPartition(InputPartition):
    """One read task: a few chunks, read one after the other."""

    def __init__(self, index: int, chunks: Sequence[ChunkRef]) -> None:
        super().__init__(index)
        self.chunks = list(chunks)

    def __repr__(self) -> str:
        return f"ChunkPartition({self.value}, {len(self.chunks)} chunks)"


def prune(chunks: Sequence[Chunk], filters: Sequence[dict[str, Any]]) -> list[Chunk]:
    """The chunks whose statistics do not rule the filters out."""
    return [c for c in chunks if may_match(filters, c.stats, c.event_count)]


def plan_partitions(chunks: Sequence[Chunk], rows_per_partition: int) -> list[ChunkPartition]:
    """Chunks grouped into read tasks of about ``rows_per_partition`` rows, in commit order.

    A big chunk is a task of its own; small ones (a streaming writer's, a producer's) are
    read together so that a thousand tiny commits do not become a thousand tasks.
    """
    partitions: list[ChunkPartition] = []
    group: list[ChunkRef] = []
    rows = 0
    for chunk in chunks:
        group.append(ChunkRef(chunk.path, chunk.kind, chunk.event_count, chunk.commit))
        rows += chunk.event_count
        if rows >= rows_per_partition:
            partitions.append(ChunkPartition(len(partitions), group))
            group, rows = [], 0
    if group:
        partitions.append(ChunkPartition(len(partitions), group))
    return partitions


_deserializers: dict[tuple[str, str, str, int, Credentials], Any] = {}
_deserializers_lock = threading.Lock()


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

    def read(self, partition: ChunkPartition) -> Iterator[pa.RecordBatch]:
        """Every row of the partition's chunks, as batches of exactly Spark's Arrow schema."""
        target = spark_arrow_schema(self.schema)
        for chunk in partition.chunks:
            if chunk.kind == "columnar":
                yield from self._columnar(chunk, target)
            else:
                yield from self._events(chunk, target)

    def _columnar(self, chunk: ChunkRef, target: pa.Schema) -> Iterator[pa.RecordBatch]:
        from catalog_api import storage

        fs, root = storage.resolve(self.options.table_location)
        with fs.open_input_file(f"{root}/{chunk.path}") as source:
            parquet = pq.ParquetFile(source)
            if not len(target):
                yield empty_columns(parquet.metadata.num_rows)
                return
            present = {name.lower(): name for name in parquet.schema_arrow.names}
            columns = [present[f.name.lower()] for f in target if f.name.lower() in present]
            if not columns:
                # None of the wanted columns existed when this chunk was written: all null.
                for group in range(parquet.num_row_groups):
                    rows = parquet.metadata.row_group(group).num_rows
                    yield conform_batch(empty_columns(rows), target)
                return
            for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=columns):
                yield conform_batch(batch, target)

    def _events(self, chunk: ChunkRef, target: pa.Schema) -> Iterator[pa.RecordBatch]:
        from catalog_api.streams.chunks import read_event_chunk

        events = read_event_chunk(self.options.table_location, chunk.path)
        if not len(target):
            yield empty_columns(sum(1 for _ in events))
            return
        records = _deserializer(self.options).deserialize_many(bytes(e) for e in events)
        yield from records_to_batches(records, self.schema, target, self.options.format or "avro")
