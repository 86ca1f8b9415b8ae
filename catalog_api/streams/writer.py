"""The stream writer: buffers events per segment, writes event chunk files, commits them atomically.

Events go to a segment by a stable hash of their routing key (CRC-32, so every writer in every
process agrees), and one routing key always lands in the same segment: its events keep their
order. ``flush()`` writes one chunk file per segment that holds events and makes them all
visible in ONE commit. Every commit carries the writer's id and a sequence number that is
only advanced once the server has acknowledged the commit, so re-sending a commit whose answer
was lost (a timeout, a dropped connection) is a no-op on the server: exactly once.
"""

from __future__ import annotations

import struct
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import requests

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.streams.chunks import write_columnar_chunk, write_framed_event_chunk
from catalog_api.streams.reader import arrow_schema, scoped_registry
from registry.client import RegistryClient
from registry.errors import StreamcatError
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


class CommitInDoubt(Exception):
    """A commit was sent but its answer never came; ``flush()`` re-sends it (harmlessly) before anything else."""


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
    """A commit the writer has sent at least once: exactly this is re-sent until acknowledged."""

    sequence: int
    chunks: list[Chunk]
    overwrite: bool
    properties: dict[str, str]


def _as_it_is(_error: BaseException) -> Exception | None:
    return None


def segment_of(routing_key: str | bytes, segments: int) -> int:
    """The segment a routing key maps to (CRC-32 of its UTF-8 bytes, modulo the segment count)."""
    raw = routing_key.encode() if isinstance(routing_key, str) else routing_key
    return zlib.crc32(raw) % segments


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
        self.registry = scoped_registry(registry, scope)
        self.scope = scope
        self.stream = stream
        if schema is not None:
            serializer = Serializer(self.registry, group or stream, schema, codec)
        self.serializer = serializer
        self.max_chunk_events = max_chunk_events
        self.max_chunk_bytes = max_chunk_bytes
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

    # -- writing ---------------------------------------------------------------------------------

    def write(self, event: Any, routing_key: str | bytes | None = None, event_time: int | None = None) -> None:
        """Buffer one event: a record (serialized with the writer's serializer) or wire-format bytes.

        ``event_time`` (epoch milliseconds) feeds the chunk's min/max event time.
        """
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
        This is the fast path for bulk data: no per-row serialization on either side.
        """
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
        if self._buffers[segment].count:
            self._write_chunk(segment)  # events written before the table go before it
        path = f"segment-{segment}/{uuid.uuid4().hex}.parquet"
        stats = write_columnar_chunk(self.location, path, rows, self.serializer.encoding_id)
        self._written.append(Chunk(path=path, kind="columnar", segment=segment, event_count=stats.event_count,
                                   bytes=stats.bytes, encoding_ids=tuple(sorted(stats.encoding_ids)),
                                   stats=stats.stats))

    def write_chunks(self) -> list[Chunk]:
        """Write every non-empty segment buffer to a chunk file, without committing; the chunks pending commit.

        ``flush`` calls this and then commits; on its own it is the first half of a commit (files
        on storage that nobody sees until a commit lists them).
        """
        for segment, buffer in enumerate(self._buffers):
            if buffer.count:
                self._write_chunk(segment)
        return list(self._written)

    # -- committing ------------------------------------------------------------------------------

    def flush(self, *, overwrite: bool = False, properties: dict[str, str] | None = None) -> dict[str, Any] | None:
        """Write buffered events to chunk files and commit them all in one commit; the commit, or None if empty.

        With ``overwrite`` the commit replaces all that came before it (even when it is empty). A
        commit left in doubt by an earlier flush is re-sent first, so nothing is ever committed twice.
        """
        if self._in_transaction:
            raise RuntimeError("flush() inside transaction(): the transaction commits when it ends")
        return self._flush(overwrite, properties or {})

    def _flush(self, overwrite: bool, properties: dict[str, str]) -> dict[str, Any] | None:
        if self._in_doubt is not None:
            self._send(self._in_doubt)
            self._in_doubt = None
        chunks = self.write_chunks()
        if not chunks and not overwrite:
            return None
        attempt = _Attempt(self._next_sequence(), chunks, overwrite, properties)
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
        last, after = 0, 0
        while True:
            page = self.catalog.commits(self.scope, self.stream, after=after)
            for commit in page:
                if commit.get("writerId") == self.writer_id:
                    last = max(last, int(commit["writerSequence"]))
            if len(page) < 1000:
                return last
            after = int(page[-1]["number"])

    def _send(self, attempt: _Attempt) -> dict[str, Any]:
        delay = self.backoff
        for tries in range(self.retries + 1):
            try:
                answer = self.catalog.commit(self.scope, self.stream, attempt.chunks, overwrite=attempt.overwrite,
                                             writer_id=self.writer_id, writer_sequence=attempt.sequence,
                                             properties=attempt.properties)
            except StreamcatError as error:
                if error.status < 500:
                    # The server refused the commit (and, since a repeat of an acknowledged commit is
                    # answered as a duplicate, it never took it): its files are garbage now.
                    self._in_doubt = None
                    self._discard(attempt.chunks)
                    raise
                failure: Exception = error
            except requests.RequestException as error:
                # No answer, or half of one: the commit may or may not have happened.
                failure = error
            else:
                self._sequence = attempt.sequence
                return answer
            if tries < self.retries:
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
        raise CommitInDoubt(f"commit {attempt.sequence} of writer {self.writer_id} got no answer after "
                            f"{self.retries + 1} tries; flush() again re-sends it") from failure

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
        written, self._written = self._written, []
        self._discard(written)

    # -- life cycle ---------------------------------------------------------------------------------

    @property
    def buffered(self) -> int:
        """Events written but not yet committed."""
        return sum(b.count for b in self._buffers) + sum(c.event_count for c in self._written)

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


__all__ = ["CommitInDoubt", "RecordSerializer", "StreamWriter", "segment_of"]
