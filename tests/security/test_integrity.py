"""Integrity under concurrency and bad luck: what a client sees is a 2xx, a 404, a 409 or a 503 it
may retry, never a 500, and the database never keeps half of something.

- Two server processes on one PostgreSQL race, 200 times, a scope's deletion (with cascade) against
  an ALTER TABLE and a commit to a table in it: rows are locked in one order (docs/decisions.md),
  so there are no deadlocks to see, and whatever rolls back is run again by the server.
- A commit to a table whose group is gone, and a stream and a group that share a name but make no
  table, are answered as conflicts and plain streams.
- Protobuf compilation is bounded: a source over the size limit is refused naming the limit, and
  no more compiles than the limit run at once (each is a protoc child process, counted here).

(A registry group that backs a table cannot be deleted through the registry API:
tests/catalog/test_catalog_api.py::test_a_tables_group_is_deleted_by_dropping_the_table.)
"""

from __future__ import annotations

import base64
import os
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import pytest
import requests
from sqlalchemy import text

from catalog_api.server import migrate
from registry.db import make_engine
from registry.errors import Busy
from registry.formats import protobuf
from tests.support.net import serve_with_gunicorn
from tests.support.postgres import PostgresServer

TABLE = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]}
ROUNDS = 200
#: What a client may see from a request that raced another: done, gone, refused, or busy for now.
ALLOWED = {200, 201, 204, 404, 409, 503}


def _chunk(path: str) -> dict[str, object]:
    return {"path": path, "kind": "events", "eventCount": 1, "bytes": 10}


# -- two servers on one PostgreSQL: delete a scope while its table is altered and committed to ------------


@pytest.fixture
def database(postgres: PostgresServer) -> str:
    """A fresh PostgreSQL database, migrated."""
    url = postgres.create_database(f"i_{uuid.uuid4().hex[:16]}")
    migrate.upgrade(url)
    return url


@pytest.fixture
def servers(database: str, tmp_path: Path) -> Iterator[list[str]]:
    """Two ``streamcat serve`` processes (gunicorn, one worker each) on that database."""
    env = {**os.environ, "STREAMCAT_DATABASE_URL": database, "STREAMCAT_WAREHOUSE": str(tmp_path / "warehouse")}
    with ExitStack() as stack:
        yield [stack.enter_context(serve_with_gunicorn(env, workers=1)) for _ in range(2)]


class Client:
    """Requests to one server that answer what a careful client ends up with: a 503 must say when to
    retry (Retry-After), and is retried until the answer is something else."""

    def __init__(self, url: str, seen: Counter[tuple[str, int]]) -> None:
        self.url, self.http, self.seen = url, requests.Session(), seen

    def call(self, what: str, method: str, path: str, **kwargs: object) -> requests.Response:
        for _ in range(10):
            response = self.http.request(method, self.url + path, timeout=60, **kwargs)  # type: ignore[arg-type]
            self.seen[what, response.status_code] += 1
            if response.status_code != 503:
                return response
            assert response.headers.get("Retry-After"), response.text
            time.sleep(float(response.headers["Retry-After"]) / 10)
        raise AssertionError(f"{what} still busy after 10 tries")


def _orphans(url: str) -> dict[str, int]:
    """Rows whose parent is gone, by kind (the foreign keys should make each zero), and every row left."""
    checks = {
        "tables without streams": "SELECT count(*) FROM tables t LEFT JOIN streams s ON s.id = t.stream_id "
        "WHERE s.id IS NULL",
        "streams without scopes": "SELECT count(*) FROM streams s LEFT JOIN scopes c ON c.id = s.scope_id "
        "WHERE c.id IS NULL",
        "table groups without tables": "SELECT count(*) FROM groups g WHERE NOT EXISTS (SELECT 1 FROM scopes c "
        "JOIN streams s ON s.scope_id = c.id JOIN tables t ON t.stream_id = s.id "
        "WHERE c.name = g.namespace AND s.name = g.name)",
        "versions without groups": "SELECT count(*) FROM schema_versions v LEFT JOIN groups g ON g.id = v.group_id "
        "WHERE g.id IS NULL",
        "commits without streams": "SELECT count(*) FROM commits m LEFT JOIN streams s ON s.id = m.stream_id "
        "WHERE s.id IS NULL",
        "chunks without commits": "SELECT count(*) FROM chunks k LEFT JOIN commits m ON m.id = k.commit_id "
        "WHERE m.id IS NULL",
    }
    checks |= {f"{table} left": f"SELECT count(*) FROM {table}" for table in ("scopes", "streams", "groups", "commits")}
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return {name: conn.execute(text(query)).scalar_one() for name, query in checks.items()}
    finally:
        engine.dispose()


def _deadlocks(url: str) -> int:
    """How many deadlocks PostgreSQL has broken in the database (each one a transaction it rolled back)."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            query = "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
            return int(conn.execute(text(query)).scalar_one())
    finally:
        engine.dispose()


def _race(deleter: Client, writer: Client, scope: str, pause: float) -> None:
    """``deleter`` deletes the scope with cascade, ``pause`` seconds after ``writer`` starts to alter
    its table ``t`` and then commits to it."""
    start = threading.Barrier(2)

    def delete() -> None:
        start.wait()
        time.sleep(pause)
        deleter.call("delete scope", "DELETE", f"/v1/scopes/{scope}", params={"cascade": "true"})

    def write() -> None:
        start.wait()
        column = {"op": "addColumn", "path": ["note"], "type": "string"}
        writer.call("alter table", "PATCH", f"/v1/scopes/{scope}/tables/t", json={"changes": [column]})
        chunks = [_chunk(f"{scope}.events")]
        writer.call("commit", "POST", f"/v1/scopes/{scope}/streams/t/commits", json={"chunks": chunks})

    with ThreadPoolExecutor(max_workers=2) as pool:
        for done in [pool.submit(delete), pool.submit(write)]:
            done.result()


def test_deleting_a_scope_races_altering_and_committing_to_its_table(servers: list[str], database: str) -> None:
    seen: Counter[tuple[str, int]] = Counter()
    setup, deleter, writer = Client(servers[0], seen), Client(servers[0], seen), Client(servers[1], seen)
    jitter = random.Random(10)
    for round_ in range(ROUNDS):
        scope = f"race{round_}"
        assert setup.call("create scope", "POST", "/v1/scopes", json={"scopeName": scope}).status_code == 201
        table = {"tableName": "t", "schema": TABLE}
        created = setup.call("create table", "POST", f"/v1/scopes/{scope}/tables", json=table)
        assert created.status_code == 201, created.text
        # Sometimes the deletion goes first, sometimes the writer gets its ALTER or both requests in.
        _race(deleter, writer, scope, jitter.uniform(0, 0.04))

    outcomes = dict(sorted(seen.items()))
    print("outcomes over", ROUNDS, "rounds:", outcomes)
    assert {status for _what, status in seen} <= ALLOWED, outcomes
    # Every deletion went through (a retried one too), and the race went both ways.
    assert seen["delete scope", 204] == ROUNDS, outcomes
    assert seen["commit", 201] > 0, outcomes
    assert seen["commit", 404] > 0, outcomes
    assert seen["alter table", 200] > 0, outcomes
    assert _orphans(database) == dict.fromkeys(_orphans(database), 0)
    assert _deadlocks(database) == 0, "rows are locked in one order: PostgreSQL found no deadlock to break"


# -- a table without its group, a stream that is no table -----------------------------------------------


@pytest.fixture
def server(postgres: PostgresServer, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """One server on a fresh PostgreSQL database: (its URL, the database's URL)."""
    url = postgres.create_database(f"i_{uuid.uuid4().hex[:16]}")
    migrate.upgrade(url)
    env = {**os.environ, "STREAMCAT_DATABASE_URL": url, "STREAMCAT_WAREHOUSE": str(tmp_path / "warehouse")}
    with serve_with_gunicorn(env, workers=1) as base:
        yield base, url


def test_a_commit_to_a_table_whose_group_is_gone_is_a_conflict(server: tuple[str, str]) -> None:
    base, url = server
    http = requests.Session()
    assert http.post(f"{base}/v1/scopes", json={"scopeName": "shop"}).status_code == 201
    assert http.post(f"{base}/v1/scopes/shop/tables", json={"tableName": "t", "schema": TABLE}).status_code == 201
    engine = make_engine(url)
    try:
        with engine.begin() as conn:  # what only a hand in the database can do: the API refuses it
            conn.execute(text("DELETE FROM groups WHERE namespace = 'shop' AND name = 't'"))
    finally:
        engine.dispose()
    answer = http.post(f"{base}/v1/scopes/shop/streams/t/commits", json={"chunks": [_chunk("a.events")]})
    assert answer.status_code == 409, answer.text
    assert "no schema group" in answer.json()["error"]["message"]
    assert http.get(f"{base}/v1/scopes/shop/streams/t").json()["lastCommit"] == 0
    # Reading, listing or altering the table says the same, and dropping it clears it up.
    column = {"op": "addColumn", "path": ["x"], "type": "string"}
    for answer in (
        http.get(f"{base}/v1/scopes/shop/tables/t"),
        http.get(f"{base}/v1/scopes/shop/tables"),
        http.patch(f"{base}/v1/scopes/shop/tables/t", json={"changes": [column]}),
    ):
        assert (answer.status_code, "no schema group" in answer.text) == (409, True), answer.text
    assert http.delete(f"{base}/v1/scopes/shop/tables/t").status_code == 204
    assert http.post(f"{base}/v1/scopes/shop/tables", json={"tableName": "t", "schema": TABLE}).status_code == 201


def test_a_stream_and_a_group_of_one_name_are_no_table(server: tuple[str, str]) -> None:
    base, _url = server
    http = requests.Session()
    assert http.post(f"{base}/v1/scopes", json={"scopeName": "shop"}).status_code == 201
    assert http.post(f"{base}/v1/scopes/shop/streams", json={"streamName": "t"}).status_code == 201
    group = {
        "groupName": "t",
        "groupProperties": {
            "serializationFormat": {"serializationFormat": "Any"},
            "compatibility": {"policy": "AllowAny"},
            "allowMultipleTypes": False,
            "properties": {},
        },
    }
    assert http.post(f"{base}/v1/groups", params={"namespace": "shop"}, json=group).status_code == 201
    # The stream takes commits as a stream does (encoding ids are the writer's business there).
    chunk = {**_chunk("a.events"), "encodingIds": [12345]}
    assert http.post(f"{base}/v1/scopes/shop/streams/t/commits", json={"chunks": [chunk]}).status_code == 201
    assert http.get(f"{base}/v1/scopes/shop/tables/t").status_code == 404
    taken = http.post(f"{base}/v1/scopes/shop/tables", json={"tableName": "t", "schema": TABLE})
    assert taken.status_code == 409, taken.text
    # The group is the registry's own: deleting it is allowed and leaves the stream alone.
    assert http.delete(f"{base}/v1/groups/t", params={"namespace": "shop"}).status_code == 204
    assert http.get(f"{base}/v1/scopes/shop/streams/t").json()["lastCommit"] == 1


# -- protobuf compilation is bounded --------------------------------------------------------------------


def _proto(name: str, padding: int = 0) -> bytes:
    return f'syntax = "proto3";\n// {"x" * padding}\nmessage {name} {{ int32 id = 1; }}\n'.encode()


def test_a_proto_source_over_the_limit_is_refused_naming_the_limit(server: tuple[str, str]) -> None:
    base, _url = server
    http = requests.Session()
    group = {
        "groupName": "p",
        "groupProperties": {
            "serializationFormat": {"serializationFormat": "Protobuf"},
            "compatibility": {"policy": "Backward"},
            "allowMultipleTypes": False,
            "properties": {},
        },
    }
    assert http.post(f"{base}/v1/groups", json=group).status_code == 201
    limit = protobuf.Protoc().max_input

    def add(source: bytes) -> requests.Response:
        schema = {
            "type": "M",
            "serializationFormat": {"serializationFormat": "Protobuf"},
            "schemaData": base64.b64encode(source).decode(),
        }
        return http.post(f"{base}/v1/groups/p/schemas", json=schema)

    big = add(_proto("M", padding=limit))
    assert big.status_code == 400, big.text
    assert big.json()["error"]["code"] == "SchemaTooLarge"
    assert str(limit) in big.json()["error"]["message"]
    assert add(_proto("M", padding=1000)).status_code == 201


def _protoc_children() -> int:
    """How many protoc child processes this process has right now."""
    count = 0
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in children:
            try:
                if b"_protoc_compiler" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    count += 1
            except OSError:
                continue
    return count


@pytest.fixture
def protoc_limits() -> Iterator[Callable[[protobuf.Protoc], None]]:
    """Set this process's protoc bounds for a test; the defaults come back after it."""
    yield protobuf.configure_protoc
    protobuf.configure_protoc(protobuf.Protoc())


def test_concurrent_compiles_beyond_the_limit_wait_their_turn(
    protoc_limits: Callable[[protobuf.Protoc], None],
) -> None:
    protoc_limits(protobuf.Protoc(slots=2, wait=120))
    names = [f"M{uuid.uuid4().hex}" for _ in range(6)]
    sources = [_proto(name) for name in names]
    most, stop = 0, threading.Event()

    def watch() -> None:
        nonlocal most
        while not stop.is_set():
            most = max(most, _protoc_children())
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ThreadPoolExecutor(max_workers=len(sources)) as pool:
            compiled = list(pool.map(protobuf.compile_proto, sources))
    finally:
        stop.set()
        watcher.join()
    assert [c.file[-1].message_type[0].name for c in compiled] == names
    assert 1 <= most <= 2, f"{most} protoc processes ran at once"


def test_a_compile_that_finds_no_free_slot_is_busy_and_may_be_retried(
    protoc_limits: Callable[[protobuf.Protoc], None],
) -> None:
    protoc_limits(protobuf.Protoc(slots=1, wait=0.0))
    sources = [_proto(f"M{uuid.uuid4().hex}") for _ in range(4)]
    start = threading.Barrier(len(sources))

    def compile_one(source: bytes) -> str:
        start.wait()
        try:
            protobuf.compile_proto(source)
        except Busy as busy:
            return f"{busy.status} Retry-After: {dict(busy.headers)['Retry-After']}"
        return "compiled"

    with ThreadPoolExecutor(max_workers=len(sources)) as pool:
        outcomes = Counter(pool.map(compile_one, sources))
    assert set(outcomes) == {"compiled", "503 Retry-After: 1"}, outcomes
    protoc_limits(protobuf.Protoc(slots=1, wait=120))
    assert all(protobuf.compile_proto(s).file for s in sources), "a retry compiles"
