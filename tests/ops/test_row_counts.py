"""Row counts in /metrics: reused for a while, and on PostgreSQL the planner's estimate for big tables."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import event, text

from catalog_api.server import observability
from registry.db import make_engine
from registry.ids import GroupName, Namespace
from registry.store.sql import SqlRegistryStore
from tests.registry.helpers import group


def test_counts_are_reused_until_they_are_ttl_old(database_url: str) -> None:
    engine = make_engine(database_url)
    store = SqlRegistryStore(engine)
    cached = observability._CatalogCounts(lambda: engine, ttl=3600)
    fresh = observability._CatalogCounts(lambda: engine, ttl=0)
    before = cached.values()
    assert set(before) == {"groups", "schemas", "schema_versions", "scopes", "streams", "commits"}
    store.create_group(Namespace(f"ns{uuid.uuid4().hex[:12]}"), GroupName("g"), group())
    assert cached.values() == before
    assert fresh.values()["groups"] == before["groups"] + 1
    engine.dispose()


def test_postgresql_reports_the_planners_estimate_for_big_tables(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(database_url)
    if engine.dialect.name != "postgresql":
        pytest.skip("estimates are PostgreSQL's")
    SqlRegistryStore(engine).create_group(Namespace(f"ns{uuid.uuid4().hex[:12]}"), GroupName("g"), group())
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE"))
        exact = conn.execute(text("SELECT count(*) FROM groups")).scalar_one()
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement.lower())

    event.listen(engine, "before_cursor_execute", seen)
    monkeypatch.setattr(observability, "EXACT_COUNT_BELOW", 1)  # every analyzed table counts as big
    values = observability._CatalogCounts(lambda: engine, ttl=0).values()
    assert values["groups"] == exact  # ANALYZE of a small table reads every row: the estimate is exact
    counted = [s.split("from")[-1].strip() for s in statements if "count(" in s]
    assert "groups" not in counted  # estimated; empty tables (never given an estimate) are counted

    engine.dispose()
