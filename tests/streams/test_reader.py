"""StreamReader: cuts, time travel, truncation, overwrite, columnar chunks, streaming positions."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.streams import StreamReader, StreamWriter
from catalog_api.streams.chunks import (
    EVENT_MAGIC,
    ChunkFormatError,
    frame_events,
    split_event_chunk,
    write_columnar_chunk,
)
from catalog_api.streams.reader import arrow_schema
from registry.client import RegistryClient
from registry.errors import BadRequest, NotFound
from registry.serde import Serializer
from tests.streams.helpers import (  # noqa: F401  (fixtures)
    V1,
    V2,
    StreamHandle,
    stream4_fixture,
    stream_fixture,
)


def write_round(handle: StreamHandle, seqs: range, schema: Any = V1, **flush: Any) -> dict[str, Any]:
    """One commit holding events ``seqs``."""
    writer = handle.writer(schema=schema)
    for seq in seqs:
        writer.write({"key": f"k{seq % 3}", "seq": seq}, routing_key=f"k{seq % 3}")
    commit = writer.flush(**flush)
    assert commit is not None
    return commit


def seqs(records: Any) -> list[int]:
    """The sorted sequence numbers of records."""
    return sorted(r["seq"] for r in records)


def test_a_cut_reads_the_commits_up_to_it(stream4: StreamHandle) -> None:
    for n in range(3):
        write_round(stream4, range(n * 10, n * 10 + 10))
    reader = stream4.reader()
    assert seqs(reader.read()) == list(range(30))
    assert seqs(reader.read(cut=2)) == list(range(20))
    assert seqs(reader.read(cut=0)) == []


def test_as_of_time_reads_the_stream_as_it_was(stream: StreamHandle) -> None:
    first = write_round(stream, range(5))
    time.sleep(0.05)
    write_round(stream, range(5, 10))
    reader = stream.reader()
    assert seqs(reader.read(as_of_time=first["timestamp"])) == list(range(5))
    with pytest.raises(BadRequest, match="no commit at or before"):
        reader.read(as_of_time=first["timestamp"] - 60_000)


def test_truncation_hides_the_commits_up_to_the_cut(stream4: StreamHandle) -> None:
    for n in range(3):
        write_round(stream4, range(n * 10, n * 10 + 10))
    stream4.catalog.truncate_stream(stream4.scope, stream4.name, 2)
    reader = stream4.reader()
    assert seqs(reader.read()) == list(range(20, 30))
    assert seqs(reader.read(cut=2)) == []  # before the truncation point nothing is left to see
    position, records = reader.poll(0)  # a streaming read skips truncated commits too
    assert position == 3
    assert seqs(records) == list(range(20, 30))
    with pytest.raises(BadRequest):
        stream4.catalog.truncate_stream(stream4.scope, stream4.name, 1)  # truncation only moves forward


def test_an_overwrite_replaces_what_came_before_but_time_travel_still_sees_it(stream4: StreamHandle) -> None:
    write_round(stream4, range(10))
    write_round(stream4, range(10, 20))
    writer = stream4.writer(schema=V1)
    with writer.transaction(overwrite=True):
        for seq in range(100, 105):
            writer.write({"key": "new", "seq": seq}, routing_key="new")
    write_round(stream4, range(200, 203))
    reader = stream4.reader()
    assert seqs(reader.read()) == [100, 101, 102, 103, 104, 200, 201, 202]
    assert seqs(reader.read(cut=3)) == [100, 101, 102, 103, 104]
    assert seqs(reader.read(cut=2)) == list(range(20))
    empty = stream4.writer(schema=V1).flush(overwrite=True)  # an empty overwrite empties the stream
    assert empty is not None
    assert empty["number"] == 5
    assert list(reader.read()) == []
    assert len(list(reader.read(cut=4))) == 8


def test_columnar_and_event_chunks_read_back_together_under_the_latest_schema(stream: StreamHandle) -> None:
    write_round(stream, range(5))  # events, v1
    v1 = Serializer(stream.registry, stream.name, V1)
    rows = [{"key": f"c{i}", "seq": 100 + i} for i in range(6)]
    v1_arrow = arrow_schema(V1)
    assert v1_arrow is not None
    table = pa.Table.from_pylist(rows, schema=v1_arrow)
    path = f"columnar/{uuid.uuid4().hex}.parquet"
    stats = write_columnar_chunk(stream.location, path, table, v1.encoding_id)
    stream.catalog.commit(stream.scope, stream.name, [
        stats.columnar(path)])
    v2_writer = stream.writer(schema=V2)
    v2_writer.write({"key": "e", "seq": 200, "source": "producer"})
    v2_writer.close()

    reader = stream.reader()  # latest schema: V2, whose new field defaults to "v1"
    records = list(reader.read())
    assert [r["seq"] for r in records] == [0, 1, 2, 3, 4, 100, 101, 102, 103, 104, 105, 200]
    assert records[5] == {"key": "c0", "seq": 100, "source": "v1"}
    assert records[-1] == {"key": "e", "seq": 200, "source": "producer"}
    assert {r["source"] for r in records[:-1]} == {"v1"}

    batches = list(reader.read_batches())
    assert {b.schema for b in batches} == {arrow_schema(V2)}
    assert pa.Table.from_batches(batches).to_pylist() == records

    under_v1 = list(stream.reader(reader_schema=V1).read())  # an older reader schema drops the new field
    assert under_v1[-1] == {"key": "e", "seq": 200}
    assert under_v1[5] == {"key": "c0", "seq": 100}


def test_reading_batches_of_a_given_size(stream: StreamHandle) -> None:
    write_round(stream, range(25))
    batches = list(stream.reader().read_batches(batch_rows=10))
    assert [b.num_rows for b in batches] == [10, 10, 5]
    assert pa.Table.from_batches(batches).column("seq").to_pylist() == list(range(25))


def test_poll_reads_the_commits_after_a_position(stream4: StreamHandle) -> None:
    reader = stream4.reader()
    assert reader.poll(0) == (0, [])
    for n in range(4):
        write_round(stream4, range(n * 10, n * 10 + 10))
    position, records = reader.poll(0, max_commits=3)
    assert position == 3
    assert seqs(records) == list(range(30))
    position, records = reader.poll(position)
    assert position == 4
    assert seqs(records) == list(range(30, 40))
    assert reader.poll(position) == (4, [])
    with pytest.raises(ValueError, match="beyond"):
        reader.poll(9)
    with pytest.raises(ValueError, match="commit number"):
        reader.poll(-1)


def test_tail_follows_new_commits_until_stopped(stream: StreamHandle) -> None:
    reader = stream.reader()
    stop = threading.Event()
    seen: list[tuple[int, list[int]]] = []

    def follow() -> None:
        for position, records in reader.tail(0, poll_interval=0.02, stop=stop):
            seen.append((position, [r["seq"] for r in records]))
            if position == 3:
                stop.set()

    thread = threading.Thread(target=follow)
    thread.start()
    for n in range(3):
        write_round(stream, range(n * 2, n * 2 + 2))
        time.sleep(0.05)
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert [s for _, batch in seen for s in batch] == [0, 1, 2, 3, 4, 5]
    assert seen[-1][0] == 3


def test_a_reader_of_a_scope_given_a_client_of_another_namespace(stream: StreamHandle, server_url: str) -> None:
    write_round(stream, range(3))
    reader = stream.reader()
    other = type(reader)(stream.catalog, RegistryClient(server_url), stream.scope, stream.name)
    assert other.registry.namespace == stream.scope
    assert seqs(other.read()) == [0, 1, 2]


def test_unknown_scope_or_stream_is_not_found(stream: StreamHandle) -> None:
    with pytest.raises(NotFound):
        type(stream.reader())(stream.catalog, stream.registry, stream.scope, "nope")
    with pytest.raises(NotFound):
        type(stream.reader())(stream.catalog, stream.registry, "no-such-scope", stream.name)


def test_tables_and_events_of_one_writer_read_back_in_write_order(stream: StreamHandle) -> None:
    writer = stream.writer(schema=V2)
    writer.write({"key": "e", "seq": 0, "source": "event"})
    writer.write_table(pa.table({"seq": [1, 2], "key": ["t", "t"], "source": ["table", "table"],
                                 "ignored": [0.5, 0.5]}))
    writer.write({"key": "e", "seq": 3, "source": "event"})
    writer.write_table(pa.record_batch({"key": ["t"], "seq": pa.array([4], pa.int32()), "source": ["table"]}))
    commit = writer.flush()
    assert commit is not None
    assert commit["chunkCount"] == 4
    assert commit["eventCount"] == 5
    records = list(stream.reader().read())
    assert records == [{"key": k, "seq": n, "source": s} for k, n, s in (
        ("e", 0, "event"), ("t", 1, "table"), ("t", 2, "table"), ("e", 3, "event"), ("t", 4, "table"))]
    kinds = [c.kind for c in stream.reader().snapshot()[1]]
    assert kinds == ["events", "columnar", "events", "columnar"]


def test_tables_that_do_not_fit_the_schema_are_refused(stream: StreamHandle) -> None:
    writer = stream.writer(schema=V1)
    with pytest.raises(ValueError, match="lacks the schema's columns"):
        writer.write_table(pa.table({"key": ["a"]}))
    with pytest.raises(ValueError, match="does not fit"):
        writer.write_table(pa.table({"key": ["a"], "seq": ["not a number"]}))
    with pytest.raises(ValueError, match="segment 3"):
        writer.write_table(pa.table({"key": ["a"], "seq": [1]}), segment=3)
    with pytest.raises(TypeError, match="schema"):
        stream.writer().write_table(pa.table({"key": ["a"], "seq": [1]}))
    assert writer.flush() is None
    assert stream.files() == set()


def test_an_aborted_transaction_removes_its_tables_too(stream: StreamHandle) -> None:
    writer = stream.writer(schema=V1)

    def give_up() -> None:
        with writer.transaction():
            writer.write_table(pa.table({"key": ["a", "b"], "seq": [1, 2]}))
            assert len(stream.files()) == 1
            raise KeyError("stop")

    with pytest.raises(KeyError):
        give_up()
    assert stream.files() == set()
    assert stream.last_commit() == 0


SPARK_SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": False, "metadata": {}},
    {"name": "name", "type": "string", "nullable": True, "metadata": {}},
]}


@pytest.mark.parametrize("fmt", ["avro", "protobuf", "json"])
def test_a_tables_stream_takes_events_of_its_schema_in_every_format(
    catalog: CatalogClient, client: RegistryClient, scope: str, fmt: str,
) -> None:
    catalog.create_table(scope, "people", SPARK_SCHEMA, fmt=fmt, segments=2)
    latest = client.latest_schemas("people")[0].schema
    writer = StreamWriter(catalog, client, scope, "people", schema=latest)
    for i in range(20):
        writer.write({"id": i, "name": f"p{i}"}, routing_key=str(i))
    writer.close()
    records = list(StreamReader(catalog, client, scope, "people").read())
    assert sorted((r["id"], r["name"]) for r in records) == [(i, f"p{i}") for i in range(20)]


def test_a_chunk_file_that_lost_events_is_an_error(stream: StreamHandle) -> None:
    write_round(stream, range(10))
    _cut, chunks = stream.reader().snapshot()
    path = storage.join(stream.location, chunks[0].path)
    events = split_event_chunk(Path(path).read_bytes())
    Path(path).write_bytes(EVENT_MAGIC + bytes(frame_events(events[:7])))  # cut cleanly between two events
    with pytest.raises(ChunkFormatError, match="holds 7 events; its commit says 10"):
        list(stream.reader().read())
