"""Tables written by Spark, read through the Iceberg REST catalog (docs/iceberg.md): pyiceberg and DuckDB
read at each snapshot what Spark reads ``VERSION AS OF`` its commit (and ``TIMESTAMP AS OF`` its time);
a row-level DELETE, whose position deletes Iceberg cannot read yet, lags until a compaction; expired
commits leave the snapshot list; a pyiceberg append is read by Spark at once, natively and through the
Python source."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
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

    # A row-level DELETE writes position deletes: Iceberg readers keep the last state they can read.
    spark.sql(f"DELETE FROM {name} WHERE id = 2")
    lagging = pyiceberg(spark_server).load_table(f"{scope}.sales")
    assert lagging.properties["streamcat.commit"] == "3"
    assert lagging.properties["streamcat.commits-behind"] == "1"
    assert rows(lagging.scan().to_arrow()) == latest
    spark.sql(f"CALL streamcat.system.compact(table => '{scope}.sales')")
    caught_up = pyiceberg(spark_server).load_table(f"{scope}.sales")
    assert caught_up.properties["streamcat.commits-behind"] == "0"
    assert rows(caught_up.scan().to_arrow()) == spark_rows(spark, f"SELECT * FROM {name}")
    assert len(CatalogClient(spark_server).commits(scope, "sales")) == 5
    # Expired commits are no snapshots any more.
    spark.sql(f"CALL streamcat.system.expire_snapshots(table => '{scope}.sales', older_than => current_timestamp(), "
              "retain_last => 1)").collect()
    expired = pyiceberg(spark_server).load_table(f"{scope}.sales")
    assert [s.snapshot_id for s in expired.snapshots()] == [5]
    assert rows(expired.scan().to_arrow()) == spark_rows(spark, f"SELECT * FROM {name}")

    # A pyiceberg append is read by Spark at once: its native Parquet scan (by field id) and the Python source.
    expired.append(pa.table({"id": pa.array([9], pa.int64()), "region": ["ap"], "amount": [9.0]}))
    appended = rows(pyiceberg(spark_server).load_table(f"{scope}.sales").scan().to_arrow())
    assert {"id": 9, "region": "ap", "amount": 9.0} in appended
    python = catalog_beside(spark, "iceberg_python", **{"native-scan": "false"})
    assert scans_natively(spark, f"SELECT * FROM {name}")
    assert spark_rows(spark, f"SELECT * FROM {name}") == appended
    assert spark_rows(spark, f"SELECT * FROM {python}.{scope}.sales") == appended
