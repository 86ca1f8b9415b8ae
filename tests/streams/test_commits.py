"""Commits as the stream client sees them: all or nothing under concurrency, repeats, bad input."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from catalog_api.model import Chunk
from catalog_api.streams import segment_of
from registry.errors import BadRequest, Conflict, NotFound
from tests.streams.helpers import (  # noqa: F401  (fixtures)
    V1,
    StreamHandle,
    make_stream,
    stream4_fixture,
    stream_fixture,
)


def keys_for_every_segment(segments: int) -> list[str]:
    """One routing key per segment, so that each commit has a chunk in every segment."""
    found: dict[int, str] = {}
    n = 0
    while len(found) < segments:
        found.setdefault(segment_of(f"key-{n}", segments), f"key-{n}")
        n += 1
    return [found[s] for s in range(segments)]


def test_concurrent_multi_chunk_commits_are_never_seen_in_part(stream4: StreamHandle) -> None:
    keys = keys_for_every_segment(4)
    rounds, per_key = 12, 5
    done = threading.Event()
    errors: list[BaseException] = []
    snapshots: list[tuple[int, list[Chunk]]] = []

    def produce(name: str) -> None:
        try:
            writer = stream4.writer(schema=V1, writer_id=f"{name}-{stream4.name}")
            for round_ in range(rounds):
                for key in keys:
                    for i in range(per_key):
                        writer.write({"key": f"{name}/{round_}", "seq": i}, routing_key=key)
                writer.flush()
        except BaseException as e:
            errors.append(e)

    def observe() -> None:
        reader = stream4.reader()
        while not done.is_set():
            snapshots.append(reader.snapshot())

    producers = [threading.Thread(target=produce, args=(n,)) for n in ("a", "b")]
    observer = threading.Thread(target=observe)
    observer.start()
    for p in producers:
        p.start()
    for p in producers:
        p.join(timeout=120)
    done.set()
    observer.join(timeout=60)
    assert not errors
    snapshots.append(stream4.reader().snapshot())

    commits = {c["number"]: c for c in stream4.catalog.commits(stream4.scope, stream4.name)}
    assert len(commits) == 2 * rounds
    assert len(snapshots) > 2
    for cut, chunks in snapshots:
        per_commit = Counter(c.commit for c in chunks)
        assert sorted(per_commit) == list(range(1, cut + 1))  # every commit up to the cut, no gaps
        for number, count in per_commit.items():
            assert count == commits[number]["chunkCount"] == 4
            assert sum(c.event_count for c in chunks if c.commit == number) == commits[number]["eventCount"]

    per_round = Counter(r["key"] for r in stream4.reader().read())
    assert per_round == {f"{n}/{r}": 4 * per_key for n in ("a", "b") for r in range(rounds)}


def chunk_files(handle: StreamHandle, count: int = 2) -> list[Chunk]:
    """Chunk files on storage, written by a writer that has not committed them."""
    writer = handle.writer(schema=V1)
    for i in range(count):
        writer.write({"key": "k", "seq": i}, routing_key=f"r{i}")
    return writer.write_chunks()


def test_a_commit_resent_with_the_same_writer_and_sequence_changes_nothing(stream4: StreamHandle) -> None:
    chunks = chunk_files(stream4, 8)
    first = stream4.catalog.commit(stream4.scope, stream4.name, chunks, writer_id="w", writer_sequence=1)
    before = stream4.reader().snapshot()
    again = stream4.catalog.commit(stream4.scope, stream4.name, chunks, writer_id="w", writer_sequence=1)
    assert not first["duplicate"]
    assert again["duplicate"]
    assert again["number"] == first["number"] == 1
    assert again["chunkCount"] == first["chunkCount"]
    # Even with other chunks, the pair (writer, sequence) marks it as done: none of them appear.
    others = chunk_files(stream4, 3)
    third = stream4.catalog.commit(stream4.scope, stream4.name, others, writer_id="w", writer_sequence=1)
    assert third["duplicate"]
    assert third["number"] == 1
    assert stream4.reader().snapshot() == before
    assert stream4.last_commit() == 1
    assert len(list(stream4.reader().read())) == 8
    # Another writer with the same sequence number is another commit.
    other = stream4.catalog.commit(stream4.scope, stream4.name, others, writer_id="v", writer_sequence=1)
    assert not other["duplicate"]
    assert other["number"] == 2


BAD_PATHS = ["../x.events", "/abs/x.events", "segment-0/../../x.events", "a/./b.events", "a//b.events",
             "c:/x.events", "a\\b.events", ""]


@pytest.mark.parametrize("path", BAD_PATHS)
def test_chunk_paths_outside_the_location_are_refused(stream: StreamHandle, path: str) -> None:
    good = chunk_files(stream, 1)[0]
    state = stream.catalog.get_stream(stream.scope, stream.name)
    bad = Chunk(path=path, kind="events", event_count=1, bytes=good.bytes, encoding_ids=good.encoding_ids)
    with pytest.raises(BadRequest) as refused:
        stream.catalog.commit(stream.scope, stream.name, [good, bad])
    assert refused.value.status == 400
    assert stream.catalog.get_stream(stream.scope, stream.name) == state
    assert stream.catalog.commits(stream.scope, stream.name) == []


def test_bad_commits_change_nothing(stream4: StreamHandle) -> None:
    good = chunk_files(stream4, 1)[0]
    stream4.catalog.commit(stream4.scope, stream4.name, [good])
    state = stream4.catalog.get_stream(stream4.scope, stream4.name)
    fresh = chunk_files(stream4, 1)[0]
    bad: list[tuple[list[Chunk], dict[str, Any]]] = [
        ([Chunk(path=fresh.path, kind="events", segment=4, event_count=1, bytes=1)], {}),  # no segment 4
        ([Chunk(path=fresh.path, kind="events", segment=-1, event_count=1, bytes=1)], {}),
        ([Chunk(path=fresh.path, kind="parquet", event_count=1, bytes=1)], {}),  # no such kind
        ([Chunk(path=fresh.path, kind="events", event_count=-5, bytes=1)], {}),
        ([fresh, fresh], {}),  # the same file twice
        ([], {}),  # nothing to commit
        ([fresh], {"writer_id": "w"}),  # a writer id without a sequence
    ]
    for chunks, options in bad:
        with pytest.raises(BadRequest):
            stream4.catalog.commit(stream4.scope, stream4.name, chunks, **options)
    with pytest.raises(Conflict):  # a file committed already cannot be committed again
        stream4.catalog.commit(stream4.scope, stream4.name, [good])
    assert stream4.catalog.get_stream(stream4.scope, stream4.name) == state
    assert len(stream4.catalog.commits(stream4.scope, stream4.name)) == 1


def test_bad_cuts_are_refused(stream: StreamHandle) -> None:
    chunk_files(stream)
    writer = stream.writer(schema=V1)
    writer.write({"key": "k", "seq": 1})
    writer.flush()
    reader = stream.reader()
    state = stream.catalog.get_stream(stream.scope, stream.name)
    for cut in (-1, 2, 2**40):
        with pytest.raises(BadRequest) as refused:
            reader.read(cut=cut)  # the snapshot is taken at once: the error too
        assert refused.value.status == 400
    with pytest.raises(BadRequest):
        reader.read(as_of_time=-5)
    for cut in (-1, 5):
        with pytest.raises(BadRequest):
            stream.catalog.truncate_stream(stream.scope, stream.name, cut)
    assert stream.catalog.get_stream(stream.scope, stream.name) == state


def test_unknown_scopes_and_streams_are_404(stream: StreamHandle) -> None:
    chunks = chunk_files(stream)
    for scope_name, stream_name in ((stream.scope, "nope"), ("no-such-scope", stream.name)):
        with pytest.raises(NotFound) as missing:
            stream.catalog.commit(scope_name, stream_name, chunks)
        assert missing.value.status == 404
        with pytest.raises(NotFound):
            stream.catalog.snapshot(scope_name, stream_name)
        with pytest.raises(NotFound):
            type(stream.writer())(stream.catalog, stream.registry, scope_name, stream_name)
    assert stream.last_commit() == 0
