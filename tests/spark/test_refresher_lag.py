"""A warm refresher: ``streamcat refresher`` started before a producer's appends warms its session with dry runs
of the continuous table's step, writing nothing, so that no step is cold: the table (freshness 5 s) lags every
append, the first included, by at most its freshness plus 5 s, over 60 s of appends every 5 s
(docs/materialized-tables.md, "The refresher").

Nothing but the refresher runs Spark here: the source, its appends and the table's first refresh are made with
the Python client, as a producer and a refresher would make them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests

from catalog_api.client import CatalogClient
from catalog_api.streams.reader import StreamReader
from catalog_api.streams.writer import StreamWriter
from registry.client import RegistryClient

# A process of its own (not the shared session): outside the "spark" group, so it runs beside it.
pytestmark = [pytest.mark.spark]

FRESHNESS_S = 5
APPENDS = 12  # one every 5 s: 60 s
ORDERS = {"type": "struct", "fields": [{"name": "id", "type": "integer", "nullable": True, "metadata": {}},
                                       {"name": "item", "type": "string", "nullable": True, "metadata": {}},
                                       {"name": "qty", "type": "integer", "nullable": True, "metadata": {}}]}
REVENUE = {"type": "struct", "fields": [{"name": "item", "type": "string", "nullable": True, "metadata": {}},
                                        {"name": "qty", "type": "long", "nullable": True, "metadata": {}},
                                        {"name": "n", "type": "long", "nullable": True, "metadata": {}}]}


class Shop:
    """A scope with the append table ``orders`` and ``revenue``, a continuous materialized table over it, plus
    a Python model of the query's result at every cut of ``orders``."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.scope = f"lag{uuid.uuid4().hex[:10]}"
        self.catalog = CatalogClient(server)
        self.registry = RegistryClient(server, self.scope)
        self.catalog.create_scope(self.scope)
        self.catalog.create_table(self.scope, "orders", ORDERS)
        self.rows: dict[int, list[dict[str, Any]]] = {}  # the rows of each commit of orders
        self.query = f"SELECT item, sum(qty) AS qty, count(*) AS n FROM streamcat.{self.scope}.orders GROUP BY item"
        self.path = f"{server}/v1/scopes/{self.scope}/materializedTables/revenue"

    def writer(self, table: str) -> StreamWriter:
        return StreamWriter(self.catalog, self.registry, self.scope, table,
                            schema=self.registry.latest_schemas(table)[0].schema)

    def append(self, batch: int) -> int:
        """Ten orders in one commit of ``orders``; its number."""
        rows = [{"id": batch * 100 + i, "item": f"item{(batch * 7 + i) % 13}", "qty": i % 5 + 1} for i in range(10)]
        writer = self.writer("orders")
        writer.write_table(pa.Table.from_pylist(rows))
        done = writer.flush()
        writer.close()
        assert done is not None
        self.rows[done["number"]] = rows
        return int(done["number"])

    def expected(self, cut: int) -> list[tuple[Any, ...]]:
        """The query's result with ``orders`` at ``cut`` (the model)."""
        groups: dict[str, tuple[int, int]] = {}
        for number, rows in self.rows.items():
            for row in rows if number <= cut else ():
                qty, n = groups.get(row["item"], (0, 0))
                groups[row["item"]] = (qty + row["qty"], n + 1)
        return sorted((item, qty, n) for item, (qty, n) in groups.items())

    def create_revenue(self) -> None:
        """``revenue`` (freshness 5 s, continuous, keyed by item), refreshed once as a refresher does: the lease,
        one overwrite commit recording the cut it read, the report."""
        body = {"tableName": "revenue", "queryText": self.query, "currentCatalog": "streamcat",
                "currentNamespace": [self.scope], "sources": [{"scopeName": self.scope, "tableName": "orders"}],
                "schema": REVENUE, "freshness": f"{FRESHNESS_S} seconds", "refreshMode": "continuous",
                "primaryKey": ["item"]}
        requests.post(f"{self.server}/v1/scopes/{self.scope}/materializedTables", json=body,
                      timeout=30).raise_for_status()
        requests.post(f"{self.path}/lease", json={"holder": "first"}, timeout=30).raise_for_status()
        cut = max(self.rows)
        writer = self.writer("revenue")
        writer.write_table(pa.Table.from_pylist([dict(zip(("item", "qty", "n"), r, strict=True))
                                                 for r in self.expected(cut)]))
        cuts = {f"{self.scope}.orders": cut}
        done = writer.flush(overwrite=True, properties={
            "streamcat.materialized.holder": "first", "streamcat.materialized.cuts": json.dumps(cuts),
            "streamcat.materialized.method": "full: first refresh of this query"})
        writer.close()
        assert done is not None
        requests.post(f"{self.path}/refreshes", json={"holder": "first", "outcome": "succeeded",
                                                      "commit": done["number"], "cuts": cuts, "durationMs": 1},
                      timeout=30).raise_for_status()

    def state(self) -> dict[str, Any]:
        answer = requests.get(self.path, timeout=30)
        answer.raise_for_status()
        found: dict[str, Any] = answer.json()
        return found

    def refreshes(self) -> list[dict[str, Any]]:
        return self.catalog.commits(self.scope, "revenue")


class Refresher:
    """``streamcat refresher`` in a process (and process group) of its own; its output, line by line."""

    def __init__(self, server: str, scope: str, log: Path) -> None:
        self.lines: list[str] = []
        self.stderr = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "catalog_api.server.cli", "refresher", "--master", "local[2]", "--uri", server,
             "--scope", scope], stdout=subprocess.PIPE, stderr=self.stderr, text=True, start_new_session=True,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip())

    def wait_for(self, text: str, timeout: float) -> str:
        """The first line of its output that holds ``text``."""
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            assert self.process.poll() is None, f"the refresher exited: {self.lines}"
            assert time.monotonic() < deadline, f"no line with {text!r} in {timeout} s: {self.lines}"
            time.sleep(0.2)
        return next(line for line in self.lines if text in line)

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.stderr.close()


@pytest.fixture
def shop(spark_server: str) -> Shop:
    made = Shop(spark_server)
    made.append(0)
    made.create_revenue()
    return made


@pytest.fixture
def refresher(spark_server: str, shop: Shop, tmp_path: Path) -> Iterator[Refresher]:
    running = Refresher(spark_server, shop.scope, tmp_path / "refresher.log")
    try:
        yield running
    finally:
        running.stop()


def test_no_cold_step_after_a_start(shop: Shop, refresher: Refresher) -> None:
    # It says that it warms, how, and for how long; the dry runs wrote nothing.
    refresher.wait_for("warm in", timeout=300)
    warming = refresher.lines.index(refresher.wait_for("warming: Spark session up in", timeout=0))
    warmed = refresher.lines[warming + 1]
    assert warmed.startswith(f"{shop.scope}.revenue: warmed: dry runs of its step in "), refresher.lines
    assert "(incremental: grouped aggregate" in warmed
    assert len(shop.refreshes()) == 1

    # A producer appends every 5 s for 60 s.
    started = time.monotonic()
    appended = []
    for batch in range(1, APPENDS + 1):
        time.sleep(max(0.0, started + (batch - 1) * FRESHNESS_S - time.monotonic()))
        appended.append(shop.append(batch))
    deadline = time.monotonic() + 30
    while shop.state()["behind"]:
        assert time.monotonic() < deadline, "the table never caught up with its source"
        time.sleep(0.2)

    # Lag of each append: from its commit to the first refresh commit whose cut reflects it (server times).
    made = {c["number"]: c for c in shop.catalog.commits(shop.scope, "orders")}
    refreshes = [(c["createdAt"], json.loads(c["properties"]["streamcat.materialized.cuts"])[f"{shop.scope}.orders"],
                  c["properties"]["streamcat.materialized.method"]) for c in shop.refreshes()[1:]]
    lags = [next(at for at, cut, _ in refreshes if cut >= number) - made[number]["createdAt"] for number in appended]
    print(*refresher.lines[warming:warming + 3], f"lags (ms) of the {len(lags)} appends, in order: {lags}", sep="\n")
    assert max(lags) <= (FRESHNESS_S + 5) * 1000, f"lags (ms): {lags}"
    assert {method for _, _, method in refreshes} <= {"incremental: grouped aggregate",
                                                       "incremental: grouped aggregate (changed groups)"}

    # The content equals the query at the cut its last refresh recorded.
    last = shop.refreshes()[-1]
    cut = json.loads(last["properties"]["streamcat.materialized.cuts"])[f"{shop.scope}.orders"]
    assert cut == appended[-1]
    reader = StreamReader(shop.catalog, shop.registry, shop.scope, "revenue")
    assert sorted((r["item"], r["qty"], r["n"]) for r in reader.read(cut=last["number"])) == shop.expected(cut)
