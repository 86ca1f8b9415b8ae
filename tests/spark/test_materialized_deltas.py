"""Continuous grouped aggregates stored as aggregation-engine tables: a step commits only the changed groups'
deltas, the content equals the query at every cut, emptied groups disappear, and compaction (by hand or when
the deltas pass the table's bound) changes no row (docs/materialized-tables.md, "What a step costs")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from catalog_api.client import CatalogClient
from catalog_api.streams.reader import StreamReader
from registry.client import RegistryClient
from tests.iceberg.clients import duck, pyiceberg
from tests.spark.helpers import describe, rows
from tests.spark.test_materialized import call, commits

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

QUERY = "SELECT item, sum(qty) AS qty, count(*) AS n, count(note) AS noted FROM {orders} GROUP BY item"


def step(spark: Any, scope: str) -> dict[str, Any]:
    """One refresh of revenue; it must be a step that wrote only the changed groups."""
    answer = call(spark, "refresh_materialized_table", table=f"{scope}.revenue")
    assert answer["method"] == "incremental: grouped aggregate (changed groups)", answer
    return answer


def equal_at_every_cut(spark: Any, server: str, scope: str, query: str) -> None:
    """At each refresh commit, the table (read as of it) equals the query with the source at that commit's cut
    (all of them in two Spark jobs: one union of the table's versions, one of the query's)."""
    refreshes = [c for c in commits(server, scope) if "streamcat.materialized.cuts" in c["properties"]]
    assert len(refreshes) >= 4
    contents, expected = [], []
    for commit in refreshes:
        cut = json.loads(commit["properties"]["streamcat.materialized.cuts"])[f"{scope}.orders"]
        contents.append(f"SELECT {commit['number']} AS at, * FROM streamcat.{scope}.revenue "
                        f"VERSION AS OF {commit['number']}")
        expected.append(f"SELECT {commit['number']} AS at, * FROM ("
                        + query.replace(f"{scope}.orders", f"{scope}.orders VERSION AS OF {cut}") + ")")
    assert sorted(rows(spark, " UNION ALL ".join(contents)), key=repr) == sorted(
        rows(spark, " UNION ALL ".join(expected)), key=repr)


def test_steps_write_only_the_changed_groups(spark: Any, spark_server: str, scope: str) -> None:
    orders = f"streamcat.{scope}.orders"
    spark.sql(f"CREATE TABLE {orders} (id INT NOT NULL, item STRING NOT NULL, qty INT NOT NULL, note STRING) "
              "TBLPROPERTIES ('primary-key' = 'id')")
    spark.sql(f"INSERT INTO {orders} SELECT id, concat('item', id % 50), id % 7, IF(id % 3 = 0, 'x', NULL) "
              "FROM range(200)")
    query = QUERY.format(orders=orders)
    call(spark, "create_materialized_table", table=f"{scope}.revenue", query=query, freshness="10 seconds",
         refresh_mode="continuous")
    table = CatalogClient(spark_server).get_table(scope, "revenue")
    assert table["primaryKey"] == ["item"]
    assert {k: v for k, v in table["properties"].items() if k.startswith(("merge-engine", "fields.", "aggregation."))} \
        == {"merge-engine": "aggregation", "fields.qty.aggregate-function": "sum", "fields.n.aggregate-function": "sum",
            "fields.noted.aggregate-function": "sum", "aggregation.row-count-field": "n"}
    assert [c.name for c in spark.table(f"streamcat.{scope}.revenue").schema] == ["item", "qty", "n", "noted"]

    # New rows in 3 groups, one of them new: a commit of 3 rows (the groups' deltas), not of 51.
    spark.sql(f"INSERT INTO {orders} VALUES (1000, 'item1', 5, 'y'), (1001, 'item2', 1, NULL), (1002, 'new', 4, NULL)")
    step(spark, scope)
    last = commits(spark_server, scope)[-1]
    assert (last["kind"], last["eventCount"]) == ("append", 3)

    # Updates (a row moves from item3 to item4, a qty changes) and deletes (every row of item5: it disappears).
    spark.sql(f"UPDATE {orders} SET item = 'item4' WHERE id = 3")
    spark.sql(f"UPDATE {orders} SET qty = 100, note = 'z' WHERE id = 6")
    spark.sql(f"DELETE FROM {orders} WHERE item = 'item5' OR id = 1002")
    step(spark, scope)
    assert commits(spark_server, scope)[-1]["eventCount"] == 5  # item3, item4, item6, item5 and new
    groups = [r[0] for r in rows(spark, f"SELECT item FROM streamcat.{scope}.revenue")]
    assert len(groups) == 49
    assert "item5" not in groups
    assert "new" not in groups

    # The change feed says item5 left; the Python reader (pyarrow merge) agrees with Spark's.
    feed = rows(spark, f"SELECT item, _change_type FROM streamcat.{scope}.revenue CHANGES FROM VERSION "
                f"{commits(spark_server, scope)[-1]['number']} TO VERSION {commits(spark_server, scope)[-1]['number']} "
                "WHERE _change_type = 'delete'")
    assert sorted(feed) == [("item5", "delete"), ("new", "delete")]
    reader = StreamReader(CatalogClient(spark_server), RegistryClient(spark_server, scope), scope, "revenue")
    python = sorted((r["item"], r["qty"], r["n"], r["noted"]) for r in reader.read())
    assert python == sorted(rows(spark, f"SELECT * FROM streamcat.{scope}.revenue"))

    # A group emptied by deletes comes back from zero.
    spark.sql(f"INSERT INTO {orders} VALUES (2000, 'item5', 2, NULL)")
    step(spark, scope)
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.revenue WHERE item = 'item5'") == [("item5", 2, 1, 0)]

    # Compaction changes no row; steps go on from the compacted table.
    before = sorted(rows(spark, f"SELECT * FROM streamcat.{scope}.revenue"))
    spark.sql(f"CALL streamcat.system.compact(table => '{scope}.revenue')")
    assert commits(spark_server, scope)[-1]["kind"] == "compaction"
    assert sorted(rows(spark, f"SELECT * FROM streamcat.{scope}.revenue")) == before
    spark.sql(f"DELETE FROM {orders} WHERE id = 2000")
    step(spark, scope)
    equal_at_every_cut(spark, spark_server, scope, query)


def test_deltas_past_the_bound_are_compacted(spark: Any, spark_server: str, scope: str) -> None:
    orders = f"streamcat.{scope}.orders"
    spark.sql(f"CREATE TABLE {orders} (id INT NOT NULL, item STRING, qty INT NOT NULL)")
    spark.sql(f"INSERT INTO {orders} SELECT id, concat('item', id % 40), 1 FROM range(400)")
    query = (f"SELECT item, sum(qty) AS qty, count(*) AS n, max(id) AS last FROM {orders} "
             "WHERE item IS NOT NULL GROUP BY item")
    call(spark, "create_materialized_table", table=f"{scope}.revenue", query=query, freshness="10 seconds",
         refresh_mode="continuous")
    # The same query refreshed in full only stays an ordinary table (it never steps; its reads need no merge).
    call(spark, "create_materialized_table", table=f"{scope}.nightly", query=query, freshness="1 hour",
         refresh_mode="full", initialize=False)
    assert CatalogClient(spark_server).get_table(scope, "nightly")["primaryKey"] == []
    # Past 0.1 of the table's rows (the default) and, here, past no minimum (by default 100,000 rows).
    spark.sql(f"ALTER TABLE streamcat.{scope}.revenue SET TBLPROPERTIES ('compaction.delta-rows-min' = '0')")
    assert "compaction.delta-rows-min=0" in describe(spark, f"TABLE EXTENDED streamcat.{scope}.revenue")[
        "Table Properties"]
    # 4 changed groups of 40 (0.1 of the table's rows: not past the bound), then 1 more: compacted.
    spark.sql(f"INSERT INTO {orders} VALUES (400, 'item1', 1), (401, 'item2', 1), (402, 'item3', 1), "
              "(403, 'item4', 1)")
    step(spark, scope)
    assert commits(spark_server, scope)[-1]["kind"] == "append"
    spark.sql(f"INSERT INTO {orders} VALUES (404, 'item5', 1), (405, NULL, 1)")
    step(spark, scope)
    made = commits(spark_server, scope)
    assert [c["kind"] for c in made[-2:]] == ["append", "compaction"]
    assert made[-2]["eventCount"] == 1
    assert sorted(rows(spark, f"SELECT * FROM streamcat.{scope}.revenue")) == sorted(rows(spark, query))
    # Rows of the table are added up per item: a new query must still give one row per item.
    with pytest.raises(Exception, match=r"stored keyed by its query's groups \(item\)"):
        call(spark, "alter_materialized_table", table=f"{scope}.revenue",
             query=query.replace("GROUP BY item", "GROUP BY item, id").replace("SELECT item", "SELECT item, id"))
    # MAX cannot follow a removal: that step is a full refresh, and says why.
    spark.sql(f"DELETE FROM {orders} WHERE id = 404")
    answer = call(spark, "refresh_materialized_table", table=f"{scope}.revenue")
    assert answer["method"].startswith("full: the sources removed rows, and MIN/MAX")
    equal_at_every_cut(spark, spark_server, scope, query)


AVERAGES = ("SELECT item, avg(price) AS avg_price, avg(qty) AS avg_qty, sum(price) AS total FROM {orders} "
            "GROUP BY item")


def test_avg_and_the_row_count_are_kept_in_hidden_state(spark: Any, spark_server: str, scope: str) -> None:
    """AVG and a query without COUNT(*) step through updates and deletes: the table keeps each AVG's sum and
    count and each group's row count in hidden columns that no reader shows."""
    orders = f"streamcat.{scope}.orders"
    spark.sql(f"CREATE TABLE {orders} (id INT NOT NULL, item STRING NOT NULL, price INT NOT NULL, qty INT) "
              "TBLPROPERTIES ('primary-key' = 'id')")
    spark.sql(f"INSERT INTO {orders} SELECT id, concat('item', id % 20), id % 13, IF(id % 4 = 0, NULL, id % 5) "
              "FROM range(120)")
    query = AVERAGES.format(orders=orders)
    call(spark, "create_materialized_table", table=f"{scope}.revenue", query=query, freshness="10 seconds",
         refresh_mode="continuous")
    table = CatalogClient(spark_server).get_table(scope, "revenue")
    assert {k: v for k, v in table["properties"].items() if k.startswith(("fields.", "aggregation."))} == {
        "fields.avg_price.aggregate-function": "avg", "fields.avg_qty.aggregate-function": "avg",
        "fields.total.aggregate-function": "sum", "aggregation.row-count-field": "$rows"}
    assert [f["name"] for f in table["schema"]["fields"]] == ["item", "avg_price", "avg_qty", "total"]
    assert spark.table(f"streamcat.{scope}.revenue").columns == ["item", "avg_price", "avg_qty", "total"]

    # Updates move rows between groups and null a value; deletes empty item7 (it disappears) and thin item8.
    spark.sql(f"INSERT INTO {orders} VALUES (500, 'item1', 50, 3), (501, 'new', 4, NULL)")
    step(spark, scope)
    assert commits(spark_server, scope)[-1]["eventCount"] == 2
    spark.sql(f"UPDATE {orders} SET item = 'item2', qty = NULL WHERE id = 3")
    spark.sql(f"DELETE FROM {orders} WHERE item = 'item7' OR id = 8")
    step(spark, scope)
    assert commits(spark_server, scope)[-1]["eventCount"] == 4  # item2, item3, item7 and item8
    assert rows(spark, f"SELECT count(*) FROM streamcat.{scope}.revenue WHERE item = 'item7'") == [(0,)]
    assert rows(spark, f"SELECT avg_qty FROM streamcat.{scope}.revenue WHERE item = 'new'") == [(None,)]

    # No reader shows the hidden columns: the Python reader, the change feed; both agree with Spark's read.
    reader = StreamReader(CatalogClient(spark_server), RegistryClient(spark_server, scope), scope, "revenue")
    python = list(reader.read())
    assert all(set(r) == {"item", "avg_price", "avg_qty", "total"} for r in python)
    assert sorted((r["item"], r["avg_price"], r["avg_qty"], r["total"]) for r in python) == sorted(
        rows(spark, f"SELECT * FROM streamcat.{scope}.revenue"))
    last = commits(spark_server, scope)[-1]["number"]
    feed = spark.sql(f"SELECT * FROM streamcat.{scope}.revenue CHANGES FROM VERSION {last} TO VERSION {last}")
    assert not [c for c in feed.columns if "$" in c]
    assert ("item7", "delete") in [(r["item"], r["_change_type"]) for r in feed.collect()]

    # Compaction keeps the state: the compacted table (read natively) and the steps after it stay exact.
    before = sorted(rows(spark, f"SELECT * FROM streamcat.{scope}.revenue"))
    spark.sql(f"CALL streamcat.system.compact(table => '{scope}.revenue')")
    assert sorted(rows(spark, f"SELECT * FROM streamcat.{scope}.revenue")) == before
    # Iceberg clients read the compacted files (hidden columns in them, under ids no schema has) as the table shows.
    iceberg = pyiceberg(spark_server).load_table(f"{scope}.revenue").scan().to_arrow()
    assert sorted(tuple(r.values()) for r in iceberg.to_pylist()) == before
    duckdb = duck(spark_server).execute(f"SELECT * FROM ice.{scope}.revenue").fetchall()
    assert sorted(duckdb) == before
    spark.sql(f"INSERT INTO {orders} VALUES (502, 'item1', 7, 1), (503, 'item7', 2, 2)")
    spark.sql(f"DELETE FROM {orders} WHERE id = 501")
    step(spark, scope)

    # A full refresh writes the state as well, and the steps after it add to it.
    forced = call(spark, "refresh_materialized_table", table=f"{scope}.revenue", force=True)
    assert forced["method"] == "full: forced"
    spark.sql(f"UPDATE {orders} SET price = price + 1 WHERE item = 'item1'")
    step(spark, scope)
    equal_at_every_cut(spark, spark_server, scope, query)


def test_an_avg_added_by_alter_steps_once_its_state_is_written(spark: Any, spark_server: str, scope: str) -> None:
    """`ALTER ... AS` adds an AVG; once its function is set, the next refresh writes its hidden state in full
    (the rows written before have none), and the steps after it append deltas again."""
    orders = f"streamcat.{scope}.orders"
    spark.sql(f"CREATE TABLE {orders} (id INT NOT NULL, item STRING NOT NULL, price INT NOT NULL)")
    spark.sql(f"INSERT INTO {orders} SELECT id, concat('item', id % 5), id % 11 FROM range(40)")
    query = f"SELECT item, sum(price) AS total, count(*) AS n FROM {orders} GROUP BY item"
    call(spark, "create_materialized_table", table=f"{scope}.revenue", query=query, freshness="10 seconds",
         refresh_mode="continuous")
    averaged = query.replace("count(*) AS n", "count(*) AS n, avg(price) AS avg_price")
    call(spark, "alter_materialized_table", table=f"{scope}.revenue", query=averaged)
    call(spark, "refresh_materialized_table", table=f"{scope}.revenue")
    spark.sql(f"ALTER TABLE streamcat.{scope}.revenue SET TBLPROPERTIES "
              "('fields.avg_price.aggregate-function' = 'avg')")
    spark.sql(f"INSERT INTO {orders} VALUES (100, 'item1', 3)")
    answer = call(spark, "refresh_materialized_table", table=f"{scope}.revenue")
    assert answer["method"] == "full: the hidden state (avg_price$sum,avg_price$count) is not written yet"
    spark.sql(f"INSERT INTO {orders} VALUES (101, 'item1', 8), (102, 'item2', 1)")
    step(spark, scope)
    assert sorted(rows(spark, f"SELECT * FROM streamcat.{scope}.revenue")) == sorted(rows(spark, averaged))
