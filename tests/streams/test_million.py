"""A million events in two schema versions, written by a producer and read back in order per key.

Runs once, on a server of its own over SQLite: it is about the data path, not the database.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from catalog_api.client import CatalogClient
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from registry.client import RegistryClient
from registry.serde import Serializer
from tests.streams.helpers import V1, V2, make_stream
from tests.support.net import serve_in_thread

EVENTS = 1_000_000
KEYS = 1000
SEGMENTS = 8


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The whole application on a fresh SQLite database and warehouse."""
    root: Path = tmp_path_factory.mktemp("million")
    url = f"sqlite:///{root / 'catalog.db'}"
    migrate.upgrade(url)
    with serve_in_thread(create_app(Settings(database_url=url, warehouse=str(root / "warehouse")))) as base:
        yield base


def test_a_million_events_in_two_versions_come_back_in_order_per_key(sqlite_server: str) -> None:
    catalog = CatalogClient(sqlite_server)
    scope = f"m{uuid.uuid4().hex[:8]}"
    catalog.create_scope(scope)
    handle = make_stream(catalog, RegistryClient(sqlite_server, scope), scope, segments=SEGMENTS)
    v1 = Serializer(handle.registry, handle.name, V1)
    v2 = Serializer(handle.registry, handle.name, V2)
    keys = [f"device-{k}" for k in range(KEYS)]

    # One producer, moving from v1 to v2 and back every 5,000 events, so chunks mix both encodings.
    writer = handle.writer(max_chunk_events=EVENTS)
    for seq in range(EVENTS):
        key = keys[seq % KEYS]
        if (seq // 5000) % 2:
            writer.write(v2.serialize({"key": key, "seq": seq, "source": "v2"}), routing_key=key)
        else:
            writer.write(v1.serialize({"key": key, "seq": seq}), routing_key=key)
        if seq % 250_000 == 249_999:
            writer.flush()
    writer.close()
    commits = catalog.commits(scope, handle.name)
    assert [c["eventCount"] for c in commits] == [250_000] * 4
    assert all(c["chunkCount"] == SEGMENTS for c in commits)

    reader = handle.reader()
    assert reader.reader_schema is not None
    assert reader.reader_schema.data == V2.data  # the latest schema of the group
    last_seq = [-1] * KEYS
    count = 0
    for record in reader.read():
        seq = record["seq"]
        key = seq % KEYS
        assert record["key"] == keys[key]
        assert seq > last_seq[key], f"{record} after {last_seq[key]}"
        last_seq[key] = seq
        assert record["source"] == ("v2" if (seq // 5000) % 2 else "v1")
        count += 1
    assert count == EVENTS
    assert last_seq == [EVENTS - KEYS + k for k in range(KEYS)]
