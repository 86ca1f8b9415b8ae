"""Batch and streaming writers: tasks write columnar chunk files, the driver commits them all at once.

Each write task turns its Arrow batches into Parquet chunk files (a new file every
``rowsPerChunk`` rows) tagged with the encoding id of the schema version Spark planned
with, and reports the chunks in its commit message. The driver then posts ONE catalog
commit with every task's chunks: a batch write is atomic, and a refused one deletes its
files. A streaming write commits each micro-batch with writer id = the query's id and
sequence = the batch id, so a batch re-run after a restart is acknowledged as a duplicate
and changes nothing (its new files are deleted): exactly once. A commit whose answer is lost
is resolved from the catalog by its writer id and sequence (``catalog_api.streams.committing``):
made, the write succeeds; in doubt, its files stay (``_FilesAtStake``).

Row-level statements (DELETE, UPDATE, MERGE; option ``streamcat.rowlevel``) reach
:class:`RowLevelWriter` as rows of the change schema the catalog shim builds: ``_op`` (0 insert,
1 delete, 2 update, 3 reinsert), the row id columns ``_id_<name>``, then the table's columns.
On an append table each task writes the new rows as columnar chunks and the ids of the rows
it deletes or replaces as a position-deletes chunk; on a primary-key table it writes the keys
it deletes (deleted rows, and the old key of an update that changes the key) as a change chunk
and the rows it writes as upserts. The driver commits them all as one ``row-level`` commit
recording the cut the statement read, after the conflict check of
``catalog_api.streams.conflicts``. A write with ``streamcat.compact.base`` = m
(:class:`CompactionWriter`) holds the merged rows of the table at cut m and commits them as a
``compaction``.

An aggregation table's hidden state columns (an ``avg``'s ``<column>$sum`` and ``<column>$count``, ``$rows``:
``catalog_api.aggregates.state_columns``) reach the writer as columns appended to the table's when a
materialized table's refresh or a compaction writes them; they go into the chunk files by name (with ids no
schema has: ``catalog_api.aggregates.HIDDEN_FIELD_IDS``). A write schema column whose name holds ``$`` and that
the table does not declare is refused (:func:`check_hidden_columns`).

Partitioned tables (whose current partition spec has fields): every columnar
chunk holds the rows of one partition and records it (``Chunk.partition`` = ``{"specId", "values"}``).
The spec is read from the catalog once, on the driver, when the writer is made, and travels to the
tasks with the writer; each task splits its batches with
``catalog_api.partitioning.transforms.split_by_partition`` and keeps one open chunk per partition it
sees (:class:`_Fanout`). Position-deletes chunks name rows of other chunks, not partitions, and stay
unpartitioned.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from catalog_api.model import ROW_LEVEL, Chunk, CommitOptions
from catalog_api.partitioning.spec import PartitionSpec, spec_zero_partition, table_spec
from catalog_api.streams.contracts import TableContract

from .arrow import conform_batch, spark_arrow_schema
from .options import OptionError, SourceOptions

#: Where chunk files go under the stream's location.
DATA_DIR = "data"
#: How many chunks' worth of rows (``rowsPerChunk`` each) a task's open chunks may hold in memory together
#: before the largest is written early: bounds a task's memory however many partitions it sees.
FANOUT_PENDING_CHUNKS = 2

#: Writes one chunk file of the batches, all of one partition (``{"specId", "values"}``, spec 0's for an
#: unpartitioned table).
Flush = Callable[[list[pa.RecordBatch], dict[str, Any]], Chunk]


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
    _delete_paths(options, [c.path for c in chunks])


def _delete_paths(options: SourceOptions, paths: Sequence[str]) -> None:
    from catalog_api.streams.conflicts import delete_quietly

    if paths:
        delete_quietly(options.location, list(paths))


class _FilesAtStake:
    """A driver commit whose files are deleted if it fails, but kept if it may have been made (its answer
    was lost and the catalog could not tell: the files may be the table's now, and gc removes them if
    they are not). Lost answers are resolved by ``catalog_api.streams.committing``, as for every writer."""

    in_doubt = False

    def committing(self, options: SourceOptions, chunks: Sequence[Chunk]) -> Any:
        """A context around the commit of ``chunks`` that cleans up after a failure."""
        from contextlib import contextmanager

        from catalog_api.streams.committing import CommitInDoubt

        @contextmanager
        def guard() -> Iterator[None]:
            try:
                yield
            except CommitInDoubt:
                self.in_doubt = True
                raise
            except BaseException:
                _delete(options, chunks)
                raise

        return guard()

    def commit_once(self, options: SourceOptions, chunks: Sequence[Chunk], commit: CommitOptions) -> dict[str, Any]:
        """Commit ``chunks`` (``commit`` names the writer id and sequence), resolving a lost answer from the
        catalog; the files of a refused commit are deleted, and those of a repeat of an earlier commit of
        the same writer id and sequence that the stream does not hold. Returns the Commit answer."""
        from catalog_api.streams.committing import commit_resolved

        with self.committing(options, chunks):
            made = commit_resolved(_catalog(options), options.scope, options.stream, chunks, commit)
        _delete_paths(options, made.stale)
        return made.answer

    def discard(self, options: SourceOptions, chunks: Sequence[Chunk]) -> None:
        """The write failed: delete its tasks' files, unless its commit may have been made."""
        if not self.in_doubt:
            _delete(options, chunks)


def current_spec(table: Mapping[str, Any]) -> PartitionSpec | None:
    """The current partition spec in a table's catalog JSON, or None when it has no fields (spec 0, or a
    server that predates partitioning): then every chunk is written under spec 0."""
    spec = table_spec(table)
    return None if spec.unpartitioned else spec


def _spec_of(options: SourceOptions, schema: StructType) -> PartitionSpec | None:
    """The table's current partition spec, asked of the catalog (on the driver: writers are made there), once
    ``schema`` (the rows Spark hands over) is known to hold no hidden column the table lacks."""
    table = _catalog(options).get_table(options.scope, options.stream)
    check_hidden_columns(schema, table.get("properties") or {}, f"{options.scope}.{options.stream}")
    return current_spec(table)


def check_hidden_columns(schema: StructType, properties: Mapping[str, str], name: str) -> None:
    """Raise OptionError unless each column of ``schema`` whose name holds ``$`` is a hidden state column the
    table ``name``'s ``properties`` declare (``catalog_api.aggregates.state_columns``), of its type.

    A materialized table's refresh writes an aggregation table's state (an ``avg``'s ``<column>$sum`` and
    ``<column>$count``, ``$rows``) as columns appended to the table's: the chunks hold them by name, and readers
    merge them but never show them. Any other such column is refused, not written.
    """
    from catalog_api.aggregates import is_hidden, state_columns

    declared = dict(state_columns(properties))
    for f in schema.fields:
        if not is_hidden(f.name):
            continue
        kind = declared.get(f.name)
        if kind is None:
            raise OptionError(f"column {f.name} is no column of {name} (names holding '$' "
                              f"are hidden state columns; this table's are: {', '.join(declared) or 'none'})")
        if f.dataType.typeName() != kind:
            raise OptionError(f"hidden state column {f.name} is of type {kind}, not {f.dataType.simpleString()}")


class _Rolling:
    """The open chunk of one partition: batches gathered into chunk files of at most ``limit`` rows, each
    written by ``flush`` and appended to ``chunks`` (shared by a task's open chunks, so it lists them in
    the order they were written)."""

    def __init__(self, limit: int, flush: Flush, chunks: list[Chunk], partition: dict[str, Any]) -> None:
        self.limit = limit
        self.flush = flush
        self.chunks = chunks
        self.partition = partition
        self.pending: list[pa.RecordBatch] = []
        self.rows = 0

    def add(self, batch: pa.RecordBatch) -> None:
        """Gather ``batch``, writing a chunk each time ``limit`` rows are gathered."""
        start = 0
        while start < batch.num_rows:
            piece = batch.slice(start, self.limit - self.rows)
            self.pending.append(piece)
            self.rows += piece.num_rows
            start += piece.num_rows
            if self.rows >= self.limit:
                self.finish()

    def finish(self) -> None:
        """Write what is gathered (if anything) as a chunk."""
        if self.pending:
            self.chunks.append(self.flush(self.pending, self.partition))
            self.pending, self.rows = [], 0


class _Fanout:
    """A task's open chunks: one per partition it has seen under ``spec`` (one in all, of spec 0, when ``spec``
    is None).

    Rows wait in memory until their chunk has ``limit`` rows or the task ends. When the open chunks
    together hold more than ``FANOUT_PENDING_CHUNKS`` x ``limit`` rows (many partitions, each filling
    slowly), the largest is written early: a task's memory stays bounded whatever the number of
    partitions, at the price of smaller chunks.
    """

    def __init__(self, spec: PartitionSpec | None, limit: int, flush: Flush) -> None:
        self.spec = spec
        self.limit = limit
        self.flush = flush
        self.chunks: list[Chunk] = []
        self.open: dict[tuple[Any, ...], _Rolling] = {}

    def add(self, batch: pa.RecordBatch) -> None:
        """Route the rows of ``batch`` (in the table's schema) to the open chunks of their partitions."""
        if not batch.num_rows:
            return
        if self.spec is None:
            self._chunk((), spec_zero_partition()).add(batch)
            return
        from catalog_api.streams.chunks import partition_pieces

        for partition, rows in partition_pieces(pa.Table.from_batches([batch]), self.spec):
            chunk = self._chunk(tuple(partition["values"]), partition)
            for piece in rows.to_batches():
                chunk.add(piece)
        self._bound_memory()

    def finish(self) -> None:
        """Write every open chunk."""
        for chunk in self.open.values():
            chunk.finish()

    def _chunk(self, key: tuple[Any, ...], partition: dict[str, Any]) -> _Rolling:
        found = self.open.get(key)
        if found is None:
            found = self.open[key] = _Rolling(self.limit, self.flush, self.chunks, partition)
        return found

    def _bound_memory(self) -> None:
        pending = sum(c.rows for c in self.open.values())
        while pending > FANOUT_PENDING_CHUNKS * self.limit:
            largest = max(self.open.values(), key=lambda c: c.rows)
            pending -= largest.rows
            largest.finish()


class ChunkSink:
    """Writes one task's batches into columnar chunk files under the table's current schema, one
    partition per chunk when ``spec`` (the table's current partition spec) is given."""

    def __init__(self, options: SourceOptions, schema: StructType, encoding_id: int,
                 spec: PartitionSpec | None = None) -> None:
        self.options = options
        self.schema = schema
        self.encoding_id = encoding_id
        self.spec = spec

    def write(self, batches: Iterator[pa.RecordBatch]) -> ChunksWritten:
        """Write every batch; returns the chunks written."""
        target = spark_arrow_schema(self.schema)
        chunks = _Fanout(self.spec, self.options.rows_per_chunk,
                         lambda pending, partition: self._flush(pending, target, partition))
        try:
            for batch in batches:
                chunks.add(conform_batch(batch, target))
            chunks.finish()
        except BaseException:
            _delete(self.options, chunks.chunks)  # this task's files would never be committed
            raise
        return ChunksWritten(chunks.chunks)

    def _flush(self, batches: list[pa.RecordBatch], target: pa.Schema, partition: dict[str, Any]) -> Chunk:
        from catalog_api.streams.chunks import write_columnar_chunk

        path = f"{DATA_DIR}/{uuid.uuid4().hex}.parquet"
        table = pa.Table.from_batches(batches, schema=target)
        # The schema carries the table's column metadata (the catalog shim merges it in), so the chunk's
        # columns get their Parquet field ids, as Spark's own writer gives them on the native path.
        stats = write_columnar_chunk(self.options.table_location, path, table, self.encoding_id,
                                     self.schema.jsonValue())
        return stats.columnar(path, partition=partition)


class BatchWriter(_FilesAtStake, DataSourceArrowWriter):
    """INSERT INTO / INSERT OVERWRITE / CTAS / ``df.writeTo``: one atomic commit per write.

    Created on the driver, where it resolves the encoding id once for every task.
    """

    def __init__(self, options: SourceOptions, schema: StructType, overwrite: bool) -> None:
        self.options = options
        self.overwrite = overwrite
        # The spec is read here, on the driver, and pickled to the tasks with the sink.
        self.sink = ChunkSink(options, schema, _encoding_id(options), _spec_of(options, schema))
        # A retried commit request (a lost answer) must not commit twice: the write is its own writer.
        self.writer_id = f"spark-write-{uuid.uuid4()}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ChunksWritten:
        """One task: write its rows into chunk files."""
        return self.sink.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Make every task's chunks visible in one commit (an overwrite hides all older data; a write that
        replaces chunks removes them in the same commit)."""
        chunks = _chunks(messages)
        replaces = self.options.replaces
        if not chunks and not self.overwrite and not replaces:
            return  # nothing was written: an empty INSERT leaves the table as it is
        properties = {**self.options.commit_properties, "spark.queryId": self.options.query_id or ""}
        if replaces is not None:
            self.commit_once(self.options, chunks, CommitOptions(
                kind=ROW_LEVEL, removes=replaces, read_cut=self.options.expected_last_commit, writer_id=self.writer_id,
                writer_sequence=0, properties=properties, expected_last_commit=self.options.expected_last_commit))
            return
        self.commit_once(self.options, chunks, CommitOptions(
            overwrite=self.overwrite, writer_id=self.writer_id, writer_sequence=0, properties=properties,
            expected_last_commit=self.options.expected_last_commit))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """The write failed: delete the files its tasks wrote (unless its commit may have been made)."""
        self.discard(self.options, _chunks(messages))


class StreamingWriter(_FilesAtStake, DataSourceStreamArrowWriter):
    """A streaming sink: each micro-batch is one commit, exactly once across restarts."""

    def __init__(self, options: SourceOptions, schema: StructType, overwrite: bool) -> None:
        if not options.query_id:
            raise ValueError("a streaming write needs the query id (streamcat.queryid), which the catalog passes")
        self.options = options
        self.overwrite = overwrite
        # Read once for the query: a spec changed while it runs applies from its next start (the chunks it
        # writes meanwhile carry the older spec, which stays valid).
        self.sink = ChunkSink(options, schema, _encoding_id(options), _spec_of(options, schema))
        self.writer_id = f"spark-stream-{options.query_id}"
        # Spark 4.3 checks a table's CHECK constraints on batch writes only: a stream's rows are checked here
        # (catalog_api/streams/contracts.py), as the Python writers check theirs.
        self.checks = _catalog(options).get_table(options.scope, options.stream).get("checks") or []

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ChunksWritten:
        """One task of a micro-batch."""
        if self.checks:
            contract = TableContract(f"{self.options.scope}.{self.options.stream}", self.checks)
            iterator = (contract.checked(batch) for batch in iterator)
        return self.sink.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Commit the micro-batch as (query id, batch id); a repeat of a batch committed before (a restart) is
        acknowledged and its new files removed."""
        chunks = _chunks(messages)
        if not chunks and not self.overwrite:
            return
        self.commit_once(self.options, chunks, CommitOptions(
            overwrite=self.overwrite, writer_id=self.writer_id, writer_sequence=int(batchId),
            properties={"spark.batchId": str(batchId)}))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """The micro-batch failed: delete its files (unless its commit may have been made)."""
        self.discard(self.options, _chunks(messages))


# -- row-level writes ------------------------------------------------------------------------------

#: The change schema's columns (see spark_plugin/java/streamcat/spark/DeltaWrites.java).
OP = "_op"
ID_PREFIX = "_id_"
INSERT, DELETE, UPDATE, REINSERT = 0, 1, 2, 3
#: The row id columns of an append table.
ID_CHUNK, ID_POS = "_id__chunk", "_id__pos"


@dataclass
class ChangesWritten(WriterCommitMessage):
    """A row-level task's commit message: the chunks of rows it writes and of rows it deletes.

    ``deletes`` are position-deletes chunks (append tables) or change chunks of key deletes
    (primary-key tables).
    """

    data: list[Chunk] = field(default_factory=list)
    deletes: list[Chunk] = field(default_factory=list)


@dataclass(frozen=True)
class ChangeSchema:
    """How the change schema splits: row id columns, and the table's columns (the data)."""

    ids: tuple[str, ...]
    data: StructType

    @classmethod
    def of(cls, schema: StructType) -> ChangeSchema:
        """Split ``schema`` (``_op``, ``_id_*``..., the table's columns)."""
        from pyspark.sql.types import StructType

        names = schema.fieldNames()
        if not names or names[0] != OP:
            raise OptionError(f"a row-level write needs the column {OP} first, not {names[:1]}")
        end = 1
        while end < len(names) and names[end].startswith(ID_PREFIX):
            end += 1
        ids = tuple(names[1:end])
        if not ids:
            raise OptionError("a row-level write needs row id columns (_id_*)")
        return cls(ids, StructType(schema.fields[end:]))

    @property
    def keyed(self) -> bool:
        """Whether rows are identified by key (a primary-key table) rather than by (chunk, position)."""
        return set(self.ids) != {ID_CHUNK, ID_POS}

    @property
    def key(self) -> tuple[str, ...]:
        """The key columns of a primary-key table."""
        return tuple(i[len(ID_PREFIX):] for i in self.ids) if self.keyed else ()


def _nullable(schema: StructType) -> StructType:
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(f.name, f.dataType, True, f.metadata) for f in schema.fields])


class RowLevelSink:
    """Writes one task's change rows: new rows, and deletes by position (append tables) or by key.

    Under a partition spec (``spec``) new rows and key deletes go to chunks of their partition: a
    primary-key table's spec uses only key columns, so a key delete (its key set, the rest null) falls
    in the partition of the key it deletes, where the rows it replaces live.
    """

    def __init__(self, options: SourceOptions, schema: StructType, encoding_id: int, *,
                 table_schema: StructType | None = None, partial_update: bool = False,
                 spec: PartitionSpec | None = None) -> None:
        self.options = options
        self.split = ChangeSchema.of(schema)
        self.encoding_id = encoding_id
        self.spec = spec
        # Chunks hold every column of the table: a DELETE's change rows carry no data columns at all,
        # and a key delete holds its key and nulls.
        self.target = spark_arrow_schema(_nullable(table_schema if table_schema is not None else self.split.data))
        # The table's schema carries its columns' field ids: chunks get them as Parquet field ids, as every
        # other write path gives them (Iceberg readers match columns by id).
        self.schema_json = (table_schema if table_schema is not None else self.split.data).jsonValue()
        # Under partial-update an upsert keeps the fields it leaves null: an UPDATE (which hands over the
        # whole new row) deletes its key first, so that a column set to NULL reads as NULL.
        self.partial_update = partial_update

    def write(self, batches: Iterator[pa.RecordBatch]) -> ChangesWritten:
        """Write every batch; returns the chunks written."""
        import pyarrow.compute as pc

        rows = _Fanout(self.spec, self.options.rows_per_chunk, self._rows_chunk)
        keys = _Fanout(self.spec, self.options.rows_per_chunk, self._key_deletes_chunk)
        paths: list[pa.Array] = []
        positions: list[pa.Array] = []
        deletes: list[Chunk] = []
        keyed = self.split.keyed
        try:
            for batch in batches:
                if not batch.num_rows:
                    continue
                op = batch.column(OP).cast(pa.int8())
                writes = pc.is_in(op, pa.array([INSERT, UPDATE, REINSERT], pa.int8()))
                removes = pc.is_in(op, pa.array([DELETE, UPDATE], pa.int8()))
                data = conform_batch(batch, self.target)
                if writes.true_count:
                    rows.add(data.filter(writes))
                if keyed:
                    old = self._old_keys(batch, op)
                    if old is not None and old.num_rows:
                        keys.add(old)
                elif removes.true_count:
                    ids = batch.filter(removes)
                    paths.append(ids.column(ID_CHUNK).cast(pa.string()))
                    positions.append(ids.column(ID_POS).cast(pa.int64()))
            rows.finish()
            keys.finish()
            if paths:
                deletes.append(self._position_deletes(pa.concat_arrays(paths), pa.concat_arrays(positions)))
        except BaseException:
            _delete(self.options, [*rows.chunks, *keys.chunks, *deletes])
            raise
        return ChangesWritten(data=rows.chunks, deletes=[*keys.chunks, *deletes])

    def _old_keys(self, batch: pa.RecordBatch, op: pa.Array) -> pa.RecordBatch | None:
        """Rows (in the table's schema, only the key set) deleting the keys that deletes and key-changing
        updates leave behind."""
        import pyarrow.compute as pc

        mask = pc.equal(op, DELETE)
        updates = pc.equal(op, UPDATE)
        if self.partial_update:
            mask = pc.or_(mask, updates)
        elif updates.true_count:
            changed = None
            for name, id_name in zip(self.split.key, self.split.ids, strict=True):
                differs = pc.fill_null(pc.not_equal(batch.column(id_name), batch.column(name)), True)
                changed = differs if changed is None else pc.or_(changed, differs)
            if changed is not None:
                mask = pc.or_(mask, pc.and_(updates, changed))
        if not mask.true_count:
            return None
        ids = batch.filter(mask)
        columns = {name: ids.column(id_name) for name, id_name in zip(self.split.key, self.split.ids, strict=True)}
        return conform_batch(pa.RecordBatch.from_pydict(columns), self.target)

    def _path(self, suffix: str = "") -> str:
        return f"{DATA_DIR}/{uuid.uuid4().hex}{suffix}.parquet"

    def _rows_chunk(self, batches: list[pa.RecordBatch], partition: dict[str, Any]) -> Chunk:
        from catalog_api.streams.row_kinds import write_change_chunk

        path = self._path()
        stats = write_change_chunk(self.options.table_location, path, pa.Table.from_batches(batches, self.target),
                                   None, self.encoding_id, self.schema_json)
        return stats.columnar(path, partition=partition)

    def _key_deletes_chunk(self, batches: list[pa.RecordBatch], partition: dict[str, Any]) -> Chunk:
        from catalog_api.streams.row_kinds import DELETE as DELETE_ROW
        from catalog_api.streams.row_kinds import write_change_chunk

        path = self._path()
        table = pa.Table.from_batches(batches, self.target)
        ops = pa.array([DELETE_ROW] * table.num_rows, pa.int8())
        stats = write_change_chunk(self.options.table_location, path, table, ops, self.encoding_id, self.schema_json)
        return stats.columnar(path, partition=partition)

    def _position_deletes(self, paths: pa.Array, positions: pa.Array) -> Chunk:
        from catalog_api.streams.row_kinds import write_position_deletes

        return write_position_deletes(self.options.table_location, self._path(".deletes"), paths, positions)


def _written(messages: Sequence[WriterCommitMessage | None]) -> list[ChangesWritten]:
    return [m for m in messages if isinstance(m, ChangesWritten)]


def _all_chunks(messages: Sequence[WriterCommitMessage | None]) -> list[Chunk]:
    return [c for m in _written(messages) for c in (*m.data, *m.deletes)]


class RowLevelWriter(_FilesAtStake, DataSourceArrowWriter):
    """DELETE / UPDATE / MERGE INTO: one ``row-level`` commit recording the cut the statement read.

    The commit is checked against every commit made since that cut and refused with
    ``CommitConflict`` (the statement fails; running it again reads the new state) when one of
    them changed what this statement changes.
    """

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        if options.read_cut is None:
            raise OptionError("a row-level write needs the cut its scan read (streamcat.readcut)")
        from pyspark.sql.types import StructType

        from catalog_api.schema.fieldids import assign_field_ids, has_field_ids
        from catalog_api.streams.merge import TableLayout

        self.options = options
        self.read_cut: int = options.read_cut
        described = _catalog(options).get_table(options.scope, options.stream)
        partial_update = TableLayout.from_properties(described.get("properties") or {}).partial_update
        # A schema made before the table's first column change has no ids yet: its chunks get the ones that change
        # will give it, as the catalog shim gives them to Spark's own writers (FieldIds.withPositionalIds).
        table_schema = described["schema"] if has_field_ids(described["schema"]) else assign_field_ids(
            described["schema"])
        self.sink = RowLevelSink(options, schema, _encoding_id(options), table_schema=StructType.fromJson(
            table_schema), partial_update=partial_update, spec=current_spec(described))
        # A lost answer is told from a refused commit by this id: the statement is its own writer.
        self.writer_id = f"spark-rowlevel-{uuid.uuid4()}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ChangesWritten:
        """One task: write its share of the changes."""
        return self.sink.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Check for conflicts and commit every task's chunks at once (nothing, if nothing changed)."""
        from catalog_api.streams.conflicts import ROW_LEVEL, Intent, Table, commit_checked

        written = _written(messages)
        keyed = self.sink.split.keyed
        data = [c for m in written for c in m.data]
        deletes = [c for m in written for c in m.deletes]
        # Every delete of a key goes before every upsert: an UPDATE that moves key 1 to 2 and key 2 to 3
        # leaves 2 and 3, whichever task wrote which change.
        chunks = [*deletes, *data] if keyed else [*data, *deletes]
        if not chunks:
            return
        options = self.options
        with self.committing(options, chunks):
            table = Table(_catalog(options), options.scope, options.stream, options.table_location,
                          self.sink.split.key, options.registry_client())
            if keyed:
                intent = Intent(ROW_LEVEL, self.read_cut, keys=table.changed_keys(chunks))
            else:
                intent = Intent(ROW_LEVEL, self.read_cut, deleted_from=table.deleted_from(deletes))
            properties = {"spark.queryId": options.query_id or "", "streamcat.operation": options.row_level or ""}
            commit_checked(table, chunks, intent, properties=properties, writer_id=self.writer_id, writer_sequence=0)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """The statement failed: delete the files its tasks wrote (unless its commit may have been made)."""
        self.discard(self.options, _all_chunks(messages))


class CompactionWriter(BatchWriter):
    """A compaction run by Spark (``streamcat.compact.base`` = m): the rows written are the merged
    table at cut m, sorted by key; they replace every chunk visible at m in one ``compaction`` commit.

    Its chunks are split by the table's current partition spec like any write's (the sink's), so a
    compaction also rewrites chunks of older specs (or none) into the current one."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        super().__init__(options, schema, overwrite=False)
        if options.compact_base is None:
            raise OptionError("a compaction write needs its base cut (streamcat.compact.base)")
        self.base: int = options.compact_base

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Commit the new chunks (sequence = the base cut) removing every chunk visible at the base cut."""
        from catalog_api.streams.conflicts import COMPACTION, Intent, Table, commit_checked

        options = self.options
        chunks = [replace(c, sequence=self.base) for c in _chunks(messages)]
        with self.committing(options, chunks):
            catalog = _catalog(options)
            table = Table.of(catalog, options.scope, options.stream, options.registry_client())
            _cut, visible = catalog.snapshot(options.scope, options.stream, cut=self.base)
            removes = tuple(c.path for c in visible)
            if not chunks and not removes:
                return
            commit_checked(table, chunks, Intent(COMPACTION, self.base, removes=removes),
                           properties={"spark.queryId": options.query_id or ""}, writer_id=self.writer_id,
                           writer_sequence=0)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """The compaction failed: delete the files its tasks wrote (unless its commit may have been made)."""
        self.discard(self.options, _chunks(messages))
