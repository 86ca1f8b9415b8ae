"""Migrations: up from the first revision to head with data in the tables, and back down."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from catalog_api.server import migrate
from registry.db import make_engine
from tests.conftest import new_database


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_upgrade_with_data_then_downgrade_to_base(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = new_database(kind, tmp_path, request)
    migrate.upgrade(url, "0001")
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO groups (id, namespace, name, serialization_format, full_type_name, allow_multiple_types,"
                " compatibility, properties, created_at) VALUES (1, '', 'g', 'Avro', '', false,"
                " '{\"policy\": \"Backward\"}', '{}', 0)"
            )
        )
    migrate.upgrade(url)
    assert migrate.current_revisions(engine) == migrate.head_revisions(url)
    assert migrate.model_drift(url) == []
    with engine.connect() as conn:
        assert conn.execute(text("SELECT name FROM groups")).scalar_one() == "g", "data survives the upgrade"
        conn.execute(text("SELECT count(*) FROM commits")).scalar_one()
    migrate.downgrade(url, "0001")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT name FROM groups")).scalar_one() == "g", "and the downgrade"
    migrate.downgrade(url, "base")
    assert migrate.current_revisions(engine) == set()
    engine.dispose()


def _streamcat(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STREAMCAT_DATABASE_URL": url}
    command = [sys.executable, "-m", "catalog_api.server.cli", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True)


def test_db_check_fails_when_behind_or_when_models_and_migrations_differ(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'check.db'}"
    behind = _streamcat(url, "db", "check")
    assert behind.returncode != 0
    assert "streamcat db upgrade" in behind.stderr
    assert _streamcat(url, "db", "upgrade").returncode == 0
    assert _streamcat(url, "db", "check").returncode == 0
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE groups ADD COLUMN surprise INTEGER"))
    engine.dispose()
    drifted = _streamcat(url, "db", "check")
    assert drifted.returncode != 0
    assert "surprise" in drifted.stderr


def test_serve_refuses_a_database_that_is_behind(tmp_path: Path) -> None:
    result = _streamcat(f"sqlite:///{tmp_path / 'behind.db'}", "serve", "--port", "1")
    assert result.returncode != 0
    assert "streamcat db upgrade" in result.stderr
