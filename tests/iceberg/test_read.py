"""Streamcat tables read through the Iceberg REST catalog by stock clients (pyiceberg, DuckDB): every
snapshot equals Streamcat's own read at its commit, and commits Iceberg cannot express yet are told."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import requests

from catalog_api.client import CatalogClient
from catalog_api.streams import StreamWriter
from catalog_api.streams.compaction import compact
from registry.client import RegistryClient
from registry.serde import Serializer
from tests.iceberg.clients import duck, duck_rows, pyiceberg, rows, streamcat_rows


def col(name: str, type_: Any, nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": {}}


SCHEMA = {"type": "struct", "fields": [col("id", "long", False), col("ts", "timestamp"), col("region", "string"),
                                       col("amount", "double")]}
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.timestamp("us", "UTC")),
                   ("region", pa.string()), ("amount", pa.float64())])
START = datetime(2024, 1, 1, tzinfo=UTC)


def events(start: int, count: int) -> pa.Table:
    return pa.Table.from_pylist([
        {"id": i, "ts": START + timedelta(hours=7 * i % 72), "region": ("eu", "us", None)[i % 3], "amount": i / 4}
        for i in range(start, start + count)], schema=ARROW)


def new_table(catalog: CatalogClient, scope: str, partitioning: str | None = None,
              properties: dict[str, str] | None = None) -> str:
    name = f"t{uuid.uuid4().hex[:10]}"
    catalog.create_table(scope, name, SCHEMA, partitioning=partitioning, properties=properties)
    return name


def writer(catalog: CatalogClient, client: RegistryClient, scope: str, table: str) -> StreamWriter:
    serializer = Serializer(client, table, client.latest_schemas(table)[0].schema, register=False)
    return StreamWriter(catalog, client, scope, table, serializer=serializer)


def test_every_snapshot_equals_streamcats_read_at_its_commit(
        server_url: str, catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope, "days(ts), region")
    with writer(catalog, client, scope, table) as w:
        w.write_table(events(0, 60))
        first = w.flush()
        time.sleep(0.01)  # commits a few milliseconds apart: time travel by timestamp tells them apart
        w.write_table(events(60, 40))
        second = w.flush()
    assert first is not None
    assert second is not None
    cuts = [first["number"], second["number"]]

    loaded = pyiceberg(server_url).load_table(f"{scope}.{table}")
    assert [s.snapshot_id for s in loaded.snapshots()] == cuts
    assert loaded.metadata.current_snapshot_id == cuts[-1]
    assert loaded.properties["streamcat.commit"] == str(cuts[-1])
    assert loaded.properties["streamcat.commits-behind"] == "0"
    assert [f.field_id for f in loaded.spec().fields] == [1000, 1001]
    assert [str(f.transform) for f in loaded.spec().fields] == ["day", "identity"]
    assert [f.name for f in loaded.schema().fields] == ["id", "ts", "region", "amount"]
    for snapshot in loaded.snapshots():
        commit = catalog.commits(scope, table)[snapshot.snapshot_id - 1]
        assert snapshot.summary is not None
        assert snapshot.summary["streamcat.commit"] == str(commit["number"])
        assert snapshot.timestamp_ms == commit["createdAt"]
        expected = streamcat_rows(catalog, client, scope, table, cut=snapshot.snapshot_id)
        assert rows(loaded.scan(snapshot_id=snapshot.snapshot_id).to_arrow()) == expected
        by_time = loaded.snapshot_as_of_timestamp(snapshot.timestamp_ms)
        assert by_time is not None
        assert by_time.snapshot_id == snapshot.snapshot_id
    latest = streamcat_rows(catalog, client, scope, table)
    assert len(latest) == 100

    # A filter on a partition column plans only the files of the partitions it can match.
    everything = list(loaded.scan().plan_files())
    eu = list(loaded.scan(row_filter="region == 'eu'").plan_files())
    assert 0 < len(eu) < len(everything)
    assert rows(loaded.scan(row_filter="region == 'eu'").to_arrow()) == [r for r in latest
                                                                                if r["region"] == "eu"]

    con = duck(server_url)
    assert duck_rows(con, f"SELECT * FROM ice.{scope}.{table}") == latest
    first_rows = streamcat_rows(catalog, client, scope, table, cut=cuts[0])
    assert duck_rows(con, f"SELECT * FROM ice.{scope}.{table} AT (VERSION => {cuts[0]})") == first_rows


def test_events_lag_until_compaction_and_schemas_keep_their_ids(
        server_url: str, catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope)
    with writer(catalog, client, scope, table) as w:
        w.write_table(events(0, 20))
        w.flush()
        # Event chunks (a producer's records) are not Parquet: Iceberg readers see the last state before them.
        for i in range(20, 25):
            w.write({"id": i, "ts": None, "region": "eu", "amount": 1.0})
        w.flush()
    iceberg = pyiceberg(server_url)
    loaded = iceberg.load_table(f"{scope}.{table}")
    assert loaded.properties["streamcat.commit"] == "1"
    assert loaded.properties["streamcat.commits-behind"] == "1"
    assert len(loaded.scan().to_arrow()) == 20

    # An added column: a second schema, the old columns keep their ids, old files read it as null.
    catalog.alter_table(scope, table, [{"op": "addColumn", "path": ["note"], "type": "string", "nullable": True}])
    result = compact(catalog, client, scope, table)
    assert result is not None
    loaded = iceberg.load_table(f"{scope}.{table}")
    assert loaded.properties["streamcat.commits-behind"] == "0"
    assert [s.schema_id for s in loaded.schemas().values()] == sorted(loaded.schemas())
    assert len(loaded.schemas()) == 2
    assert loaded.schema().find_field("note").field_id == 5
    assert loaded.schema().find_field("amount").field_id == loaded.schemas()[min(loaded.schemas())] \
        .find_field("amount").field_id
    current = loaded.current_snapshot()
    assert current is not None
    assert current.summary is not None
    assert current.summary.operation.value == "overwrite"  # the compaction also made the events visible
    expected = streamcat_rows(catalog, client, scope, table)
    assert len(expected) == 25
    assert all(r["note"] is None for r in expected)
    assert rows(loaded.scan().to_arrow()) == expected
    assert duck_rows(duck(server_url), f"SELECT * FROM ice.{scope}.{table}") == expected


def test_a_primary_key_table_shows_its_compactions_only(
        server_url: str, catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope, properties={"primary-key": "id"})
    with writer(catalog, client, scope, table) as w:
        for i in range(10):
            w.upsert({"id": i, "ts": None, "region": "eu", "amount": float(i)})
        w.flush()
        w.upsert({"id": 3, "ts": None, "region": "us", "amount": 30.0})
        w.delete(4)
        w.flush()
    iceberg = pyiceberg(server_url)
    loaded = iceberg.load_table(f"{scope}.{table}")
    assert loaded.current_snapshot() is None, "key-merged changes are not expressible"
    assert loaded.properties["streamcat.commits-behind"] == "2"
    assert loaded.schema().identifier_field_ids == [1]
    assert compact(catalog, client, scope, table) is not None
    loaded = iceberg.load_table(f"{scope}.{table}")
    current = loaded.current_snapshot()
    assert current is not None
    assert current.snapshot_id == 3
    expected = streamcat_rows(catalog, client, scope, table)
    assert len(expected) == 9
    assert {"id": 3, "ts": None, "region": "us", "amount": 30.0} in expected
    assert rows(loaded.scan().to_arrow()) == expected
    with writer(catalog, client, scope, table) as w:
        w.upsert({"id": 100, "ts": None, "region": "eu", "amount": 1.0})
    loaded = iceberg.load_table(f"{scope}.{table}")
    assert loaded.properties["streamcat.commit"] == "3"
    assert loaded.properties["streamcat.commits-behind"] == "1"
    assert rows(loaded.scan().to_arrow()) == expected


def test_metadata_files_are_absolute_and_rewritten_when_deleted(
        server_url: str, catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope)
    with writer(catalog, client, scope, table) as w:
        w.write_table(events(0, 5))
    answer = requests.get(f"{server_url}/iceberg/v1/namespaces/{scope}/tables/{table}", timeout=30)
    assert answer.status_code == 200
    body = answer.json()
    assert body["metadata-location"].startswith("file:///")
    assert body["metadata"]["format-version"] == 2
    listed = body["metadata"]["snapshots"][0]["manifest-list"]
    assert listed.startswith("file:///")
    location = catalog.get_table(scope, table)["stream"]["location"]
    assert listed.startswith(f"file://{location}/metadata/")
    # Metadata is derived: deleted files come back on the next load.
    for f in Path(location, "metadata").iterdir():
        f.unlink()
    again = pyiceberg(server_url).load_table(f"{scope}.{table}")
    assert len(again.scan().to_arrow()) == 5


def test_refs_only_loads_the_current_snapshot(
        server_url: str, catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope)
    with writer(catalog, client, scope, table) as w:
        w.write_table(events(0, 5))
        w.flush()
        w.write_table(events(5, 5))
    url = f"{server_url}/iceberg/v1/namespaces/{scope}/tables/{table}"
    for snapshots, expected in (("refs", [2]), ("all", [1, 2])):
        body = requests.get(url, params={"snapshots": snapshots}, timeout=30).json()
        assert [s["snapshot-id"] for s in body["metadata"]["snapshots"]] == expected
    assert requests.get(url, params={"snapshots": "some"}, timeout=30).status_code == 400


def test_nested_columns_read_alike(server_url: str, catalog: CatalogClient, client: RegistryClient,
                                   scope: str) -> None:
    nested = {"type": "struct", "fields": [
        col("id", "long", False), col("tags", {"type": "array", "elementType": "string", "containsNull": True}),
        col("attrs", {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True}),
        col("addr", {"type": "struct", "fields": [col("city", "string"), col("zip", "integer")]}),
        col("price", "decimal(10,2)")]}
    arrow = pa.schema([pa.field("id", pa.int64(), nullable=False), ("tags", pa.list_(pa.string())),
                       ("attrs", pa.map_(pa.string(), pa.int64())),
                       ("addr", pa.struct([("city", pa.string()), ("zip", pa.int32())])),
                       ("price", pa.decimal128(10, 2))])
    table = f"t{uuid.uuid4().hex[:10]}"
    catalog.create_table(scope, table, nested)
    with writer(catalog, client, scope, table) as w:
        w.write_table(pa.Table.from_pylist([
            {"id": i, "tags": ["a", "b"][: i % 3], "attrs": [("k", i)], "addr": {"city": "x", "zip": i},
             "price": Decimal(i) / 4} for i in range(6)], schema=arrow))
    loaded = pyiceberg(server_url).load_table(f"{scope}.{table}")
    element = loaded.schema().find_field("tags.element")
    assert element.field_id > loaded.schema().find_field("price").field_id
    assert rows(loaded.scan().to_arrow()) == streamcat_rows(catalog, client, scope, table)
