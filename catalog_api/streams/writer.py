"""The stream writer: buffers events per segment, writes event chunk files, commits them atomically.

Events go to a segment by a stable hash of their routing key (CRC-32, so every writer in every
process agrees), and one routing key always lands in the same segment: its events keep their
order. ``flush()`` writes one chunk file per segment that holds events and makes them all
visible in ONE commit. Every commit carries the writer's id and a sequence number that is
only advanced once the server has acknowledged the commit, so re-sending a commit whose answer
was lost (a timeout, a dropped connection) is a no-op on the server: exactly once.

On a primary-key table (docs/changelog-tables.md) the writer writes changes by key instead:
``upsert``/``write`` a record, ``delete`` a key, or ``write_changes`` Arrow rows with their row
kinds. They are pre-merged per commit (a key appears once: its last change wins; under the
``partial-update`` merge engine the non-null fields of a key's upserts are merged, and a delete
followed by upserts stays a delete then one upsert; a table with a ``sequence.field`` keeps every
change, for readers to order) and written by ``flush`` as one change chunk (a columnar chunk whose
``_streamcat_op`` column says upsert or delete per row; without deletes, a plain columnar chunk).

On a partitioned table (docs/partitioning.md) every columnar chunk holds the rows of one partition of
the table's current spec, as the writer found it when it was made, and records it (``Chunk.partition``):
``write_table`` and ``flush``'s change chunks write one chunk per partition the rows fall in. A
primary-key table's spec reads only key columns, so all the changes of a key (a delete row carries its
key) land in one chunk, in order. Event chunks (``write``) stay unpartitioned, as the server allows: a
record's partition is only known once it is decoded, and they are simply never pruned by partition.

On a table with CHECK constraints or CEL condition rules every row accepted is checked
(``catalog_api.streams.contracts``); the rows a DLQ rule refuses are set apart and committed to its
dead-letter table by the same commit as the rest (``catalog_api.streams.dead_letters``).
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.model import Chunk, CommitOptions, TableCommit
from catalog_api.partitioning.spec import PartitionSpec, spec_zero_partition, table_spec, with_current_names
from catalog_api.schema import to_struct
from catalog_api.streams.chunks import partition_pieces, write_columnar_chunk, write_framed_event_chunk
from catalog_api.streams.committing import CommitInDoubt, Committed, commit_resolved, commit_tables_resolved
from catalog_api.streams.contracts import TableContract
from catalog_api.streams.dead_letters import DeadLetters
from catalog_api.streams.merge import (
    TableLayout,
    premerge,
    refuse_retractions,
    row_kinds_or_none,
    with_state,
    without_state,
)
from catalog_api.streams.reader import arrow_schema, scoped_registry
from catalog_api.streams.row_kinds import (
    DELETE,
    OP_COLUMN,
    RETRACT,
    UPSERT,
    write_change_chunk,
)
from registry.client import RegistryClient
from registry.errors import BadRequest, NotFound, StreamcatError
from registry.model import NO_CODEC, SchemaInfo
from registry.serde import Serializer
from registry.serde.wire import HEADER_SIZE, PROTOCOL_VERSION, check_header, encoding_id_of_key

#: Routing keys whose segment a writer remembers.
_ROUTE_CACHE = 100_000
_RAW = (bytes, bytearray, memoryview)
_LENGTH = struct.Struct(">I")
_PACK_LENGTH_INTO = _LENGTH.pack_into
_NO_LENGTH = bytes(_LENGTH.size)


class RecordSerializer(Protocol):
    """What the writer needs of a serializer (``registry.serde.Serializer`` is one)."""

    def serialize(self, record: Any) -> bytes:
        """The event in the wire format: 0x01, encoding id (int32 BE), payload."""
        ...


class _Buffer:
    """The events of one segment not yet written to a chunk file, and what the chunk will record of them.

    The events are kept framed, as the chunk file's body holds them (each after its uint32
    length), in one buffer: the writer's serializer encodes straight into it, so an event is never
    a bytes object of its own, and writing the chunk is one write of the buffer.
    """

    __slots__ = ("count", "framed", "max_time", "min_time", "raw", "raw_ids")

    def __init__(self) -> None:
        self.framed = bytearray()
        self.count = 0
        self.min_time: int | None = None
        self.max_time: int | None = None
        #: events given as bytes (or by a serializer of the caller's), and their raw id bytes
        self.raw = 0
        self.raw_ids: set[bytes] = set()

    def add(self, data: bytes) -> None:
        """Frame one event given in the wire format (its header checked by the caller)."""
        self.framed += _LENGTH.pack(len(data))
        self.framed += data
        self.raw_ids.add(data[1:5])
        self.raw += 1
        self.count += 1

    def encoding_ids(self, own: int | None) -> tuple[int, ...]:
        """The encoding ids of the buffered events; ``own``: that of the writer's serializer."""
        ids: set[int] = {encoding_id_of_key(h) for h in self.raw_ids}
        if self.count > self.raw and own is not None:
            ids.add(own)
        return tuple(sorted(ids))


@dataclass(frozen=True)
class _Attempt:
    """A commit the writer has sent at least once: exactly this is re-sent until acknowledged. ``dead`` holds
    the parts of its dead-letter tables (with each table's location), committed with it in one commit."""

    chunks: list[Chunk]
    options: CommitOptions
    dead: tuple[tuple[TableCommit, str], ...] = ()


def _as_it_is(_error: BaseException) -> Exception | None:
    return None


def segment_of(routing_key: str | bytes, segments: int) -> int:
    """The segment a routing key maps to (CRC-32 of its UTF-8 bytes, modulo the segment count)."""
    raw = routing_key.encode() if isinstance(routing_key, str) else routing_key
    return zlib.crc32(raw) % segments


def change_schema(schema: pa.Schema, key: Sequence[str]) -> pa.Schema:
    """The schema of a table's change chunks: key columns non-null, every other column nullable (a delete
    row carries only its key)."""
    missing = [k for k in key if k not in schema.names]
    if missing:
        raise ValueError(f"the table's schema lacks its key columns {missing}")
    return pa.schema([f.with_nullable(f.name not in key) for f in schema])


class StreamWriter:
    """Writes events to a stream: ``write`` buffers, ``flush`` makes buffered events visible atomically.

    Records are serialized by ``serializer`` (a ``registry.serde.Serializer``) or, given
    ``schema``, by a Serializer the writer makes for the stream's group (the group named like
    the stream in the scope's namespace, or ``group``) with ``codec``. Without either, write
    events that are already in the wire format. A writer is not thread-safe: give each
    producing thread its own (with its own writer id).
    """

    def __init__(self, catalog: CatalogClient, registry: RegistryClient, scope: str, stream: str, *,
                 serializer: RecordSerializer | None = None, schema: SchemaInfo | None = None,
                 codec: str = NO_CODEC, group: str | None = None, writer_id: str | None = None,
                 max_chunk_events: int = 200_000, max_chunk_bytes: int = 32 << 20,
                 retries: int = 6, backoff: float = 0.1) -> None:
        if max_chunk_events < 1 or max_chunk_bytes < 1:
            raise ValueError("max_chunk_events and max_chunk_bytes must be positive")
        if serializer is not None and schema is not None:
            raise ValueError("pass a serializer or a schema, not both")
        self.catalog = catalog
        self._registry_given = registry
        self.registry = scoped_registry(registry, scope)
        self.scope = scope
        self.stream = stream
        if schema is not None:
            serializer = Serializer(self.registry, group or stream, schema, codec)
        self.serializer = serializer
        self._field_ids_of: tuple[dict[str, Any] | None] | None = None
        self.max_chunk_events = max_chunk_events
        self.max_chunk_bytes = max_chunk_bytes
        #: the columns of change chunks that Parquet dictionary-encodes (True: all, its default)
        self.change_dictionary: bool | Sequence[str] = True
        self.retries = retries
        self.backoff = backoff
        info = catalog.get_stream(scope, stream)
        self.location: str = info["location"]
        self.segments: int = int(info["scalingPolicy"]["minSegments"])
        # A writer id the caller chose may have committed before (a restarted producer): its sequence
        # must continue after the last committed one, or new commits would be taken for repeats.
        self._resume = writer_id is not None
        self.writer_id = writer_id or f"writer-{uuid.uuid4().hex}"
        self._sequence: int | None = None if self._resume else 0
        self._sticky = zlib.crc32(self.writer_id.encode()) % self.segments
        # Routing keys repeat (a device, a customer): a dict lookup is cheaper than hashing each time.
        self._routes: dict[str | bytes, int] = {}
        # How the serializer appends events in place (the length's placeholder and the header, the
        # function and its arguments), once its first record has connected it (registered the
        # schema); None again once the writer is closed. Its failures, and the encoding id it writes.
        self._in_place: tuple[bytes, Callable[..., Any], tuple[Any, ...]] | None = None
        self._in_place_failure: Callable[[BaseException], Exception | None] = _as_it_is
        self._own_id: int | None = None
        self._buffers = [_Buffer() for _ in range(self.segments)]
        self._written: list[Chunk] = []  # chunk files on storage, not yet committed
        self._in_doubt: _Attempt | None = None
        self._in_transaction = False
        self._closed = False
        # A primary-key table takes changes by key, pre-merged per commit (see the module's docstring).
        described = self._describe_table()
        #: the table's CHECK constraints, evaluated on every row accepted (None: it has none)
        self.contract = TableContract.of(described)
        #: the rows DLQ rules refused, kept for the next commit (None: the table has no DLQ rule)
        self.dead_letters: DeadLetters | None = None
        if self.contract is not None and self.contract.dead_letter_tables:
            if (scope, stream) in self.contract.dead_letter_tables:
                raise ValueError(f"{scope}.{stream} is its own dead-letter table: name another in dlq.table")
            self.dead_letters = DeadLetters(catalog, registry, self.writer_id, self._dead_letter_writer)
        self.layout = TableLayout.keyed(dict(described["properties"]) if described is not None else {})
        if self.layout is not None and self.serializer is None:
            latest = self.registry.latest_schemas(group or stream)
            if len(latest) != 1:
                raise ValueError(f"{scope}.{stream}'s group has {len(latest)} latest schemas; pass schema=")
            self.serializer = Serializer(self.registry, group or stream, latest[0].schema, codec, register=False)
        #: the table's current partition spec, its sources named as in this writer's rows; None when the
        #: table is unpartitioned (or the stream no table): columnar chunks are then written as they always were
        self.partition_spec = self._rows_spec(described)
        self._change_rows: list[dict[str, Any]] = []
        self._change_ops: list[int] = []
        # (rows, kinds, whether write_changes was told they are pre-merged) in write order
        self._change_pieces: list[tuple[pa.Table, pa.Array | None, bool]] = []
        self._change_count = 0
        self._change_schema: pa.Schema | None = None

    def _dead_letter_writer(self, scope: str, table: str, serializer: Serializer) -> StreamWriter:
        """The writer of a dead-letter table (which must have no dead-letter table of its own)."""
        writer = StreamWriter(self.catalog, self._registry_given, scope, table, serializer=serializer,
                              writer_id=self.writer_id)
        if writer.dead_letters is not None:
            raise ValueError(f"dead-letter table {scope}.{table} has DLQ rules of its own")
        return writer

    def _passes(self, record: Any) -> bool:
        """Whether ``record`` passes the table's constraints (ConstraintViolation when one refuses it); a record
        a DLQ rule refuses is kept as a dead letter."""
        assert self.contract is not None
        if self.dead_letters is None:
            self.contract.check_record(record)
            return True
        screened = self.contract.screen_record(record)
        self.dead_letters.add(screened.dead)
        return not screened.dead

    def _screened(self, rows: pa.Table, among: pa.Array | None = None) -> pa.Array | None:
        """Which of ``rows`` pass the table's constraints (a mask; ConstraintViolation when a rule that is no
        DLQ rule refuses one), the others kept as dead letters; None when all pass. ``among`` (a mask) limits
        the check to those rows, the others passing."""
        assert self.contract is not None
        checked = rows if among is None else rows.filter(among)
        if self.dead_letters is None:
            self.contract.check(checked.to_pylist())
            return None
        screened = self.contract.screen(checked.to_pylist())
        if not screened.dead:
            return None
        passed = screened.passed
        if among is not None:
            verdicts = iter(passed)
            passed = [next(verdicts) if chosen else True for chosen in among.to_pylist()]
        self.dead_letters.add(screened.dead)
        return pa.array(passed, pa.bool_())

    def _describe_table(self) -> dict[str, Any] | None:
        """The stream's table (``getTable``), or None for a stream that is no table."""
        try:
            return self.catalog.get_table(self.scope, self.stream)
        except NotFound:
            return None

    def _rows_spec(self, described: dict[str, Any] | None) -> PartitionSpec | None:
        """The table's current partition spec when it has fields, each source named as this writer's schema
        version names the column (found by field id; else as the table's current schema does), because rows
        are split by column name and the writer's version may predate a rename."""
        if described is None:
            return None
        spec = table_spec(described)
        if spec.unpartitioned:
            return None
        own = self._spark_schema()
        return spec if own is None else with_current_names(spec, own)

    # -- writing ---------------------------------------------------------------------------------

    def write(self, event: Any, routing_key: str | bytes | None = None, event_time: int | None = None) -> None:
        """Buffer one event: a record (serialized with the writer's serializer) or wire-format bytes.

        ``event_time`` (epoch milliseconds) feeds the chunk's min/max event time. On a primary-key
        table this is :meth:`upsert` (and ``routing_key`` and ``event_time`` do not apply).
        """
        if self.layout is not None:
            self.upsert(event)
            return
        if self.contract is not None and not self._passes(event):
            return
        if routing_key is None:
            segment = self._sticky
        else:
            found = self._routes.get(routing_key)
            segment = self._route(routing_key) if found is None else found
        buffer = self._buffers[segment]
        framed = buffer.framed
        in_place = self._in_place  # None until a first record connected the serializer, and once closed
        if in_place is not None and (type(event) is dict or not isinstance(event, _RAW)):
            # The record's event straight into the buffer, after a length filled in once it is there.
            # Inlined rather than a call: a Python call per event costs a few percent of the encode.
            head, encode, arguments = in_place
            start = len(framed)
            framed += head
            try:
                encode(framed, event, *arguments)
            except BaseException as error:
                del framed[start:]
                failure = self._in_place_failure(error)
                if failure is None:
                    raise
                raise failure from error
            _PACK_LENGTH_INTO(framed, start, len(framed) - start - 4)  # 4: the length itself
            buffer.count += 1
        else:
            buffer.add(self._event_bytes(event))  # refuses when closed
        if event_time is not None:
            if buffer.min_time is None or event_time < buffer.min_time:
                buffer.min_time = event_time
            if buffer.max_time is None or event_time > buffer.max_time:
                buffer.max_time = event_time
        # max_chunk_bytes bounds the events' bytes, without their length prefixes (the first test
        # is a cheap necessary condition of the second).
        count = buffer.count
        if count >= self.max_chunk_events or (
            len(framed) >= self.max_chunk_bytes and len(framed) - 4 * count >= self.max_chunk_bytes
        ):
            self._chunk_full(segment)

    def _event_bytes(self, event: Any) -> bytes:
        """``event`` in the wire format, header checked: as given, or serialized."""
        if self._closed:
            raise ValueError("the writer is closed")
        if type(event) is bytes:
            data = event
        elif isinstance(event, _RAW):
            data = bytes(event)
        elif self.serializer is None:
            raise TypeError("this writer has no serializer: write wire-format bytes or pass serializer=")
        elif isinstance(self.serializer, Serializer):
            # The first record registers the schema; later ones take the in-place path of write().
            data = self.serializer.serialize(event)
            found = None if self._own_id is not None else self.serializer.in_place()
            if found is not None:
                self._in_place = (_NO_LENGTH + found.head, found.function, found.arguments)
                self._in_place_failure = found.failure
                self._own_id = self.serializer.encoding_id
        else:
            data = self.serializer.serialize(event)
        if len(data) < HEADER_SIZE or data[0] != PROTOCOL_VERSION:
            check_header(data)  # raises, saying what is wrong
        return data

    def _route(self, routing_key: str | bytes) -> int:
        if len(self._routes) >= _ROUTE_CACHE:
            self._routes.clear()
        segment = self._routes[routing_key] = segment_of(routing_key, self.segments)
        return segment

    def _chunk_full(self, segment: int) -> None:
        # Inside a transaction the chunk waits on storage for the transaction's single commit;
        # otherwise a full chunk is a reason to flush, as a producer's full batch is a reason to send.
        if self._in_transaction:
            self._write_chunk(segment)
        else:
            self.flush()

    def _write_chunk(self, segment: int) -> None:
        buffer = self._buffers[segment]
        path = f"segment-{segment}/{uuid.uuid4().hex}.events"
        size = write_framed_event_chunk(self.location, path, buffer.framed)
        self._written.append(Chunk(path=path, kind="events", segment=segment, event_count=buffer.count,
                                   bytes=size, encoding_ids=buffer.encoding_ids(self._own_id),
                                   min_event_time=buffer.min_time,
                                   max_event_time=buffer.max_time))
        self._buffers[segment] = _Buffer()

    def write_table(self, table: pa.Table | pa.RecordBatch, *, segment: int | None = None) -> None:
        """Add rows given as Arrow columns, as one columnar (Parquet) chunk of the serializer's schema version.

        The chunk file is written now and committed by the next flush (or the transaction), like
        buffered events; readers see its rows among the events, in write order within the segment
        (``segment``, by default the one the writer's unkeyed events go to). The columns must be
        those of the schema (extra columns are dropped, types are cast to the schema's Arrow form).
        This is the fast path for bulk data: no per-row serialization on either side. On a
        primary-key table the rows upsert their keys (:meth:`write_changes`). On a partitioned table the
        rows are written as one chunk per partition they fall in (none for no rows), each recording it;
        raises :class:`~catalog_api.partitioning.spec.PartitioningError` when the schema version lacks a
        column the spec reads.
        """
        if self.layout is not None:
            self.write_changes(table)
            return
        if self._closed:
            raise ValueError("the writer is closed")
        if not isinstance(self.serializer, Serializer):
            raise TypeError("write_table needs the writer's schema: make the writer with schema= or a Serializer")
        segment = self._sticky if segment is None else segment
        if not 0 <= segment < self.segments:
            raise ValueError(f"segment {segment} is not one of the stream's {self.segments}")
        target = arrow_schema(self.serializer.schema)
        if target is None:
            raise TypeError("write_table needs an Avro record schema whose fields all have an Arrow type")
        rows = pa.Table.from_batches([table]) if isinstance(table, pa.RecordBatch) else table
        missing = [n for n in target.names if n not in rows.column_names]
        if missing:
            raise ValueError(f"the table lacks the schema's columns {missing}")
        try:
            rows = rows.select(target.names).cast(target)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise ValueError(f"the table does not fit the schema's Arrow form {target}: {e}") from e
        if self.contract is not None:
            passed = self._screened(rows)
            if passed is not None:
                rows = rows.filter(passed)
                if not rows.num_rows:
                    return
        if self._buffers[segment].count:
            self._write_chunk(segment)  # events written before the table go before it
        if self.partition_spec is None:
            self._write_columnar(rows, segment, spec_zero_partition())
            return
        for partition, piece in partition_pieces(rows, self.partition_spec):
            self._write_columnar(piece, segment, partition)

    def _write_columnar(self, rows: pa.Table, segment: int, partition: dict[str, Any] | None) -> None:
        """Write rows of the serializer's version as one columnar chunk, pending commit."""
        assert isinstance(self.serializer, Serializer)
        path = f"segment-{segment}/{uuid.uuid4().hex}.parquet"
        stats = write_columnar_chunk(self.location, path, rows, self.serializer.encoding_id,
                                     self._spark_schema())
        self._written.append(stats.columnar(path, segment=segment, partition=partition))

    def _spark_schema(self) -> dict[str, Any] | None:
        """The Spark schema (with its field ids) of the serializer's version, for columnar chunks' field ids;
        None for a schema no table could have."""
        if self._field_ids_of is None:
            if not isinstance(self.serializer, Serializer):
                return None
            schema = self.serializer.schema
            try:
                self._field_ids_of = (to_struct(schema.format.name, schema.data, schema.type),)
            except BadRequest:
                self._field_ids_of = (None,)
        return self._field_ids_of[0]

    def write_chunks(self) -> list[Chunk]:
        """Write every non-empty segment buffer to a chunk file, without committing; the chunks pending commit.

        ``flush`` calls this and then commits; on its own it is the first half of a commit (files
        on storage that nobody sees until a commit lists them).
        """
        if self._change_count:
            self._write_change_chunk()
        for segment, buffer in enumerate(self._buffers):
            if buffer.count:
                self._write_chunk(segment)
        return list(self._written)

    def hand_over(self) -> list[Chunk]:
        """:meth:`write_chunks`, and forget them: the caller commits them (in a commit of several tables)."""
        chunks = self.write_chunks()
        self._written = []
        return chunks

    # -- changes by key (primary-key tables) -------------------------------------------------------

    def _keyed(self, what: str) -> TableLayout:
        if self._closed:
            raise ValueError("the writer is closed")
        if self.layout is None:
            raise TypeError(f"{what} is for primary-key tables; {self.scope}.{self.stream} has no primary key")
        return self.layout

    def upsert(self, record: dict[str, Any]) -> None:
        """Buffer an upsert of ``record``'s key: the record (a dict in the table's schema; missing fields
        are null) replaces the key's row, or under ``partial-update`` its non-null fields overwrite."""
        layout = self._keyed("upsert")
        if not isinstance(record, dict):
            raise TypeError(f"a primary-key table takes records as dicts, not {type(record).__name__}")
        for column in layout.key:
            if record.get(column) is None:
                raise ValueError(f"the record has no value for key column {column!r}")
        if self.contract is not None and not self._passes(record):
            return
        self._change_rows.append(record)
        self._change_ops.append(UPSERT)
        self._changed(1)

    def delete(self, key: Any) -> None:
        """Buffer a delete of a key, given as a dict holding the key columns (other fields are ignored),
        a tuple of the key's values in key order, or the value of a one-column key."""
        layout = self._keyed("delete")
        if isinstance(key, dict):
            values = tuple(key.get(column) for column in layout.key)
        elif isinstance(key, tuple):
            if len(key) != len(layout.key):
                raise ValueError(f"the key is {layout.key}: {len(layout.key)} values, not {len(key)}")
            values = key
        elif len(layout.key) == 1:
            values = (key,)
        else:
            raise TypeError(f"the key is {layout.key}: give a tuple or a dict")
        if any(v is None for v in values):
            raise ValueError(f"a delete needs every key column {layout.key}, got {values}")
        self._change_rows.append(dict(zip(layout.key, values, strict=True)))
        self._change_ops.append(DELETE)
        self._changed(1)

    def write_changes(self, table: pa.Table | pa.RecordBatch, ops: pa.Array | Sequence[int] | None = None, *,
                      premerged: bool = False) -> None:
        """Buffer changes given as Arrow rows: ``table`` in the table's columns (missing non-key columns are
        null; extra columns are dropped, but for the hidden state columns an aggregation table declares, such as
        ``<column>$sum`` and ``<column>$count`` of an ``avg``: written by name), ``ops`` one
        ``UPSERT``/``DELETE``/``RETRACT`` (0/1/2) per row (None: all upsert).

        The fast path of producers that hold changes column-wise (CDC ingest): pre-merged with the other
        changes of the commit at ``flush``, in write order. ``premerged`` says the rows are pre-merged already
        (as :func:`premerge` leaves them): when they are all the commit's changes, ``flush`` writes them as
        they are.
        """
        layout = self._keyed("write_changes")
        rows = pa.Table.from_batches([table]) if isinstance(table, pa.RecordBatch) else table
        schema = self.changes_schema()
        columns = []
        for field in schema:
            if field.name in rows.column_names:
                column = rows.column(field.name)
                try:
                    columns.append(column.cast(field.type) if column.type != field.type else column)
                except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
                    raise ValueError(f"column {field.name!r} ({column.type}) does not fit {field.type}: {e}") from e
            elif field.name in layout.key:
                raise ValueError(f"the changes lack key column {field.name!r}")
            else:
                columns.append(pa.nulls(rows.num_rows, field.type))
        conformed = with_state(pa.Table.from_arrays(columns, schema=schema), layout, rows)
        for column in layout.key:
            if conformed.column(column).null_count:
                raise ValueError(f"key column {column!r} holds nulls")
        kinds: pa.Array | None = None
        if ops is not None:
            kinds = ops.cast(pa.int8()) if isinstance(ops, pa.Array) else pa.array(ops, pa.int8())
            if len(kinds) != rows.num_rows:
                raise ValueError(f"{len(kinds)} row kinds for {rows.num_rows} rows")
            allowed = [UPSERT, DELETE, RETRACT] if layout.merge_engine == "aggregation" else [UPSERT, DELETE]
            if kinds.null_count or not pc.all(pc.is_in(kinds, pa.array(allowed, pa.int8()))).as_py():
                raise ValueError(f"row kinds are {UPSERT} (upsert) or {DELETE} (delete)"
                                 + (f" or {RETRACT} (retract)" if len(allowed) == 3 else ""))
            refuse_retractions(conformed, kinds, layout)
        if self.contract is not None:
            # the upserts are checked (deletes and retractions carry keys and values of rows already there)
            upserts = None if kinds is None else pc.equal(kinds, pa.scalar(UPSERT, pa.int8()))
            passed = self._screened(without_state(conformed, layout), upserts)
            if passed is not None:
                conformed = conformed.filter(passed)
                kinds = None if kinds is None else kinds.filter(passed)
                if not conformed.num_rows:
                    return
        self._rows_to_piece()  # changes written before these go before them
        self._change_pieces.append((conformed, kinds, premerged))
        self._changed(conformed.num_rows)

    def changes_schema(self) -> pa.Schema:
        """The Arrow schema of this primary-key table's change rows: the table's columns, only the key non-null."""
        if self._change_schema is None:
            if not isinstance(self.serializer, Serializer):
                raise TypeError("a primary-key table's writer needs the table's schema: pass schema= or a Serializer")
            target = arrow_schema(self.serializer.schema)
            if target is None:
                raise TypeError("changes need an Avro record schema whose fields all have an Arrow type")
            assert self.layout is not None
            self._change_schema = change_schema(target, self.layout.key)
        return self._change_schema

    def _changed(self, count: int) -> None:
        self._change_count += count
        if self._change_count >= self.max_chunk_events and not self._in_transaction:
            self.flush()

    def _rows_to_piece(self) -> None:
        if not self._change_rows:
            return
        schema = self.changes_schema()
        loose = pa.schema([f.with_nullable(True) for f in schema])
        try:
            table = pa.Table.from_pylist(self._change_rows, schema=loose)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise ValueError(f"records do not fit the table's columns {schema}: {e}") from e
        ops = pa.array(self._change_ops, pa.int8())
        self._change_rows, self._change_ops = [], []
        assert self.layout is not None
        self._change_pieces.append((with_state(table.cast(schema), self.layout), ops, False))

    def _write_change_chunk(self) -> None:
        assert self.layout is not None
        assert isinstance(self.serializer, Serializer)
        self._rows_to_piece()
        pieces, self._change_pieces, self._change_count = self._change_pieces, [], 0
        # pre-merged as a whole only when one piece is all of the commit's changes and was written so
        premerged = len(pieces) == 1 and pieces[0][2]
        table = pa.concat_tables([t for t, _, _ in pieces])
        ops: pa.Array | None = None
        if any(o is not None for _, o, _ in pieces):
            ops = pa.concat_arrays([o if o is not None else pa.array([UPSERT] * t.num_rows, pa.int8())
                                    for t, o, _ in pieces])
        if premerged:
            ops = row_kinds_or_none(ops)
        else:
            table, ops = premerge(table, ops, self.layout)
        if self.partition_spec is None:
            self._write_changes(table, ops, spec_zero_partition())
        else:
            self._write_partitioned_changes(table, ops, self.partition_spec)

    def _write_partitioned_changes(self, table: pa.Table, ops: pa.Array | None, spec: PartitionSpec) -> None:
        """Pre-merged changes as one change chunk per partition they fall in. The spec reads only key
        columns, so a key's changes (a delete row holds its key) all go to one chunk, in their order."""
        if ops is not None:
            # the row kinds ride along as a column, so that cutting the rows cuts them too
            table = table.append_column(OP_COLUMN, ops)
        for partition, rows in partition_pieces(table, spec):
            kinds = None
            if ops is not None:
                kinds = row_kinds_or_none(rows.column(OP_COLUMN).combine_chunks())
                rows = rows.drop_columns([OP_COLUMN])
            self._write_changes(rows, kinds, partition)

    def _write_changes(self, table: pa.Table, ops: pa.Array | None, partition: dict[str, Any] | None) -> None:
        """Write pre-merged changes as one change chunk in the sticky segment, pending commit."""
        assert isinstance(self.serializer, Serializer)
        assert self.layout is not None
        # a hidden state column no row fills is left out: a reader takes the rows' visible values, as it would
        table = table.drop_columns([n for n in self.layout.state_names if table.column(n).null_count == table.num_rows])
        segment = self._sticky
        path = f"segment-{segment}/{uuid.uuid4().hex}.parquet"
        stats = write_change_chunk(self.location, path, table, ops, self.serializer.encoding_id,
                                   dictionary=self.change_dictionary)
        self._written.append(stats.columnar(path, segment=segment, partition=partition))

    # -- committing ------------------------------------------------------------------------------

    def flush(self, *, overwrite: bool = False, properties: dict[str, str] | None = None) -> dict[str, Any] | None:
        """Write buffered events to chunk files and commit them all in one commit; the commit, or None if empty.

        With ``overwrite`` the commit replaces all that came before it (even when it is empty). A
        commit left in doubt by an earlier flush is re-sent first, so nothing is ever committed twice.
        Rows that DLQ rules refused since the last commit are appended to their dead-letter tables by the
        same commit (one commit of several tables, at one time, under this writer's id and sequence); when
        they were all the rows, only the dead-letter tables are committed to, and the answer is None.
        """
        if self._in_transaction:
            raise RuntimeError("flush() inside transaction(): the transaction commits when it ends")
        return self._flush(overwrite, properties or {})

    def _flush(self, overwrite: bool, properties: dict[str, str]) -> dict[str, Any] | None:
        if self._in_doubt is not None:
            self._send(self._in_doubt, in_doubt=True)
            self._in_doubt = None
        chunks = self.write_chunks()
        dead = self.dead_letters.write_chunks() if self.dead_letters is not None and self.dead_letters.held else []
        if not chunks and not overwrite and not dead:
            return None
        options = CommitOptions(overwrite=overwrite, writer_id=self.writer_id, writer_sequence=self._next_sequence(),
                                properties=properties)
        # the dead letters are appended to their tables by the same commit, under the same writer sequence
        appended = CommitOptions(writer_id=self.writer_id, writer_sequence=options.writer_sequence,
                                 properties=properties)
        attempt = _Attempt(chunks, options, tuple((TableCommit(scope, table, found, appended), location)
                                                  for scope, table, found, location in dead))
        self._written = []
        self._in_doubt = attempt
        answer = self._send(attempt)
        self._in_doubt = None
        return answer

    def _next_sequence(self) -> int:
        if self._sequence is None:
            self._sequence = self._last_committed_sequence()
        return self._sequence + 1

    def _last_committed_sequence(self) -> int:
        last = self.last_commit()
        return 0 if last is None else int(last["writerSequence"])

    def last_commit(self) -> dict[str, Any] | None:
        """The commit of this writer id with the highest sequence (the REST commit shape), or None.

        What a restarted producer resumes from: its ``properties`` hold what the producer recorded
        with it (a CDC ingest records the source position of the last change it applied). A table with
        dead-letter tables has its writer's commits of a batch whose every row was a dead letter in those.
        """
        found: dict[str, Any] | None = None
        tables = [(self.scope, self.stream)]
        if self.contract is not None:
            tables += self.contract.dead_letter_tables
        for scope, stream in tables:
            mine = self._last_commit_in(scope, stream)
            if mine is not None and (found is None or int(mine["writerSequence"]) > int(found["writerSequence"])):
                found = mine
        return found

    def _last_commit_in(self, scope: str, stream: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = None
        after = 0
        while True:
            try:
                page = self.catalog.commits(scope, stream, after=after)
            except NotFound:  # a dead-letter table not created yet
                return None
            for commit in page:
                if commit.get("writerId") == self.writer_id and (
                    found is None or int(commit["writerSequence"]) > int(found["writerSequence"])
                ):
                    found = commit
            if len(page) < 1000:
                return found
            after = int(page[-1]["number"])

    def _send(self, attempt: _Attempt, *, in_doubt: bool = False) -> dict[str, Any] | None:
        """Commit ``attempt`` (``in_doubt``: an earlier send got no answer), resolving lost answers from the
        catalog (``catalog_api.streams.committing``); a refused commit's files are deleted, an unresolved
        one's kept for the next flush to re-send."""
        try:
            made = self._commit(attempt, in_doubt)
        except CommitInDoubt as doubt:
            raise CommitInDoubt(f"{doubt}; flush() again re-sends it") from doubt.__cause__
        except StreamcatError:
            # The server refused the commit (and, since a repeat of an acknowledged commit is answered as
            # a duplicate, it never took it): its files are garbage now.
            self._in_doubt = None
            self._discard(attempt.chunks)
            for part, location in attempt.dead:
                storage.delete_files(location, [c.path for c in part.chunks])
            raise
        assert attempt.options.writer_sequence is not None
        self._sequence = attempt.options.writer_sequence
        for location, committed in made:
            if committed.stale:  # a repeat of an earlier run's commit: these files are nobody's
                storage.delete_files(location, list(committed.stale))
        # the table's commit; None when the batch's rows were all dead letters
        return made[0][1].answer if attempt.chunks or attempt.options.overwrite else None

    def _commit(self, attempt: _Attempt, in_doubt: bool) -> list[tuple[str, Committed]]:
        """Send ``attempt``: one commit, or, with dead letters, one commit of several tables; what was made, with
        the location of each table committed to (the table's first, when the attempt has chunks of it)."""
        if not attempt.dead:
            return [(self.location, commit_resolved(
                self.catalog, self.scope, self.stream, attempt.chunks, attempt.options,
                attempts=self.retries + 1, backoff=self.backoff, in_doubt=in_doubt))]
        parts = [(part, location) for part, location in attempt.dead]
        if attempt.chunks or attempt.options.overwrite:
            parts.insert(0, (TableCommit(self.scope, self.stream, attempt.chunks, attempt.options), self.location))
        made = commit_tables_resolved(self.catalog, [part for part, _ in parts], attempts=self.retries + 1,
                                      backoff=self.backoff, in_doubt=in_doubt)
        return [(location, committed) for (_, location), committed in zip(parts, made, strict=True)]

    def _discard(self, chunks: list[Chunk]) -> None:
        storage.delete_files(self.location, [c.path for c in chunks])

    # -- transactions ------------------------------------------------------------------------------

    @contextmanager
    def transaction(self, *, overwrite: bool = False,
                    properties: dict[str, str] | None = None) -> Iterator[StreamWriter]:
        """Events written inside become visible together when the block ends, or not at all.

        What was written before the block is flushed first (it is not part of the transaction).
        An exception inside the block aborts: buffered events are dropped and chunk files already
        written are deleted. With ``overwrite`` the transaction replaces the stream's data.
        """
        if self._in_transaction:
            raise RuntimeError("transactions do not nest")
        self.flush()
        self._in_transaction = True
        try:
            yield self
        except BaseException:
            self._in_transaction = False
            self.abort()
            raise
        self._in_transaction = False
        self._flush(overwrite, properties or {})

    def abort(self) -> None:
        """Drop buffered events and delete chunk files written but not committed."""
        self._buffers = [_Buffer() for _ in range(self.segments)]
        self._change_rows, self._change_ops, self._change_pieces, self._change_count = [], [], [], 0
        written, self._written = self._written, []
        self._discard(written)
        if self.dead_letters is not None:
            self.dead_letters.drop()

    # -- life cycle ---------------------------------------------------------------------------------

    @property
    def buffered(self) -> int:
        """Events written but not yet committed."""
        return (sum(b.count for b in self._buffers) + sum(c.event_count for c in self._written)
                + self._change_count + (self.dead_letters.held if self.dead_letters is not None else 0))

    def close(self) -> None:
        """Flush what is buffered and refuse further writes."""
        if not self._closed:
            self.flush()
            self._shut()

    def __enter__(self) -> StreamWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.close()
        else:
            # A failing block may have written half of what belongs together: keep none of it.
            self.abort()
            self._shut()

    def _shut(self) -> None:
        # write() takes its fast path only while _in_place is set: without it, it checks _closed.
        self._closed = True
        self._in_place = None


__all__ = ["CommitInDoubt", "RecordSerializer", "StreamWriter", "change_schema", "premerge",
           "segment_of"]
