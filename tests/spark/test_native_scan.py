"""The native columnar path: scans that need no merge read the chunk files with Spark's own Parquet
scan (NativeScan in the Java shim); everything else keeps the Python data source, and both give the
same rows."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from catalog_api.client import CatalogClient
from catalog_api.streams import StreamWriter
from registry.client import RegistryClient
from registry.serde import Serializer
from tests.spark.helpers import catalog_beside, executed_plan, rows, scans_natively

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

#: A second catalog on the same server with the native path turned off (the Python source always).
PYTHON = "streamcat_python"


@pytest.fixture
def python_catalog(spark: Any, spark_server: str) -> str:
    """The catalog ``streamcat_python``: the same server, ``native-scan=false``."""
    return catalog_beside(spark, PYTHON, **{"native-scan": "false"})


def _both(spark: Any, query: str, table: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The rows of ``query`` (naming ``{t}``) through the native catalog and through the Python one."""
    native = rows(spark, query.format(t=f"streamcat.{table}"))
    python = rows(spark, query.format(t=f"{PYTHON}.{table}"))
    return native, python


def test_append_and_compacted_tables_scan_natively(spark: Any, scope: str, python_catalog: str) -> None:
    table = f"streamcat.{scope}.a"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, name STRING) USING avro")
    spark.sql(f"INSERT INTO {table} SELECT id, CAST(id AS STRING) FROM range(100)")
    spark.sql(f"INSERT INTO {table} SELECT id, 'x' FROM range(100, 150)")
    assert scans_natively(spark, f"SELECT * FROM {table}")
    assert scans_natively(spark, f"SELECT count(*) FROM {table}")
    assert not scans_natively(spark, f"SELECT * FROM {python_catalog}.{scope}.a"), "native-scan=false: the Python scan"
    off = spark.read.option("streamcat.nativeScan", "false").table(table)
    assert "ParquetScan" not in str(off._jdf.queryExecution().executedPlan().toString()), "the read option"
    assert rows(spark, f"SELECT count(*), sum(id) FROM {table}") == [(150, sum(range(150)))]

    keyed = f"streamcat.{scope}.k"
    spark.sql(f"CREATE TABLE {keyed} (id BIGINT NOT NULL, v BIGINT, CONSTRAINT k_pk PRIMARY KEY (id)) USING avro")
    spark.sql(f"INSERT INTO {keyed} SELECT id, id FROM range(100)")
    assert not scans_natively(spark, f"SELECT * FROM {keyed}"), "a primary-key table's appends need the merge"
    spark.sql(f"INSERT INTO {keyed} SELECT id, -id FROM range(50, 150)")
    assert not scans_natively(spark, f"SELECT * FROM {keyed}")
    expected = rows(spark, f"SELECT * FROM {keyed} ORDER BY id")
    spark.sql(f"CALL streamcat.system.compact(table => '{scope}.k')")
    assert scans_natively(spark, f"SELECT * FROM {keyed}"), "one compaction's output needs no merge"
    assert rows(spark, f"SELECT * FROM {keyed} ORDER BY id") == expected
    assert not scans_natively(spark, f"SELECT * FROM {keyed} CHANGES FROM VERSION 1"), "a change feed"
    spark.sql(f"INSERT INTO {keyed} VALUES (1, 1000)")
    assert not scans_natively(spark, f"SELECT * FROM {keyed}"), "a change after the compaction needs the merge"
    assert rows(spark, f"SELECT v FROM {keyed} WHERE id = 1") == [(1000,)]


def test_deletes_events_metadata_columns_and_change_feeds_keep_the_python_scan(
    spark: Any, spark_server: str, scope: str
) -> None:
    table = f"streamcat.{scope}.d"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, v BIGINT) USING avro")
    spark.sql(f"INSERT INTO {table} SELECT id, id FROM range(100)")
    assert scans_natively(spark, f"SELECT * FROM {table}")
    assert not scans_natively(spark, f"SELECT id, _chunk, _pos FROM {table}"), "metadata columns"
    spark.sql(f"DELETE FROM {table} WHERE id = 7")  # part of a chunk: position deletes
    assert not scans_natively(spark, f"SELECT * FROM {table}"), "position deletes"
    assert scans_natively(spark, f"SELECT * FROM {table} VERSION AS OF 1"), "time travel to before the deletes"
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(99,)]
    assert rows(spark, f"SELECT count(*) FROM {table} VERSION AS OF 1") == [(100,)]

    spark.sql(f"CREATE TABLE streamcat.{scope}.e (id BIGINT, v BIGINT) USING avro")
    spark.sql(f"INSERT INTO streamcat.{scope}.e VALUES (1, 1)")
    assert scans_natively(spark, f"SELECT * FROM streamcat.{scope}.e")
    registry = RegistryClient(spark_server, scope)
    [latest] = registry.latest_schemas("e")
    serializer = Serializer(registry, "e", latest.schema, register=False)
    with StreamWriter(CatalogClient(spark_server), registry, scope, "e", serializer=serializer) as writer:
        writer.write({"id": 2, "v": 2})
        writer.flush()
    assert not scans_natively(spark, f"SELECT * FROM streamcat.{scope}.e"), "event chunks"
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.e ORDER BY id") == [(1, 1), (2, 2)]


def test_same_rows_on_both_paths_across_schema_evolution_and_time_travel(
    spark: Any, scope: str, python_catalog: str
) -> None:
    name = f"{scope}.evolving"
    table = f"streamcat.{name}"
    spark.sql(f"""CREATE TABLE {table} (id BIGINT, name STRING, amount DECIMAL(10, 2), ts TIMESTAMP,
                  day DATE, tags ARRAY<STRING>, point STRUCT<x: INT, y: INT>) USING avro""")
    spark.sql(f"""INSERT INTO {table} SELECT id, IF(id % 7 = 0, NULL, CONCAT('n', id)),
                  CAST(id / 4 AS DECIMAL(10, 2)), TIMESTAMP '2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id),
                  DATE '2026-01-01' + CAST(id AS INT), array(CAST(id AS STRING), NULL),
                  named_struct('x', CAST(id AS INT), 'y', 1) FROM range(500)""")
    spark.sql(f"INSERT INTO {table} VALUES (1000, 'late', 1.5, NULL, NULL, NULL, NULL)")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN extra BIGINT")
    spark.sql(
        f"INSERT INTO {table} SELECT id, 'new', 2.25, NULL, DATE '2027-01-01', array('z'), "
        f"named_struct('x', 1, 'y', 2), id * 10 FROM range(2000, 2300)"
    )
    queries = [
        "SELECT * FROM {t} ORDER BY id",
        "SELECT id, extra FROM {t} WHERE extra IS NULL ORDER BY id",
        "SELECT count(*), sum(extra), min(ts), max(day) FROM {t}",
        "SELECT name, count(*) FROM {t} WHERE id BETWEEN 10 AND 2100 GROUP BY name ORDER BY name NULLS FIRST",
        "SELECT point.x, tags FROM {t} WHERE amount > 100 ORDER BY id",
        "SELECT * FROM {t} VERSION AS OF 1 ORDER BY id",
        "SELECT id, extra FROM {t} VERSION AS OF 2 WHERE id > 400 ORDER BY id",
    ]
    for query in queries:
        assert scans_natively(spark, query.format(t=table)), query
        assert not scans_natively(spark, query.format(t=f"{python_catalog}.{name}")), query
        native, python = _both(spark, query, name)
        assert native == python, query
    everything = rows(spark, f"SELECT * FROM {table} ORDER BY id")
    assert len(everything) == 801
    assert everything[0][:5] == (0, None, Decimal("0.00"), dt.datetime(2026, 1, 1), dt.date(2026, 1, 1))
    assert everything[0][-1] is None, "older files lack the new column: null"
    assert everything[-1][-1] == 22990
    assert rows(spark, f"SELECT count(*) FROM {table} VERSION AS OF 1") == [(500,)]


def test_a_chunk_whose_column_type_differs_falls_back(spark: Any, scope: str, python_catalog: str) -> None:
    table = f"streamcat.{scope}.w"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, n INT) USING avro")
    spark.sql(f"INSERT INTO {table} SELECT id, CAST(id AS INT) FROM range(10)")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN n TYPE BIGINT")
    assert not scans_natively(spark, f"SELECT * FROM {table}"), "an int32 file under a BIGINT column: the Python scan"
    assert rows(spark, f"SELECT sum(n) FROM {table}") == [(45,)]
    spark.sql(f"INSERT OVERWRITE {table} SELECT id, id FROM range(10)")
    assert scans_natively(spark, f"SELECT * FROM {table}"), "every visible file now has the new type"
    native, python = _both(spark, "SELECT * FROM {t} ORDER BY id", f"{scope}.w")
    assert native == python


def _rows_scanned(spark: Any, query: str) -> int:
    """How many rows the scan node of ``query`` produced (before Spark's own filter), once run."""
    df = spark.sql(query)
    df.collect()
    found: list[int] = []

    def walk(node: Any) -> None:
        if "BatchScan" in node.nodeName():
            found.append(int(node.metrics().apply("numOutputRows").value()))
        if node.nodeName() == "AdaptiveSparkPlan":
            walk(node.executedPlan())
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().executedPlan())
    assert len(found) == 1
    return found[0]


def test_filters_still_skip_work(spark: Any, scope: str) -> None:
    table = f"streamcat.{scope}.f"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, v STRING) USING avro")
    for start in range(0, 40_000, 10_000):
        spark.sql(f"INSERT INTO {table} SELECT id, CAST(id AS STRING) FROM range({start}, {start + 10_000})")
    query = f"SELECT * FROM {table} WHERE id BETWEEN 12000 AND 12010"
    plan = executed_plan(spark, query)
    assert "ParquetScan" in plan, plan
    assert "PushedFilters: [IsNotNull(id), GreaterThanOrEqual(id,12000)" in plan, plan
    assert rows(spark, f"SELECT count(*) FROM ({query})") == [(11,)]
    scanned = _rows_scanned(spark, query)
    assert 11 <= scanned <= 10_000, f"the row groups of the other chunks are skipped by their statistics ({scanned})"


def test_many_chunk_files_in_one_commit(spark: Any, scope: str, python_catalog: str) -> None:
    table = f"streamcat.{scope}.many"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, v DOUBLE) USING avro")
    spark.range(4000).selectExpr("id", "id / 3 AS v").repartition(40).writeTo(table).append()
    plan = executed_plan(spark, f"SELECT * FROM {table}")
    assert "ParquetScan" in plan, plan
    native, python = _both(spark, "SELECT * FROM {t} ORDER BY id", f"{scope}.many")
    assert native == python  # (a sum of doubles would differ in its last bits: another order of addition)
    assert [r[0] for r in native] == list(range(4000))
