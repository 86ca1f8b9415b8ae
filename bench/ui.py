"""The web UI's pages at scale: server time (p50/p95) and bytes of each page and of a group search.

Run::

    flock /tmp/streamcat-bench.lock .venv/bin/python bench/ui.py                  # full size, SQLite (~1 min)
    flock /tmp/streamcat-bench.lock .venv/bin/python bench/ui.py --postgres       # on PostgreSQL
    flock /tmp/streamcat-bench.lock .venv/bin/python bench/ui.py --tables 100 --groups 500   # a quick check

It fills a database migrated to head (a temporary SQLite file; ``--keep DIR`` keeps it there and times
a filled one again without filling; ``--postgres`` a PostgreSQL server of its own) with ``--groups``
registry groups (namespace ``reg``, one Avro version each, every 50th a second one), scope ``lake`` with
``--tables`` tables of ``--commits`` commits each (commit metadata only: the chunk files are not written,
so no page here reads rows; a preview reads at most 50 rows and 32 MiB, see catalog_api/ui/preview.py),
and ``--materialized`` materialized tables, each reading one of them, half of them refreshed by the
refresher's protocol (lease, overwrite commit with the source cuts, report) a few commits behind.
Everything is made through the services, but the commits of the tables after the first are copies of
the first's commit and chunk rows (a thousand tables in seconds rather than half an hour through
100,000 commit transactions), which the bench then reads back through the catalog service.

Then it asks the whole application (the API's WSGI stack with the UI mounted, in this process, so what
is timed is the server's work without a network) for each page ``--rounds`` times and prints p50 and
p95 of the wall-clock time and of the CPU time of the thread (what the page costs whatever else runs
on the machine), the bytes of the answer and the SQL statements it ran, against the targets: p95 <
150 ms and < 500 KB. The group search is timed over ``--rounds`` different search texts, and for a text
no name holds (every name of the namespace read). The overview and the list of materialized tables read
every materialized table's lag at most every 5 s (catalog_api/ui/states.py): they are timed again
``--cold-rounds`` times, each with that list expired (read afresh, as after 5 s without a visit).
Last, the pages that list things are timed again ("[viewer]") as a signed-in user of a server on the same
database that asks who you are, who may read one group and one table only: those pages then read
every name and keep the ones the viewer may read. ``--explain`` then prints the plan of every SELECT
the pages ran (EXPLAIN QUERY PLAN on SQLite, EXPLAIN ANALYZE on PostgreSQL).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flask import Flask
from sqlalchemy import Engine, Table, and_, event, literal, select, update
from werkzeug.test import Client

from catalog_api.materialized.model import CUTS_PROPERTY, HOLDER_PROPERTY, METHOD_PROPERTY, Definition, SourceTable
from catalog_api.model import Chunk, CommitOptions, Scope
from catalog_api.orm import ChunkRow, CommitRow, ScopeRow, StreamRow
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.auth.credentials import hash_password
from catalog_api.server.config import Settings
from catalog_api.server.extensions import Streamcat
from catalog_api.service import TableRequest
from catalog_api.ui.services import Services
from catalog_api.ui.session import CSRF_COOKIE
from catalog_api.ui.states import MaterializedStates
from registry.db import make_engine
from registry.ids import GroupName, Namespace, TypeName
from registry.model import Compatibility, GroupProperties, SchemaInfo, SerializationFormat
from registry.permissions import Permission, Resource
from tests.support.postgres import start_postgres

TARGET_MS, TARGET_BYTES = 150.0, 500_000
SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": False, "metadata": {}},
    {"name": "name", "type": "string", "nullable": True, "metadata": {}},
]}


def _avro(name: str, extra: bool) -> SchemaInfo:
    fields = '{"name": "id", "type": "long", "doc": "the id"}'
    if extra:
        fields += ', {"name": "note", "type": ["null", "string"], "default": null}'
    text = f'{{"type": "record", "name": "{name}", "doc": "bench group", "fields": [{fields}]}}'
    return SchemaInfo(TypeName(name), SerializationFormat("Avro"), text.encode())


def _copy_commits(engine: Engine, template: int, targets: list[int]) -> None:
    """Give each stream of ``targets`` the commits and chunks of stream ``template`` (which the catalog
    service made), as the same rows under the target's stream id, its commit times a millisecond later
    per stream; one transaction."""
    commits, chunks, streams = (cast(Table, row.__table__) for row in (CommitRow, ChunkRow, StreamRow))
    commit_columns = [c.name for c in commits.columns if c.name not in ("id", "stream_id", "created_at")]
    chunk_columns = [c.name for c in chunks.columns if c.name not in ("id", "stream_id", "commit_id")]
    source, copy = chunks.alias("source"), commits.alias("copy")
    with engine.begin() as conn:
        last = conn.scalar(select(streams.c.last_commit).where(streams.c.id == template))
        for shift, target in enumerate(targets, 1):
            conn.execute(commits.insert().from_select(
                ["stream_id", *commit_columns, "created_at"],
                select(literal(target), *[commits.c[n] for n in commit_columns], commits.c.created_at + shift)
                .where(commits.c.stream_id == template).order_by(commits.c.number),
            ))
            conn.execute(chunks.insert().from_select(
                ["stream_id", "commit_id", *chunk_columns],
                select(literal(target), copy.c.id, *[source.c[n] for n in chunk_columns])
                .join(copy, and_(copy.c.stream_id == target, copy.c.number == source.c.commit_number))
                .where(source.c.stream_id == template).order_by(source.c.id),
            ))
            conn.execute(update(streams).where(streams.c.id == target).values(last_commit=last))


def _commits_seen(ext: Streamcat, table: str) -> list[tuple[int, str, int, int, int, str | None]]:
    return [(c.number, c.kind, c.event_count, c.bytes, c.chunk_count, c.writer_id)
            for c in ext.catalog.commits("lake", table, 0, 1_000_000)]


def _refresh(ext: Streamcat, table: str, source: SourceTable, cut: int) -> None:
    """One refresh of a materialized table as the refresher makes it (lease, an overwrite commit recording the
    source cut it read, the report), through the services."""
    ext.materialized.acquire_lease("lake", table, "bench", 60_000)
    properties = {HOLDER_PROPERTY: "bench", CUTS_PROPERTY: json.dumps({source.key: cut}), METHOD_PROPERTY: "full"}
    done = ext.catalog.commit("lake", table, [Chunk("refresh-1.parquet", "columnar", event_count=500, bytes=20_000)],
                              CommitOptions(kind="overwrite", properties=properties))
    ext.materialized.record_refresh("lake", table, "bench", "succeeded", commit=done.number,
                                    cuts={source.key: cut}, duration_ms=1500)


def fill(ext: Streamcat, groups: int, tables: int, commits: int, materialized: int) -> None:
    """The registry, tables and materialized tables the pages are timed over.

    Groups, tables and materialized tables are made through the services. So are the commits of the
    first table; the other tables get copies of its commit and chunk rows (_copy_commits), which is
    what makes 100,000 commits take seconds rather than half an hour, and the last table's commits
    are then read through the service and compared with the first's.
    """
    started = time.perf_counter()
    ns = Namespace("reg")
    for i in range(groups):
        name = GroupName(f"grp-{i:05d}")
        ext.registry.create_group(ns, name, GroupProperties(SerializationFormat("Avro"), Compatibility.of("Backward")))
        ext.registry.add_schema(ns, name, _avro(f"R{i}", False))
        if i % 50 == 0:
            ext.registry.add_schema(ns, name, _avro(f"R{i}", True))
    print(f"  {groups:,} groups in {time.perf_counter() - started:.0f} s", flush=True)
    started = time.perf_counter()
    ext.catalog.create_scope(Scope("lake"))
    names = [f"t{t:04d}" for t in range(tables)]
    for table in names:
        ext.catalog.create_table("lake", TableRequest(table, SCHEMA, "avro"))
    print(f"  {tables:,} tables in {time.perf_counter() - started:.0f} s", flush=True)
    started = time.perf_counter()
    if names:
        for c in range(commits):
            chunk = Chunk(f"c{c:04d}.parquet", "columnar", event_count=1000 + c, bytes=50_000 + 10 * c)
            ext.catalog.commit("lake", names[0], [chunk], CommitOptions(writer_id="bench", writer_sequence=c))
        with ext.engine.connect() as conn:
            query = (select(StreamRow.name, StreamRow.id).join(ScopeRow, ScopeRow.id == StreamRow.scope_id)
                     .where(ScopeRow.name == "lake"))
            ids: dict[str, int] = dict(conn.execute(query).all())
        _copy_commits(ext.engine, ids[names[0]], [ids[n] for n in names[1:]])
        if _commits_seen(ext, names[-1]) != _commits_seen(ext, names[0]):
            raise RuntimeError(f"the copied commits of {names[-1]} do not read as those of {names[0]}")
    print(f"  {tables * commits:,} commits in {time.perf_counter() - started:.0f} s", flush=True)
    started = time.perf_counter()
    for m in range(materialized):
        source = SourceTable("lake", names[m % len(names)])
        definition = Definition(f"SELECT * FROM lake.{source.table} WHERE id > {m}", (source,), 60_000)
        ext.materialized.create("lake", f"mt{m:03d}", definition, SCHEMA)
        if m % 2 == 0 and commits:  # half refreshed, at a cut some commits behind their source
            _refresh(ext, f"mt{m:03d}", source, max(1, commits - 1 - m % 10))
    print(f"  {materialized} materialized tables (half refreshed) in {time.perf_counter() - started:.0f} s",
          flush=True)


class Queries:
    """Counts the SQL statements every engine of this process runs, and keeps the first parameters of
    each distinct SELECT (for ``--explain``)."""

    def __init__(self) -> None:
        self.count = 0
        self.selects: dict[str, Any] = {}
        event.listen(Engine, "before_cursor_execute", self._seen)

    def _seen(self, _conn: object, _cursor: object, statement: str, parameters: Any, *_rest: object) -> None:
        self.count += 1
        if statement.lstrip().upper().startswith("SELECT"):
            self.selects.setdefault(statement, parameters)

    def explain(self, url: str) -> None:
        """Print the plan of each SELECT seen (EXPLAIN QUERY PLAN on SQLite, EXPLAIN ANALYZE on PostgreSQL)."""
        engine = make_engine(url)
        prefix = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " if engine.dialect.name == "postgresql" else \
            "EXPLAIN QUERY PLAN "
        try:
            with engine.connect() as conn:
                for statement, parameters in list(self.selects.items()):
                    rows = conn.exec_driver_sql(prefix + statement, parameters).all()
                    print("--", " ".join(statement.split())[:400])
                    for row in rows:
                        print("     ", row[-1])
        finally:
            engine.dispose()


@dataclass(frozen=True)
class Sample:
    """One answer: server time (wall clock, and this thread's CPU time), bytes, SQL statements."""

    ms: float
    cpu_ms: float
    size: int
    statements: int


def _time(client: Client, path: str, queries: Queries) -> Sample:
    before = queries.count
    started, cpu = time.perf_counter(), time.thread_time()
    answer = client.get(path)
    body = answer.get_data()
    elapsed, used = (time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000
    if answer.status_code != 200:
        raise RuntimeError(f"{path} answered {answer.status_code}: {body[:300]!r}")
    return Sample(elapsed, used, len(body), queries.count - before)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _report(label: str, samples: list[Sample]) -> bool:
    times = [s.ms for s in samples]
    p50, p95 = statistics.median(times), _p95(times)
    cpu = [s.cpu_ms for s in samples]
    size = max(s.size for s in samples)
    statements = max(s.statements for s in samples)
    ok = p95 < TARGET_MS and size < TARGET_BYTES
    print(f"{label:<38} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  (CPU p50 {statistics.median(cpu):5.1f} "
          f"p95 {_p95(cpu):5.1f})  {size / 1000:6.1f} KB  {statements:3d} SQL  {'ok' if ok else 'MISSED'}", flush=True)
    return ok


def _database(args: argparse.Namespace, stack: ExitStack) -> tuple[str, bool]:
    """The database URL, and whether it must be filled (not when ``--keep`` names a filled one)."""
    if args.postgres:
        server = start_postgres()
        stack.callback(server.stop)
        url = server.create_database("ui_bench")
        migrate.upgrade(url)
        return url, True
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        root, fresh = args.keep, not (args.keep / "ui.db").exists()
    else:
        root, fresh = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="streamcat-ui-bench-"))), True
    url = f"sqlite:///{root / 'ui.db'}"
    if fresh:
        migrate.upgrade(url)
    return url, fresh


#: The user the pages are timed for again: it may read one group of ``reg`` and one table of ``lake``
#: (grants on single ones), so that the pages read every name and keep those it may read.
VIEWER, VIEWER_PASSWORD = "bench-viewer", "bench-viewer-password"


def _add_viewer(ext: Streamcat, groups: int, tables: int) -> None:
    if ext.principals.user(VIEWER) is not None:
        return
    ext.principals.add_user(VIEWER, hash_password(VIEWER_PASSWORD), None)
    ext.principals.add_grant(VIEWER, Permission.READ, Resource.of_group("reg", f"grp-{max(groups - 1, 0):05d}"))
    ext.principals.add_grant(VIEWER, Permission.READ, Resource.of_group("lake", f"t{max(tables - 1, 0):04d}"))


def _signed_in(settings: Settings) -> Client:
    """A client of a server on the same database that asks who you are (``basic``), signed in as VIEWER."""
    client = Client(create_app(replace(settings, auth=("basic",))))
    client.get("/ui/signin")
    csrf = client.get_cookie(CSRF_COOKIE, path="/ui/")
    if csrf is None:
        raise RuntimeError("the sign-in page set no CSRF cookie")
    answer = client.post("/ui/signin", data={"user": VIEWER, "password": VIEWER_PASSWORD, "csrf_token": csrf.value})
    if answer.status_code != 303:
        raise RuntimeError(f"signing in answered {answer.status_code}")
    return client


def _states(app: Flask) -> MaterializedStates:
    """The list of materialized tables the UI mounted in ``app`` keeps (which the cold rounds expire)."""
    ui: Flask = app.extensions["streamcat.ui"]
    services: Services = ui.extensions["streamcat.ui"][0]
    return services.materialized_states


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--materialized", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--cold-rounds", type=int, default=30,
                        help="rounds of the overview and the list with the materialized tables' lags expired")
    parser.add_argument("--postgres", action="store_true",
                        help="on a PostgreSQL server of its own (tests/support/postgres.py) rather than SQLite")
    parser.add_argument("--explain", action="store_true", help="print the plan of every SELECT the pages ran")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the SQLite database in this directory; one it holds already is timed unfilled")
    args = parser.parse_args()
    logging.getLogger("streamcat.audit").setLevel(logging.WARNING)
    with ExitStack() as stack:
        url, fresh = _database(args, stack)
        settings = Settings(database_url=url, warehouse=str(Path(tempfile.gettempdir()) / "streamcat-ui-bench"))
        ext = Streamcat.create(settings)
        try:
            if fresh:
                print(f"filling: {args.groups:,} groups, {args.tables:,} tables x {args.commits} commits, "
                      f"{args.materialized} materialized tables", flush=True)
                fill(ext, args.groups, args.tables, args.commits, args.materialized)
            _add_viewer(ext, args.groups, args.tables)
            group = "grp-00050" if args.groups > 50 else "grp-00000"
            ids = [v.version.id for v in ext.registry.versions(Namespace("reg"), GroupName(group), None)]
        finally:
            ext.close()
        app = create_app(settings)
        client, queries = Client(app), Queries()
        last = f"t{max(args.tables - 1, 0):04d}"
        pages = {
            "overview": "/ui/",
            "registry (first page)": "/ui/registry?namespace=reg",
            "group": "/ui/registry/group?" + urlencode({"namespace": "reg", "group": group}),
            "group with a diff": "/ui/registry/group?" + urlencode({"namespace": "reg", "group": group,
                                                                    "left": ids[0], "right": ids[-1]}),
            "catalog": "/ui/catalog",
            "scope (first page of tables)": "/ui/catalog/scope?scope=lake",
            f"table ({args.commits} commits)": "/ui/catalog/table?" + urlencode({"scope": "lake", "table": last}),
            "materialized tables": "/ui/materialized",
            "materialized table": "/ui/materialized/table?scope=lake&table=mt000",
        }
        if args.materialized == 0:
            del pages["materialized table"]
        ok = True
        for label, path in pages.items():
            _time(client, path, queries)  # warm: templates compiled, caches filled
            ok &= _report(label, [_time(client, path, queries) for _ in range(args.rounds)])
        # The overview and the list read every materialized table's lag at most every TTL_SECONDS
        # (catalog_api/ui/states.py): the rounds above mostly find it read; these find it expired each time.
        states = _states(app)
        for label in ("overview", "materialized tables"):
            cold = []
            for _ in range(args.cold_rounds):
                states.forget()
                cold.append(_time(client, pages[label], queries))
            ok &= _report(f"{label}, lags read afresh", cold)
        rng = random.Random(7)
        searches = [f"/ui/registry?namespace=reg&q=grp-{rng.randrange(max(args.groups, 1)):05d}"[:-1]
                    for _ in range(args.rounds)]
        ok &= _report("search (a prefix of a name)", [_time(client, path, queries) for path in searches])
        # The worst case: no name matches, so every name of the namespace is read.
        nothing = "/ui/registry?namespace=reg&q=no-such-group"
        ok &= _report("search (no name matches)", [_time(client, nothing, queries) for _ in range(args.rounds)])
        viewer = _signed_in(settings)
        for label in ("overview", "registry (first page)", "catalog", "scope (first page of tables)",
                      "materialized tables"):
            _time(viewer, pages[label], queries)
            ok &= _report(f"{label} [viewer]", [_time(viewer, pages[label], queries) for _ in range(args.rounds)])
        print("all within the targets" if ok else "some page missed a target")
        if args.explain:
            queries.explain(url)
        print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
