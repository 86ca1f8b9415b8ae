"""StreamWriter: routing, ordering, one commit per flush, exactly-once commits, transactions."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog_api.client import CatalogClient
from catalog_api.streams import CommitInDoubt, StreamWriter, segment_of
from catalog_api.streams.chunks import read_event_chunk
from registry.client import RegistryClient
from registry.errors import Conflict
from registry.serde import SerdeError, Serializer
from tests.streams.helpers import (  # noqa: F401  (fixtures)
    V1,
    V2,
    LosingAnswers,
    StreamHandle,
    make_stream,
    stream4_fixture,
    stream_fixture,
)


def by_key(records: list[dict[str, Any]]) -> dict[str, list[int]]:
    """The sequence numbers of each key, in the order read."""
    found: dict[str, list[int]] = defaultdict(list)
    for r in records:
        found[r["key"]].append(r["seq"])
    return dict(found)


@given(st.one_of(st.text(), st.binary()), st.integers(1, 64))
def test_a_routing_key_always_maps_to_the_same_segment(key: str | bytes, segments: int) -> None:
    segment = segment_of(key, segments)
    assert 0 <= segment < segments
    assert segment_of(key, segments) == segment
    raw = key.encode() if isinstance(key, str) else key
    assert segment_of(raw, segments) == segment  # a str key and its UTF-8 bytes agree


def test_keys_spread_over_the_segments_and_each_key_stays_in_one(stream4: StreamHandle) -> None:
    writer = stream4.writer(schema=V1)
    for i in range(400):
        writer.write({"key": f"k{i % 40}", "seq": i}, routing_key=f"k{i % 40}", event_time=1000 + i)
    commit = writer.flush()
    assert commit is not None
    assert commit["chunkCount"] == 4
    assert commit["eventCount"] == 400

    _cut, chunks = stream4.reader().snapshot()
    assert sorted(c.segment for c in chunks) == [0, 1, 2, 3]
    same = Serializer(stream4.registry, stream4.name, V1)  # the encoding id the writer uses
    for chunk in chunks:
        assert chunk.path.startswith(f"segment-{chunk.segment}/")
        assert chunk.path.endswith(".events")
        assert chunk.encoding_ids == (same.encoding_id,)
        keys = {r["key"] for r in stream4.reader().read_chunk(chunk)}
        assert {segment_of(k, 4) for k in keys} == {chunk.segment}
        events = list(read_event_chunk(stream4.location, chunk.path))
        assert len(events) == chunk.event_count
    assert min(c.min_event_time for c in chunks if c.min_event_time is not None) == 1000
    assert max(c.max_event_time for c in chunks if c.max_event_time is not None) == 1399


def test_events_of_a_key_come_back_in_write_order_across_flushes_and_versions(stream4: StreamHandle) -> None:
    v1, v2 = stream4.writer(schema=V1), stream4.writer(schema=V2)
    for i in range(3000):
        key = f"user-{i % 17}"
        if i % 2:
            v2.write({"key": key, "seq": i, "source": "v2"}, routing_key=key)
        else:
            v1.write({"key": key, "seq": i}, routing_key=key)
        if i % 1000 == 999:
            v1.flush()
            v2.flush()
    assert v1.flush() is None
    assert v2.flush() is None

    records = list(stream4.reader().read())
    assert len(records) == 3000
    assert {r["source"] for r in records if r["seq"] % 2 == 0} == {"v1"}  # the v2 default
    assert {r["source"] for r in records if r["seq"] % 2} == {"v2"}
    for key, seqs in by_key(records).items():
        # Within a flush round v1's commit precedes v2's, so a key's order is by round, then by writer.
        rounds = [(s // 1000, s % 2, s) for s in seqs]
        assert rounds == sorted(rounds), key


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from("abcdefg"), st.booleans()), min_size=1, max_size=120),
       st.integers(1, 9))
def test_any_interleaving_of_writes_and_flushes_keeps_each_keys_order(
    catalog: CatalogClient, client: RegistryClient, scope: str, steps: list[tuple[str, bool]], chunk_events: int,
) -> None:
    handle = make_stream(catalog, client, scope, segments=3)
    writer = handle.writer(schema=V1, max_chunk_events=chunk_events)
    expected: dict[str, list[int]] = defaultdict(list)
    for seq, (key, flush) in enumerate(steps):
        writer.write({"key": key, "seq": seq}, routing_key=key)
        expected[key].append(seq)
        if flush:
            writer.flush()
    writer.close()
    assert by_key(list(handle.reader().read())) == expected


def test_unkeyed_events_of_one_writer_keep_their_order(stream4: StreamHandle) -> None:
    writer = stream4.writer(schema=V1)
    for i in range(500):
        writer.write({"key": "none", "seq": i})
        if i % 97 == 0:
            writer.flush()
    writer.close()
    assert [r["seq"] for r in stream4.reader().read()] == list(range(500))


def test_a_full_chunk_is_committed_without_waiting_for_flush(stream: StreamHandle) -> None:
    writer = stream.writer(schema=V1, max_chunk_events=100)
    for i in range(250):
        writer.write({"key": "k", "seq": i})
    assert stream.last_commit() == 2
    assert writer.buffered == 50
    writer.close()
    assert [r["seq"] for r in stream.reader().read()] == list(range(250))
    with pytest.raises(ValueError, match="closed"):
        writer.write({"key": "k", "seq": 0})


def test_wire_format_bytes_are_written_as_they_are(stream: StreamHandle) -> None:
    serializer = Serializer(stream.registry, stream.name, V1)
    writer = stream.writer()
    events = [serializer.serialize({"key": "k", "seq": i}) for i in range(10)]
    for event in events:
        writer.write(bytearray(event))
    writer.close()
    _cut, chunks = stream.reader().snapshot()
    assert [bytes(e) for e in read_event_chunk(stream.location, chunks[0].path)] == events
    with pytest.raises(SerdeError, match="protocol version"):
        stream.writer().write(b"\x02\x00\x00\x00\x01payload")
    with pytest.raises(SerdeError, match="shorter"):
        stream.writer().write(b"\x01\x00")
    with pytest.raises(TypeError, match="no serializer"):
        stream.writer().write({"key": "k", "seq": 1})


# -- exactly once -------------------------------------------------------------------------------------

def test_a_commit_whose_answer_was_lost_is_retried_and_counted_once(stream: StreamHandle, server_url: str) -> None:
    session = LosingAnswers(lose=2)
    writer = StreamWriter(CatalogClient(server_url, session=session), stream.registry, stream.scope, stream.name,
                          schema=V1, backoff=0.01)
    for i in range(100):
        writer.write({"key": "k", "seq": i})
    commit = writer.flush()
    assert session.sent == 1  # the answer was lost; the catalog, asked, holds the commit: not sent again
    assert commit is not None
    assert not commit["duplicate"]  # it is this flush's own commit
    assert commit["number"] == 1
    assert stream.last_commit() == 1
    assert [r["seq"] for r in stream.reader().read()] == list(range(100))


def test_a_commit_left_in_doubt_is_resent_before_new_data(stream: StreamHandle, server_url: str) -> None:
    session = LosingAnswers(lose=1)
    writer = StreamWriter(CatalogClient(server_url, session=session), stream.registry, stream.scope, stream.name,
                          schema=V1, retries=0)
    writer.write({"key": "k", "seq": 0})
    with pytest.raises(CommitInDoubt):
        writer.flush()
    writer.write({"key": "k", "seq": 1})
    writer.flush()
    commits = stream.catalog.commits(stream.scope, stream.name)
    assert [(c["number"], c["writerSequence"]) for c in commits] == [(1, 1), (2, 2)]
    assert [r["seq"] for r in stream.reader().read()] == [0, 1]


def test_a_restarted_writer_with_the_same_id_continues_its_sequence(stream: StreamHandle) -> None:
    first = stream.writer(schema=V1, writer_id="producer-7")
    for round_ in range(3):
        first.write({"key": "k", "seq": round_})
        first.flush()
    again = stream.writer(schema=V1, writer_id="producer-7")  # the process restarted
    again.write({"key": "k", "seq": 3})
    commit = again.flush()
    assert commit is not None
    assert not commit["duplicate"]
    assert commit["writerSequence"] == 4
    assert [r["seq"] for r in stream.reader().read()] == [0, 1, 2, 3]


def test_a_refused_commit_deletes_its_files(stream: StreamHandle) -> None:
    writer = stream.writer(schema=V1)
    writer.write({"key": "k", "seq": 0})
    stream.catalog.seal_stream(stream.scope, stream.name)
    with pytest.raises(Conflict):
        writer.flush()
    assert stream.files() == set()
    assert writer.buffered == 0


# -- transactions -------------------------------------------------------------------------------------

def test_a_transaction_commits_everything_at_once(stream4: StreamHandle) -> None:
    writer = stream4.writer(schema=V1, max_chunk_events=50)
    writer.write({"key": "before", "seq": -1}, routing_key="before")
    with writer.transaction():
        assert stream4.last_commit() == 1  # what came before was flushed first
        for i in range(1000):
            writer.write({"key": f"k{i % 3}", "seq": i}, routing_key=f"k{i % 3}")
        assert stream4.last_commit() == 1  # full chunks were written, none committed
        assert len(stream4.files()) > 4
    commits = stream4.catalog.commits(stream4.scope, stream4.name)
    assert [c["eventCount"] for c in commits] == [1, 1000]
    assert commits[1]["chunkCount"] > 3  # several chunks per segment, all in one commit
    records = [r for r in stream4.reader().read() if r["key"] != "before"]
    assert by_key(records) == {f"k{j}": list(range(j, 1000, 3)) for j in range(3)}


def write_then_fail(writer: StreamWriter, handle: StreamHandle) -> None:
    """Write 500 events in a transaction, then give up."""
    with writer.transaction():
        for i in range(500):
            writer.write({"key": f"k{i % 5}", "seq": i}, routing_key=f"k{i % 5}")
        assert handle.files()  # full chunks already went to storage
        raise RuntimeError("changed my mind")


def test_an_aborted_transaction_leaves_nothing(stream4: StreamHandle) -> None:
    writer = stream4.writer(schema=V1, max_chunk_events=40)
    with pytest.raises(RuntimeError, match="changed my mind"):
        write_then_fail(writer, stream4)
    assert stream4.files() == set()
    assert stream4.last_commit() == 0
    assert list(stream4.reader().read()) == []
    assert writer.buffered == 0
    writer.write({"key": "after", "seq": 0})  # the writer is still usable
    writer.close()
    assert [r["key"] for r in stream4.reader().read()] == ["after"]


def test_a_transaction_refused_at_commit_leaves_no_files(stream: StreamHandle) -> None:
    writer = stream.writer(schema=V1, max_chunk_events=10)
    transaction = writer.transaction()
    transaction.__enter__()
    for i in range(35):
        writer.write({"key": "k", "seq": i})
    assert len(stream.files()) == 3
    stream.catalog.seal_stream(stream.scope, stream.name)
    with pytest.raises(Conflict, match="sealed"):
        transaction.__exit__(None, None, None)
    assert stream.files() == set()


def test_transactions_do_not_nest_and_flush_waits_for_the_end(stream: StreamHandle) -> None:
    writer = stream.writer(schema=V1)
    with writer.transaction():
        writer.write({"key": "k", "seq": 0})
        with pytest.raises(RuntimeError, match="nest"), writer.transaction():
            pass
        with pytest.raises(RuntimeError, match="commits when it ends"):
            writer.flush()
    assert [r["seq"] for r in stream.reader().read()] == [0]


def test_a_with_block_that_fails_drops_what_it_buffered(stream: StreamHandle) -> None:
    def fail() -> None:
        with stream.writer(schema=V1) as writer:
            writer.write({"key": "k", "seq": 0})
            raise KeyError("boom")

    with pytest.raises(KeyError):
        fail()
    assert stream.last_commit() == 0
    with stream.writer(schema=V1) as writer:
        writer.write({"key": "k", "seq": 1})
    assert [r["seq"] for r in stream.reader().read()] == [1]
