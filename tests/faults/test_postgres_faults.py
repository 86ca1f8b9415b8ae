"""The server on PostgreSQL when things break: its processes killed mid-commit, PostgreSQL restarted under it.

Whatever happens, the database holds whole commits only (every chunk of a commit, or none of it), and
clients that send again get their work done exactly once.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy import text

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.streams import StreamWriter
from catalog_api.streams.committing import CommitInDoubt
from catalog_api.streams.writer import segment_of
from registry.client import RegistryClient
from registry.db import make_engine
from tests.streams.helpers import V1, StreamHandle, make_stream
from tests.support.net import serve_in_thread
from tests.support.postgres import PostgresServer, start_postgres
from tests.support.server_process import ServerProcess

pytestmark = pytest.mark.postgres

WRITERS = 4
ROUNDS = 10
SEGMENTS = 8
PER_CHUNK = 20
#: How long a writer keeps sending a commit whose answer it did not get, in seconds.
PATIENCE = 90.0


class CountingSession(requests.Session):
    """A session that counts the commit requests that got no answer or a 5xx."""

    def __init__(self) -> None:
        super().__init__()
        self.failed_commits = 0

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        committing = method == "POST" and str(url).endswith("/commits")
        try:
            response = super().request(method, url, *args, **kwargs)
        except requests.RequestException:
            self.failed_commits += committing
            raise
        self.failed_commits += committing and response.status_code >= 500
        return response


def routing_keys() -> list[str]:
    """One routing key per segment: a round's commit then has one chunk in every segment."""
    found: dict[int, str] = {}
    n = 0
    while len(found) < SEGMENTS:
        found.setdefault(segment_of(f"k{n}", SEGMENTS), f"k{n}")
        n += 1
    return [found[s] for s in range(SEGMENTS)]


def flush_until_done(writer: StreamWriter, deadline: float) -> None:
    """``flush()``, and again while the commit's outcome is in doubt (what the writer asks its caller to do)."""
    while True:
        try:
            writer.flush()
            return
        except CommitInDoubt:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


@pytest.fixture
def database(postgres: PostgresServer) -> str:
    """A fresh database of this test's own on the session's PostgreSQL, migrated."""
    url = postgres.create_database(f"f_{uuid.uuid4().hex[:16]}")
    migrate.upgrade(url)
    return url


@pytest.fixture
def server(database: str, tmp_path: Path) -> Iterator[ServerProcess]:
    """``streamcat serve`` with two gunicorn workers on the test's database and warehouse."""
    env = {**os.environ, "STREAMCAT_DATABASE_URL": database, "STREAMCAT_WAREHOUSE": str(tmp_path / "warehouse")}
    process = ServerProcess(env, tmp_path / "server.log", workers=2)
    process.start()
    yield process
    process.kill()


def stored_commits(database: str, scope: str, stream: str) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
    """What the database holds of a stream: its last commit number, its commit rows and its chunk rows."""
    engine = make_engine(database)
    try:
        with engine.connect() as db:
            ids = {"scope": scope, "stream": stream}
            stream_id, last = db.execute(text(
                "SELECT s.id, s.last_commit FROM streams s JOIN scopes c ON c.id = s.scope_id "
                "WHERE c.name = :scope AND s.name = :stream"), ids).one()
            commits = [dict(r._mapping) for r in db.execute(text(
                "SELECT id, number, writer_id, writer_sequence, event_count FROM commits WHERE stream_id = :s "
                "ORDER BY number"), {"s": stream_id})]
            # Every chunk row of the stream, and the number of the commit row it belongs to (NULL: none).
            chunks = [dict(r._mapping) for r in db.execute(text(
                "SELECT k.commit_number, k.event_count, k.path, c.number AS owner FROM chunks k "
                "LEFT JOIN commits c ON c.id = k.commit_id WHERE k.stream_id = :s"), {"s": stream_id})]
    finally:
        engine.dispose()
    return int(last), commits, chunks


def test_server_killed_during_concurrent_commits_leaves_whole_commits(server: ServerProcess, database: str) -> None:
    setup = CatalogClient(server.url)
    scope = f"kill{uuid.uuid4().hex[:10]}"
    setup.create_scope(scope)
    stream: StreamHandle = make_stream(setup, RegistryClient(server.url), scope, segments=SEGMENTS)
    keys = routing_keys()
    sessions = [CountingSession() for _ in range(WRITERS)]
    writer_ids: list[str] = []
    errors: list[BaseException] = []
    deadline = time.monotonic() + PATIENCE

    def produce(i: int) -> None:
        try:
            catalog = CatalogClient(server.url, session=sessions[i])
            writer = StreamWriter(catalog, RegistryClient(server.url, scope), scope, stream.name, schema=V1)
            writer_ids.append(writer.writer_id)
            for round_ in range(ROUNDS):
                for key in keys:
                    for n in range(PER_CHUNK):
                        writer.write({"key": f"{i}/{round_}", "seq": n}, routing_key=key)
                flush_until_done(writer, deadline)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=produce, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    # Kill every server process while the writers are busy committing, then start the server again.
    while int(setup.get_stream(scope, stream.name)["lastCommit"]) < WRITERS:
        assert not errors, errors
        assert time.monotonic() < deadline, "the writers did not get going"
        time.sleep(0.05)
    server.kill()
    server.start()
    for thread in threads:
        thread.join(timeout=PATIENCE)
    assert not errors, errors
    # The kill cut commits short: some writers lost answers (or got 5xx) and sent again.
    assert sum(s.failed_commits for s in sessions) > 0

    last, commits, chunks = stored_commits(database, scope, stream.name)
    total = WRITERS * ROUNDS
    assert last == total
    assert [c["number"] for c in commits] == list(range(1, total + 1))
    # Each writer's commits, each exactly once, in its own order.
    per_writer = Counter(c["writer_id"] for c in commits)
    assert per_writer == dict.fromkeys(writer_ids, ROUNDS)
    for writer_id in writer_ids:
        assert [c["writer_sequence"] for c in commits if c["writer_id"] == writer_id] == list(range(1, ROUNDS + 1))
    # No partial commit, no orphan row: every chunk row belongs to a commit of the same number, and every
    # commit holds all of its chunks (one per segment) and the events it says it has.
    assert [c for c in chunks if c["owner"] is None or c["owner"] != c["commit_number"]] == []
    by_commit = Counter(c["commit_number"] for c in chunks)
    assert by_commit == dict.fromkeys(range(1, total + 1), SEGMENTS)
    events = Counter[int]()
    for chunk in chunks:
        events[chunk["commit_number"]] += chunk["event_count"]
    assert {c["number"]: c["event_count"] for c in commits} == dict(events)
    assert set(events.values()) == {SEGMENTS * PER_CHUNK}
    # Every committed chunk file is there, and nothing else is.
    assert {f.path for f in storage.list_files(stream.location)} == {c["path"] for c in chunks}
    # Read back: every event exactly once.
    counted = Counter(r["key"] for r in stream.reader().read())
    assert counted == {f"{i}/{r}": SEGMENTS * PER_CHUNK for i in range(WRITERS) for r in range(ROUNDS)}


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test's own: restarting the session's would disturb the other tests."""
    server = start_postgres()
    yield server
    server.stop()


def probes(scope: str, stream: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Requests of every kind: reads and writes of the catalog, the registry and the Confluent API."""
    base = f"/v1/scopes/{scope}"
    return [
        ("GET", "/v1/scopes", None),
        ("POST", "/v1/scopes", {"scopeName": f"{scope}x{uuid.uuid4().hex[:6]}"}),
        ("GET", f"{base}/streams/{stream}", None),
        ("GET", f"{base}/streams/{stream}/commits", None),
        ("GET", f"/v1/groups/{stream}?namespace={scope}", None),
        ("GET", "/subjects", None),
    ]


def test_postgres_restart_answers_503_then_recovers_without_a_server_restart(
    own_postgres: PostgresServer, tmp_path: Path
) -> None:
    url = own_postgres.create_database("catalog")
    migrate.upgrade(url)
    app = create_app({"database_url": url, "warehouse": str(tmp_path / "warehouse")})
    with serve_in_thread(app) as base:
        catalog = CatalogClient(base)
        scope = f"pg{uuid.uuid4().hex[:10]}"
        catalog.create_scope(scope)
        stream = make_stream(catalog, RegistryClient(base), scope)
        writer = stream.writer(schema=V1)
        writer.write({"key": "before", "seq": 1})
        writer.flush()
        location = stream.location
        for method, path, body in probes(scope, stream.name):  # the pool holds connections now
            assert requests.request(method, f"{base}{path}", json=body, timeout=30).ok, path

        own_postgres.halt()
        try:
            for method, path, body in probes(scope, stream.name):
                answer = requests.request(method, f"{base}{path}", json=body, timeout=30)
                assert answer.status_code == 503, (path, answer.status_code, answer.text)
                assert answer.headers["Retry-After"] == "1", path
                assert "retry" in answer.text, answer.text
            # A writer's commit cannot be made now: it keeps its files and says so.
            writer.write({"key": "during", "seq": 2})
            with pytest.raises(CommitInDoubt):
                writer.flush()
            assert len(storage.list_files(location)) == 2
        finally:
            own_postgres.start()

        # The same server, PostgreSQL back: every request succeeds, and the writer's commit is made once.
        for method, path, body in probes(scope, stream.name):
            answer = requests.request(method, f"{base}{path}", json=body, timeout=30)
            assert answer.ok, (path, answer.status_code, answer.text)
        writer.flush()
        assert sorted((r["key"], r["seq"]) for r in stream.reader().read()) == [("before", 1), ("during", 2)]
        assert stream.last_commit() == 2
