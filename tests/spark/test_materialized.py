"""Materialized tables through Spark: the procedures, full refreshes, the refresher and its lease
(docs/materialized-tables.md). The REST side on both backends is tests/catalog/test_materialized_api.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from catalog_api.client import CatalogClient
from catalog_api.materialized.refresher import Refresher
from catalog_api.streams.reader import StreamReader
from registry.client import RegistryClient
from registry.errors import Conflict
from tests.spark.helpers import rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def revenue_query(scope: str, sleep_ms: int = 0) -> str:
    """Revenue per item; with ``sleep_ms`` every row takes that long (a refresh slow enough to kill)."""
    slow = f" WHERE reflect('java.lang.Thread', 'sleep', CAST({sleep_ms} AS BIGINT)) = 'null'" if sleep_ms else ""
    return f"SELECT item, sum(qty) AS qty FROM streamcat.{scope}.orders{slow} GROUP BY item"


def call(spark: Any, procedure: str, **args: Any) -> dict[str, Any]:
    """``CALL streamcat.system.<procedure>(name => :name, ...)``: its one result row as a dict."""
    named = ", ".join(f"{k} => :{k}" for k in args)
    found = spark.sql(f"CALL streamcat.system.{procedure}({named})", args=args).collect()
    return found[0].asDict()


def state(server: str, scope: str, table: str = "revenue") -> dict[str, Any]:
    """The materialized table as the server answers it."""
    answer = requests.get(f"{server}/v1/scopes/{scope}/materializedTables/{table}", timeout=30)
    answer.raise_for_status()
    found: dict[str, Any] = answer.json()
    return found


def commits(server: str, scope: str, table: str = "revenue") -> list[dict[str, Any]]:
    """The table's commits, oldest first."""
    return CatalogClient(server).commits(scope, table)


def kill_refresher_holding_the_lease(server: str, scope: str, lease_seconds: int) -> None:
    """Start ``streamcat refresher --once`` (holder ``doomed``) in a process of its own, wait until it holds
    the table's lease, give it a second inside its refresh's Spark job, then kill it (SIGKILL, no clean-up)."""
    command = [sys.executable, "-m", "catalog_api.server.cli", "refresher", "--once", "--master", "local[2]",
               "--uri", server, "--holder", "doomed", "--lease-seconds", str(lease_seconds)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True, env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    try:
        deadline = time.monotonic() + 180
        while state(server, scope)["leaseHolder"] != "doomed":
            assert process.poll() is None, "the refresher exited before it took the lease"
            assert time.monotonic() < deadline, "the refresher never took the lease"
            time.sleep(0.2)
        time.sleep(1.0)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def content(spark: Any, scope: str, table: str = "revenue") -> list[tuple[Any, ...]]:
    return rows(spark, f"SELECT * FROM streamcat.{scope}.{table} ORDER BY item")


@pytest.fixture
def orders(spark: Any, scope: str) -> str:
    spark.sql(f"CREATE TABLE streamcat.{scope}.orders (id INT, item STRING, qty INT)")
    spark.sql(f"INSERT INTO streamcat.{scope}.orders VALUES (1, 'apple', 3), (2, 'pear', 1), (3, 'apple', 2)")
    return f"streamcat.{scope}.orders"


def test_full_mode(spark: Any, spark_server: str, scope: str, orders: str) -> None:
    created = call(spark, "create_materialized_table", table=f"{scope}.revenue", query=revenue_query(scope),
                   freshness="1 hour", refresh_mode="auto", primary_key="item")
    assert (created["effective_refresh_mode"], created["status"]) == ("full", "activated")
    old = [("apple", 5), ("pear", 1)]
    assert content(spark, scope) == old
    assert [c["kind"] for c in commits(spark_server, scope)] == ["overwrite"]

    # Sources unchanged: neither a refresh nor the refresher writes anything.
    assert call(spark, "refresh_materialized_table", table=f"{scope}.revenue")["outcome"] == "unchanged"
    refresher = Refresher(spark, CatalogClient(spark_server), holder="idle")
    assert [a.line() for a in refresher.run_once() if a.table == f"{scope}.revenue"] == [
        f"{scope}.revenue: skipped: up to date: refreshed when a source changes"]
    assert len(commits(spark_server, scope)) == 1
    assert state(spark_server, scope)["lagMs"] == 0

    # A source commit: the refresh gives the new result in ONE overwrite commit recording the cut it read.
    spark.sql(f"INSERT INTO {orders} VALUES (4, 'pear', 5), (5, 'fig', 7)")
    source_cut = CatalogClient(spark_server).get_stream(scope, "orders")["lastCommit"]
    behind = state(spark_server, scope)
    assert behind["sources"][0]["pendingSince"] is not None
    assert not behind["stale"]
    new = [("apple", 5), ("fig", 7), ("pear", 6)]

    # Readers during the refresh see the old or the new result, never a mix or an empty table.
    reader = StreamReader(CatalogClient(spark_server), RegistryClient(spark_server, scope), scope, "revenue")
    seen: list[list[tuple[Any, ...]]] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.append(sorted((r["item"], r["qty"]) for r in reader.read()))

    thread = threading.Thread(target=read)
    thread.start()
    try:
        refreshed = call(spark, "refresh_materialized_table", table=f"{scope}.revenue")
    finally:
        time.sleep(0.3)
        stop.set()
        thread.join()
    assert refreshed["outcome"] == "succeeded"
    assert content(spark, scope) == new
    made = commits(spark_server, scope)
    assert [c["kind"] for c in made] == ["overwrite", "overwrite"]
    assert made[-1]["number"] == refreshed["commit"]
    assert made[-1]["properties"]["streamcat.materialized.cuts"] == f'{{"{scope}.orders":{source_cut}}}'
    assert seen
    assert all(r in (old, new) for r in seen)
    assert seen[-1] == new
    after = state(spark_server, scope)
    assert after["sources"][0]["consumedCut"] == source_cut
    assert after["lagMs"] == 0
    assert after["lastRefreshDurationMs"] is not None


def test_writes_refused_and_described(spark: Any, spark_server: str, scope: str, orders: str) -> None:
    call(spark, "create_materialized_table", table=f"{scope}.revenue", query=revenue_query(scope),
         freshness="1 hour")
    for statement in (f"INSERT INTO streamcat.{scope}.revenue VALUES ('x', 1)",
                      f"INSERT OVERWRITE streamcat.{scope}.revenue VALUES ('x', 1)",
                      f"DELETE FROM streamcat.{scope}.revenue WHERE item = 'apple'",
                      f"TRUNCATE TABLE streamcat.{scope}.revenue"):
        with pytest.raises(Exception, match="is a materialized table"):
            spark.sql(statement).collect()
    with pytest.raises(Conflict, match="materialized table"):  # and by any other client, on the server
        CatalogClient(spark_server).commit(scope, "revenue", [], overwrite=True)
    assert content(spark, scope) == [("apple", 5), ("pear", 1)]
    described = {str(r[0]): str(r[1])
                 for r in spark.sql(f"DESCRIBE TABLE EXTENDED streamcat.{scope}.revenue").collect()}
    properties = described["Table Properties"]
    for fact in ("materialized.status=activated", "materialized.effective_refresh_mode=full",
                 f"materialized.sources={scope}.orders", "materialized.stale=false", "materialized.lag=",
                 "materialized.query=SELECT item, sum(qty)", f'materialized.cuts={{"{scope}.orders":1}}'):
        assert fact in properties
    procedures = {str(v) for r in spark.sql("SHOW PROCEDURES IN streamcat.system").collect() for v in r}
    assert {"create_materialized_table", "refresh_materialized_table", "suspend_materialized_table",
            "resume_materialized_table", "alter_materialized_table"} <= procedures


def test_lifecycle(spark: Any, spark_server: str, scope: str, orders: str) -> None:
    table = f"{scope}.revenue"
    call(spark, "create_materialized_table", table=table, query=revenue_query(scope), freshness="1 second",
         refresh_mode="full")
    refresher = Refresher(spark, CatalogClient(spark_server), holder="lifecycle")

    def mine() -> list[str]:
        return [a.outcome if a.outcome != "skipped" else f"skipped: {a.detail}" for a in refresher.run_once()
                if a.table == table]

    # Suspended: sources change, the table does not.
    assert call(spark, "suspend_materialized_table", table=table)["status"] == "suspended"
    spark.sql(f"INSERT INTO {orders} VALUES (4, 'pear', 5)")
    time.sleep(1.2)
    assert mine() == ["skipped: suspended until resume_materialized_table"]
    with pytest.raises(Exception, match="suspended"):
        call(spark, "refresh_materialized_table", table=table)
    assert content(spark, scope) == [("apple", 5), ("pear", 1)]
    # Resumed: the refresher catches up (a scheduled time, a whole second, passed since the insert).
    assert call(spark, "resume_materialized_table", table=table)["status"] == "activated"
    assert mine() == ["succeeded"]
    assert content(spark, scope) == [("apple", 5), ("pear", 6)]
    assert mine() == ["skipped: up to date: refreshed when a source changes"]  # nothing more while sources rest

    # Freshness decides the mode of auto: continuous below the threshold (30 minutes), full from it.
    assert call(spark, "alter_materialized_table", table=table, freshness="1 hour",
                refresh_mode="auto")["effective_refresh_mode"] == "full"
    assert call(spark, "alter_materialized_table", table=table,
                freshness="10 seconds")["effective_refresh_mode"] == "continuous"
    assert call(spark, "alter_materialized_table", table=table,
                freshness="45 minutes")["effective_refresh_mode"] == "full"

    # A compatible new query (a column added) is taken, and the next refresh recomputes with it.
    compatible = f"SELECT item, sum(qty) AS qty, count(*) AS n FROM streamcat.{scope}.orders GROUP BY item"
    call(spark, "alter_materialized_table", table=table, query=compatible)
    assert call(spark, "refresh_materialized_table", table=table)["outcome"] == "succeeded"
    assert content(spark, scope) == [("apple", 5, 2), ("pear", 6, 2)]
    # An incompatible one (qty from a number to a string) is refused by the group's policy.
    incompatible = f"SELECT item, CAST(sum(qty) AS STRING) AS qty FROM streamcat.{scope}.orders GROUP BY item"
    with pytest.raises(Exception, match=r"(?i)incompatible"):
        call(spark, "alter_materialized_table", table=table, query=incompatible)
    assert state(spark_server, scope)["queryText"] == compatible

    # Dropped: its definition goes with it, and the refresher has nothing of it to do.
    spark.sql(f"DROP TABLE streamcat.{scope}.revenue")
    assert requests.get(f"{spark_server}/v1/scopes/{scope}/materializedTables/revenue", timeout=30).status_code == 404
    spark.sql(f"INSERT INTO {orders} VALUES (6, 'fig', 1)")
    assert mine() == []


def test_a_failed_refresh_is_recorded_and_retried_after_its_backoff(spark: Any, spark_server: str, scope: str,
                                                                    orders: str, tmp_path: Path) -> None:
    """A source loses a column the query reads (an analysis error in Spark): the refresher records the failure
    on the table, gives up its lease at once, says so in one line and exits non-zero; the procedure's error
    names the table and the cause in one line; the next attempt waits out the doubled backoff."""
    table = f"{scope}.revenue"
    call(spark, "create_materialized_table", table=table, query=revenue_query(scope), freshness="1 second",
         refresh_mode="full")
    spark.sql(f"ALTER TABLE {orders} DROP COLUMN item")
    spark.sql(f"INSERT INTO {orders} VALUES (4, 2)")
    before = commits(spark_server, scope)

    done = subprocess.run([sys.executable, "-m", "catalog_api.server.cli", "refresher", "--once", "--master",
                           "local[1]", "--uri", spark_server, "--scope", scope], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, check=False, env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    [line] = done.stdout.splitlines()
    assert line.startswith(f"{table}: failed: [UNRESOLVED_COLUMN"), line
    assert "`item`" in line
    assert "Traceback" not in done.stderr
    assert not [t for t in done.stderr.splitlines() if t.startswith("\tat ") or "[Stage " in t], done.stderr[-3000:]
    assert list(tmp_path.iterdir()) == []  # no spark-warehouse/, no metastore_db/
    failed = state(spark_server, scope)
    assert (failed["status"], failed["failures"], failed["leaseHolder"]) == ("failed", 1, None)
    assert failed["lastError"].startswith("[UNRESOLVED_COLUMN")
    assert failed["nextAttemptAt"] - failed["lastErrorAt"] == 5_000
    assert commits(spark_server, scope) == before

    with pytest.raises(Exception, match="UNRESOLVED_COLUMN") as refused:
        call(spark, "refresh_materialized_table", table=table)
    assert str(refused.value).startswith(
        f"[STREAMCAT_REFRESH_FAILED] the refresh of materialized table {table} failed: [UNRESOLVED_COLUMN")
    assert len(str(refused.value).strip().splitlines()) == 1
    again = state(spark_server, scope)
    assert (again["status"], again["failures"], again["leaseHolder"]) == ("failed", 2, None)
    assert again["nextAttemptAt"] - again["lastErrorAt"] == 10_000
    [waiting] = Refresher(spark, CatalogClient(spark_server), scopes=[scope]).run_once()
    assert waiting.line().startswith(f"{table}: skipped: waiting out the backoff after 2 failed refresh(es); "
                                     "next refresh 20")


def test_killed_refresher_is_taken_over(spark: Any, spark_server: str, scope: str, orders: str) -> None:
    table = f"{scope}.revenue"
    # Every row takes 1.5 s in the query: a refresh of the 6 rows below runs for several seconds.
    call(spark, "create_materialized_table", table=table, query=revenue_query(scope, sleep_ms=1500),
         freshness="2 seconds", refresh_mode="full", primary_key="item")
    old = [("apple", 5), ("pear", 1)]
    assert content(spark, scope) == old
    spark.sql(f"INSERT INTO {orders} VALUES (4, 'pear', 5), (5, 'fig', 7), (6, 'fig', 1)")
    before = commits(spark_server, scope)

    kill_refresher_holding_the_lease(spark_server, scope, lease_seconds=20)

    # No partial result: the table is as it was, and no commit was made.
    assert commits(spark_server, scope) == before
    assert content(spark, scope) == old
    leased = state(spark_server, scope)
    assert leased["leaseHolder"] == "doomed"

    # A second refresher leaves the table alone while the dead one's lease runs (long enough that a slow
    # machine reaches this line before it ends), then takes over.
    second = Refresher(spark, CatalogClient(spark_server), holder="second")
    assert [a.detail.split(";")[0] for a in second.run_once() if a.table == table] == [
        "refresher doomed holds its lease"]
    while state(spark_server, scope)["leaseExpiresAt"] > time.time() * 1000:
        time.sleep(0.2)
    assert [a.outcome for a in second.run_once() if a.table == table] == ["succeeded"]
    assert content(spark, scope) == [("apple", 5), ("fig", 8), ("pear", 6)]
    after = commits(spark_server, scope)
    assert len(after) == len(before) + 1
    assert after[-1]["properties"]["streamcat.materialized.holder"] == "second"
    assert state(spark_server, scope)["status"] == "activated"
