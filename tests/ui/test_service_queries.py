"""The queries the UI added to the services: namespaces, a group search by name, a group's encoding
ids, the newest versions and commits, the number of tables, a scope's tables by name, and every
materialized table's state in a constant number of queries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from catalog_api.materialized.model import (
    CUTS_PROPERTY,
    HOLDER_PROPERTY,
    METHOD_PROPERTY,
    PLAN_PROPERTY,
    Definition,
    SourceTable,
)
from catalog_api.model import Chunk, CommitOptions, Scope, StreamConfig
from catalog_api.server.config import Settings
from catalog_api.server.extensions import Streamcat
from catalog_api.service import TableRequest
from registry.ids import CodecName, GroupName, Namespace, TypeName
from registry.model import Compatibility, GroupProperties, SchemaInfo, SerializationFormat
from tests.support.auth import migrated

AVRO = GroupProperties(SerializationFormat("Avro"), Compatibility.of("Backward"))


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Streamcat]:
    ext = Streamcat.create(Settings(database_url=migrated(f"sqlite:///{tmp_path}/q.db"), warehouse=str(tmp_path)))
    try:
        yield ext
    finally:
        ext.close()


def _schema(name: str) -> SchemaInfo:
    return SchemaInfo(TypeName(name), SerializationFormat("Avro"),
                      f'{{"type": "record", "name": "{name}", "fields": []}}'.encode())


def test_namespaces_and_the_group_search(services: Streamcat) -> None:
    registry = services.registry
    for namespace, name in [("a", "orders"), ("a", "Old_Orders"), ("a", "users"), ("b", "x"), ("", "top")]:
        registry.create_group(Namespace(namespace), GroupName(name), AVRO)
    assert registry.namespaces() == [("", 1), ("a", 3), ("b", 1)]
    found = registry.find_groups(Namespace("a"), "ORDERS", "", 10)
    assert [name for name, _p in found] == ["Old_Orders", "orders"], "any case, by name"
    assert [n for n, _p in registry.find_groups(Namespace("a"), "", "Old_Orders", 1)] == ["orders"], "a page after"
    assert registry.find_groups(Namespace("a"), "%", "", 10) == [], "LIKE's wildcards are plain characters"
    assert found[0][1].format.name == "Avro"
    assert registry.group_names(Namespace("a"), "", "", 10) == ["Old_Orders", "orders", "users"]
    assert registry.group_names(Namespace("a"), "ORDERS", "Old_Orders", 1) == ["orders"], "a page after, any case"
    assert registry.group_names(Namespace("a"), "%", "", 10) == []


def test_encodings_and_the_newest_versions(services: Streamcat) -> None:
    registry = services.registry
    ns, group = Namespace("n"), GroupName("g")
    registry.create_group(ns, group, AVRO)
    first = registry.add_schema(ns, group, _schema("A"))
    encoding = registry.encoding_id(ns, group, first, CodecName(""))
    assert registry.encodings(ns, group) == [(encoding, first, CodecName(""))]
    registry.create_group(ns, GroupName("h"), AVRO)
    second = registry.add_schema(ns, GroupName("h"), _schema("B"))
    newest = registry.recent_versions(10)
    assert [(g, v) for _n, g, v, _at in newest] == [("h", second), ("g", first)]
    assert registry.recent_versions(1)[0][2] == second


def test_tables_by_name_their_number_and_the_newest_commits(services: Streamcat) -> None:
    catalog = services.catalog
    catalog.create_scope(Scope("s"))
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]}
    catalog.create_table("s", TableRequest("t", schema, "avro"))
    catalog.create_stream("s", "plain", StreamConfig(), None)
    assert catalog.count_tables() == 1, "a stream that is no table is not counted"
    for i, stream in enumerate(("t", "plain", "t")):
        catalog.commit("s", stream, [Chunk(f"c{i}.events", "events", event_count=1, bytes=10)], CommitOptions())
    entries = catalog.list_table_entries("s", None, 10)
    assert [(e.name, e.format, e.last_commit) for e in entries.items] == [("t", "avro", 2)], "tables only"
    assert catalog.list_table_entries("s", entries.continuation_token, 10).items == []
    newest = catalog.recent_commits(2)
    assert [(scope, stream, c.number) for scope, stream, c in newest] == [("s", "t", 2), ("s", "plain", 1)]


def _statements_of_all_tables(services: Streamcat) -> list[str]:
    """The SQL statements one MaterializedService.all_tables sends."""
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    event.listen(services.engine, "before_cursor_execute", seen)
    try:
        services.materialized.all_tables()
    finally:
        event.remove(services.engine, "before_cursor_execute", seen)
    return statements


def test_every_materialized_tables_state_in_a_constant_number_of_queries(services: Streamcat) -> None:
    catalog, materialized = services.catalog, services.materialized
    catalog.create_scope(Scope("s"))
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]}
    for source in ("a", "b"):
        catalog.create_table("s", TableRequest(source, schema, "avro"))
        for i in range(3):
            catalog.commit("s", source, [Chunk(f"{source}{i}.events", "events", event_count=1, bytes=10)],
                           CommitOptions())
    first_of_a = catalog.commits("s", "a", 0, 1)[0].created_at
    materialized.create("s", "done", Definition("SELECT * FROM s.a", (SourceTable("s", "a"),), 60_000), schema)
    materialized.acquire_lease("s", "done", "r1", 60_000)
    catalog.commit("s", "done", [Chunk("d.events", "events", event_count=1, bytes=10)], CommitOptions(
        overwrite=True, properties={HOLDER_PROPERTY: "r1", CUTS_PROPERTY: json.dumps({"s.a": 3}),
                                    PLAN_PROPERTY: "a plan", METHOD_PROPERTY: "full"}))
    materialized.record_refresh("s", "done", "r1", "succeeded", commit=1, cuts={"s.a": 3})

    def add(count: int) -> None:
        start = len(materialized.all_tables())
        for m in range(start, start + count):
            source = SourceTable("s", "ab"[m % 2])
            materialized.create("s", f"m{m}", Definition(f"SELECT * FROM {source.key}", (source,), 60_000), schema)

    add(2)
    few = _statements_of_all_tables(services)
    assert len(materialized.all_tables()) == 3
    add(8)
    many = _statements_of_all_tables(services)
    tables = {t.name: t for t in materialized.all_tables()}
    assert len(tables) == 11
    assert len(many) == len(few), "as many queries for 11 tables as for 3"

    done = tables["done"]
    assert (done.incremental_plan, done.last_refresh_method, done.lag_ms) == ("a plan", "full", 0)
    assert [(s.consumed, s.latest, s.pending_since) for s in done.sources_now] == [(3, 3, None)]
    behind = tables["m2"]  # reads s.a, never refreshed
    assert [(s.consumed, s.latest, s.pending_since) for s in behind.sources_now] == [(None, 3, first_of_a)]
    assert (behind.incremental_plan, behind.last_refresh_method) == (None, None)
    assert behind.lag_ms > 0
    catalog.commit("s", "a", [Chunk("a3.events", "events", event_count=1, bytes=10)], CommitOptions())
    assert materialized.get("s", "done").sources_now[0].pending_since == catalog.commits("s", "a", 3, 1)[0].created_at
