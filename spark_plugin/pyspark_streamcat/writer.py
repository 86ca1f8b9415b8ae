"""Batch and streaming writers: tasks write columnar chunk files, the driver commits them all at once.

Each write task turns its Arrow batches into Parquet chunk files (a new file every
``rowsPerChunk`` rows) tagged with the encoding id of the schema version Spark planned
with, and reports the chunks in its commit message. The driver then posts ONE catalog
commit with every task's chunks: a batch write is atomic, and a failed one deletes its
files. A streaming write commits each micro-batch with writer id = the query's id and
sequence = the batch id, so a batch re-run after a restart is acknowledged as a duplicate
and changes nothing (its new files are deleted): exactly once.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from catalog_api.model import Chunk

from .arrow import conform_batch, spark_arrow_schema
from .options import SourceOptions

#: Where chunk files go under the stream's location.
DATA_DIR = "data"


@dataclass
class ChunksWritten(WriterCommitMessage):
    """A task's commit message: the chunk files it wrote."""

    chunks: list[Chunk] = field(default_factory=list)


def _encoding_id(options: SourceOptions) -> int:
    return int(options.registry_client().encoding_id(options.stream, options.table_version))


def _catalog(options: SourceOptions) -> Any:
    return options.catalog_client()


def _chunks(messages: Sequence[WriterCommitMessage | None]) -> list[Chunk]:
    return [c for m in messages if isinstance(m, ChunksWritten) for c in m.chunks]


def _delete(options: SourceOptions, chunks: Sequence[Chunk]) -> None:
    from catalog_api import storage

    if chunks and options.location:
        storage.delete_files(options.location, [c.path for c in chunks])


class ChunkSink:
    """Writes one task's batches into columnar chunk files under the table's current schema."""

    def __init__(self, options: SourceOptions, schema: StructType, encoding_id: int) -> None:
        self.options = options
        self.schema = schema
        self.encoding_id = encoding_id

    def write(self, batches: Iterator[pa.RecordBatch]) -> ChunksWritten:
        """Write every batch; returns the chunks written."""
        target = spark_arrow_schema(self.schema)
        written = ChunksWritten()
        pending: list[pa.RecordBatch] = []
        rows = 0
        limit = self.options.rows_per_chunk
        try:
            for batch in batches:
                batch = conform_batch(batch, target)
                start = 0
                while start < batch.num_rows:
                    piece = batch.slice(start, limit - rows)
                    pending.append(piece)
                    rows += piece.num_rows
                    start += piece.num_rows
                    if rows >= limit:
                        written.chunks.append(self._flush(pending, target))
                        pending, rows = [], 0
            if pending:
                written.chunks.append(self._flush(pending, target))
        except BaseException:
            _delete(self.options, written.chunks)  # this task's files would never be committed
            raise
        return written

    def _flush(self, batches: list[pa.RecordBatch], target: pa.Schema) -> Chunk:
        from catalog_api.streams.chunks import write_columnar_chunk

        path = f"{DATA_DIR}/{uuid.uuid4().hex}.parquet"
        table = pa.Table.from_batches(batches, schema=target)
        stats = write_columnar_chunk(self.options.table_location, path, table, self.encoding_id)
        return Chunk(path=path, kind="columnar", event_count=stats.event_count, bytes=stats.bytes,
                     encoding_ids=tuple(sorted(stats.encoding_ids)), stats=stats.stats)


class BatchWriter(DataSourceArrowWriter):
    """INSERT INTO / INSERT OVERWRITE / CTAS / ``df.writeTo``: one atomic commit per write.

    Created on the driver, where it resolves the encoding id once for every task.
    """

    def __init__(self, options: SourceOptions, schema: StructType, overwrite: bool) -> None:
        self.options = options
        self.overwrite = overwrite
        self.sink = ChunkSink(options, schema, _encoding_id(options))
        # A retried commit request (a lost answer) must not commit twice: the write is its own writer.
        self.writer_id = f"spark-write-{uuid.uuid4()}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ChunksWritten:
        """One task: write its rows into chunk files."""
        return self.sink.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Make every task's chunks visible in one commit (an overwrite hides all older data)."""
        chunks = _chunks(messages)
        if not chunks and not self.overwrite:
            return  # nothing was written: an empty INSERT leaves the table as it is
        properties = {"spark.queryId": self.options.query_id or ""}
        _catalog(self.options).commit(self.options.scope, self.options.stream, chunks, overwrite=self.overwrite,
                                      writer_id=self.writer_id, writer_sequence=0, properties=properties)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """The write failed: delete the files its tasks wrote."""
        _delete(self.options, _chunks(messages))


class StreamWriter(DataSourceStreamArrowWriter):
    """A streaming sink: each micro-batch is one commit, exactly once across restarts."""

    def __init__(self, options: SourceOptions, schema: StructType, overwrite: bool) -> None:
        if not options.query_id:
            raise ValueError("a streaming write needs the query id (streamcat.queryid), which the catalog passes")
        self.options = options
        self.overwrite = overwrite
        self.sink = ChunkSink(options, schema, _encoding_id(options))
        self.writer_id = f"spark-stream-{options.query_id}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ChunksWritten:
        """One task of a micro-batch."""
        return self.sink.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Commit the micro-batch as (query id, batch id); a repeat is acknowledged and its files removed."""
        chunks = _chunks(messages)
        if not chunks and not self.overwrite:
            return
        answer = _catalog(self.options).commit(
            self.options.scope, self.options.stream, chunks, overwrite=self.overwrite, writer_id=self.writer_id,
            writer_sequence=int(batchId), properties={"spark.batchId": str(batchId)})
        if answer.get("duplicate"):
            _delete(self.options, chunks)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """The micro-batch failed: delete its files."""
        _delete(self.options, _chunks(messages))
