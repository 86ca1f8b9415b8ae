"""Materialized tables in SQL, as Flink writes them (CREATE / ALTER / DROP MATERIALIZED TABLE, SHOW
MATERIALIZED TABLES): the session extension reads them as the procedures that do the same thing
(docs/materialized-tables.md)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spark.helpers import rows
from tests.spark.test_materialized import state

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def refused(spark: Any, statement: str) -> str:
    """The one-line message of a statement Spark refuses."""
    with pytest.raises(Exception) as caught:  # noqa: PT011 - PySpark raises its own classes per condition
        spark.sql(statement).collect()
    message = str(caught.value)
    return message


@pytest.fixture
def orders(spark: Any, scope: str) -> str:
    spark.sql(f"CREATE TABLE streamcat.{scope}.orders (id INT, item STRING, qty INT)")
    spark.sql(f"INSERT INTO streamcat.{scope}.orders VALUES (1, 'apple', 3), (2, 'pear', 1), (3, 'apple', 2)")
    return f"streamcat.{scope}.orders"


def shown(spark: Any, scope: str) -> dict[str, dict[str, Any]]:
    return {r["table"]: r.asDict() for r in spark.sql(f"SHOW MATERIALIZED TABLES IN streamcat.{scope}").collect()}


def test_create_show_refresh_suspend_resume_and_drop(spark: Any, scope: str, orders: str, spark_server: str) -> None:
    create = f"""
        CREATE MATERIALIZED TABLE IF NOT EXISTS streamcat.{scope}.revenue (PRIMARY KEY (item) NOT ENFORCED)
        COMMENT 'revenue per item'
        FRESHNESS = INTERVAL '5' SECOND
        REFRESH_MODE = CONTINUOUS
        AS SELECT item, sum(qty) AS qty FROM {orders} GROUP BY item"""
    spark.sql(create)
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.revenue ORDER BY item") == [("apple", 5), ("pear", 1)]
    described = state(spark_server, scope)
    assert (described["freshnessMs"], described["refreshMode"], described["status"]) == (5000, "continuous",
                                                                                        "activated")
    extended = spark.sql(f"DESCRIBE TABLE EXTENDED streamcat.{scope}.revenue").collect()
    assert [r["data_type"] for r in extended if r["col_name"] == "Comment"] == ["revenue per item"]

    spark.sql(create)  # IF NOT EXISTS: the table is left as it is
    assert state(spark_server, scope)["refreshCommit"] == described["refreshCommit"]
    assert "already exists" in refused(spark, create.replace("IF NOT EXISTS ", "")).lower()

    assert shown(spark, scope) == {f"{scope}.revenue": {
        "table": f"{scope}.revenue", "refresh_mode": "continuous", "freshness": "5 seconds",
        "status": "activated", "lag_seconds": 0, "stale": False}}

    # REFRESH has taken effect when the statement returns (Flink only submits a job)
    spark.sql(f"INSERT INTO {orders} VALUES (4, 'plum', 7)")
    spark.sql(f"ALTER MATERIALIZED TABLE streamcat.{scope}.revenue REFRESH")
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.revenue ORDER BY item") == [
        ("apple", 5), ("pear", 1), ("plum", 7)]

    spark.sql(f"ALTER MATERIALIZED TABLE streamcat.{scope}.revenue SUSPEND")
    assert state(spark_server, scope)["status"] == "suspended"
    spark.sql(f"ALTER MATERIALIZED TABLE streamcat.{scope}.revenue RESUME")
    assert state(spark_server, scope)["status"] == "activated"

    spark.sql(f"ALTER MATERIALIZED TABLE streamcat.{scope}.revenue SET FRESHNESS = INTERVAL '2' HOUR")
    spark.sql(f"ALTER MATERIALIZED TABLE streamcat.{scope}.revenue SET REFRESH_MODE = FULL")
    after = state(spark_server, scope)
    assert (after["freshnessMs"], after["refreshMode"]) == (7_200_000, "full")

    spark.sql(f"DROP MATERIALIZED TABLE streamcat.{scope}.revenue")
    assert not spark.catalog.tableExists(f"streamcat.{scope}.revenue")
    spark.sql(f"DROP MATERIALIZED TABLE IF EXISTS streamcat.{scope}.revenue")
    message = refused(spark, f"DROP MATERIALIZED TABLE streamcat.{scope}.revenue")
    assert f"no materialized table {scope}.revenue" in message
    # a plain table is not dropped by DROP MATERIALIZED TABLE
    assert "is not a materialized table" in refused(spark, f"DROP MATERIALIZED TABLE {orders}")
    assert spark.catalog.tableExists(orders)


def test_defaults_follow_flink(spark: Any, scope: str, orders: str, spark_server: str) -> None:
    spark.sql(f"USE streamcat.{scope}")
    try:
        spark.sql("CREATE MATERIALIZED TABLE items AS SELECT DISTINCT item FROM orders")
        spark.sql("CREATE MATERIALIZED TABLE nightly REFRESH_MODE = FULL AS SELECT count(*) AS n FROM orders")
        assert state(spark_server, scope, "items")["freshnessMs"] == 180_000  # 3 minutes, continuous
        assert state(spark_server, scope, "nightly")["freshnessMs"] == 3_600_000  # 1 hour, full
        listed = {r["table"]: (r["refresh_mode"], r["freshness"]) for r in
                  spark.sql("SHOW MATERIALIZED TABLES").collect()}
        assert listed == {f"{scope}.items": ("continuous", "180 seconds"),
                          f"{scope}.nightly": ("full", "3600 seconds")}
        assert rows(spark, "SELECT n FROM nightly") == [(3,)]
    finally:
        spark.sql("USE spark_catalog.default")


def test_alter_as_adds_columns_at_the_end_only(spark: Any, scope: str, orders: str) -> None:
    table = f"streamcat.{scope}.revenue"
    spark.sql(f"CREATE MATERIALIZED TABLE {table} FRESHNESS = INTERVAL '1' HOUR "
              f"AS SELECT item, sum(qty) AS qty FROM {orders} GROUP BY item")
    spark.sql(f"ALTER MATERIALIZED TABLE {table} AS "
              f"SELECT item, sum(qty) AS qty, count(*) AS n FROM {orders} GROUP BY item")
    spark.sql(f"ALTER MATERIALIZED TABLE {table} REFRESH")
    assert rows(spark, f"SELECT * FROM {table} ORDER BY item") == [("apple", 5, 2), ("pear", 1, 1)]

    dropped = refused(spark, f"ALTER MATERIALIZED TABLE {table} AS SELECT item, sum(qty) AS qty "
                             f"FROM {orders} GROUP BY item")
    assert "drops column n" in dropped
    reordered = refused(spark, f"ALTER MATERIALIZED TABLE {table} AS "
                               f"SELECT sum(qty) AS qty, item, count(*) AS n FROM {orders} GROUP BY item")
    assert "column item" in reordered
    retyped = refused(spark, f"ALTER MATERIALIZED TABLE {table} AS "
                             f"SELECT item, CAST(sum(qty) AS STRING) AS qty, count(*) AS n FROM {orders} GROUP BY item")
    assert "column qty would change type" in retyped
    for message in (dropped, reordered, retyped):
        assert "\n" not in message.strip().splitlines()[0]
        assert table.split(".", 1)[1] in message


def test_malformed_statements_say_what_was_expected(spark: Any, scope: str) -> None:
    message = refused(spark, f"ALTER MATERIALIZED TABLE streamcat.{scope}.t SET FRESHNESS = INTERVAL 'soon' HOUR")
    assert "expected a whole number of units" in message
    assert "'soon'" in message
    message = refused(spark, f"ALTER MATERIALIZED TABLE streamcat.{scope}.t PAUSE")
    assert "expected SUSPEND, RESUME, REFRESH" in message
    message = refused(spark, "CREATE MATERIALIZED TABLE spark_catalog.default.t AS SELECT 1")
    assert "'spark_catalog' is not one" in message
    # other statements reach Spark's parser untouched, materialized in a string included
    assert rows(spark, "SELECT 'CREATE MATERIALIZED TABLE' AS text") == [("CREATE MATERIALIZED TABLE",)]
