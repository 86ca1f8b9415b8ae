"""Backup and restore: every REST answer identical after a restore; restoring twice is a no-op."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import requests

from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.server import backup, migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from registry.client import RegistryClient, schema_info
from registry.db import make_engine
from registry.ids import CodecName
from registry.model import CodecType
from tests.registry.helpers import avro_record, field, group
from tests.support.net import serve_in_thread
from tests.support.postgres import PostgresServer


def _populate(url: str) -> list[str]:
    """Fill the registry and catalog through the API; return the GET paths to compare."""
    registry = RegistryClient(url, "shop")
    catalog = CatalogClient(url)
    catalog.create_scope("shop", properties={"team": "a"})
    registry.create_group("users", group(policy="BackwardTransitive", multiple=True))
    v1 = registry.add_schema("users", avro_record("User", field("name", "string")))
    v2 = registry.add_schema("users", avro_record("User", field("name", "string"), field("age", "int", default=0)))
    registry.add_codec_type("users", CodecType(CodecName("application/x-gzip")))
    e1 = registry.encoding_id("users", v1)
    e2 = registry.encoding_id("users", v2, CodecName("application/x-gzip"))
    registry.delete_by_id("users", v1.id)
    registry.create_group("docs", group("Json", "AllowAny"))
    registry.add_schema("docs", schema_info("Json", '{"type": "object"}', "Doc"))
    orders = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]}
    catalog.create_table("shop", "orders", orders, properties={"k": "v"})
    catalog.alter_table("shop", "orders", [{"op": "addColumn", "path": ["note"], "type": "string"}])
    catalog.create_stream("shop", "raw", segments=2)
    catalog.commit("shop", "raw", [Chunk("a.events", "events", 0, 5, 50)], writer_id="w", writer_sequence=1)
    catalog.commit("shop", "raw", [Chunk("b.events", "events", 1, 7, 70)], overwrite=True)
    return [
        "/v1/groups?namespace=shop",
        "/v1/groups/users?namespace=shop",
        "/v1/groups/users/history?namespace=shop",
        "/v1/groups/users/schemas?namespace=shop",
        "/v1/groups/users/schemas/versions?namespace=shop",
        f"/v1/groups/users/schemas/schema/{v1.id}?namespace=shop",
        f"/v1/groups/users/encodings/{e1}?namespace=shop",
        f"/v1/groups/users/encodings/{e2}?namespace=shop",
        "/v1/groups/users/codecTypes?namespace=shop",
        "/v1/groups/docs/history?namespace=shop",
        "/v1/groups/orders/history?namespace=shop",
        "/v1/scopes",
        "/v1/scopes/shop",
        "/v1/scopes/shop/streams",
        "/v1/scopes/shop/tables",
        "/v1/scopes/shop/tables/orders",
        "/v1/scopes/shop/streams/raw/commits",
        "/v1/scopes/shop/streams/raw/chunks",
        "/v1/scopes/shop/streams/raw/chunks?streamCut=1",
    ]


def _answers(url: str, paths: list[str]) -> dict[str, bytes]:
    return {p: requests.get(url + p).content for p in paths}


def _server(database_url: str, warehouse: Path) -> Any:
    return serve_in_thread(create_app(Settings(database_url=database_url, warehouse=str(warehouse))))


def test_restore_answers_every_get_byte_identically(postgres: PostgresServer, tmp_path: Path) -> None:
    source = postgres.create_database("backup_src")
    target = postgres.create_database("backup_dst")
    for url in (source, target):
        migrate.upgrade(url)
    with _server(source, tmp_path) as url:
        paths = _populate(url)
        before = _answers(url, paths)
    dump = io.StringIO()
    counts = backup.backup(make_engine(source), dump)
    assert counts["schema_versions"] == 5
    assert counts["commits"] == 2
    assert counts["encodings"] == 2
    restored = backup.restore(make_engine(target), io.StringIO(dump.getvalue()))
    assert restored == counts
    with _server(target, tmp_path) as url:
        after = _answers(url, paths)
        assert after == before
        again = backup.restore(make_engine(target), io.StringIO(dump.getvalue()), merge=True)
        assert sum(again.values()) == 0, "restoring twice changes nothing"
        assert _answers(url, paths) == before
        # New ids continue after the restored ones instead of colliding with them.
        client = RegistryClient(url, "shop")
        new = client.add_schema("users", avro_record("User", field("name", "string"), field("x", "long", default=1)))
        rows = [json.loads(line) for line in dump.getvalue().splitlines()]
        restored_ids = [r["row"]["id"] for r in rows if r.get("table") == "schemas"]
        assert new.id > max(restored_ids)


def test_restore_refuses_a_non_empty_database_and_foreign_files(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    with _server(url, tmp_path) as server:
        RegistryClient(server).create_group("g", group())
    dump = io.StringIO()
    backup.backup(engine, dump)
    with pytest.raises(backup.BackupError, match="not empty"):
        backup.restore(engine, io.StringIO(dump.getvalue()))
    with pytest.raises(backup.BackupError, match="not a streamcat backup"):
        backup.restore(engine, io.StringIO('{"hello": 1}\n'))
    truncated = "".join(dump.getvalue().splitlines(keepends=True)[:-1])
    other = f"sqlite:///{tmp_path / 'b.db'}"
    migrate.upgrade(other)
    with pytest.raises(backup.BackupError, match="truncated"):
        backup.restore(make_engine(other), io.StringIO(truncated))
    assert sum(backup.restore(make_engine(other), io.StringIO(dump.getvalue())).values()) == 1, "nothing half-done"


def test_backup_streams_in_constant_memory(tmp_path: Path) -> None:
    import tracemalloc

    url = f"sqlite:///{tmp_path / 'big.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    from sqlalchemy import insert

    from registry.store.orm import SchemaRow

    with engine.begin() as conn:
        conn.execute(
            insert(SchemaRow),
            [
                {
                    "serialization_format": "Any",
                    "full_type_name": "",
                    "type_name": f"t{i}",
                    "fingerprint": f"{i:064d}",
                    "data": b"x" * 5000,
                    "created_at": 0,
                }
                for i in range(4_000)
            ],
        )

    class Sink(io.StringIO):
        def write(self, s: str) -> int:  # keep nothing: only memory of the backup itself counts
            return len(s)

    tracemalloc.start()
    backup.backup(engine, Sink())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, f"backup of 20 MB of rows peaked at {peak / 1e6:.1f} MB"
