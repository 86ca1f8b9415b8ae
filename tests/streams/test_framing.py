"""Writers frame events in place: the chunk files hold exactly what framing each serialized event gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from catalog_api import storage
from catalog_api.streams.chunks import EVENT_MAGIC, frame_events, frame_offsets, split_event_chunk
from registry.serde import SerdeError, Serializer
from tests.streams.helpers import (  # noqa: F401  (fixtures)
    V1,
    V2,
    StreamHandle,
    stream_fixture,
)


def chunk_bytes(stream: StreamHandle) -> list[bytes]:
    """The bytes of the stream's chunk files, in snapshot order."""
    _cut, chunks = stream.reader().snapshot()
    return [Path(storage.join(stream.location, c.path)).read_bytes() for c in chunks]


def test_a_chunk_holds_the_framed_events_of_serialize(stream: StreamHandle) -> None:
    writer = stream.writer(schema=V1)
    records = [{"key": f"k{i}", "seq": i * 1_000_003} for i in range(300)]
    for record in records:
        writer.write(record)
    writer.close()
    same = Serializer(stream.registry, stream.name, V1)
    [data] = chunk_bytes(stream)
    assert data == EVENT_MAGIC + bytes(frame_events([same.serialize(r) for r in records]))
    _cut, [chunk] = stream.reader().snapshot()
    assert chunk.encoding_ids == (same.encoding_id,)
    assert chunk.bytes == len(data)
    assert [r["seq"] for r in stream.reader().read()] == [r["seq"] for r in records]


def test_records_and_wire_format_bytes_mix_in_one_chunk(stream: StreamHandle) -> None:
    other = Serializer(stream.registry, stream.name, V2)
    writer = stream.writer(schema=V1)
    expected: list[bytes] = []
    mine = Serializer(stream.registry, stream.name, V1)
    for i in range(40):
        if i % 3:
            writer.write({"key": "k", "seq": i})
            expected.append(mine.serialize({"key": "k", "seq": i}))
        else:
            event = other.serialize({"key": "k", "seq": i, "source": "raw"})
            writer.write(memoryview(event) if i % 2 else event)
            expected.append(event)
    writer.close()
    [data] = chunk_bytes(stream)
    assert split_event_chunk(data) == expected
    _cut, [chunk] = stream.reader().snapshot()
    assert chunk.encoding_ids == tuple(sorted({mine.encoding_id, other.encoding_id}))


def test_a_record_that_does_not_fit_leaves_the_buffer_as_it_was(stream: StreamHandle) -> None:
    writer = stream.writer(schema=V1)
    writer.write({"key": "a", "seq": 1})
    with pytest.raises(SerdeError, match="does not fit"):
        writer.write({"key": "b", "seq": "not a number"})
    writer.write({"key": "c", "seq": 3})
    assert writer.buffered == 2
    writer.close()
    assert [r["key"] for r in stream.reader().read()] == ["a", "c"]


def test_max_chunk_bytes_bounds_the_events_without_their_length_prefixes(stream: StreamHandle) -> None:
    first: dict[str, Any] = {"key": "k", "seq": 0}
    size = len(Serializer(stream.registry, stream.name, V1).serialize(first))  # every event of the run is this long
    writer = stream.writer(schema=V1, max_chunk_bytes=10 * size)
    for i in range(25):
        writer.write({"key": "k", "seq": i % 50})
    writer.close()
    counts = [len(frame_offsets(data)) for data in chunk_bytes(stream)]
    assert counts == [10, 10, 5]
