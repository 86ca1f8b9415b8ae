"""A writer killed before it committed leaves nothing visible, and ``streams gc`` removes its files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from catalog_api import storage
from catalog_api.gc import collect_all, collect_garbage
from catalog_api.server.app import create_app
from catalog_api.server.cli_streams import streams
from catalog_api.server.config import Settings
from catalog_api.service import CatalogService
from catalog_api.streams import segment_of
from tests.streams.helpers import (  # noqa: F401  (fixtures)
    V1,
    StreamHandle,
    make_stream,
    stream4_fixture,
    stream_fixture,
)

ROOT = Path(__file__).resolve().parents[2]
#: Chunk files a producer writes to a four-segment stream: one per segment its keys k0..k6 reach.
FILES_PER_PRODUCER = len({segment_of(f"k{i}", 4) for i in range(7)})

#: A producer that writes its chunk files, says which, and then hangs where it would commit.
DOOMED_PRODUCER = """
import json, sys, time
from catalog_api.client import CatalogClient
from registry.client import RegistryClient, schema_info
from catalog_api.streams import StreamWriter
url, scope, stream, schema = sys.argv[1:5]
writer = StreamWriter(CatalogClient(url), RegistryClient(url, scope), scope, stream,
                      schema=schema_info("Avro", schema))
for i in range(300):
    writer.write({"key": f"k{i % 7}", "seq": i}, routing_key=f"k{i % 7}")
print(json.dumps([c.path for c in writer.write_chunks()]), flush=True)
time.sleep(600)
"""


@pytest.fixture
def service(settings: Settings) -> Iterator[CatalogService]:
    """The catalog service on the test server's database, as the admin host builds it."""
    extension = create_app(settings).extensions["streamcat"]
    yield extension.catalog
    extension.engine.dispose()


def kill_producer_after_writing(handle: StreamHandle, server_url: str) -> list[str]:
    """Run a producer in a child process and kill it (SIGKILL) between writing files and committing."""
    child = subprocess.Popen(
        [sys.executable, "-c", DOOMED_PRODUCER, server_url, handle.scope, handle.name, V1.data.decode()],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line, child.stderr.read().decode() if child.stderr else "no output"
        paths: list[str] = json.loads(line)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    return paths


def age(handle: StreamHandle, paths: set[str], seconds: float) -> None:
    """Make files look ``seconds`` older than now."""
    then = time.time() - seconds
    for path in paths:
        os.utime(storage.join(handle.location, path), (then, then))


def test_a_killed_writer_leaves_nothing_visible_and_gc_removes_its_files_only(
    stream4: StreamHandle, server_url: str, service: CatalogService,
) -> None:
    survivor = stream4.writer(schema=V1)
    for i in range(50):
        survivor.write({"key": f"k{i % 7}", "seq": 1000 + i}, routing_key=f"k{i % 7}")
    survivor.flush()
    committed = stream4.files()

    orphans = set(kill_producer_after_writing(stream4, server_url))
    assert len(orphans) == FILES_PER_PRODUCER
    assert orphans <= stream4.files()
    assert stream4.files() == committed | orphans
    assert stream4.last_commit() == 1
    assert sorted(r["seq"] for r in stream4.reader().read()) == list(range(1000, 1050))

    # Within the grace period a writer may still be about to commit: nothing goes.
    assert collect_garbage(service, stream4.scope, stream4.name, grace_seconds=3600).paths == []
    assert stream4.files() == committed | orphans

    age(stream4, committed | orphans, 7200)
    dry = collect_garbage(service, stream4.scope, stream4.name, grace_seconds=3600, dry_run=True)
    assert set(dry.paths) == orphans
    assert dry.bytes > 0
    assert stream4.files() == committed | orphans

    removed = collect_garbage(service, stream4.scope, stream4.name, grace_seconds=3600)
    assert set(removed.paths) == orphans
    assert removed.bytes == dry.bytes
    assert stream4.files() == committed
    assert sorted(r["seq"] for r in stream4.reader().read()) == list(range(1000, 1050))


def test_gc_also_removes_files_of_truncated_commits_but_not_of_overwritten_ones(
    stream: StreamHandle, service: CatalogService,
) -> None:
    for round_ in range(3):
        writer = stream.writer(schema=V1)
        writer.write({"key": "k", "seq": round_})
        writer.flush(overwrite=round_ == 2)
    first = {c.path for c in stream.catalog.snapshot(stream.scope, stream.name, cut=1)[1]}
    stream.catalog.truncate_stream(stream.scope, stream.name, 1)
    age(stream, stream.files(), 7200)
    removed = collect_garbage(service, stream.scope, stream.name, grace_seconds=60)
    assert set(removed.paths) == first
    assert [r["seq"] for r in stream.reader().read(cut=2)] == [1]  # overwritten, still there for time travel
    assert [r["seq"] for r in stream.reader().read()] == [2]


@pytest.fixture
def catalog_streams(stream4: StreamHandle) -> tuple[StreamHandle, StreamHandle]:
    """Two four-segment streams in one scope."""
    return stream4, make_stream(stream4.catalog, stream4.registry, stream4.scope, segments=4)


def test_the_gc_command_walks_every_stream_of_a_scope(
    catalog_streams: tuple[StreamHandle, StreamHandle], server_url: str, settings: Settings,
) -> None:
    first, second = catalog_streams
    orphans = {first.name: set(kill_producer_after_writing(first, server_url)),
               second.name: set(kill_producer_after_writing(second, server_url))}
    for handle in catalog_streams:
        age(handle, handle.files(), 7200)
    env = {"STREAMCAT_DATABASE_URL": settings.database_url, "STREAMCAT_WAREHOUSE": settings.warehouse}
    runner = CliRunner(env=env)

    dry = runner.invoke(streams, ["gc", "--scope", first.scope, "--grace-seconds", "3600", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    for handle in catalog_streams:
        assert handle.files() == orphans[handle.name]
        for path in orphans[handle.name]:
            assert f"would remove {handle.scope}/{handle.name}: {path}" in dry.output
    assert f"would remove {2 * FILES_PER_PRODUCER} files" in dry.output

    young = runner.invoke(streams, ["gc", "--scope", first.scope, "--stream", first.name])  # default grace: hours
    assert young.exit_code == 0
    assert "removed 0 files" in young.output
    only_first = runner.invoke(streams, ["gc", "--scope", first.scope, "--stream", first.name,
                                         "--grace-seconds", "3600"])
    assert only_first.exit_code == 0, only_first.output
    assert first.files() == set()
    assert second.files() == orphans[second.name]
    everything = runner.invoke(streams, ["gc", "--grace-seconds", "3600", "--stream", second.name])
    assert everything.exit_code == 0
    assert f"removed {FILES_PER_PRODUCER} files" in everything.output
    assert second.files() == set()

    missing = runner.invoke(streams, ["gc", "--scope", first.scope, "--stream", "nope"])
    assert missing.exit_code == 1
    assert "nope" in missing.output
    negative = runner.invoke(streams, ["gc", "--grace-seconds", "-1"])
    assert negative.exit_code == 2


def test_collect_all_skips_nothing_it_was_asked_for(stream: StreamHandle, service: CatalogService) -> None:
    results = list(collect_all(service, stream.scope, grace_seconds=0, dry_run=True))
    assert [(r.scope, r.stream, r.paths) for r in results] == [(stream.scope, stream.name, [])]
    with pytest.raises(ValueError, match="negative"):
        collect_garbage(service, stream.scope, stream.name, grace_seconds=-1)


def test_gc_never_removes_the_iceberg_metadata(stream: StreamHandle, service: CatalogService) -> None:
    writer = stream.writer(schema=V1)
    writer.write({"key": "k", "seq": 1})
    writer.flush()
    # What the Iceberg metadata writer (and an Iceberg client's commit) put under metadata/: no chunk lists it.
    metadata = {"metadata/00001-abc.metadata.json", "metadata/snap-1-abc.avro", "metadata/abc-m0.avro"}
    orphan = "data/00000-0-abc.parquet"
    for path in (*metadata, orphan):
        full = Path(storage.join(stream.location, path))
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_bytes(b"x")
    age(stream, stream.files(), 7200)
    assert collect_garbage(service, stream.scope, stream.name, grace_seconds=60, dry_run=True).paths == [orphan]
    assert collect_garbage(service, stream.scope, stream.name, grace_seconds=60).paths == [orphan]
    assert metadata <= stream.files()
    assert orphan not in stream.files()
    assert [r["seq"] for r in stream.reader().read()] == [1]
