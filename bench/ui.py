"""The web UI's pages at scale: server time (p50/p95) and bytes of each page and of a group search.

Run::

    flock /tmp/streamcat-bench.lock .venv/bin/python bench/ui.py                      # full size
    flock /tmp/streamcat-bench.lock .venv/bin/python bench/ui.py --tables 100 --commits 100   # a quick check

It makes a temporary SQLite database migrated to head and fills it through the services (no HTTP):
``--groups`` registry groups (namespace ``reg``, one Avro version each, some with a second), scope
``lake`` with ``--tables`` tables of ``--commits`` commits each (commit metadata only: the chunk
files are not written, so no page here reads rows; a preview reads at most 50 rows and 32 MiB, see
catalog_api/ui/preview.py), and ``--materialized`` materialized tables, each reading one of them.
Then it asks the whole application (the API's WSGI stack with the UI mounted, in this process, so
what is timed is the server's work without a network) for each page ``--rounds`` times and prints
p50 and p95 in milliseconds and the bytes of the answer, against the targets: p95 < 150 ms and
< 500 KB. The group search is timed over ``--rounds`` different search texts. The overview and the
list of materialized tables read every materialized table's lag at most every 5 s
(catalog_api/ui/states.py): they are timed again ``--cold-rounds`` times, each after that much time.
"""

from __future__ import annotations

import argparse
import logging
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from werkzeug.test import Client

from catalog_api.materialized.model import Definition, SourceTable
from catalog_api.model import Chunk, CommitOptions, Scope
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from catalog_api.server.extensions import Streamcat
from catalog_api.service import TableRequest
from catalog_api.ui.states import TTL_SECONDS
from registry.ids import GroupName, Namespace, TypeName
from registry.model import Compatibility, GroupProperties, SchemaInfo, SerializationFormat

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


def fill(ext: Streamcat, groups: int, tables: int, commits: int, materialized: int) -> None:
    """The registry, tables and materialized tables the pages are timed over."""
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
    for t in range(tables):
        table = f"t{t:04d}"
        ext.catalog.create_table("lake", TableRequest(table, SCHEMA, "avro"))
        for c in range(commits):
            chunk = Chunk(f"c{c:04d}.parquet", "columnar", event_count=1000 + c, bytes=50_000 + 10 * c)
            ext.catalog.commit("lake", table, [chunk], CommitOptions(writer_id="bench", writer_sequence=c))
        if t % 100 == 99:
            print(f"  {t + 1:,} tables of {commits} commits in {time.perf_counter() - started:.0f} s", flush=True)
    for m in range(materialized):
        source = SourceTable("lake", f"t{m % max(tables, 1):04d}")
        definition = Definition(f"SELECT * FROM lake.{source.table} WHERE id > {m}", (source,), 60_000)
        ext.materialized.create("lake", f"mt{m:03d}", definition, SCHEMA)
    print(f"  tables and {materialized} materialized tables in {time.perf_counter() - started:.0f} s", flush=True)


def _time(client: Client, path: str) -> tuple[float, int]:
    started = time.perf_counter()
    answer = client.get(path)
    elapsed = (time.perf_counter() - started) * 1000
    body = answer.get_data()
    if answer.status_code != 200:
        raise RuntimeError(f"{path} answered {answer.status_code}: {body[:300]!r}")
    return elapsed, len(body)


def _report(label: str, samples: list[tuple[float, int]]) -> bool:
    times = sorted(ms for ms, _b in samples)
    p50 = statistics.median(times)
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    size = max(b for _ms, b in samples)
    ok = p95 < TARGET_MS and size < TARGET_BYTES
    print(f"{label:<40} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   {size / 1000:7.1f} KB   {'ok' if ok else 'MISSED'}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--materialized", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--cold-rounds", type=int, default=5,
                        help="rounds of the overview and the list after the materialized tables' lags expired")
    args = parser.parse_args()
    logging.getLogger("streamcat.audit").setLevel(logging.WARNING)
    root = Path(tempfile.mkdtemp(prefix="streamcat-ui-bench-"))
    try:
        url = f"sqlite:///{root / 'ui.db'}"
        migrate.upgrade(url)
        settings = Settings(database_url=url, warehouse=str(root / "warehouse"))
        print(f"filling: {args.groups:,} groups, {args.tables:,} tables x {args.commits} commits, "
              f"{args.materialized} materialized tables", flush=True)
        ext = Streamcat.create(settings)
        try:
            fill(ext, args.groups, args.tables, args.commits, args.materialized)
            group = "grp-00050" if args.groups > 50 else "grp-00000"
            ids = [v.version.id for v in ext.registry.versions(Namespace("reg"), GroupName(group), None)]
        finally:
            ext.close()
        client = Client(create_app(settings))
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
            _time(client, path)  # warm: templates compiled, caches filled
            ok &= _report(label, [_time(client, path) for _ in range(args.rounds)])
        # The overview and the list read every materialized table's lag at most every TTL_SECONDS
        # (catalog_api/ui/states.py): the rounds above mostly find it read; these wait it out each time.
        for label in ("overview", "materialized tables"):
            cold = []
            for _ in range(args.cold_rounds):
                time.sleep(TTL_SECONDS)
                cold.append(_time(client, pages[label]))
            ok &= _report(f"{label}, lags read afresh", cold)
        rng = random.Random(7)
        searches = [f"/ui/registry?namespace=reg&q=grp-{rng.randrange(max(args.groups, 1)):05d}"[:-1]
                    for _ in range(args.rounds)]
        ok &= _report("search (a prefix of a name)", [_time(client, path) for path in searches])
        print("all within the targets" if ok else "some page missed a target")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
