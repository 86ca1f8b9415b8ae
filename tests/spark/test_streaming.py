"""Structured Streaming: offsets are commit numbers; a sink commits each micro-batch exactly once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from catalog_api.client import CatalogClient
from tests.spark.helpers import forget_batch, rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def run_available_now(spark: Any, source: Any, name: str, checkpoint: Path) -> Any:
    """Drain a streaming DataFrame into the memory table ``name``; returns the finished query."""
    query = (source.writeStream.format("memory").queryName(name).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    return query


def test_read_limits_split_the_backlog_into_micro_batches(spark: Any, scope: str, tmp_path: Path) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id INT)")
    for i in range(4):
        spark.sql(f"INSERT INTO {table} VALUES ({2 * i}), ({2 * i + 1})")

    by_commit = run_available_now(spark, spark.readStream.option("maxCommitsPerTrigger", "1").table(table),
                                  f"{scope}_one", tmp_path / "one")
    assert [p["numInputRows"] for p in by_commit.recentProgress if p["numInputRows"]] == [2, 2, 2, 2]
    assert rows(spark, f"SELECT count(DISTINCT id) FROM {scope}_one") == [(8,)]

    by_rows = run_available_now(spark, spark.readStream.option("maxRowsPerTrigger", "4").table(table),
                                f"{scope}_rows", tmp_path / "rows")
    assert [p["numInputRows"] for p in by_rows.recentProgress if p["numInputRows"]] == [4, 4]


def test_starting_commit_skips_what_came_before(spark: Any, scope: str, tmp_path: Path) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id INT)")
    for i in range(3):
        spark.sql(f"INSERT INTO {table} VALUES ({i})")
    run_available_now(spark, spark.readStream.option("startingCommit", "2").table(table), f"{scope}_from2",
                      tmp_path / "from2")
    assert rows(spark, f"SELECT id FROM {scope}_from2 ORDER BY id") == [(1,), (2,)]

    latest = (spark.readStream.option("startingCommit", "latest").table(table).writeStream.format("memory")
              .queryName(f"{scope}_latest").option("checkpointLocation", str(tmp_path / "latest")).start())
    try:
        latest.processAllAvailable()
        spark.sql(f"INSERT INTO {table} VALUES (9)")
        latest.processAllAvailable()
        assert rows(spark, f"SELECT id FROM {scope}_latest") == [(9,)]
    finally:
        latest.stop()


def test_a_restarted_streaming_write_neither_duplicates_nor_skips(spark: Any, spark_server: str, scope: str,
                                                                  tmp_path: Path) -> None:
    source, sink = f"streamcat.{scope}.source", f"streamcat.{scope}.sink"
    spark.sql(f"CREATE TABLE {source} (id BIGINT)")
    spark.sql(f"CREATE TABLE {sink} (id BIGINT)")
    checkpoint = tmp_path / "checkpoint"

    def copy() -> None:
        query = (spark.readStream.option("maxCommitsPerTrigger", "1").table(source).writeStream
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).toTable(sink))
        query.awaitTermination()
        assert query.exception() is None

    for i in range(3):
        spark.sql(f"INSERT INTO {source} SELECT id FROM range({10 * i}, {10 * i + 10})")
    copy()
    # Crash after the sink's catalog commit, before Spark wrote its commit log: the batch runs again.
    forget_batch(checkpoint, 2)
    spark.sql(f"INSERT INTO {source} SELECT id FROM range(30, 40)")
    copy()

    assert rows(spark, f"SELECT count(*), count(DISTINCT id), min(id), max(id) FROM {sink}") == [(40, 40, 0, 39)]
    commits = CatalogClient(spark_server).commits(scope, "sink")
    assert [c["writerSequence"] for c in commits] == [0, 1, 2, 3]
    assert len({c["writerId"] for c in commits}) == 1
