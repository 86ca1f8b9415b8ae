"""Reads and writes through the Python data source: INSERT, SELECT, time travel, CTAS, writeTo."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from catalog_api.client import CatalogClient
from tests.spark.helpers import describe, rows, table_files

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def location(server: str, scope: str, table: str) -> str:
    """Where a table's chunk files live."""
    return str(CatalogClient(server).get_table(scope, table)["stream"]["location"])


def test_insert_and_select(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id INT, name STRING, score DOUBLE)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a', 1.5), (2, 'b', NULL)")
    spark.sql(f"INSERT INTO {table} SELECT id + 10, concat('n', id), id / 2 FROM range(3)")

    assert rows(spark, f"SELECT * FROM {table} ORDER BY id") == [
        (1, "a", 1.5), (2, "b", None), (10, "n0", 0.0), (11, "n1", 0.5), (12, "n2", 1.0)]
    assert rows(spark, f"SELECT count(*), sum(id), max(name) FROM {table}") == [(5, 36, "n2")]
    commits = CatalogClient(spark_server).commits(scope, "t")
    assert [(c["number"], c["eventCount"], c["overwrite"]) for c in commits] == [(1, 2, False), (2, 3, False)]


def test_a_scan_reads_only_the_columns_the_query_needs(spark: Any, scope: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id INT, name STRING, payload STRING)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a', 'big'), (2, 'b', 'bigger')")
    query = spark.sql(f"SELECT name FROM {table} WHERE id > 1")
    plan = query._jdf.queryExecution().executedPlan().toString()
    assert "payload" not in plan
    assert [tuple(r) for r in query.collect()] == [("b",)]
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(2,)]


def test_filters_skip_chunks_by_their_statistics(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, name STRING, day DATE)")
    for low in (0, 100, 200):
        spark.sql(f"INSERT INTO {table} SELECT id, concat('k', id), date_add(DATE'2024-01-01', CAST(id AS INT)) "
                  f"FROM range({low}, {low + 100}, 1, 1)")
    _cut, chunks = CatalogClient(spark_server).snapshot(scope, "t")
    middle = next(c for c in chunks if c.stats["columns"]["id"]["min"] == 100)
    # Without its file the middle chunk cannot be read: a query that still succeeds did not open it.
    Path(location(spark_server, scope, "t"), middle.path).unlink()

    assert rows(spark, f"SELECT count(*) FROM {table} WHERE id < 50 OR id >= 250") == [(100,)]
    assert rows(spark, f"SELECT min(id) FROM {table} WHERE id > 199 AND name IS NOT NULL") == [(200,)]
    assert rows(spark, f"SELECT count(*) FROM {table} WHERE id IN (3, 250)") == [(2,)]
    assert rows(spark, f"SELECT count(*) FROM {table} WHERE day < DATE'2024-02-01'") == [(31,)]
    assert rows(spark, f"SELECT count(*) FROM {table} WHERE name = 'k7'") == [(1,)]
    with pytest.raises(Exception, match=r"No such file|FileNotFound|not found|does not exist"):
        spark.sql(f"SELECT count(*) FROM {table} WHERE id >= 150").collect()


def test_insert_overwrite_replaces_and_time_travel_sees_the_past(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id INT)")
    spark.sql(f"INSERT INTO {table} VALUES (1), (2)")
    time.sleep(0.05)
    between = CatalogClient(spark_server).commits(scope, "t")[0]["timestamp"] + 20
    time.sleep(0.05)
    spark.sql(f"INSERT INTO {table} VALUES (3)")
    spark.sql(f"INSERT OVERWRITE {table} VALUES (7), (8)")

    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(7,), (8,)]
    assert rows(spark, f"SELECT id FROM {table} VERSION AS OF 1 ORDER BY id") == [(1,), (2,)]
    assert rows(spark, f"SELECT id FROM {table} VERSION AS OF 2 ORDER BY id") == [(1,), (2,), (3,)]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(between / 1000.0)) + f".{between % 1000:03d}"
    assert rows(spark, f"SELECT id FROM {table} TIMESTAMP AS OF '{stamp}' ORDER BY id") == [(1,), (2,)]
    assert rows(spark, f"SELECT count(*) FROM {table} VERSION AS OF 3") == [(2,)]
    overwrite = CatalogClient(spark_server).commits(scope, "t")[-1]
    assert overwrite["overwrite"] is True
    with pytest.raises(Exception, match=r"VERSION AS OF .abc. of .*: a version is a commit number"):
        spark.sql(f"SELECT * FROM {table} VERSION AS OF 'abc'").collect()


def test_create_table_as_select_and_replace(spark: Any, scope: str) -> None:
    source = f"streamcat.{scope}.src"
    spark.sql(f"CREATE TABLE {source} (id INT, name STRING)")
    spark.sql(f"INSERT INTO {source} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"CREATE TABLE streamcat.{scope}.copy USING json AS "
              f"SELECT id * 10 AS id, name FROM {source} WHERE id > 1")
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.copy ORDER BY id") == [(20, "b"), (30, "c")]
    assert describe(spark, f"TABLE EXTENDED streamcat.{scope}.copy")["Provider"] == "json"

    spark.sql(f"CREATE OR REPLACE TABLE streamcat.{scope}.copy AS SELECT name FROM {source} WHERE id = 1")
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.copy") == [("a",)]


def test_dataframe_write_to_append_overwrite_and_create(spark: Any, spark_server: str, scope: str) -> None:
    from pyspark.sql.functions import lit

    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, label STRING)")
    frame = spark.createDataFrame([(1, "x"), (2, "y")], "id long, label string")
    frame.writeTo(table).append()
    frame.writeTo(table).append()
    assert rows(spark, f"SELECT id, count(*) FROM {table} GROUP BY id ORDER BY id") == [(1, 2), (2, 2)]

    spark.createDataFrame([(9, "z")], "id long, label string").writeTo(table).overwrite(lit(True))
    assert rows(spark, f"SELECT * FROM {table}") == [(9, "z")]

    spark.createDataFrame([(5, "c")], "id long, label string").writeTo(f"streamcat.{scope}.made").using(
        "json").create()
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.made") == [(5, "c")]
    assert describe(spark, f"TABLE EXTENDED streamcat.{scope}.made")["Provider"] == "json"

    spark.range(1000).selectExpr("id", "CAST(id AS STRING) AS label").repartition(2).writeTo(
        f"streamcat.{scope}.made").option("rowsPerChunk", "100").append()
    assert rows(spark, f"SELECT count(*), sum(id) FROM streamcat.{scope}.made") == [(1001, 499505)]
    _create, insert = CatalogClient(spark_server).commits(scope, "made")
    assert insert["chunkCount"] >= 10  # one commit, however many files the tasks wrote

    frame.write.mode("append").saveAsTable(table)
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(3,)]
    assert [tuple(r) for r in spark.read.table(table).where("id = 1").collect()] == [(1, "x")]


def test_a_failed_write_commits_nothing_and_leaves_no_files(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT)")
    files = location(spark_server, scope, "t")
    # The task fails after it wrote its first chunk file: it removes the file itself.
    failing = spark.range(0, 200, 1, 1).selectExpr("CAST(IF(id = 150, raise_error('boom'), id) AS BIGINT) AS id")
    with pytest.raises(Exception, match="boom"):
        failing.writeTo(table).option("rowsPerChunk", "50").append()
    # Every task succeeds but the catalog refuses the commit (a sealed stream): the driver aborts,
    # which deletes the files of all tasks.
    catalog = CatalogClient(spark_server)
    catalog.seal_stream(scope, "t")
    with pytest.raises(Exception, match="sealed"):
        spark.range(0, 100, 1, 2).writeTo(table).append()
    assert catalog.commits(scope, "t") == []
    assert table_files(files) == set()
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(0,)]


def test_an_insert_of_no_rows_commits_nothing(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT)")
    spark.sql(f"INSERT INTO {table} SELECT id FROM range(5) WHERE id < 0")
    assert CatalogClient(spark_server).commits(scope, "t") == []


def test_the_source_reads_tables_without_the_catalog(spark: Any, spark_server: str, scope: str) -> None:
    spark.sql(f"CREATE TABLE streamcat.{scope}.t (id INT, name STRING)")
    spark.sql(f"INSERT INTO streamcat.{scope}.t VALUES (1, 'a'), (2, 'b')")
    frame = (spark.read.format("streamcat").option("uri", spark_server).option("scope", scope)
             .option("table", "t").option("versionAsOf", "1").load())
    assert sorted(tuple(r) for r in frame.collect()) == [(1, "a"), (2, "b")]
