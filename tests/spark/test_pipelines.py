"""Spark Declarative Pipelines (``spark-pipelines``) on the Streamcat catalog: a streaming table fed by a
Streamcat table, a materialized view over it, and an AUTO CDC flow (MERGE by key) into a streaming table,
created and refreshed as Streamcat tables."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from catalog_api.client import CatalogClient
from catalog_api.server.cli_spark import spark_conf
from spark_plugin.build import pyspark_home
from tests.spark.helpers import rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

STREAMING_TABLE = '''
from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

spark = SparkSession.active()


@dp.table
def orders_feed() -> DataFrame:
    return spark.readStream.table("streamcat.{scope}.orders")
'''
AUTO_CDC = '''
from pyspark import pipelines as dp
from pyspark.sql import SparkSession

spark = SparkSession.active()

# Not a primary-key table: AUTO CDC's output declares its keys nullable and SDP merges that into the
# table's schema before every run, which a Streamcat key (never null) refuses. It MERGEs by key all the same.
dp.create_streaming_table("current_orders")
dp.create_auto_cdc_flow(target="current_orders", source="order_changes_feed", keys=["id"], sequence_by="seq",
                        apply_as_deletes="op = 'D'", except_column_list=["op", "seq"])


@dp.temporary_view
def order_changes_feed():
    return spark.readStream.table("streamcat.{scope}.order_changes")
'''
MATERIALIZED_VIEW = "CREATE MATERIALIZED VIEW revenue AS SELECT item, sum(qty) AS qty FROM orders_feed GROUP BY item\n"


def _project(root: Path, scope: str) -> Path:
    """A two-dataset pipeline project whose spec names the Streamcat catalog and the scope."""
    project = root / "shop"
    (project / "transformations").mkdir(parents=True)
    (project / "spark-pipeline.yml").write_text(textwrap.dedent(f"""\
        name: shop
        storage: file://{project / "storage"}
        catalog: streamcat
        database: {scope}
        libraries:
          - glob:
              include: transformations/**
        """))
    (project / "transformations" / "orders_feed.py").write_text(STREAMING_TABLE.format(scope=scope))
    (project / "transformations" / "revenue.sql").write_text(MATERIALIZED_VIEW)
    (project / "transformations" / "current_orders.py").write_text(AUTO_CDC.format(scope=scope))
    return project


def _run(project: Path, flags: list[str]) -> None:
    # spark-pipelines starts a local Spark Connect server in a JVM of its own: it takes the catalog's jar
    # and configuration from PYSPARK_SUBMIT_ARGS, the pipeline's client from the command line.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.update(SPARK_HOME=str(pyspark_home()), PYSPARK_SUBMIT_ARGS=shlex.join([*flags, "pyspark-shell"]),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([str(Path(sys.executable).with_name("spark-pipelines")), *flags, "run"], cwd=project,
                          env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert "Run is COMPLETED" in done.stdout + done.stderr


def test_a_declarative_pipeline_runs_twice_against_the_catalog(spark: Any, spark_server: str, scope: str,
                                                               tmp_path: Path) -> None:
    printed = CliRunner().invoke(spark_conf, ["--uri", spark_server])
    assert printed.exit_code == 0, printed.output
    flags = shlex.split(printed.output)
    orders = f"streamcat.{scope}.orders"
    spark.sql(f"CREATE TABLE {orders} (id BIGINT, item STRING, qty INT) USING avro")
    spark.sql(f"INSERT INTO {orders} VALUES (1, 'apple', 3), (2, 'pear', 1), (3, 'apple', 4)")
    changes = f"streamcat.{scope}.order_changes"
    spark.sql(f"CREATE TABLE {changes} (id BIGINT, item STRING, qty INT, seq BIGINT, op STRING) USING avro")
    spark.sql(f"INSERT INTO {changes} VALUES (1, 'a', 1, 1, 'U'), (2, 'b', 2, 2, 'U'), (1, 'a', 5, 3, 'U'), "
              "(2, NULL, NULL, 4, 'D'), (3, 'c', 3, 5, 'U')")
    project = _project(tmp_path, scope)
    expected = f"SELECT item, sum(qty) FROM {orders} GROUP BY item ORDER BY item"
    # AUTO CDC's meaning (SCD type 1): per key, the change with the highest sequence, unless it is a delete
    latest = (f"SELECT id, item, qty FROM (SELECT *, row_number() OVER (PARTITION BY id ORDER BY seq DESC) AS n "
              f"FROM {changes}) WHERE n = 1 AND op != 'D' ORDER BY id")
    current = f"SELECT id, item, qty FROM streamcat.{scope}.current_orders ORDER BY id"

    _run(project, flags)
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.revenue ORDER BY item") == rows(spark, expected)
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.orders_feed ORDER BY id") == rows(
        spark, f"SELECT * FROM {orders} ORDER BY id")
    assert rows(spark, current) == rows(spark, latest) == [(1, "a", 5), (3, "c", 3)]

    spark.sql(f"INSERT INTO {orders} VALUES (4, 'plum', 2), (5, 'pear', 5)")
    # out of order within the batch: the sequence decides, not the arrival
    spark.sql(f"INSERT INTO {changes} VALUES (3, NULL, NULL, 7, 'D'), (3, 'c', 9, 6, 'U'), (2, 'B', 8, 8, 'U'), "
              "(4, 'd', 4, 9, 'U')")
    _run(project, flags)
    assert rows(spark, current) == rows(spark, latest) == [(1, "a", 5), (2, "B", 8), (4, "d", 4)]
    # the streaming table took only the new rows (no duplicates), the materialized view was recomputed
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.orders_feed ORDER BY id") == rows(
        spark, f"SELECT * FROM {orders} ORDER BY id")
    assert rows(spark, f"SELECT * FROM streamcat.{scope}.revenue ORDER BY item") == rows(spark, expected) == [
        ("apple", 7), ("pear", 6), ("plum", 2)]
    # both datasets are Streamcat tables: in the catalog, each with its registry group
    catalog = CatalogClient(spark_server)
    assert {t["tableName"] for t in catalog.list_tables(scope)} >= {"orders", "orders_feed", "revenue",
                                                                     "current_orders"}
    # each run's AUTO CDC batch is one row-level MERGE commit
    assert [(c["kind"], c["properties"].get("streamcat.operation")) for c in catalog.commits(scope, "current_orders")] \
        == [("row-level", "merge")] * 2
