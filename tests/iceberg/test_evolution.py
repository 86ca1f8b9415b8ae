"""An evolved table read through the Iceberg REST catalog: after an added, a renamed, a promoted, a dropped
and a re-added column and a partition spec change, each made through the catalog's API with rows written
between them, every snapshot (read by pyiceberg and by DuckDB) equals Streamcat's read at its commit under
the schema that snapshot was written with, columns keep their field ids, a dropped column's id is never
given again, and a filter on the new partition column plans fewer files."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pyarrow as pa

from catalog_api.client import CatalogClient
from registry.client import RegistryClient
from tests.iceberg.clients import duck, duck_rows, pyiceberg, rows, streamcat_rows
from tests.iceberg.test_read import START, col, writer

SCHEMA = {"type": "struct", "fields": [col("id", "long", False), col("ts", "timestamp"), col("region", "string"),
                                       col("qty", "integer"), col("price", "float")]}
#: The catalog's changes, one per step, each followed by a write of ten rows.
CHANGES: list[list[dict[str, Any]]] = [
    [],
    [{"op": "addColumn", "path": ["note"], "type": "string", "nullable": True}],
    [{"op": "renameColumn", "path": ["qty"], "newName": "quantity"}],
    [{"op": "updateColumnType", "path": ["quantity"], "type": "long"},
     {"op": "updateColumnType", "path": ["price"], "type": "double"}],
    [{"op": "dropColumn", "path": ["note"]}],
    [{"op": "addColumn", "path": ["note"], "type": "string", "nullable": True}],
    [{"op": "setPartitioning", "partitioning": "region, days(ts)"}],
]
_ARROW = {"long": pa.int64(), "integer": pa.int32(), "float": pa.float32(), "double": pa.float64(),
          "string": pa.string(), "timestamp": pa.timestamp("us", "UTC")}


def batch(schema: dict[str, Any], start: int) -> pa.Table:
    """Ten rows (ids ``start``...) of the table's current Spark ``schema``, over three days and two regions."""
    arrow = pa.schema([pa.field(f["name"], _ARROW[f["type"]], nullable=f["nullable"]) for f in schema["fields"]])
    values = {"id": lambda i: i, "ts": lambda i: START + timedelta(hours=7 * i % 72),
              "region": lambda i: ("eu", "us")[i % 2], "qty": lambda i: i, "quantity": lambda i: i,
              "price": lambda i: i / 4, "note": lambda i: f"n{i}"}
    return pa.Table.from_pylist([{f.name: values[f.name](i) for f in arrow} for i in range(start, start + 10)],
                                schema=arrow)


def test_every_snapshot_of_an_evolved_table_reads_alike(
        server_url: str, catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = f"t{uuid.uuid4().hex[:10]}"
    catalog.create_table(scope, table, SCHEMA, partitioning="region")
    for step, changes in enumerate(CHANGES):
        if changes:
            catalog.alter_table(scope, table, changes)
        with writer(catalog, client, scope, table) as w:
            w.write_table(batch(catalog.get_table(scope, table)["schema"], 10 * step))

    loaded = pyiceberg(server_url).load_table(f"{scope}.{table}")
    schemas = loaded.schemas()
    # Schema ids are the group's versions, increasing; each snapshot names the one it was written with.
    assert list(schemas) == sorted(schemas) == [s.schema_id for s in schemas.values()]
    assert len(schemas) == 6  # the partition spec change is not a new schema
    assert [s.schema_id for s in loaded.snapshots()] == [*list(schemas), list(schemas)[-1]]
    assert loaded.metadata.current_schema_id == list(schemas)[-1]
    first, current = schemas[min(schemas)], loaded.schema()
    # A renamed or promoted column keeps its id; a dropped one's id is never given again.
    assert current.find_field("quantity").field_id == first.find_field("qty").field_id
    for name in ("id", "ts", "region", "price"):
        assert current.find_field(name).field_id == first.find_field(name).field_id
    assert str(current.find_field("quantity").field_type) == "long"
    assert str(current.find_field("price").field_type) == "double"
    dropped = schemas[list(schemas)[1]].find_field("note").field_id
    assert dropped not in {f.field_id for f in schemas[list(schemas)[4]].fields}
    assert current.find_field("note").field_id > max(f.field_id for s in list(schemas.values())[:-1] for f in s.fields)

    # Two partition specs beside spec 0 (no fields; every Streamcat table has it, docs/partitioning.md): the
    # kept field keeps 1000, the new one takes the next id, not an old one's; the newest is the default.
    specs = {i: s for i, s in loaded.specs().items() if s.fields}
    assert len(specs) == 2
    assert not loaded.specs()[0].fields
    old, new = specs[min(specs)], specs[max(specs)]
    assert [(f.field_id, str(f.transform)) for f in old.fields] == [(1000, "identity")]
    assert [(f.field_id, str(f.transform)) for f in new.fields] == [(1000, "identity"), (1001, "day")]
    assert loaded.metadata.default_spec_id == new.spec_id
    assert loaded.metadata.last_partition_id == 1001

    versions = {v.version.version: v.schema for v in client.versions(table)}
    con = duck(server_url)
    for snapshot in loaded.snapshots():
        n = snapshot.snapshot_id
        assert snapshot.schema_id is not None
        expected = streamcat_rows(catalog, client, scope, table, cut=n, reader_schema=versions[snapshot.schema_id])
        assert len(expected) == 10 * n
        assert rows(loaded.scan(snapshot_id=n).to_arrow()) == expected, f"snapshot {n}"
        assert duck_rows(con, f"SELECT * FROM ice.{scope}.{table} AT (VERSION => {n})") == expected, f"snapshot {n}"
    latest = streamcat_rows(catalog, client, scope, table)
    assert rows(loaded.scan().to_arrow()) == latest
    assert duck_rows(con, f"SELECT * FROM ice.{scope}.{table}") == latest

    # A filter on the new partition column skips the new spec's files of other days.
    day = START + timedelta(days=1)
    where = f"ts >= '{day.isoformat()}' and ts < '{(day + timedelta(days=1)).isoformat()}'"
    assert len(list(loaded.scan(row_filter=where).plan_files())) < len(list(loaded.scan().plan_files()))
    assert rows(loaded.scan(row_filter=where).to_arrow()) == [r for r in latest if day <= r["ts"] < day + timedelta(1)]
