"""Warming yields to due work (docs/materialized-tables.md, "Warm start"): while the refresher warms one
continuous table with a slow dry run, another table's source moves; the dry run is cancelled, the due table is
stepped at once, and the first one is reported ``interrupted``, not warmed, and warmed at a later pass; the
cancelled dry run leaves no Spark job running, no commit, no failure and no temporary directory."""

from __future__ import annotations

import logging
import re
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from catalog_api.client import CatalogClient
from catalog_api.materialized.refresher import Refresher
from catalog_api.streams.writer import StreamWriter
from registry.client import RegistryClient
from tests.spark.test_materialized import call, commits, state

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

#: tests/spark/test_materialized_continuous.py's SLOW with the length of the backtracking taken from the row: a row
#: of cost 21 takes about a quarter of a second, deterministically.
SLOW = "NOT concat(repeat('a', cost), 'x') RLIKE '(.*a){20}b'"
#: Rows of cost 21 in the slow table's source, written in one commit of as many files: a step or a dry run reads
#: them in as many tasks (several seconds on local[2]), and a cancelled one stops within a row.
SLOW_ROWS = 36


def dry_run_directories(spark: Any) -> set[Path]:
    """The temporary directories of dry runs (StreamcatMaterialized.rehearseWrite) in the JVM's tmpdir."""
    return set(Path(spark.sparkContext._jvm.System.getProperty("java.io.tmpdir")).glob("streamcat-dry-run-*"))


def append(server: str, scope: str, table: str, rows: list[dict[str, Any]]) -> int:
    """One commit of ``rows`` by the Python client, as a producer makes it (no Spark job): its number."""
    client = CatalogClient(server)
    registry = RegistryClient(server, scope)
    writer = StreamWriter(client, registry, scope, table, schema=registry.latest_schemas(table)[0].schema)
    writer.write_table(pa.Table.from_pylist(rows))
    done = writer.flush()
    writer.close()
    assert done is not None
    return int(done["number"])


def test_a_dry_run_is_cancelled_when_another_table_is_due(spark: Any, spark_server: str, scope: str,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="catalog_api.materialized.refresher")
    spark.sql(f"CREATE TABLE streamcat.{scope}.orders (id INT, item STRING, qty INT, cost INT)")
    spark.sql(f"INSERT INTO streamcat.{scope}.orders SELECT /*+ REPARTITION({SLOW_ROWS}) */ CAST(id AS INT), "
              f"concat('item', id % 3), CAST(id AS INT), 21 FROM range({SLOW_ROWS})")
    spark.sql(f"CREATE TABLE streamcat.{scope}.clicks (id INT, item STRING, qty INT)")
    spark.sql(f"INSERT INTO streamcat.{scope}.clicks VALUES (1, 'home', 1)")
    call(spark, "create_materialized_table", table=f"{scope}.slow", refresh_mode="continuous",
         freshness="2 seconds", primary_key="item",
         query=f"SELECT item, sum(qty) AS qty, count(*) AS n FROM streamcat.{scope}.orders WHERE {SLOW} GROUP BY item")
    call(spark, "create_materialized_table", table=f"{scope}.fast", refresh_mode="continuous",
         freshness="2 seconds", primary_key="item",
         query=f"SELECT item, sum(qty) AS qty, count(*) AS n FROM streamcat.{scope}.clicks GROUP BY item")
    # One step of the fast table by hand, and its dry runs: its steps are warm, only the slow table is left to warm.
    spark.sql(f"INSERT INTO streamcat.{scope}.clicks VALUES (2, 'home', 2)")
    stepped = call(spark, "refresh_materialized_table", table=f"{scope}.fast")
    assert stepped["method"] == "incremental: grouped aggregate"
    client = CatalogClient(spark_server)
    refresher = Refresher(spark, client, holder="warming", scopes=[scope])
    fast = refresher.warm([state(spark_server, scope, "fast")])
    assert [a.outcome for a in fast] == ["warmed"]
    first_slow_run = refresher.dry_runs + 1
    before = dry_run_directories(spark)

    stop = threading.Event()
    loop = threading.Thread(target=refresher.run, kwargs={"poll_seconds": 1.0, "stop": stop})
    loop.start()
    try:
        tracker = spark.sparkContext.statusTracker()
        deadline = time.monotonic() + 120
        while not tracker.getActiveJobsIds():  # the slow table's dry run has reached its Spark job
            assert time.monotonic() < deadline, "no dry run of the slow table started"
            time.sleep(0.05)
        started = time.time()
        appended = append(spark_server, scope, "clicks", [{"id": 3, "item": "home", "qty": 5}])
        while len(commits(spark_server, scope, "fast")) < 3:
            assert time.monotonic() < deadline, "the due table was never stepped"
            time.sleep(0.05)
        stepped = commits(spark_server, scope, "fast")[-1]

        # No job of the cancelled dry run is running any more.
        group = f"warming: dry run {first_slow_run} of {scope}.slow"
        jobs = tracker.getJobIdsForGroup(group)
        statuses = {tracker.getJobInfo(job).status for job in jobs}
        assert "FAILED" in statuses, statuses  # cancelled
        assert "RUNNING" not in statuses, statuses

        # The slow table is reported interrupted, then warmed at a later pass.
        warmed = f"{scope}.slow: warmed: dry runs of its step in "
        while not any(r.getMessage().startswith(warmed) for r in caplog.records):
            assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
            time.sleep(0.2)
    finally:
        stop.set()
        loop.join()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"{scope}.")]
    interrupted = f"{scope}.slow: not warmed: interrupted ({scope}.fast was due)"
    assert lines[0] == interrupted, lines
    assert lines[1].startswith(f"{scope}.fast: succeeded: commit {stepped['number']} in "), lines
    assert lines[2].startswith(warmed), lines
    assert lines[2].endswith("(incremental: grouped aggregate)"), lines
    print(fast[0].line(), *lines, sep="\n")

    # The due table's step was committed well before the slow dry run would have ended (a later one took D s).
    durations = [float(s) for s in re.findall(r"([\d.]+) s", lines[2].split(" in ", 1)[1])]
    clicks = {c["number"]: c for c in commits(spark_server, scope, "clicks")}
    lag = (stepped["createdAt"] - clicks[appended]["createdAt"]) / 1000
    print(f"lag of fast: {lag:.2f} s after its append (appended {clicks[appended]['createdAt'] / 1000 - started:.2f} "
          f"s after the dry run's job started); the slow dry runs took {durations} s")
    assert stepped["createdAt"] / 1000 - started < 0.6 * min(durations)

    # The cancelled dry run left nothing: no commit, no failure, no temporary directory.
    assert len(commits(spark_server, scope, "slow")) == 1
    assert (state(spark_server, scope, "slow")["status"], state(spark_server, scope, "slow")["failures"]) == (
        "activated", 0)
    assert not tracker.getActiveJobsIds()
    deadline = time.monotonic() + 30
    while dry_run_directories(spark) - before:  # another process's dry runs may be under way: they end
        assert time.monotonic() < deadline, dry_run_directories(spark) - before
        time.sleep(0.5)
