"""The image's entry point script, run outside Docker: migrate, then serve /health/ready."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import requests

from tests.support.net import free_port, wait_until_up
from tests.support.postgres import PostgresServer

SCRIPT = Path(__file__).resolve().parents[2] / "docker" / "entrypoint.sh"


def test_entrypoint_migrates_then_serves_ready(postgres: PostgresServer, tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "STREAMCAT_DATABASE_URL": postgres.create_database("entrypoint"),
        "STREAMCAT_WAREHOUSE": str(tmp_path / "warehouse"),
        "STREAMCAT_PORT": str(port),
        "STREAMCAT_HOST": "127.0.0.1",
        "STREAMCAT_BIN": str(Path(sys.executable).parent / "streamcat"),
        "STREAMCAT_DB_WAIT_SECONDS": "90",
    }
    migrated = subprocess.run(["sh", str(SCRIPT), "migrate"], env=env, capture_output=True, text=True, timeout=120)
    assert migrated.returncode == 0, migrated.stderr
    server = subprocess.Popen(
        ["sh", str(SCRIPT), "serve", "--workers", "1"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        wait_until_up(f"http://127.0.0.1:{port}/health/live", process=server)
        ready = requests.get(f"http://127.0.0.1:{port}/health/ready", timeout=5)
        assert ready.status_code == 200, ready.text
        assert ready.json()["status"] == "ok"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_entrypoint_serve_refuses_an_unmigrated_database(postgres: PostgresServer, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "STREAMCAT_DATABASE_URL": postgres.create_database("entrypoint_behind"),
        "STREAMCAT_BIN": str(Path(sys.executable).parent / "streamcat"),
        "STREAMCAT_PORT": str(free_port()),
    }
    result = subprocess.run(["sh", str(SCRIPT), "serve"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "streamcat db upgrade" in result.stderr
