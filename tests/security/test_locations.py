"""The server owns storage locations (docs/decisions.md, "Storage locations"): a client cannot point a
stream at a directory outside the warehouse and the allowed roots, and purge deletes only what the server created.

Every attack is made over real HTTP against a server whose warehouse and allowed root are
temporary directories, on both backends; a directory outside both holds sentinel files that must
survive every attempt, including the purges that follow it.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy import text

from catalog_api.client import CatalogClient
from catalog_api.errors import LocationNotAllowed
from catalog_api.gc import collect_all, collect_garbage
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import ConfigError, Settings
from catalog_api.service import CatalogService
from catalog_api.streams import StreamReader, StreamWriter
from registry.client import RegistryClient
from registry.db import make_engine
from registry.model import Compatibility, GroupProperties, SerializationFormat
from tests.conftest import BACKENDS, new_database
from tests.streams.helpers import V1
from tests.support.net import serve_in_thread

#: A table schema: one column.
TABLE = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]}


@dataclass(frozen=True)
class Confined:
    """A server whose streams may live under ``warehouse`` (server-chosen) or ``allowed`` (explicit)."""

    url: str
    settings: Settings
    warehouse: Path
    allowed: Path
    service: CatalogService


@pytest.fixture(scope="module")
def confined(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Confined]:
    """The application on the session's database of the current backend, with an allowed root."""
    base = tmp_path_factory.mktemp("confined")
    warehouse, allowed = base / "warehouse", base / "allowed"
    warehouse.mkdir()
    allowed.mkdir()
    settings = Settings(database_url=database_url, warehouse=str(warehouse), allowed_locations=(str(allowed),))
    app = create_app(settings)
    with serve_in_thread(app) as url:
        yield Confined(url, settings, warehouse, allowed, app.extensions["streamcat"].catalog)


@pytest.fixture
def scope(confined: Confined) -> str:
    """A scope of this test's own."""
    name = f"sec{uuid.uuid4().hex[:12]}"
    CatalogClient(confined.url).create_scope(name)
    return name


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the warehouse and the allowed root, holding files nobody may delete."""
    folder = tmp_path / "outside"
    (folder / "sub").mkdir(parents=True)
    (folder / "sentinel.txt").write_text("keep me")
    (folder / "sub" / "old.events").write_bytes(b"keep me too")
    return folder


def intact(folder: Path) -> bool:
    """Whether the sentinel files are all still there, unchanged."""
    return (folder / "sentinel.txt").read_text() == "keep me" and (
        folder / "sub" / "old.events"
    ).read_bytes() == b"keep me too"


def create_stream(url: str, scope: str, name: str, location: str | None) -> requests.Response:
    """``POST .../streams`` as any HTTP client can send it."""
    body: dict[str, Any] = {"streamName": name}
    if location is not None:
        body["location"] = location
    return requests.post(f"{url}/v1/scopes/{scope}/streams", json=body, timeout=30)


def create_table(url: str, scope: str, name: str, location: str | None) -> requests.Response:
    """``POST .../tables`` (what Spark's CREATE TABLE ... LOCATION sends)."""
    body: dict[str, Any] = {"tableName": name, "schema": TABLE}
    if location is not None:
        body["location"] = location
    return requests.post(f"{url}/v1/scopes/{scope}/tables", json=body, timeout=30)


def delete(url: str, path: str, **params: str) -> int:
    """The status of ``DELETE path`` with query ``params``."""
    return requests.delete(f"{url}{path}", params=params, timeout=30).status_code


def refused(response: requests.Response, status: int, code: str, *words: str) -> str:
    """Assert a refusal naming the rule; returns its message."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code, error
    for word in words:
        assert word in error["message"], error
    return str(error["message"])


def nothing_left(c: Confined, scope: str, name: str) -> None:
    """No stream, table or group of that name: a refused create wrote nothing."""
    assert requests.get(f"{c.url}/v1/scopes/{scope}/streams/{name}", timeout=30).status_code == 404
    assert requests.get(f"{c.url}/v1/scopes/{scope}/tables/{name}", timeout=30).status_code == 404
    assert requests.get(f"{c.url}/v1/groups/{name}", params={"namespace": scope}, timeout=30).status_code == 404


def up_to_root(folder: Path) -> str:
    """``..`` segments climbing from ``folder`` to ``/``."""
    return "/".join([".."] * (len(folder.parts) - 1))


def with_stream_group(c: Confined, scope: str, name: str) -> RegistryClient:
    """The Avro group a stream's writer registers its schema in."""
    registry = RegistryClient(c.url, scope)
    registry.create_group(name, GroupProperties(SerializationFormat("Avro"), Compatibility.of("Backward"), False, {}))
    return registry


def write_events(c: Confined, scope: str, name: str, count: int = 5) -> None:
    """Write and commit ``count`` events to a stream through the stream writer."""
    writer = StreamWriter(CatalogClient(c.url), RegistryClient(c.url, scope), scope, name, schema=V1)
    for i in range(count):
        writer.write({"key": f"k{i}", "seq": i})
    writer.flush()


def files_under(folder: Path) -> set[str]:
    """Every file below ``folder``, relative to it."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


# -- creating streams and tables where the server does not give them -----------------------------

#: Locations outside the warehouse and the allowed root, as an attacker spells them; each case
#: builds the location from (warehouse, allowed root, outside directory, scope).
ATTACKS: dict[str, Callable[[Path, Path, Path, str], str]] = {
    "an absolute path outside": lambda w, a, o, s: str(o),
    "a new directory outside": lambda w, a, o, s: str(o / "new"),
    "'..' out of the warehouse": lambda w, a, o, s: f"{w}/{s}/{up_to_root(w / s)}{o}",
    "'..' out of the allowed root": lambda w, a, o, s: f"{a}/{up_to_root(a)}{o}",
    "'..' that would stay inside": lambda w, a, o, s: f"{a}/{s}/x/../y",
    "file URI to outside": lambda w, a, o, s: f"file://{o}",
    "Spark's file: URI to outside": lambda w, a, o, s: f"file:{o}",
    "file URI through localhost": lambda w, a, o, s: f"file://localhost{o}",
    "file URI with encoded '..'": lambda w, a, o, s: f"file://{a}/{up_to_root(a).replace('..', '%2e%2e')}{o}",
    "file URI with encoded '/..'": lambda w, a, o, s: f"file://{a}%2f%2e%2e%2f%2e%2e{o}",
    "double-encoded '..'": lambda w, a, o, s: f"file://{a}/{up_to_root(a).replace('..', '%252e%252e')}{o}",
    "percent-escapes in a plain path": lambda w, a, o, s: f"{a}/%2e%2e{o}",
    "file URI naming another host": lambda w, a, o, s: f"file://evil.example{a}/{s}",
    "backslashes": lambda w, a, o, s: f"{a}\\..\\..{o}",
    "an empty segment": lambda w, a, o, s: f"{a}//{s}",
    "a '.' segment": lambda w, a, o, s: f"{a}/./{s}",
    "a home directory": lambda w, a, o, s: "~/streams",
    "a relative path": lambda w, a, o, s: f"{s}/data",
    "another filesystem": lambda w, a, o, s: f"s3://bucket{a}/{s}",
    "an unknown scheme": lambda w, a, o, s: f"mock://{a}/{s}",
    "pyarrow options in a query": lambda w, a, o, s: "s3://bucket/x?endpoint_override=evil.example",
    "credentials in the URI": lambda w, a, o, s: f"s3://key:secret@bucket/{s}",
    "the warehouse itself": lambda w, a, o, s: str(w),
    "the allowed root itself": lambda w, a, o, s: f"file://{a}/",
    "a directory holding the warehouse": lambda w, a, o, s: str(w.parent),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_locations_outside_the_roots_are_refused_and_delete_nothing(
    confined: Confined, scope: str, outside: Path, attack: str
) -> None:
    location = ATTACKS[attack](confined.warehouse, confined.allowed, outside, scope)
    for create in (create_stream, create_table):
        answer = create(confined.url, scope, "victim", location)
        refused(answer, 400, "LocationNotAllowed", "location")
        nothing_left(confined, scope, "victim")
        # The purges that used to follow delete nothing: there is nothing of that name to purge.
        assert delete(confined.url, f"/v1/scopes/{scope}/streams/victim", purge="true") == 404
        assert delete(confined.url, f"/v1/scopes/{scope}/tables/victim", purge="true") == 404
        assert intact(outside)
    assert delete(confined.url, f"/v1/scopes/{scope}", cascade="true", purge="true") == 204
    assert intact(outside)


def test_the_refusal_names_the_rule(confined: Confined, scope: str, outside: Path) -> None:
    message = refused(create_stream(confined.url, scope, "s", str(outside)), 400, "LocationNotAllowed")
    assert message == f"location {outside} is not under the warehouse or an allowed root (STREAMCAT_ALLOWED_LOCATIONS)"
    dotted = f"{confined.allowed}/{scope}/../x"
    refused(create_stream(confined.url, scope, "s", dotted), 400, "LocationNotAllowed", "'..'")
    # A NUL never reaches the rules (the server refuses it in any request), but it is refused.
    assert create_stream(confined.url, scope, "s", f"{confined.allowed}/{scope}\x00/x").status_code == 400
    nothing_left(confined, scope, "s")


@pytest.mark.parametrize("root", ["warehouse", "allowed"])
def test_a_symlink_inside_a_root_pointing_out_is_refused(
    confined: Confined, scope: str, outside: Path, root: str
) -> None:
    base = confined.warehouse if root == "warehouse" else confined.allowed
    (base / scope).mkdir()
    (base / scope / "escape").symlink_to(outside)
    for location in (f"{base}/{scope}/escape", f"{base}/{scope}/escape/sub", f"file://{base}/{scope}/escape/new"):
        for create in (create_stream, create_table):
            refused(create(confined.url, scope, "victim", location), 400, "LocationNotAllowed", "symlink")
            nothing_left(confined, scope, "victim")
    assert delete(confined.url, f"/v1/scopes/{scope}", cascade="true", purge="true") == 204
    assert intact(outside)


def test_a_symlink_from_the_allowed_root_into_the_warehouse_is_refused(confined: Confined, scope: str) -> None:
    CatalogClient(confined.url).create_stream(scope, "owned")
    (confined.allowed / scope).mkdir()
    (confined.allowed / scope / "into").symlink_to(confined.warehouse)
    answer = create_stream(confined.url, scope, "thief", f"{confined.allowed}/{scope}/into/{scope}/owned")
    refused(answer, 400, "LocationNotAllowed", "symlink")
    nothing_left(confined, scope, "thief")


def test_the_default_location_is_checked_too(confined: Confined, scope: str, outside: Path) -> None:
    # Someone with access to the warehouse made the scope's directory a link out of it: the server
    # does not create streams there either.
    (confined.warehouse / scope).symlink_to(outside)
    refused(create_stream(confined.url, scope, "s", None), 400, "LocationNotAllowed", "symlink")
    refused(create_table(confined.url, scope, "t", None), 400, "LocationNotAllowed", "symlink")
    nothing_left(confined, scope, "s")
    nothing_left(confined, scope, "t")
    assert intact(outside)


# -- overlapping locations -----------------------------------------------------------------------


def test_a_location_may_not_be_in_or_hold_or_equal_another_streams(confined: Confined, scope: str) -> None:
    catalog = CatalogClient(confined.url)
    here = f"{confined.allowed}/{scope}"
    catalog.create_stream(scope, "a", location=f"{here}/a")
    catalog.create_stream(scope, "managed")
    default = f"{confined.warehouse}/{scope}/managed"
    cases = [
        (f"{here}/a", "is the location of stream"),
        (f"file://{here}/a/", "is the location of stream"),  # the same directory spelled differently
        (f"file:{here}/a", "is the location of stream"),
        (f"{here}/a/b", "is inside the location of stream"),
        (f"file://{here}/a/b/c", "is inside the location of stream"),
        (here, "holds the location of stream"),
        (default, "is the location of stream"),
        (f"file://{default}", "is the location of stream"),
        (f"{default}/x", "is inside the location of stream"),
        (f"{confined.warehouse}/{scope}", "holds the location of stream"),
    ]
    for location, rule in cases:
        for create in (create_stream, create_table):
            refused(create(confined.url, scope, "b", location), 409, "LocationOverlaps", rule)
            nothing_left(confined, scope, "b")
    message = refused(create_stream(confined.url, scope, "b", f"{here}/a/b"), 409, "LocationOverlaps")
    assert message == f"location {here}/a/b is inside the location of stream {scope}.a"
    # Another scope's stream may not take the location either; a sibling directory is fine.
    other = f"sec{uuid.uuid4().hex[:12]}"
    catalog.create_scope(other)
    refused(create_stream(confined.url, other, "a", f"{here}/a"), 409, "LocationOverlaps", f"{scope}.a")
    assert create_stream(confined.url, scope, "b", f"{here}/ab").status_code == 201
    # A stream's own name taken is still AlreadyExists, not an overlap with itself.
    assert create_stream(confined.url, scope, "managed", None).json()["error"]["code"] == "AlreadyExists"


def test_a_deleted_streams_location_can_be_taken_again(confined: Confined, scope: str) -> None:
    location = f"{confined.allowed}/{scope}/again"
    assert create_stream(confined.url, scope, "first", location).status_code == 201
    assert delete(confined.url, f"/v1/scopes/{scope}/streams/first") == 204
    assert create_stream(confined.url, scope, "second", location).json()["location"] == location


def race(url: str, scope: str, wanted: dict[str, str]) -> list[int]:
    """Create streams (name: location) all at once, one thread each; their statuses, sorted."""
    gate = threading.Barrier(len(wanted))
    answers: list[int] = []

    def create(name: str, location: str) -> None:
        gate.wait()
        answers.append(create_stream(url, scope, name, location).status_code)

    threads = [threading.Thread(target=create, args=item) for item in wanted.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(answers)


def test_concurrent_creates_of_overlapping_locations_admit_one(confined: Confined, scope: str) -> None:
    for round_ in range(3):
        base = f"{confined.allowed}/{scope}/race{round_}"
        # Each location holds the next: any two of them overlap.
        wanted = {f"r{round_}x{i}": base + "".join(f"/{j}" for j in range(i)) for i in range(8)}
        assert race(confined.url, scope, wanted) == [201] + [409] * (len(wanted) - 1)


# -- purge -----------------------------------------------------------------------------------------


def test_an_explicit_location_under_an_allowed_root_works_and_purge_keeps_it(confined: Confined, scope: str) -> None:
    catalog = CatalogClient(confined.url)
    location = confined.allowed / scope / "events"
    created = catalog.create_stream(scope, "events", location=str(location))
    assert created["location"] == str(location)
    assert catalog.get_stream(scope, "events")["location"] == str(location)
    with_stream_group(confined, scope, "events")
    write_events(confined, scope, "events")
    written = files_under(location)
    assert written
    reader = StreamReader(catalog, RegistryClient(confined.url, scope), scope, "events")
    assert [r["seq"] for r in reader.read()] == list(range(5))

    assert delete(confined.url, f"/v1/scopes/{scope}/streams/events", purge="true") == 204
    assert files_under(location) == written


def test_spark_style_file_uris_are_stored_as_plain_paths(confined: Confined, scope: str) -> None:
    spelled = f"file:{confined.allowed}/{scope}/my%20table/"
    table = create_table(confined.url, scope, "t", spelled)
    assert table.status_code == 201, table.text
    assert table.json()["stream"]["location"] == f"{confined.allowed}/{scope}/my table"


def test_purge_of_an_external_table_keeps_its_files(confined: Confined, scope: str) -> None:
    location = confined.allowed / scope / "orders"
    table = create_table(confined.url, scope, "orders", f"file://{location}")
    assert table.status_code == 201, table.text
    assert table.json()["stream"]["location"] == str(location)
    schema = RegistryClient(confined.url, scope).latest_schemas("orders")[0].schema
    writer = StreamWriter(CatalogClient(confined.url), RegistryClient(confined.url, scope), scope, "orders",
                          schema=schema)
    for i in range(3):
        writer.write({"id": i})
    writer.flush()
    written = files_under(location)
    assert written

    assert delete(confined.url, f"/v1/scopes/{scope}/tables/orders", purge="true") == 204
    nothing_left(confined, scope, "orders")
    assert files_under(location) == written


def test_scope_purge_deletes_managed_files_only(confined: Confined, scope: str) -> None:
    catalog = CatalogClient(confined.url)
    external = confined.allowed / scope / "ext"
    catalog.create_stream(scope, "ext", location=str(external))
    catalog.create_stream(scope, "mine")
    # Spelling out the location the server would give anyway is still the server's location.
    catalog.create_stream(scope, "spelled", location=f"file://{confined.warehouse}/{scope}/spelled/")
    for name in ("ext", "mine", "spelled"):
        with_stream_group(confined, scope, name)
        write_events(confined, scope, name)
    kept = files_under(external)
    managed = [confined.warehouse / scope / "mine", confined.warehouse / scope / "spelled"]
    assert kept
    assert all(files_under(m) for m in managed)

    assert delete(confined.url, f"/v1/scopes/{scope}", cascade="true", purge="true") == 204
    assert files_under(external) == kept
    assert not any(m.exists() for m in managed)


def test_an_external_location_inside_the_warehouse_keeps_its_files(confined: Confined, scope: str) -> None:
    location = confined.warehouse / scope / "shared" / "data"
    assert create_stream(confined.url, scope, "s", str(location)).status_code == 201
    with_stream_group(confined, scope, "s")
    write_events(confined, scope, "s")
    written = files_under(location)
    assert delete(confined.url, f"/v1/scopes/{scope}/streams/s", purge="true") == 204
    assert files_under(location) == written


def test_purge_does_not_follow_a_symlink_made_after_the_stream(confined: Confined, scope: str, outside: Path) -> None:
    assert create_stream(confined.url, scope, "s", None).status_code == 201
    # Before anything was written, the scope's directory became a link out of the warehouse:
    # the stream's directory now names outside/s.
    (outside / "s").mkdir()
    (outside / "s" / "precious").write_text("x")
    (confined.warehouse / scope).symlink_to(outside)
    assert delete(confined.url, f"/v1/scopes/{scope}/streams/s", purge="true") == 204
    assert (outside / "s" / "precious").read_text() == "x"
    assert intact(outside)


# -- garbage collection ----------------------------------------------------------------------------


def age(path: Path, seconds: float = 7200) -> None:
    """Make a file (not what a symlink points at) look ``seconds`` old."""
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)


def test_gc_deletes_only_inside_the_streams_location(confined: Confined, scope: str, outside: Path) -> None:
    location = confined.allowed / scope / "g"
    assert create_stream(confined.url, scope, "g", str(location)).status_code == 201
    with_stream_group(confined, scope, "g")
    write_events(confined, scope, "g")
    committed = files_under(location)
    (location / "segment-0").mkdir(exist_ok=True)
    orphan = location / "segment-0" / "orphan.events"
    orphan.write_bytes(b"left by a dead writer")
    (location / "evil").symlink_to(outside)  # a directory link out of the location
    (location / "segment-0" / "link.events").symlink_to(outside / "sentinel.txt")
    for path in [*location.rglob("*"), *outside.rglob("*")]:
        age(path)

    dry = collect_garbage(confined.service, scope, "g", grace_seconds=60, dry_run=True)
    assert dry.paths == ["segment-0/orphan.events"]
    removed = collect_garbage(confined.service, scope, "g", grace_seconds=60)
    assert removed.paths == ["segment-0/orphan.events"]
    assert not orphan.exists()
    assert intact(outside)
    assert committed <= files_under(location)


def test_gc_refuses_a_stream_whose_location_now_leads_out(confined: Confined, scope: str, outside: Path) -> None:
    assert create_stream(confined.url, scope, "g", None).status_code == 201
    (confined.warehouse / scope).symlink_to(outside)
    (outside / "g").mkdir()
    (outside / "g" / "old.events").write_bytes(b"x")
    age(outside / "g" / "old.events")
    with pytest.raises(LocationNotAllowed, match="symlink"):
        collect_garbage(confined.service, scope, "g", grace_seconds=60)
    assert [c.paths for c in collect_all(confined.service, scope, grace_seconds=60)] == []
    assert (outside / "g" / "old.events").exists()


# -- streams from before locations were confined -----------------------------------------------------


@pytest.mark.parametrize("kind", BACKENDS)
def test_migration_marks_default_shaped_locations_managed_and_purge_stays_in_the_warehouse(
    kind: str, tmp_path: Path, outside: Path, request: pytest.FixtureRequest
) -> None:
    url = new_database(kind, tmp_path, request)
    migrate.upgrade(url, "0003")
    warehouse = tmp_path / "warehouse"
    rows = {
        # name: location, as a server before 0004 stored it
        "inside": f"{warehouse}/legacy/inside",  # the default shape, in the warehouse: managed
        "abroad": f"{outside}/legacy/abroad",  # the default shape, but outside the warehouse
        "explicit": f"{warehouse}/elsewhere",  # a client's own spelling: external
        "attack": str(outside),  # what the attack stored
    }
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO scopes (id, name, comment, properties, created_at) VALUES (1, 'legacy', '', '{}', 0)")
        )
        for i, (name, location) in enumerate(rows.items(), start=1):
            conn.execute(
                text(
                    "INSERT INTO streams (id, scope_id, name, location, segments, sealed, truncated_at, last_commit,"
                    " created_at) VALUES (:id, 1, :name, :location, 1, false, 0, 0, 0)"
                ),
                {"id": i, "name": name, "location": location},
            )
    migrate.upgrade(url)
    with engine.connect() as conn:
        managed = dict(conn.execute(text("SELECT name, managed FROM streams")).all())
    engine.dispose()
    assert {k: bool(v) for k, v in managed.items()} == {
        "inside": True, "abroad": True, "explicit": False, "attack": False,
    }
    for name, location in rows.items():
        Path(location).mkdir(parents=True, exist_ok=True)
        (Path(location) / f"{name}.events").write_bytes(b"x")

    with serve_in_thread(create_app(Settings(database_url=url, warehouse=str(warehouse)))) as server:
        for name in rows:
            assert delete(server, f"/v1/scopes/legacy/streams/{name}", purge="true") == 204
    assert not Path(rows["inside"]).exists()
    assert (Path(rows["abroad"]) / "abroad.events").exists()
    assert (Path(rows["explicit"]) / "explicit.events").exists()
    assert intact(outside)


# -- configuration ----------------------------------------------------------------------------------


def test_allowed_locations_are_read_and_validated(tmp_path: Path) -> None:
    env = {"STREAMCAT_ALLOWED_LOCATIONS": f" {tmp_path}/a , s3://bucket/streams ,, file:///data/x "}
    assert Settings.from_env(env).allowed_locations == (f"{tmp_path}/a", "s3://bucket/streams", "file:///data/x")
    assert Settings.from_env({}).allowed_locations == ()
    for bad, words in [
        ("relative/dir", "is not an absolute path or a URI"),
        ("/data/../etc", "'..'"),
        ("/", "filesystem root"),
        ("mock:///x", "scheme 'mock'"),
        ("~/data", "'~'"),
    ]:
        with pytest.raises(ConfigError, match="STREAMCAT_ALLOWED_LOCATIONS") as error:
            Settings.from_env({"STREAMCAT_ALLOWED_LOCATIONS": f"/ok,{bad}"})
        assert words in error.value.message
    with pytest.raises(ConfigError, match="STREAMCAT_WAREHOUSE"):
        Settings.from_env({"STREAMCAT_WAREHOUSE": "var/warehouse"})
