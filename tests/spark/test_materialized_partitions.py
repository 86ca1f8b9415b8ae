"""Partitioned materialized tables (docs/materialized-tables.md, "Partitioned tables"): a full-mode table's
scheduled refresh recomputes the partition its time names, REFRESH PARTITION backfills one, each in ONE
commit that leaves the other partitions' files as they were; DESCRIBE says when the next refresh is due."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from catalog_api.client import CatalogClient
from tests.spark.helpers import rows
from tests.spark.test_materialized import call, state
from tests.spark.test_materialized_sql import refused

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

FIRST, SECOND = "2026-11-01", "2026-11-02"


def files(server: str, scope: str, table: str) -> dict[str, set[str]]:
    """The table's live chunk files by the value of its partition column ``ds``."""
    _cut, chunks = CatalogClient(server).snapshot(scope, table)
    by_day: dict[str, set[str]] = {}
    for chunk in chunks:
        assert chunk.partition is not None
        by_day.setdefault(chunk.partition["values"][0], set()).add(chunk.path)
    return by_day


def test_scheduled_refresh_and_backfill_replace_one_partition(spark: Any, scope: str, spark_server: str) -> None:
    events = f"streamcat.{scope}.events"
    daily = f"streamcat.{scope}.daily"
    spark.sql(f"CREATE TABLE {events} (ds STRING, item STRING, qty INT)")
    spark.sql(f"INSERT INTO {events} VALUES ('{FIRST}', 'tea', 1), ('{SECOND}', 'tea', 2), ('{SECOND}', 'cake', 3)")
    # typos and formatters of columns that are not partition columns are refused before anything is made
    query = f"SELECT ds, day(CAST(ds AS DATE)) AS d, item, qty * 10 AS qty FROM {events}"
    typo = refused(spark, f"CREATE MATERIALIZED TABLE {daily} PARTITIONED BY (ds, d) "
                          f"WITH ('partition.fields.ds.date-format' = 'yyyy-MM-dd') AS {query}")
    assert "unknown option 'partition.fields.ds.date-format'" in typo
    bad_pattern = refused(spark, f"CREATE MATERIALIZED TABLE {daily} PARTITIONED BY (ds) "
                                 f"WITH ('partition.fields.ds.date-formatter' = 'yyyy-MM-dd{{') AS {query}")
    assert "is not a Java date pattern" in bad_pattern
    assert not spark.catalog.tableExists(daily)

    spark.sql(f"""CREATE MATERIALIZED TABLE {daily} PARTITIONED BY (ds, d)
                  WITH ('partition.fields.ds.date-formatter' = 'yyyy-MM-dd')
                  FRESHNESS = INTERVAL '1' HOUR REFRESH_MODE = FULL AS {query}""")
    table = state(spark_server, scope, "daily")
    assert table["options"] == {"partition.fields.ds.date-formatter": "yyyy-MM-dd"}
    assert CatalogClient(spark_server).get_table(scope, "daily")["partitionSpec"]["text"] == "ds, d"
    # the next refresh is on the hour: every freshness interval from the epoch
    described = {str(r[0]): str(r[1]) for r in spark.sql(f"DESCRIBE TABLE EXTENDED {daily}").collect()}
    shown = re.search(r"materialized\.next_refresh_at=([^,\]]+)", described["Table Properties"])
    assert shown is not None
    due = datetime.fromisoformat(shown.group(1)).timestamp()
    assert due % 3600 == 0
    assert time.time() - 60 < due <= time.time() + 3600  # the next hour (or, across an hour, the one just begun)
    assert due * 1000 == table["nextRefreshAt"]

    spark.sql(f"INSERT INTO {events} VALUES ('{FIRST}', 'cake', 4), ('{SECOND}', 'tea', 5)")
    before = files(spark_server, scope, "daily")
    # the refresh scheduled on 2026-11-02 recomputes partition ds = '2026-11-02' only
    done = call(spark, "refresh_materialized_table", table=f"{scope}.daily", at=f"{SECOND}T10:00:00Z")
    assert done["method"] == f"full: partition (ds = '{SECOND}')"
    assert rows(spark, f"SELECT ds, item, qty FROM {daily} ORDER BY ds, item, qty") == [
        (FIRST, "tea", 10), (SECOND, "cake", 30), (SECOND, "tea", 20), (SECOND, "tea", 50)]
    after = files(spark_server, scope, "daily")
    assert after[FIRST] == before[FIRST]
    assert not after[SECOND] & before[SECOND]
    [change] = CatalogClient(spark_server).changes(scope, "daily", after=done["commit"] - 1)
    assert change["number"] == done["commit"]
    assert change["kind"] == "row-level"
    assert {c["path"] for c in change["removed"]} == before[SECOND]

    # a backfill of 2026-11-01, done when the statement returns; 2026-11-02's files stay
    spark.sql(f"ALTER MATERIALIZED TABLE {daily} REFRESH PARTITION (ds = '{FIRST}')")
    assert rows(spark, f"SELECT ds, item, qty FROM {daily} WHERE ds = '{FIRST}' ORDER BY item") == [
        (FIRST, "cake", 40), (FIRST, "tea", 10)]
    backfilled = files(spark_server, scope, "daily")
    assert backfilled[SECOND] == after[SECOND]
    assert not backfilled[FIRST] & after[FIRST]
    assert len(CatalogClient(spark_server).changes(scope, "daily", after=done["commit"])) == 1, "one commit"

    # the refresher's call names no time: the latest on the hour, whose day has no rows: nothing to commit
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    now = call(spark, "refresh_materialized_table", table=f"{scope}.daily")
    assert (now["outcome"], now["method"]) == ("unchanged", f"full: partition (ds = '{today}')")
    assert files(spark_server, scope, "daily") == backfilled

    # refusals, each one line naming what is wrong
    alter = f"ALTER MATERIALIZED TABLE {daily} REFRESH PARTITION"
    assert f"REFRESH PARTITION of {scope}.daily: nope is not a partition column (its partition columns: ds, d)" \
        in refused(spark, f"{alter} (nope = 'x')")
    assert "'first' is not a INT value, the type of partition column d" in refused(spark, f"{alter} (d = 'first')")
    spark.sql(f"ALTER MATERIALIZED TABLE {daily} SET REFRESH_MODE = CONTINUOUS")
    assert "is refreshed continuously" in refused(spark, f"{alter} (ds = '{FIRST}')")
    call(spark, "create_materialized_table", table=f"{scope}.plain", query=f"SELECT item FROM {events}",
         freshness="1 hour", initialize=False)
    message = refused(spark, f"ALTER MATERIALIZED TABLE streamcat.{scope}.plain REFRESH PARTITION (ds = '{FIRST}')")
    assert f"materialized table {scope}.plain is not partitioned" in message
    assert "\n" not in message.strip().splitlines()[0]
