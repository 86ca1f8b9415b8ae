"""Continuous materialized tables: incremental steps from the sources' change feeds, checked against the
query run in batch at the cuts each step records; fallbacks to full refreshes and how they are reported;
a refresher killed mid-step; and freshness held under a producer (docs/materialized-tables.md)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from catalog_api.client import CatalogClient
from catalog_api.materialized.refresher import Refresher
from tests.spark.helpers import describe, rows
from tests.spark.test_materialized import call, commits, kill_refresher_holding_the_lease, state

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def refresh(spark: Any, table: str) -> dict[str, Any]:
    """``refresh_materialized_table``: its answer (outcome, commit, cuts, method)."""
    return call(spark, "refresh_materialized_table", table=table)


def at_cuts(spark: Any, server: str, scope: str, table: str, query: str) -> tuple[list[Any], list[Any]]:
    """The table's content and its query run in batch with each source at the cut its last refresh
    commit records (both sorted): they must be equal."""
    last = commits(server, scope, table)[-1]
    cuts = json.loads(last["properties"]["streamcat.materialized.cuts"])
    pinned = query
    for source, cut in cuts.items():
        name = f"streamcat.{source}"
        pinned = pinned.replace(name, f"{name} VERSION AS OF {cut}")
    content = sorted(rows(spark, f"SELECT * FROM streamcat.{scope}.{table}"), key=repr)
    expected = sorted(rows(spark, pinned), key=repr)
    return content, expected


def method(server: str, scope: str, table: str) -> str:
    """How the table's last refresh was made, as its commit records it."""
    return str(commits(server, scope, table)[-1]["properties"]["streamcat.materialized.method"])


@pytest.fixture
def keyed_orders(spark: Any, scope: str) -> str:
    """A primary-key source: MERGE and DELETE on it give updates (pre/post images) and deletes."""
    table = f"streamcat.{scope}.orders"
    spark.sql(f"CREATE TABLE {table} (id INT NOT NULL, item STRING, qty INT) TBLPROPERTIES ('primary-key' = 'id')")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'apple', 3), (2, 'pear', 1), (3, 'apple', 2), (4, 'fig', NULL), "
              "(5, NULL, 4)")
    return table


def test_grouped_aggregate_follows_inserts_updates_and_deletes(spark: Any, spark_server: str, scope: str,
                                                             keyed_orders: str) -> None:
    query = (f"SELECT item, sum(qty) AS qty, count(qty) AS counted, count(*) AS n, max(id) AS last "
             f"FROM {keyed_orders} WHERE id < 100 GROUP BY item")
    created = call(spark, "create_materialized_table", table=f"{scope}.revenue", query=query,
                   freshness="10 seconds", refresh_mode="continuous")
    assert (created["effective_refresh_mode"], created["status"]) == ("continuous", "activated")
    assert method(spark_server, scope, "revenue") == "full: first refresh of this query"

    # Inserts only (MAX too is maintained while rows only arrive; id 100 is filtered out).
    spark.sql(f"INSERT INTO {keyed_orders} VALUES (6, 'kiwi', 5), (7, 'pear', NULL), (8, NULL, 1), (100, 'fig', 9)")
    answer = refresh(spark, f"{scope}.revenue")
    assert (answer["outcome"], answer["method"]) == ("succeeded", "incremental: grouped aggregate")
    content, expected = at_cuts(spark, spark_server, scope, "revenue", query)
    assert content == expected
    assert ("kiwi", 5, 1, 1, 6) in content

    # Updates and deletes need COUNT(*) and COUNT(qty) to stay exact; MAX cannot follow a removal.
    spark.sql(f"MERGE INTO {keyed_orders} t USING (SELECT 1 AS id, 'kiwi' AS item, 10 AS qty UNION ALL "
              "SELECT 2, 'pear', 0 UNION ALL SELECT 6, 'kiwi', 0) s ON t.id = s.id "
              "WHEN MATCHED AND s.qty = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET *")
    answer = refresh(spark, f"{scope}.revenue")
    assert answer["method"].startswith("full: the sources removed rows, and MIN/MAX")
    assert at_cuts(spark, spark_server, scope, "revenue", query)[0] == at_cuts(
        spark, spark_server, scope, "revenue", query)[1]

    # Without MAX the same changes are applied incrementally: groups move, empty, and SUMs turn NULL.
    exact = (f"SELECT item, sum(qty) AS qty, count(qty) AS counted, count(*) AS n FROM {keyed_orders} "
             "WHERE id < 100 GROUP BY item")
    call(spark, "alter_materialized_table", table=f"{scope}.revenue", query=exact)
    assert refresh(spark, f"{scope}.revenue")["method"] == "full: first refresh of this query"
    spark.sql(f"UPDATE {keyed_orders} SET item = 'apple' WHERE id = 3")
    spark.sql(f"UPDATE {keyed_orders} SET qty = NULL WHERE id = 7")
    spark.sql(f"DELETE FROM {keyed_orders} WHERE item = 'fig'")                 # the group disappears
    spark.sql(f"INSERT INTO {keyed_orders} VALUES (9, 'plum', NULL), (3, 'plum', 6)")  # 3 moves again
    spark.sql(f"MERGE INTO {keyed_orders} t USING (SELECT 5 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE")
    answer = refresh(spark, f"{scope}.revenue")
    assert answer["method"] == "incremental: grouped aggregate"
    content, expected = at_cuts(spark, spark_server, scope, "revenue", exact)
    assert content == expected
    assert "fig" not in [r[0] for r in content]
    assert ("plum", 6, 1, 2) in content
    assert [c["kind"] for c in commits(spark_server, scope, "revenue")][-1] == "overwrite"


def test_projection_appends_and_applies_removals(spark: Any, spark_server: str, scope: str,
                                                 keyed_orders: str) -> None:
    query = f"SELECT id, upper(item) AS item, qty * 2 AS double_qty FROM {keyed_orders} WHERE qty > 1"
    call(spark, "create_materialized_table", table=f"{scope}.big", query=query, freshness="5 seconds",
         refresh_mode="auto")
    before = len(commits(spark_server, scope, "big"))

    # Rows that only arrive are appended: a commit of the new rows alone, recording the new cut.
    spark.sql(f"INSERT INTO {keyed_orders} VALUES (6, 'kiwi', 5), (7, 'plum', 1)")
    assert refresh(spark, f"{scope}.big")["method"] == "incremental: projection"
    made = commits(spark_server, scope, "big")
    assert len(made) == before + 1
    assert made[-1]["kind"] == "append"
    content, expected = at_cuts(spark, spark_server, scope, "big", query)
    assert content == expected

    # Updates and deletes: the table's rows plus those arriving, minus those leaving (as multisets).
    spark.sql(f"UPDATE {keyed_orders} SET qty = 7 WHERE id = 6")
    spark.sql(f"INSERT INTO {keyed_orders} VALUES (7, 'plum', 8)")  # an upsert: enters through the filter
    spark.sql(f"DELETE FROM {keyed_orders} WHERE id = 1")
    spark.sql(f"UPDATE {keyed_orders} SET qty = 0 WHERE id = 3")    # leaves through the filter
    assert refresh(spark, f"{scope}.big")["method"] == "incremental: projection"
    content, expected = at_cuts(spark, spark_server, scope, "big", query)
    assert content == expected
    assert sorted(content) == [(5, None, 8), (6, "KIWI", 14), (7, "PLUM", 16)]


@pytest.fixture
def orders(spark: Any, scope: str) -> str:
    """An append source (items without a 'b': the slow filter below never matches)."""
    table = f"streamcat.{scope}.orders"
    spark.sql(f"CREATE TABLE {table} (id INT, item STRING, qty INT)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'apple', 3), (2, 'pear', 1), (3, 'apple', 2)")
    return table


def test_modes_switch_and_fallbacks_are_reported(spark: Any, spark_server: str, scope: str, orders: str) -> None:
    query = f"SELECT item, sum(qty) AS qty, count(*) AS n FROM {orders} GROUP BY item"
    table = f"{scope}.revenue"
    call(spark, "create_materialized_table", table=table, query=query, freshness="5 seconds")
    properties = describe(spark, f"TABLE EXTENDED streamcat.{table}")["Table Properties"]
    assert "materialized.effective_refresh_mode=continuous (incremental: grouped aggregate)" in properties

    # continuous -> full: the same query is recomputed; full -> continuous: steps again from the recorded cut.
    assert call(spark, "alter_materialized_table", table=table,
                freshness="1 hour")["effective_refresh_mode"] == "full"
    spark.sql(f"INSERT INTO {orders} VALUES (4, 'pear', 5)")
    assert refresh(spark, table)["method"] == "full: the refresh mode is full"
    assert call(spark, "alter_materialized_table", table=table,
                freshness="5 seconds")["effective_refresh_mode"] == "continuous"
    spark.sql(f"INSERT INTO {orders} VALUES (5, 'fig', 7)")
    assert refresh(spark, table)["method"] == "incremental: grouped aggregate"
    assert sorted(rows(spark, f"SELECT * FROM streamcat.{table}")) == [("apple", 5, 2), ("fig", 7, 1), ("pear", 6, 2)]
    assert state(spark_server, scope)["lastRefreshMethod"] == "incremental: grouped aggregate"

    # Queries continuous mode cannot follow get full refreshes, and say why (DESCRIBE, REST, each commit).
    spark.sql(f"CREATE TABLE streamcat.{scope}.prices (item STRING, price DOUBLE)")
    spark.sql(f"INSERT INTO streamcat.{scope}.prices VALUES ('apple', 0.5), ('pear', 0.75)")
    fallbacks = {
        "joined": (f"SELECT o.item, o.qty * p.price AS amount FROM {orders} o JOIN streamcat.{scope}.prices p "
                   "ON o.item = p.item", "full refreshes: the query reads 2 tables"),
        "spread": (f"SELECT item, stddev_pop(qty) AS qty FROM {orders} GROUP BY item",
                   "full refreshes: STDDEV_POP (maintained: SUM, COUNT, MIN, MAX, AVG)"),
        "ranked": (f"SELECT item, rank() OVER (ORDER BY qty) AS r FROM {orders}", "full refreshes: a window function"),
        "sampled": (f"SELECT item, qty FROM {orders} WHERE rand() < 2", "full refreshes: a non-deterministic"),
        "lambda": (f"SELECT item, qty FROM {orders} WHERE exists(array(qty), x -> x > 0)",
                   "full refreshes: an expression that cannot be evaluated on the change feed"),
    }
    for name, (fallback_query, reason) in fallbacks.items():
        call(spark, "create_materialized_table", table=f"{scope}.{name}", query=fallback_query,
             freshness="5 seconds")
        plan = state(spark_server, scope, name)["incrementalPlan"]
        assert plan.startswith(reason), (name, plan)
        described = describe(spark, f"TABLE EXTENDED streamcat.{scope}.{name}")["Table Properties"]
        assert f"materialized.effective_refresh_mode=continuous ({plan})" in described
    spark.sql(f"INSERT INTO {orders} VALUES (6, 'pear', 1)")
    answer = refresh(spark, f"{scope}.spread")
    assert (answer["outcome"], answer["method"]) == ("succeeded", "full: STDDEV_POP (maintained: SUM, COUNT, MIN, MAX, "
                                                                  "AVG)")
    assert sorted(rows(spark, f"SELECT * FROM streamcat.{scope}.spread")) == sorted(rows(spark, fallbacks["spread"][0]))


#: Makes each row of the query cost about a second (backtracking), deterministically: a step slow enough to kill.
SLOW = "NOT concat(repeat('a', 22), item) RLIKE '(.*a){20}b'"


def test_refresher_killed_during_a_step_is_taken_over_exactly(spark: Any, spark_server: str, scope: str,
                                                              orders: str) -> None:
    table = f"{scope}.revenue"
    query = f"SELECT item, sum(qty) AS qty, count(*) AS n FROM {orders} WHERE {SLOW} GROUP BY item"
    call(spark, "create_materialized_table", table=table, query=query, freshness="2 seconds",
         refresh_mode="continuous", primary_key="item")
    assert state(spark_server, scope)["incrementalPlan"] == "incremental: grouped aggregate"
    old = sorted(rows(spark, f"SELECT * FROM streamcat.{table}"))
    spark.sql(f"INSERT INTO {orders} VALUES (4, 'pear', 5), (5, 'fig', 7), (6, 'fig', 1)")
    before = commits(spark_server, scope)

    kill_refresher_holding_the_lease(spark_server, scope, lease_seconds=20)

    # Nothing of the step is visible: no commit, the old content.
    assert commits(spark_server, scope) == before
    assert sorted(rows(spark, f"SELECT * FROM streamcat.{table}")) == old
    assert state(spark_server, scope)["leaseHolder"] == "doomed"

    # The second refresher leaves the table alone while the dead one's lease runs (long enough that this
    # check cannot straddle its end on a slow machine), then steps from the recorded cut exactly once.
    second = Refresher(spark, CatalogClient(spark_server), holder="second")
    assert [a.detail.split(";")[0] for a in second.run_once() if a.table == table] == [
        "refresher doomed holds its lease"]
    while state(spark_server, scope)["leaseExpiresAt"] > time.time() * 1000:
        time.sleep(0.2)
    assert [a.outcome for a in second.run_once() if a.table == table] == ["succeeded"]
    after = commits(spark_server, scope)
    assert len(after) == len(before) + 1
    assert after[-1]["properties"]["streamcat.materialized.holder"] == "second"
    assert after[-1]["properties"]["streamcat.materialized.method"] == "incremental: grouped aggregate"
    assert sorted(rows(spark, f"SELECT * FROM streamcat.{table}")) == [("apple", 5, 2), ("fig", 8, 2), ("pear", 6, 2)]


def test_freshness_held_under_a_producer(spark: Any, spark_server: str, scope: str, orders: str) -> None:
    """A producer appends to orders for 60 s; revenue (freshness 5 s, continuous) never lags more than its
    freshness plus one trigger (the freshness again) after its first refresh, measured from commit times,
    and at 5 checkpoints its content equals the query run in batch at the cut that content records.

    The first incremental step of a JVM loads and compiles the classes of its plan (seconds to tens of
    seconds on a busy 2-core machine, once per refresher process): one step by hand before the producer
    starts keeps that out of the measure when this test runs alone, and the refresher warms before its
    passes as `streamcat refresher` does at start (a dry run while the producer runs would delay steps)."""
    table = f"{scope}.revenue"
    query = f"SELECT item, sum(qty) AS qty, count(*) AS n FROM {orders} GROUP BY item"
    call(spark, "create_materialized_table", table=table, query=query, freshness="5 seconds",
         refresh_mode="continuous", primary_key="item")
    spark.sql(f"INSERT INTO {orders} VALUES (0, 'apple', 1)")
    assert refresh(spark, table)["method"] == "incremental: grouped aggregate"
    first = commits(spark_server, scope)[-1]
    stop = threading.Event()
    # As `streamcat refresher` does at start: warm (dry runs of the table's step), then the passes.
    fresh = Refresher(spark, CatalogClient(spark_server), holder="fresh", scopes=[scope])
    assert [a.outcome for a in fresh.warm()] == ["warmed"]
    refresher = threading.Thread(target=fresh.run, kwargs={"poll_seconds": 1.0, "stop": stop})
    refresher.start()
    checkpoints: list[dict[str, Any]] = []
    try:
        started = time.monotonic()
        batch = 0
        while time.monotonic() - started < 60:
            batch += 1
            values = ", ".join(f"({batch * 100 + i}, 'item{(batch * 7 + i) % 13}', {i % 5 + 1})" for i in range(10))
            spark.sql(f"INSERT INTO {orders} VALUES {values}")
            if time.monotonic() - started > 12 * (len(checkpoints) + 1):  # at 12, 24, 36 and 48 s
                checkpoints.append(commits(spark_server, scope)[-1])
            time.sleep(0.3)
        # The producer stopped: the table catches up within its freshness and a trigger.
        deadline = time.monotonic() + 10
        while state(spark_server, scope)["behind"]:
            assert time.monotonic() < deadline, "the table never caught up with its source"
            time.sleep(0.2)
    finally:
        stop.set()
        refresher.join()
    made = commits(spark_server, scope)
    checkpoints = [*checkpoints[:4], made[-1]]
    assert len({c["number"] for c in checkpoints}) == 5, "five distinct refreshes checked"

    # Lag: from each source commit after the first refresh to the first refresh that reflects it.
    refreshes = [(c["createdAt"], json.loads(c["properties"]["streamcat.materialized.cuts"])[f"{scope}.orders"])
                 for c in made]
    source = [c for c in CatalogClient(spark_server).commits(scope, "orders") if c["createdAt"] > first["createdAt"]]
    assert len(source) > 50
    lags = [next(at for at, cut in refreshes if cut >= c["number"]) - c["createdAt"] for c in source]
    assert max(lags) <= 10_000, sorted(lags)[-5:]
    assert all(c["properties"]["streamcat.materialized.method"] == "incremental: grouped aggregate"
               for c in made[1:])

    # Content at 5 checkpoints equals the query at the cut each records.
    for checkpoint in checkpoints:
        cut = json.loads(checkpoint["properties"]["streamcat.materialized.cuts"])[f"{scope}.orders"]
        content = rows(spark, f"SELECT * FROM streamcat.{table} VERSION AS OF {checkpoint['number']} ORDER BY item")
        expected = rows(spark, query.replace(orders, f"{orders} VERSION AS OF {cut}") + " ORDER BY item")
        assert content == expected
