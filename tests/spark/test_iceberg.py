"""Tables written by Spark, read through the Iceberg REST catalog (docs/iceberg.md): pyiceberg and DuckDB
read at each snapshot what Spark reads ``VERSION AS OF`` its commit (and ``TIMESTAMP AS OF`` its time);
DELETE, UPDATE and MERGE are snapshots at once (their position deletes are Iceberg's, their new rows carry
the table's field ids), before any compaction; expired commits leave the snapshot list; a pyiceberg append
is read by Spark at once, natively and through the Python source."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from catalog_api.client import CatalogClient
from tests.iceberg.clients import duck, duck_rows, pyiceberg, rows
from tests.spark.helpers import catalog_beside, scans_natively

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def spark_rows(spark: Any, sql: str) -> list[dict[str, Any]]:
    return sorted((r.asDict() for r in spark.sql(sql).collect()), key=lambda r: r["id"])


def test_spark_commits_read_alike_through_iceberg(spark: Any, spark_server: str, scope: str) -> None:
    name = f"streamcat.{scope}.sales"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, region STRING, amount DOUBLE) USING avro")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'eu', 1.5), (2, 'us', 2.5), (3, 'eu', NULL)")
    spark.sql(f"INSERT INTO {name} VALUES (4, 'ap', 4.0)")
    spark.sql(f"INSERT OVERWRITE {name} SELECT id, region, amount * 2 FROM {name} WHERE id > 1")

    loaded = pyiceberg(spark_server).load_table(f"{scope}.sales")
    assert [s.snapshot_id for s in loaded.snapshots()] == [1, 2, 3]
    assert [s.summary.operation.value for s in loaded.snapshots() if s.summary] == ["append", "append", "overwrite"]
    for snapshot in loaded.snapshots():
        expected = spark_rows(spark, f"SELECT * FROM {name} VERSION AS OF {snapshot.snapshot_id}")
        assert rows(loaded.scan(snapshot_id=snapshot.snapshot_id).to_arrow()) == expected
        at = datetime.fromtimestamp(snapshot.timestamp_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        by_time = spark_rows(spark, f"SELECT * FROM {name} TIMESTAMP AS OF '{at}'")
        found = loaded.snapshot_as_of_timestamp(snapshot.timestamp_ms)
        assert found is not None
        assert rows(loaded.scan(snapshot_id=found.snapshot_id).to_arrow()) == by_time
    latest = spark_rows(spark, f"SELECT * FROM {name}")
    assert duck_rows(duck(spark_server), f"SELECT * FROM ice.{scope}.sales") == latest

    # DELETE, UPDATE and MERGE write position deletes in Iceberg's form: each is a snapshot at once.
    spark.sql(f"DELETE FROM {name} WHERE id = 2")
    spark.sql(f"UPDATE {name} SET amount = amount + 1 WHERE region = 'eu'")
    spark.sql(f"MERGE INTO {name} t USING (SELECT 4L AS id, 'ap' AS region, 40.0D AS amount UNION ALL "
              "SELECT 5L, 'us', 5.0D) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    row_level = pyiceberg(spark_server).load_table(f"{scope}.sales")
    assert row_level.properties["streamcat.commits-behind"] == "0"
    assert [s.snapshot_id for s in row_level.snapshots()] == [1, 2, 3, 4, 5, 6]
    assert [s.summary.operation.value for s in row_level.snapshots()[3:] if s.summary] == \
        ["delete", "overwrite", "overwrite"]
    con = duck(spark_server)
    for snapshot in row_level.snapshots()[2:]:  # the one before the DELETE, and each after
        expected = spark_rows(spark, f"SELECT * FROM {name} VERSION AS OF {snapshot.snapshot_id}")
        assert rows(row_level.scan(snapshot_id=snapshot.snapshot_id).to_arrow()) == expected
        assert duck_rows(con, f"SELECT * FROM ice.{scope}.sales AT (VERSION => {snapshot.snapshot_id})") == expected
    # The rows UPDATE and MERGE wrote carry the table's field ids, as Spark's own writes do.
    catalog = CatalogClient(spark_server)
    location = catalog.get_table(scope, "sales")["stream"]["location"]
    written = [c for c in catalog.snapshot(scope, "sales", cut=6)[1] if c.commit in (5, 6) and c.kind == "columnar"]
    assert written
    for chunk in written:
        assert [f.metadata[b"PARQUET:field_id"] for f in pq.read_schema(f"{location}/{chunk.path}")] == \
            [b"1", b"2", b"3"]
    merged = spark_rows(spark, f"SELECT * FROM {name}")
    assert merged == [{"id": 3, "region": "eu", "amount": None}, {"id": 4, "region": "ap", "amount": 40.0},
                      {"id": 5, "region": "us", "amount": 5.0}]
    assert rows(row_level.scan().to_arrow()) == merged
    assert duck_rows(con, f"SELECT * FROM ice.{scope}.sales") == merged
    spark.sql(f"CALL streamcat.system.compact(table => '{scope}.sales')")
    compacted = pyiceberg(spark_server).load_table(f"{scope}.sales")
    assert compacted.properties["streamcat.commits-behind"] == "0"
    assert rows(compacted.scan().to_arrow()) == merged
    assert len(catalog.commits(scope, "sales")) == 7
    # Expired commits are no snapshots any more.
    spark.sql(f"CALL streamcat.system.expire_snapshots(table => '{scope}.sales', older_than => current_timestamp(), "
              "retain_last => 1)").collect()
    expired = pyiceberg(spark_server).load_table(f"{scope}.sales")
    assert [s.snapshot_id for s in expired.snapshots()] == [7]
    assert rows(expired.scan().to_arrow()) == spark_rows(spark, f"SELECT * FROM {name}")

    # A pyiceberg append is read by Spark at once: its native Parquet scan (by field id) and the Python source.
    expired.append(pa.table({"id": pa.array([9], pa.int64()), "region": ["ap"], "amount": [9.0]}))
    appended = rows(pyiceberg(spark_server).load_table(f"{scope}.sales").scan().to_arrow())
    assert {"id": 9, "region": "ap", "amount": 9.0} in appended
    python = catalog_beside(spark, "iceberg_python", **{"native-scan": "false"})
    assert scans_natively(spark, f"SELECT * FROM {name}")
    assert spark_rows(spark, f"SELECT * FROM {name}") == appended
    assert spark_rows(spark, f"SELECT * FROM {python}.{scope}.sales") == appended


def test_a_pyiceberg_append_to_a_partitioned_table_is_read_by_spark(spark: Any, spark_server: str, scope: str) -> None:
    name = f"streamcat.{scope}.visits"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, ts TIMESTAMP, region STRING) USING avro "
              "PARTITIONED BY (days(ts), region)")
    spark.sql(f"INSERT INTO {name} VALUES (1, TIMESTAMP '2024-01-01 10:00:00', 'eu')")
    table = pyiceberg(spark_server).load_table(f"{scope}.visits")
    table.append(pa.table({
        "id": pa.array([2, 3, 4], pa.int64()),
        "ts": pa.array([datetime(2024, 1, 2, tzinfo=UTC), datetime(2024, 1, 1, 5, tzinfo=UTC), None],
                       pa.timestamp("us", "UTC")),
        "region": ["us", "eu", "eu"]}))
    commits = CatalogClient(spark_server).commits(scope, "visits")
    assert [c["kind"] for c in commits] == ["append", "append"]
    added = [c for c in CatalogClient(spark_server).snapshot(scope, "visits")[1] if c.commit == 2]
    assert sorted(len(c.partition["values"]) for c in added if c.partition) == [2, 2, 2]
    assert [r["id"] for r in spark_rows(spark, f"SELECT id FROM {name}")] == [1, 2, 3, 4]
    assert [r["id"] for r in spark_rows(spark, f"SELECT id FROM {name} WHERE region = 'eu'")] == [1, 3, 4]
    assert [r["id"] for r in spark_rows(spark, f"SELECT id FROM {name} WHERE ts < TIMESTAMP '2024-01-02 00:00:00' "
                                               "AND ts >= TIMESTAMP '2024-01-01 00:00:00'")] == [1, 3]
