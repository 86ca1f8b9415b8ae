"""The change feed of an append table read by Spark's Parquet scan (NativeFeed) equals the Python source's.

The Python source computes every feed (``native-scan=false`` makes a catalog use it alone): it is the oracle.
A range that only appends columnar chunks is read natively, with the feed columns as per-commit constants;
a range holding a DELETE, or a table with a primary key, stays with the Python source.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest

from catalog_api.client import CatalogClient
from tests.spark.helpers import catalog_beside, executed_plan

pytestmark = pytest.mark.spark

PYTHON = "streamcat_pyfeed"


@pytest.fixture(scope="module")
def python_catalog(spark: Any) -> str:
    """The catalog ``streamcat_pyfeed``: the same server, ``native-scan=false``."""
    return catalog_beside(spark, PYTHON, **{"native-scan": "false"})


def changes(spark: Any, table: str, options: dict[str, str]) -> Any:
    """``spark.read.changes(table)`` with ``options``."""
    reader = spark.read
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.changes(table)


def feed(spark: Any, table: str, columns: str = "*", **options: str) -> list[tuple[Any, ...]]:
    """The feed's rows (``spark.read.changes`` with ``options``; ``columns`` separated by ``;``), sorted."""
    return sorted((tuple(r) for r in changes(spark, table, options).selectExpr(*columns.split(";")).collect()),
                  key=lambda r: tuple((v is None, str(v)) for v in r))


def reads_natively(spark: Any, table: str, **options: str) -> bool:
    """Whether Spark plans the feed read as its own Parquet scan."""
    view = f"feed_{uuid.uuid4().hex[:8]}"
    changes(spark, table, options).createOrReplaceTempView(view)
    try:
        plan = executed_plan(spark, f"SELECT * FROM {view}")
    finally:
        spark.catalog.dropTempView(view)
    assert "BatchScan" in plan, plan
    return "ParquetScan" in plan


def test_an_append_tables_feed_is_read_natively_and_equals_the_python_feed(
        spark: Any, spark_server: str, scope: str, python_catalog: str) -> None:
    name = f"{scope}.orders"
    spark.sql(f"CREATE TABLE streamcat.{name} (id BIGINT, item STRING, amount DECIMAL(10, 2), at TIMESTAMP) "
              "USING avro")
    for first in (0, 100, 200):  # commits 1, 2, 3: appends of two chunks each
        spark.range(first, first + 100, 1, 2).selectExpr(
            "id", "IF(id % 7 = 0, NULL, concat('item-', id % 5)) AS item", "CAST(id / 4 AS DECIMAL(10, 2)) AS amount",
            "timestamp_micros(1700000000000000 + id) AS at").writeTo(f"streamcat.{name}").append()
    spark.sql(f"ALTER TABLE streamcat.{name} ADD COLUMN note STRING")  # commit-free: a schema change
    spark.sql(f"INSERT INTO streamcat.{name} VALUES (300, 'item-x', 1.50, TIMESTAMP'2024-01-01 00:00:00', 'n')")
    last = CatalogClient(spark_server).get_stream(scope, "orders")["lastCommit"]

    native, python = f"streamcat.{name}", f"{python_catalog}.{name}"
    ranges = [{"startingVersion": "1"}, {"startingVersion": "2", "endingVersion": "3"},
              {"startingVersion": "1", "endingVersion": "3", "startingBoundInclusive": "false",
               "endingBoundInclusive": "false"},
              {"startingVersion": str(last)}]
    for options in ranges:
        assert reads_natively(spark, native, **options), options
        assert not reads_natively(spark, python, **options), options
        assert feed(spark, native, **options) == feed(spark, python, **options), options
    # Pruned columns, feed columns alone, and filters over both kinds of column.
    for columns in ("_commit_version", "id;_commit_timestamp", "count(*) OVER () AS n"):
        assert feed(spark, native, columns, startingVersion="1") == feed(spark, python, columns, startingVersion="1")
    filtered = ("id, _change_type, _commit_version FROM {t} CHANGES FROM VERSION 1 TO VERSION 4 "
                "WHERE (item = 'item-3' OR note IS NOT NULL) AND _commit_version >= 2 AND amount > 20")
    got = sorted(tuple(r) for r in spark.sql("SELECT " + filtered.format(t=native)).collect())
    assert got == sorted(tuple(r) for r in spark.sql("SELECT " + filtered.format(t=python)).collect())
    assert got
    assert all(r[1] == "insert" and r[2] >= 2 for r in got)
    # The commit columns are the ones time travel uses.
    versions = dict(spark.read.option("startingVersion", "1").changes(native)
                    .selectExpr("_commit_version", "unix_millis(_commit_timestamp)").distinct().collect())
    assert versions == {c["number"]: c["createdAt"] for c in CatalogClient(spark_server).changes(scope, "orders")}


def test_a_range_with_a_delete_or_a_primary_key_stays_with_the_python_source(
        spark: Any, scope: str, python_catalog: str) -> None:
    name = f"{scope}.events"
    spark.sql(f"CREATE TABLE streamcat.{name} (id BIGINT, v INT) USING avro")
    spark.sql(f"INSERT INTO streamcat.{name} VALUES (1, 10), (2, 20), (3, 30)")
    spark.sql(f"DELETE FROM streamcat.{name} WHERE id = 2")
    spark.sql(f"INSERT INTO streamcat.{name} VALUES (4, 40)")
    native, python = f"streamcat.{name}", f"{python_catalog}.{name}"
    assert not reads_natively(spark, native, startingVersion="1")
    assert reads_natively(spark, native, startingVersion="3")
    assert feed(spark, native, "id;v;_change_type;_commit_version", startingVersion="1") == [
        (1, 10, "insert", 1), (2, 20, "delete", 2), (2, 20, "insert", 1), (3, 30, "insert", 1), (4, 40, "insert", 3)]
    assert feed(spark, native, startingVersion="1") == feed(spark, python, startingVersion="1")

    keyed = f"{scope}.keyed"
    spark.sql(f"CREATE TABLE streamcat.{keyed} (id BIGINT NOT NULL, v INT, CONSTRAINT pk PRIMARY KEY (id)) USING avro")
    spark.sql(f"INSERT INTO streamcat.{keyed} VALUES (1, 10)")
    spark.sql(f"INSERT INTO streamcat.{keyed} VALUES (1, 11)")
    assert not reads_natively(spark, f"streamcat.{keyed}", startingVersion="1")
    assert feed(spark, f"streamcat.{keyed}", "id;v;_change_type", startingVersion="2") == [
        (1, 10, "update_preimage"), (1, 11, "update_postimage")]


def test_decimal_values_survive_the_native_feed(spark: Any, scope: str) -> None:
    name = f"streamcat.{scope}.prices"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, price DECIMAL(38, 10)) USING avro")
    spark.sql(f"INSERT INTO {name} VALUES (1, 12345678901234567890.0123456789), (2, NULL)")
    assert reads_natively(spark, name, startingVersion="1")
    assert feed(spark, name, "id;price", startingVersion="1") == [
        (1, Decimal("12345678901234567890.0123456789")), (2, None)]


def test_a_partitioned_tables_feed_is_read_natively(spark: Any, scope: str, python_catalog: str) -> None:
    name = f"{scope}.clicks"
    spark.sql(f"CREATE TABLE streamcat.{name} (id BIGINT, day DATE, page STRING) USING avro PARTITIONED BY (day)")
    spark.sql(f"INSERT INTO streamcat.{name} VALUES (1, DATE'2024-01-01', 'a'), (2, DATE'2024-01-02', 'b')")
    spark.sql(f"INSERT INTO streamcat.{name} VALUES (3, DATE'2024-01-02', NULL), (4, NULL, 'd')")
    native, python = f"streamcat.{name}", f"{python_catalog}.{name}"
    assert reads_natively(spark, native, startingVersion="1")
    assert feed(spark, native, startingVersion="1") == feed(spark, python, startingVersion="1")
    assert feed(spark, native, "id;_commit_version", startingVersion="2") == [(3, 2), (4, 2)]
