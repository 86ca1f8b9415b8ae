"""Replicas started together on one fresh PostgreSQL database migrate it once.

Each replica runs ``streamcat db upgrade`` (as ``serve --migrate`` does) in a process of its own;
the migration lock makes them take turns, so the first applies the revisions and the others find
the database at head. Without it they race to create the same tables, and all but one fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from sqlalchemy import text

from catalog_api.server import migrate
from registry.db import make_engine
from tests.support.postgres import PostgresServer

REPLICAS = 4


def test_replicas_upgrading_at_once_migrate_once(postgres: PostgresServer, tmp_path: Path) -> None:
    url = postgres.create_database(f"m_{uuid.uuid4().hex[:16]}")
    env = {**os.environ, "STREAMCAT_DATABASE_URL": url, "STREAMCAT_WAREHOUSE": str(tmp_path / "warehouse")}
    command = [sys.executable, "-m", "catalog_api.server.cli", "db", "upgrade"]
    replicas = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(REPLICAS)
    ]
    outcomes = [(p.returncode, out, err) for p in replicas for out, err in [p.communicate(timeout=300)]]

    failed = [(code, err[-2000:]) for code, _out, err in outcomes if code != 0]
    assert failed == []
    heads = migrate.head_revisions(url)
    assert all(f"database at {', '.join(sorted(heads))}" in out for _code, out, _err in outcomes)
    engine = make_engine(url)
    try:
        assert migrate.current_revisions(engine) == heads
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == len(heads)
    finally:
        engine.dispose()
    assert migrate.model_drift(url) == []
