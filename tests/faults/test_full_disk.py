"""A warehouse that runs out of space: the write fails with the reason, nothing is committed, and the
catalog never names a file that is not there (the warehouse is a 2 MiB tmpfs the test mounts; root only)."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.streams import StreamWriter
from registry.client import RegistryClient
from tests.streams.helpers import V1, StreamHandle, make_stream
from tests.support.cli import streamcat
from tests.support.net import serve_in_thread
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.postgres

#: The warehouse's size: a few small commits fit, a few megabytes of events do not.
SIZE = "2m"


@pytest.fixture
def small_warehouse(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted for the test, unmounted after it."""
    mount = tmp_path / "warehouse"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.fixture
def server_env(postgres: PostgresServer, small_warehouse: Path) -> dict[str, str]:
    """The server's settings: a fresh PostgreSQL database, the warehouse on the small tmpfs."""
    url = postgres.create_database(f"d_{uuid.uuid4().hex[:16]}")
    migrate.upgrade(url)
    return {"STREAMCAT_DATABASE_URL": url, "STREAMCAT_WAREHOUSE": str(small_warehouse)}


@pytest.fixture
def server(server_env: dict[str, str]) -> Iterator[str]:
    """The application on those settings."""
    settings = {"database_url": server_env["STREAMCAT_DATABASE_URL"], "warehouse": server_env["STREAMCAT_WAREHOUSE"]}
    with serve_in_thread(create_app(settings)) as base:
        yield base


def incompressible(n: int) -> list[dict[str, Any]]:
    """``n`` events of about 1 KB each (hex text: codecs halve it, no more)."""
    return [{"key": os.urandom(512).hex(), "seq": i} for i in range(n)]


def assert_catalog_names_only_existing_files(stream: StreamHandle) -> None:
    _, chunks = stream.catalog.snapshot(stream.scope, stream.name)
    held = {f.path for f in storage.list_files(stream.location)}
    assert {c.path for c in chunks} <= held


@pytest.fixture
def stream(server: str) -> StreamHandle:
    catalog = CatalogClient(server)
    scope = f"disk{uuid.uuid4().hex[:8]}"
    catalog.create_scope(scope)
    return make_stream(catalog, RegistryClient(server), scope, segments=4)


def free_space(server_env: dict[str, str], stream: StreamHandle) -> str:
    """``streamcat streams gc`` (no grace): the cleanup command removes the failed writer's files."""
    return streamcat(server_env, "streams", "gc", "--scope", stream.scope, "--grace-seconds", "0")


def events(stream: StreamHandle) -> list[tuple[str, int]]:
    return sorted((r["key"], r["seq"]) for r in stream.reader().read())


def write_and_close(writer: StreamWriter, records: list[dict[str, Any]], shape: str) -> None:
    """Write ``records`` as events (spread over the segments) or as one columnar table, and close the writer."""
    with writer:
        if shape == "events":
            for i, event in enumerate(records):
                writer.write(event, routing_key=str(i))
        else:
            writer.write_table(pa.Table.from_pylist(records))


@pytest.mark.parametrize("shape", ["events", "columnar"])
def test_a_write_that_does_not_fit_fails_and_commits_nothing(
    stream: StreamHandle, server_env: dict[str, str], shape: str
) -> None:
    with stream.writer(schema=V1) as writer:
        writer.write({"key": "kept", "seq": 1})
    assert stream.last_commit() == 1

    big = incompressible(6000)  # 6 MB of text, 3 MB compressed
    with pytest.raises(OSError, match="No space left on device"):
        write_and_close(stream.writer(schema=V1), big, shape)
    # Nothing committed, nothing named that is not there: readers see what they saw before.
    assert stream.last_commit() == 1
    assert_catalog_names_only_existing_files(stream)
    assert events(stream) == [("kept", 1)]

    # Once the failed writer's files are gone, writes fit again.
    assert "removed" in free_space(server_env, stream)
    with stream.writer(schema=V1) as writer:
        writer.write({"key": "after", "seq": 2})
    assert stream.last_commit() == 2
    assert_catalog_names_only_existing_files(stream)
    assert events(stream) == [("after", 2), ("kept", 1)]
