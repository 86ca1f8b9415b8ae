"""The story a user lives through: Spark DDL and DML, schema evolution, Python producers, streaming."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from catalog_api.client import CatalogClient
from catalog_api.streams import StreamWriter
from registry.client import RegistryClient
from registry.errors import NotFound
from registry.serde import Serializer
from tests.spark.helpers import forget_batch, rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_tables_evolve_take_producer_events_and_stream(spark: Any, spark_server: str, scope: str,
                                                       tmp_path: Path) -> None:
    table = f"streamcat.{scope}.users"
    catalog = CatalogClient(spark_server)
    registry = RegistryClient(spark_server, scope)

    # Create, insert, evolve compatibly, insert again: old rows read with null in the new column.
    spark.sql(f"CREATE TABLE {table} (id BIGINT, name STRING) USING avro")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'ann'), (2, 'bob')")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN email STRING")
    spark.sql(f"INSERT INTO {table} VALUES (3, 'cy', 'cy@example.com')")
    assert rows(spark, f"SELECT * FROM {table} ORDER BY id") == [
        (1, "ann", None), (2, "bob", None), (3, "cy", "cy@example.com")]

    # An incompatible change under the default policy (Backward) fails and says why.
    with pytest.raises(Exception, match=r"incompatible under policy Backward.*\$\.age"):
        spark.sql(f"ALTER TABLE {table} ADD COLUMN age INT NOT NULL")

    # A Python producer appends events, some still under the first schema version.
    first, second = (v.schema for v in registry.versions("users"))
    old_producer = Serializer(registry, "users", first, register=False)
    new_producer = Serializer(registry, "users", second, register=False)
    with StreamWriter(catalog, registry, scope, "users") as writer:
        writer.write(old_producer.serialize({"id": 4, "name": "dee"}))
        writer.write(new_producer.serialize({"id": 5, "name": "eve", "email": "eve@example.com"}))
        writer.flush()
    assert rows(spark, f"SELECT * FROM {table} WHERE id > 3 ORDER BY id") == [
        (4, "dee", None), (5, "eve", "eve@example.com")]

    # A streaming read sees what is there, then picks up new commits.
    stream = (spark.readStream.table(table).writeStream.format("memory").queryName(f"{scope}_tail")
              .option("checkpointLocation", str(tmp_path / "tail")).start())
    try:
        stream.processAllAvailable()
        assert rows(spark, f"SELECT count(*) FROM {scope}_tail") == [(5,)]
        spark.sql(f"INSERT INTO {table} VALUES (6, 'fay', NULL)")
        with StreamWriter(catalog, registry, scope, "users") as writer:
            writer.write(new_producer.serialize({"id": 7, "name": "gus", "email": None}))
            writer.flush()
        stream.processAllAvailable()
        assert rows(spark, f"SELECT id FROM {scope}_tail WHERE id > 5 ORDER BY id") == [(6,), (7,)]
    finally:
        stream.stop()

    # A streaming write killed between its catalog commit and its checkpoint's commit log, then
    # restarted from the checkpoint, leaves neither a duplicate nor a gap.
    spark.sql(f"CREATE TABLE streamcat.{scope}.copy (id BIGINT, name STRING, email STRING)")
    checkpoint = tmp_path / "copy"

    def copy_all() -> None:
        query = (spark.readStream.option("maxCommitsPerTrigger", "1").table(table).writeStream
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
                 .toTable(f"streamcat.{scope}.copy"))
        query.awaitTermination()
        assert query.exception() is None

    copy_all()
    batches = sorted(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    assert len(batches) == len(catalog.commits(scope, "users"))  # one micro-batch per source commit
    forget_batch(checkpoint, batches[-1])  # the crash: Spark never recorded the last batch as done
    spark.sql(f"INSERT INTO {table} VALUES (8, 'hal', NULL)")
    copy_all()
    assert rows(spark, f"SELECT id, count(*) FROM streamcat.{scope}.copy GROUP BY id ORDER BY id") == [
        (i, 1) for i in range(1, 9)]
    copies = catalog.commits(scope, "copy")
    assert [c["writerSequence"] for c in copies] == list(range(len(copies)))
    _cut, chunks = catalog.snapshot(scope, "copy")
    location = Path(catalog.get_table(scope, "copy")["stream"]["location"])
    assert {c.path for c in chunks} == {p.relative_to(location).as_posix() for p in location.rglob("*.parquet")}

    # The registry shows every schema version the DDL made.
    answer = requests.get(f"{spark_server}/v1/groups/users/schemas/versions", params={"namespace": scope}, timeout=30)
    versions = answer.json()["schemas"]
    assert [v["versionInfo"]["version"] for v in versions] == [0, 1]
    history = requests.get(f"{spark_server}/v1/groups/users/history", params={"namespace": scope}, timeout=30)
    assert len(history.json()["history"]) == 2

    # DROP TABLE takes stream, group and files along.
    users_location = Path(catalog.get_table(scope, "users")["stream"]["location"])
    spark.sql(f"DROP TABLE {table}")
    with pytest.raises(NotFound):
        catalog.get_stream(scope, "users")
    with pytest.raises(NotFound):
        registry.get_group("users")
    assert not users_location.exists()
