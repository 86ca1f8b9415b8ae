"""Primary-key tables, change feeds, metadata-only deletes and the catalog's procedures, in spark-sql."""

from __future__ import annotations

import time
from typing import Any

import pytest

from catalog_api.client import CatalogClient
from registry.client import RegistryClient
from tests.spark.helpers import rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def _commits(server: str, scope: str, table: str, after: int = 0) -> list[dict[str, Any]]:
    return CatalogClient(server).commits(scope, table, after=after)


def test_primary_key_declared_shown_and_kept(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.orders"
    spark.sql(f"CREATE TABLE {table} (region STRING NOT NULL, id BIGINT NOT NULL, qty INT, "
              f"CONSTRAINT orders_pk PRIMARY KEY (region, id)) USING avro")
    shown = rows(spark, f"SHOW CREATE TABLE {table}")[0][0]
    assert "CONSTRAINT orders_pk PRIMARY KEY (region, id)" in shown
    extended = {r[0]: r[1] for r in rows(spark, f"DESCRIBE TABLE EXTENDED {table}")}
    assert extended["orders_pk"].startswith("PRIMARY KEY (region, id)")
    answer = CatalogClient(spark_server).get_table(scope, "orders")
    assert answer["primaryKey"] == ["region", "id"]
    group = RegistryClient(spark_server, scope).get_group("orders")
    assert group.properties["streamcat.primary-key"] == "region,id"

    spark.sql(f"CREATE TABLE streamcat.{scope}.by_property (id BIGINT, v STRING) USING avro "
              "TBLPROPERTIES ('primary-key' = 'id')")
    assert CatalogClient(spark_server).get_table(scope, "by_property")["primaryKey"] == ["id"]

    with pytest.raises(Exception, match="id"):
        spark.sql(f"ALTER TABLE {table} DROP COLUMN id")
    with pytest.raises(Exception, match="region"):
        spark.sql(f"ALTER TABLE {table} ALTER COLUMN region DROP NOT NULL")
    with pytest.raises(Exception, match="primary-key"):
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('primary-key' = 'id')")
    with pytest.raises(Exception, match=r"UNIQUE|PRIMARY KEY"):
        spark.sql(f"CREATE TABLE streamcat.{scope}.u (id BIGINT, CONSTRAINT u1 UNIQUE (id)) USING avro")
    with pytest.raises(Exception, match="nope"):
        spark.sql(f"CREATE TABLE streamcat.{scope}.bad (id BIGINT) USING avro TBLPROPERTIES ('primary-key' = 'nope')")


def test_insert_upserts_and_every_cut_reads_one_row_per_key(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT NOT NULL, v STRING, CONSTRAINT t_pk PRIMARY KEY (id)) USING avro")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {table} VALUES (2, 'B'), (3, 'c')")
    time.sleep(0.01)
    stamp = rows(spark, "SELECT current_timestamp()")[0][0]
    time.sleep(0.01)
    spark.sql(f"DELETE FROM {table} WHERE id = 1")

    assert rows(spark, f"SELECT * FROM {table} ORDER BY id") == [(2, "B"), (3, "c")]
    assert rows(spark, f"SELECT * FROM {table} VERSION AS OF 1 ORDER BY id") == [(1, "a"), (2, "b")]
    assert rows(spark, f"SELECT * FROM {table} VERSION AS OF 2 ORDER BY id") == [(1, "a"), (2, "B"), (3, "c")]
    assert rows(spark, f"SELECT * FROM {table} TIMESTAMP AS OF '{stamp}' ORDER BY id") == [
        (1, "a"), (2, "B"), (3, "c")]
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(2,)]


def test_merge_engine_partial_update_and_sequence_field(spark: Any, scope: str) -> None:
    partial = f"streamcat.{scope}.p"
    spark.sql(f"CREATE TABLE {partial} (id BIGINT NOT NULL, a STRING, b STRING) USING avro "
              "TBLPROPERTIES ('primary-key' = 'id', 'merge-engine' = 'partial-update')")
    spark.sql(f"INSERT INTO {partial} VALUES (1, 'a1', NULL), (2, 'a2', 'b2')")
    spark.sql(f"INSERT INTO {partial} VALUES (1, NULL, 'b1'), (2, NULL, NULL)")
    assert rows(spark, f"SELECT * FROM {partial} ORDER BY id") == [(1, "a1", "b1"), (2, "a2", "b2")]

    ordered = f"streamcat.{scope}.s"
    spark.sql(f"CREATE TABLE {ordered} (id BIGINT NOT NULL, ts BIGINT, v STRING) USING avro "
              "TBLPROPERTIES ('primary-key' = 'id', 'sequence.field' = 'ts')")
    # One commit, two changes of key 1: the larger sequence value wins whatever the order of writing.
    spark.sql(f"INSERT INTO {ordered} VALUES (1, 20, 'late'), (1, 10, 'early'), (2, 5, 'x')")
    assert rows(spark, f"SELECT id, v FROM {ordered} ORDER BY id") == [(1, "late"), (2, "x")]


def test_change_feed_in_sql_and_dataframes(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT NOT NULL, v STRING, CONSTRAINT t_pk PRIMARY KEY (id)) USING avro")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")        # 1
    spark.sql(f"UPDATE {table} SET v = 'B' WHERE id = 2")              # 2
    spark.sql(f"DELETE FROM {table} WHERE id = 1")                     # 3
    spark.sql(f"INSERT INTO {table} VALUES (3, 'c')")                  # 4

    feed = rows(spark, f"SELECT id, v, _change_type, _commit_version FROM {table} "
                       "CHANGES FROM VERSION 1 TO VERSION 4 ORDER BY _commit_version, id, _change_type")
    assert feed == [
        (1, "a", "insert", 1), (2, "b", "insert", 1),
        (2, "B", "update_postimage", 2), (2, "b", "update_preimage", 2),
        (1, "a", "delete", 3),
        (3, "c", "insert", 4),
    ]
    stamps = rows(spark, f"SELECT DISTINCT _commit_version, _commit_timestamp FROM {table} "
                         "CHANGES FROM VERSION 1 ORDER BY 1")
    assert [s[1] for s in stamps] == sorted({s[1] for s in stamps}), "commit timestamps strictly increase"
    commits = {c["number"]: c["createdAt"] for c in _commits(spark_server, scope, "t")}
    assert [int(s[1].timestamp() * 1000 + 0.5) for s in stamps] == [commits[n] for n, _ in stamps]

    exclusive = spark.read.option("startingVersion", "2").option("endingVersion", "3") \
        .option("startingBoundInclusive", "false").changes(table)
    assert sorted((r.id, r._change_type) for r in exclusive.collect()) == [(1, "delete")]

    # TIMESTAMP bounds are the commit times VERSION AS OF / TIMESTAMP AS OF use.
    second = stamps[1][1]
    by_time = rows(spark, f"SELECT _commit_version FROM {table} CHANGES FROM TIMESTAMP '{second}' "
                          f"TO TIMESTAMP '{stamps[2][1]}'")
    assert sorted({r[0] for r in by_time}) == [2, 3]


def test_streaming_change_feed(spark: Any, scope: str, tmp_path: Any) -> None:
    """A streaming query over the change feed sees each commit's changes once, across restarts."""
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT NOT NULL, v STRING, CONSTRAINT t_pk PRIMARY KEY (id)) USING avro")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    seen: list[tuple[Any, ...]] = []

    def run() -> None:
        query = (spark.readStream.option("startingVersion", "1").changes(table).writeStream
                 .foreachBatch(lambda batch, _id: seen.extend(
                     tuple(r) for r in batch.select("id", "v", "_change_type", "_commit_version").collect()))
                 .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
        query.awaitTermination(300)

    run()
    assert sorted(seen) == [(1, "a", "insert", 1), (2, "b", "insert", 1)]
    spark.sql(f"UPDATE {table} SET v = 'A' WHERE id = 1")
    seen.clear()
    run()  # restarted from its checkpoint: only what came since
    assert sorted(seen) == [(1, "A", "update_postimage", 2), (1, "a", "update_preimage", 2)]


def test_delete_of_whole_chunks_rewrites_nothing(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.events"
    spark.sql(f"CREATE TABLE {table} (day INT, n BIGINT) USING avro")
    for day in (1, 2, 3):
        spark.sql(f"INSERT INTO {table} SELECT {day}, id FROM range(100)")
    before = _commits(spark_server, scope, "events")[-1]["number"]
    spark.sql(f"DELETE FROM {table} WHERE day <= 2")
    commit = _commits(spark_server, scope, "events", after=before)
    assert len(commit) == 1
    assert commit[0]["chunkCount"] == 0, "a metadata-only delete writes no file"
    assert commit[0]["kind"] == "row-level"
    assert rows(spark, f"SELECT day, count(*) FROM {table} GROUP BY day") == [(3, 100)]
    assert rows(spark, f"SELECT count(*) FROM {table} VERSION AS OF {before}") == [(300,)]

    spark.sql(f"DELETE FROM {table} WHERE n < 10")  # part of a chunk: the row-level path
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(90,)]


def test_compact_and_expire_snapshots_procedures(spark: Any, spark_server: str, scope: str) -> None:
    table = f"streamcat.{scope}.t"
    spark.sql(f"CREATE TABLE {table} (id BIGINT NOT NULL, v BIGINT, CONSTRAINT t_pk PRIMARY KEY (id)) USING avro")
    for round_ in range(4):
        spark.sql(f"INSERT INTO {table} SELECT id, id * {round_} FROM range({round_ * 50}, {round_ * 50 + 200})")
    spark.sql(f"DELETE FROM {table} WHERE id % 5 = 0")
    expected = rows(spark, f"SELECT * FROM {table} ORDER BY id")
    feed = rows(spark, f"SELECT * FROM {table} CHANGES FROM VERSION 1 ORDER BY _commit_version, id, _change_type")

    result = rows(spark, f"CALL streamcat.system.compact(table => '{scope}.t')")
    assert result[0][:3] == (f"{scope}.t", 5, 6), "compacted at cut 5 in commit 6"
    assert rows(spark, f"SELECT * FROM {table} ORDER BY id") == expected
    assert rows(spark, f"SELECT * FROM {table} CHANGES FROM VERSION 1 ORDER BY _commit_version, id, _change_type") \
        == feed, "change feeds skip the compaction"
    _cut, chunks = CatalogClient(spark_server).snapshot(scope, "t")
    assert [c.kind for c in chunks] == ["columnar"]
    # nothing left to compact: no commit
    assert rows(spark, f"CALL streamcat.system.compact(table => '{scope}.t')")[0][2] is None

    retained = rows(spark, f"CALL streamcat.system.expire_snapshots(table => '{scope}.t', "
                            "older_than => current_timestamp(), retain_last => 1)")
    assert retained == [(f"{scope}.t", 6)]
    with pytest.raises(Exception, match="expired"):
        spark.sql(f"SELECT * FROM {table} VERSION AS OF 2").collect()
    assert rows(spark, f"SELECT * FROM {table} ORDER BY id") == expected


def test_the_change_feed_of_an_append_table(spark: Any, scope: str) -> None:
    """No key to net changes by: the feed is the inserts and the deletes DML made, an UPDATE both."""
    table = f"streamcat.{scope}.events"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, v STRING) USING avro")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"INSERT INTO {table} VALUES (4, 'd')")
    spark.sql(f"DELETE FROM {table} WHERE id = 1")
    spark.sql(f"UPDATE {table} SET v = 'B' WHERE id = 2")
    feed = rows(spark, f"SELECT id, v, _change_type, _commit_version FROM {table} CHANGES FROM VERSION 1 "
                       "ORDER BY _commit_version, id, _change_type")
    assert feed == [(1, "a", "insert", 1), (2, "b", "insert", 1), (3, "c", "insert", 1), (4, "d", "insert", 2),
                    (1, "a", "delete", 3), (2, "b", "delete", 4), (2, "B", "insert", 4)]
    assert rows(spark, f"SELECT id, _change_type FROM {table} CHANGES FROM VERSION 3 TO VERSION 3") == [(1, "delete")]
