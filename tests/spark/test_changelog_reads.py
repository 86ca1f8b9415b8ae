"""The Spark source on tables that change: merged reads of primary-key tables at every cut (split into
key ranges), position deletes and the ``_chunk``/``_pos`` columns of append tables, the change feed
(batch and streaming). Commits are made through the Python API and compared with a plain model.

Uses the Spark tests' shared session (tests/spark/conftest.py).
"""

from __future__ import annotations

import datetime as dt
import random
import uuid
from typing import Any

import pyarrow as pa
import pytest

from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.streams.changelog import FEED_COLUMNS, replay
from catalog_api.streams.merge import TableLayout
from catalog_api.streams.row_kinds import DELETE, UPSERT, write_position_deletes
from registry.api.models import VersionInfo as VersionInfoModel
from registry.client import RegistryClient
from tests.streams.helpers import keyed_chunk

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

COLUMNS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                     pa.field("amount", pa.float64())])

Row = dict[str, Any]


class Table:
    """A table made in Spark SQL and written through the Python API."""

    def __init__(self, spark: Any, url: str, scope: str, properties: str = "") -> None:
        self.spark, self.scope = spark, scope
        self.name = f"t{uuid.uuid4().hex[:8]}"
        self.qualified = f"streamcat.{scope}.{self.name}"
        spark.sql(f"CREATE TABLE {self.qualified} (id BIGINT NOT NULL, name STRING, amount DOUBLE) USING avro"
                  + (f" TBLPROPERTIES ({properties})" if properties else ""))
        self.catalog = CatalogClient(url)
        answer = self.catalog.get_table(scope, self.name)
        self.location = answer["stream"]["location"]
        registry = RegistryClient(url, scope)
        self.encoding_id = int(registry.encoding_id(
            self.name, VersionInfoModel.model_validate(answer["schemaVersion"]).to_domain()))

    def chunk(self, rows: list[tuple[int, Row]]) -> Chunk:
        return keyed_chunk(self.location, self.encoding_id, COLUMNS, rows)

    def commit(self, chunks: list[Chunk], **options: Any) -> int:
        return int(self.catalog.commit(self.scope, self.name, chunks, **options)["number"])

    def rows(self, query: str) -> list[Row]:
        return [r.asDict() for r in self.spark.sql(query.format(t=self.qualified)).collect()]


def keyed(rows: list[Row]) -> dict[int, Row]:
    result = {r["id"]: r for r in rows}
    assert len(result) == len(rows), "one row per key"
    return result


def test_a_primary_key_table_reads_its_merged_state_at_every_cut(spark: Any, spark_server: str,
                                                                  scope: str) -> None:
    table = Table(spark, spark_server, scope, "'primary-key' = 'id'")
    rng = random.Random(7)
    state: dict[int, Row] = {}
    states = {}
    for number in range(1, 6):
        rows: list[tuple[int, Row]] = []
        for _ in range(400):
            key = rng.randrange(300)
            if rng.random() < 0.2:
                rows.append((DELETE, {"id": key}))
                state.pop(key, None)
            else:
                row = {"id": key, "name": rng.choice("abc"), "amount": float(rng.randrange(100))}
                rows.append((UPSERT, row))
                state[key] = row
        assert table.commit([table.chunk(rows[:200]), table.chunk(rows[200:])]) == number
        states[number] = dict(state)
    assert keyed(table.rows("SELECT * FROM {t}")) == states[5]
    assert keyed(table.rows("SELECT * FROM {t} VERSION AS OF 2")) == states[2]
    # several key ranges, each merged by its own task
    split = spark.read.option("rowsPerPartition", "500").table(table.qualified)
    assert split.rdd.getNumPartitions() > 1
    assert keyed([r.asDict() for r in split.collect()]) == states[5]
    # a filter on a non-key column sees the merged rows, never an older version of a row
    assert keyed(table.rows("SELECT * FROM {t} WHERE amount >= 50")) == {
        k: r for k, r in states[5].items() if r["amount"] >= 50}
    assert keyed(table.rows("SELECT * FROM {t} WHERE id < 100")) == {k: r for k, r in states[5].items() if k < 100}
    assert table.rows("SELECT count(*) AS n FROM {t}") == [{"n": len(states[5])}]
    assert sorted(r["name"] for r in table.rows("SELECT name FROM {t}")) == sorted(
        r["name"] for r in states[5].values())
    # the change feed of commits 2..5, split into key ranges, replays the state at 1 into the state at 5
    feed = spark.read.option("rowsPerPartition", "500").option("startingVersion", "2") \
        .option("endingVersion", "5").changes(table.qualified)
    assert feed.rdd.getNumPartitions() > 1
    rows_ = [r.asDict() for r in feed.collect()]
    start = pa.Table.from_pylist(list(states[1].values()), schema=COLUMNS)
    replayed = replay(start, pa.Table.from_pylist(rows_).select([*COLUMNS.names, *FEED_COLUMNS]), TableLayout(("id",)))
    assert keyed(replayed.to_pylist()) == states[5]


def test_an_append_table_applies_position_deletes_and_shows_row_positions(spark: Any, spark_server: str,
                                                                          scope: str) -> None:
    table = Table(spark, spark_server, scope)
    first = table.chunk([(UPSERT, {"id": i, "name": f"r{i}"}) for i in range(5)])
    assert table.commit([first]) == 1
    deletes = write_position_deletes(table.location, f"data/{uuid.uuid4().hex}.parquet", [first.path] * 2, [0, 3])
    assert table.commit([deletes], kind="row-level", read_cut=1) == 2
    assert sorted(r["id"] for r in table.rows("SELECT * FROM {t}")) == [1, 2, 4]
    assert sorted(r["id"] for r in table.rows("SELECT * FROM {t} VERSION AS OF 1")) == [0, 1, 2, 3, 4]
    positions = table.rows("SELECT _chunk, _pos, id FROM {t}")
    assert sorted((r["_chunk"], r["_pos"], r["id"]) for r in positions) == [(first.path, i, i) for i in (1, 2, 4)]


def test_the_change_feed_of_a_primary_key_table(spark: Any, spark_server: str, scope: str) -> None:
    table = Table(spark, spark_server, scope, "'primary-key' = 'id'")
    table.commit([table.chunk([(UPSERT, {"id": 1, "name": "a"}), (UPSERT, {"id": 2, "name": "b"})])])
    table.commit([table.chunk([(UPSERT, {"id": 1, "name": "A"}), (DELETE, {"id": 2}), (DELETE, {"id": 9}),
                               (UPSERT, {"id": 3, "name": "c"})])])
    feed = table.spark.read.option("streamcat.changes.from", "2").option("streamcat.changes.to", "2") \
        .table(table.qualified)
    try:  # the catalog's change-feed scan (SQL: CHANGES FROM VERSION 2 TO VERSION 2)
        rows = table.rows("SELECT id, name, _change_type, _commit_version FROM {t} CHANGES FROM VERSION 2 TO VERSION 2")
    except Exception:  # the SQL form needs the catalog's changelog support
        rows = [r.asDict() for r in feed.select("id", "name").collect()]
        pytest.fail(f"no change feed through SQL; the plain read gave {rows}")
    got = sorted((r["_change_type"], r["id"], r["name"], r["_commit_version"]) for r in rows)
    assert got == [("delete", 2, "b", 2), ("insert", 3, "c", 2), ("update_postimage", 1, "A", 2),
                   ("update_preimage", 1, "a", 2)]
    # bounds by time: the commits whose createdAt lies in the range
    times = {int(c["number"]): int(c["createdAt"]) for c in table.catalog.commits(scope, table.name)}
    second = dt.datetime.fromtimestamp(times[2] / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    by_time = [r.asDict() for r in spark.read.option("startingTimestamp", second).changes(table.qualified)
               .select("_commit_version", "_commit_timestamp").collect()]
    assert {r["_commit_version"] for r in by_time} == {2}
    assert {round(r["_commit_timestamp"].replace(tzinfo=dt.UTC).timestamp() * 1000) for r in by_time} == {times[2]}
    first, just_before = (dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
                          for ms in (times[1], times[2] - 1))
    before = spark.read.option("startingTimestamp", first).option("endingTimestamp", just_before) \
        .changes(table.qualified).select("_commit_version").collect()
    before = [r.asDict() for r in before]
    assert {r["_commit_version"] for r in before} == {1}


def run_available_now(spark: Any, source: Any, name: str, checkpoint: Any) -> None:
    """Drain a streaming DataFrame into the memory table ``name``."""
    query = (source.writeStream.format("memory").queryName(name).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None


def test_streams_of_a_primary_key_table(spark: Any, spark_server: str, scope: str, tmp_path: Any) -> None:
    table = Table(spark, spark_server, scope, "'primary-key' = 'id'")
    table.commit([table.chunk([(UPSERT, {"id": 1, "name": "a"}), (UPSERT, {"id": 2, "name": "b"})])])
    table.commit([table.chunk([(UPSERT, {"id": 1, "name": "A"}), (DELETE, {"id": 2})])])
    # compacting changes no row: streams skip it
    table.commit([table.chunk([(UPSERT, {"id": 1, "name": "A"})])], kind="compaction", base_cut=2,
                 removes=[c.path for c in table.catalog.snapshot(scope, table.name)[1]])
    table.commit([table.chunk([(UPSERT, {"id": 3, "name": "c"})])])
    # a plain stream of the table: the rows each commit upserts, in order
    run_available_now(spark, spark.readStream.table(table.qualified), f"{scope}_up", tmp_path / "up")
    assert sorted((r["id"], r["name"]) for r in table.rows(f"SELECT * FROM {scope}_up")) == [
        (1, "A"), (1, "a"), (2, "b"), (3, "c")]
    # the change feed as a stream, from commit 2 on
    feed = spark.readStream.option("startingVersion", "2").changes(table.qualified)
    run_available_now(spark, feed, f"{scope}_feed", tmp_path / "feed")
    got = table.rows(f"SELECT id, name, _change_type, _commit_version FROM {scope}_feed")
    assert sorted((r["_commit_version"], r["_change_type"], r["id"], r["name"]) for r in got) == [
        (2, "delete", 2, "b"), (2, "update_postimage", 1, "A"), (2, "update_preimage", 1, "a"),
        (4, "insert", 3, "c")]
    # a batch feed bounded by versions through the reader API
    batch = spark.read.option("startingVersion", "1").option("endingVersion", "2").changes(table.qualified)
    assert sorted((r["_commit_version"], r["_change_type"], r["id"]) for r in batch.collect()) == [
        (1, "insert", 1), (1, "insert", 2), (2, "delete", 2), (2, "update_postimage", 1),
        (2, "update_preimage", 1)]
