"""StreamWriter on partitioned tables (docs/partitioning.md): every columnar chunk holds one partition's rows
and records it, the table reads back what was written, and scan planning skips chunks by partition."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from catalog_api import storage
from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.partitioning.spec import PartitionSpec, with_current_names
from catalog_api.partitioning.transforms import partition_values
from catalog_api.schema import to_struct
from catalog_api.streams import StreamReader, StreamWriter
from catalog_api.streams.row_kinds import DELETE, OP_COLUMN, UPSERT
from registry.client import RegistryClient
from registry.serde import Serializer

DAY = 86_400_000_000  # microseconds
START = datetime(2024, 1, 1, tzinfo=UTC)


def col(name: str, type_: str, nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": {}}


EVENTS = {"type": "struct", "fields": [col("id", "long", False), col("ts", "timestamp"), col("region", "string"),
                                       col("amount", "double")]}
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.timestamp("us", "UTC")),
                   ("region", pa.string()), ("amount", pa.float64())])


def events(start: int, count: int) -> list[dict[str, Any]]:
    """Rows over 3 days and 3 regions (a null among them), with null timestamps now and then."""
    return [{"id": i, "ts": None if i % 11 == 0 else START + timedelta(hours=7 * i % 72),
             "region": ("eu", "us", None)[i % 3], "amount": float(i)} for i in range(start, start + count)]


def new_table(catalog: CatalogClient, scope: str, partitioning: str, schema: dict[str, Any] = EVENTS,
              properties: dict[str, str] | None = None) -> str:
    name = f"t{uuid.uuid4().hex[:10]}"
    catalog.create_table(scope, name, schema, properties=properties, partitioning=partitioning)
    return name


def latest_serializer(registry: RegistryClient, table: str) -> Serializer:
    """A serializer of the table's latest schema version, as a producer of the table makes one."""
    return Serializer(registry, table, registry.latest_schemas(table)[0].schema, register=False)


def chunks_in_their_partitions(catalog: CatalogClient, scope: str, table: str,
                               names: dict[str, Any] | None = None, unpartitioned: int = 0) -> list[Chunk]:
    """The table's live chunks, having checked that every row of each columnar chunk file (read with pyarrow)
    is in the partition the chunk records, under the spec it names; event and deletes chunks record none,
    and so do exactly ``unpartitioned`` columnar chunks (written under spec 0).
    ``names``: the schema (StructType JSON) whose column names the files use, if not the current one."""
    described = catalog.get_table(scope, table)
    specs = {s["specId"]: with_current_names(with_current_names(PartitionSpec.from_json(s), described["schema"]),
                                             names or described["schema"])
             for s in described["partitionSpecs"]}
    fs, root = storage.resolve(described["stream"]["location"])
    _cut, chunks = catalog.snapshot(scope, table)
    assert sum(c.kind == "columnar" and c.partition is None for c in chunks) == unpartitioned
    for chunk in chunks:
        if chunk.kind != "columnar":
            assert chunk.partition is None, chunk
            continue
        if chunk.partition is None:
            continue  # written under spec 0: counted above
        data = pq.read_table(f"{root}/{chunk.path}", filesystem=fs)
        columns = [array.to_pylist() for array in partition_values(data, specs[chunk.partition["specId"]])]
        rows = [list(values) for values in zip(*columns, strict=True)]
        assert len(rows) == chunk.event_count > 0
        assert all(values == chunk.partition["values"] for values in rows), (chunk.partition, rows)
    return chunks


def deleted_keys(catalog: CatalogClient, scope: str, table: str) -> set[int]:
    """The ids the live chunks' change rows delete (read from the chunk files)."""
    fs, root = storage.resolve(catalog.get_table(scope, table)["stream"]["location"])
    found: set[int] = set()
    for chunk in catalog.snapshot(scope, table)[1]:
        data = pq.read_table(f"{root}/{chunk.path}", filesystem=fs)
        if OP_COLUMN in data.column_names:
            ops = data.column(OP_COLUMN).to_pylist()
            assert set(ops) <= {UPSERT, DELETE}
            found |= {k for k, op in zip(data.column("id").to_pylist(), ops, strict=True) if op == DELETE}
    return found


def read_all(catalog: CatalogClient, registry: RegistryClient, scope: str, table: str) -> list[dict[str, Any]]:
    """Every record of the table's batch read, sorted by id."""
    reader = StreamReader(catalog, registry, scope, table)
    return sorted((r for batch in reader.read_batches() for r in batch.to_pylist()), key=lambda r: r["id"])


def test_write_table_writes_one_chunk_per_partition_and_reads_back(
        catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope, "days(ts), bucket(4, id), region")
    writer = StreamWriter(catalog, client, scope, table, serializer=latest_serializer(client, table))
    assert writer.partition_spec is not None
    assert [f.source for f in writer.partition_spec.fields] == ["ts", "id", "region"]
    first, second = events(0, 120), events(120, 80)
    writer.write_table(pa.Table.from_pylist(first, schema=ARROW))
    writer.write({"id": 1000, "ts": None, "region": "eu", "amount": 0.5})  # an event: may stay unpartitioned
    writer.write_table(pa.Table.from_pylist(second, schema=ARROW).to_batches()[0])
    commit = writer.flush()
    assert commit is not None
    assert commit["eventCount"] == 201

    chunks = chunks_in_their_partitions(catalog, scope, table)
    columnar = [c for c in chunks if c.kind == "columnar"]
    assert len(chunks) == len(columnar) + 1
    # one chunk per partition of each write: each call's partitions are distinct
    for call in (first, second):
        ids = {r["id"] for r in call}
        mine = [c for c in columnar if c.stats["columns"]["id"]["min"] in ids]
        partitions = [tuple(c.partition["values"]) for c in mine if c.partition is not None]
        assert len(partitions) == len(set(partitions)) > 10
        assert sum(c.event_count for c in mine) == len(call)
    expected = [*first, *second, {"id": 1000, "ts": None, "region": "eu", "amount": 0.5}]
    assert read_all(catalog, client, scope, table) == expected
    listed = catalog.list_partitions(scope, table)["partitions"]
    assert sum(p["eventCount"] for p in listed) == 200


def test_the_plan_skips_chunks_by_partition(catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope, "days(ts), region")
    with StreamWriter(catalog, client, scope, table, serializer=latest_serializer(client, table)) as writer:
        writer.write_table(pa.Table.from_pylist(events(0, 90), schema=ARROW))
    _cut, chunks = catalog.snapshot(scope, table)
    eu = catalog.plan_chunks(scope, table, [{"op": "eq", "column": "region", "value": "eu"}])
    assert eu.chunks
    assert eu.chunks_skipped == len(chunks) - len(eu.chunks) > 0
    assert {c.partition["values"][1] for c in eu.chunks if c.partition is not None} == {"eu"}
    # a range on the source of days(ts): only the last day's chunks (and no null-ts chunk) stay
    last_day = int((START + timedelta(days=2)).timestamp()) * 1_000_000
    later = catalog.plan_chunks(scope, table, [{"op": "ge", "column": "ts", "value": last_day}])
    assert later.chunks_skipped > 0
    assert {c.partition["values"][0] for c in later.chunks if c.partition is not None} == {last_day // DAY}
    # the kept chunks hold every row that passes
    passing = [r for r in events(0, 90) if r["ts"] is not None and r["ts"] >= START + timedelta(days=2)]
    assert sum(c.event_count for c in later.chunks) == len(passing)


def test_an_overwriting_transaction_writes_partitioned_chunks(
        catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope, "region")
    writer = StreamWriter(catalog, client, scope, table, serializer=latest_serializer(client, table))
    writer.write_table(pa.Table.from_pylist(events(0, 30), schema=ARROW))
    writer.flush()
    with writer.transaction(overwrite=True):
        writer.write_table(pa.Table.from_pylist(events(100, 10), schema=ARROW))
        writer.write_table(pa.Table.from_pylist(events(200, 5), schema=ARROW))
    chunks = chunks_in_their_partitions(catalog, scope, table)
    assert len(chunks) == 6  # two writes of three regions each
    assert read_all(catalog, client, scope, table) == [*events(100, 10), *events(200, 5)]
    writer.close()


def test_rows_of_an_older_schema_version_split_by_the_column_renamed_since(
        catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope, "region")
    catalog.alter_table(scope, table, [{"op": "renameColumn", "path": ["region"], "newName": "area"}])
    old = client.versions(table)[0].schema
    assert b'"region"' in old.data
    writer = StreamWriter(catalog, client, scope, table, serializer=Serializer(client, table, old, register=False))
    assert writer.partition_spec is not None
    assert writer.partition_spec.fields[0].source == "region"
    writer.write_table(pa.Table.from_pylist(events(0, 9), schema=ARROW))
    writer.close()
    names = to_struct(old.format.name, old.data, old.type)
    chunks = chunks_in_their_partitions(catalog, scope, table, names)
    assert sorted(str(c.partition["values"]) for c in chunks if c.partition is not None) == [
        "['eu']", "['us']", "[None]"]
    assert [r["area"] for r in read_all(catalog, client, scope, table)] == [r["region"] for r in events(0, 9)]


def test_an_unpartitioned_table_gets_one_chunk_per_write_as_before(
        catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope, "")
    writer = StreamWriter(catalog, client, scope, table, serializer=latest_serializer(client, table))
    assert writer.partition_spec is None
    writer.write_table(pa.Table.from_pylist(events(0, 30), schema=ARROW))
    commit = writer.flush()
    assert commit is not None
    assert commit["chunkCount"] == 1
    assert [c.partition for c in catalog.snapshot(scope, table)[1]] == [None]
    writer.close()


def test_a_writer_made_before_the_table_was_partitioned_commits_as_before(
        catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    """A long-running writer is not broken by a spec change: its chunk (of spec 0, as it loaded the table)
    is kept unpartitioned, read, and never skipped by partition; writers made later split rows."""
    table = new_table(catalog, scope, "")
    writer = StreamWriter(catalog, client, scope, table, serializer=latest_serializer(client, table))
    catalog.set_partitioning(scope, table, "region")
    writer.write_table(pa.Table.from_pylist(events(0, 3), schema=ARROW))
    assert writer.flush() is not None
    writer.close()
    again = StreamWriter(catalog, client, scope, table, serializer=latest_serializer(client, table))
    again.write_table(pa.Table.from_pylist(events(3, 3), schema=ARROW))
    again.close()

    chunks = chunks_in_their_partitions(catalog, scope, table, unpartitioned=1)
    assert len(chunks) == 4
    assert read_all(catalog, client, scope, table) == events(0, 6)
    eu = catalog.plan_chunks(scope, table, [{"op": "eq", "column": "region", "value": "eu"}])
    # the old chunk may hold eu rows (it does): kept; of the new ones only eu's
    assert len(eu.chunks) == 2
    assert eu.chunks_skipped == 2


# -- primary-key tables -------------------------------------------------------------------------------------------


def test_changes_by_key_go_to_one_change_chunk_per_partition(
        catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope, "bucket(4, id)", properties={"primary-key": "id"})
    writer = StreamWriter(catalog, client, scope, table, writer_id="app")
    for i in range(60):
        writer.upsert({"id": i % 20, "amount": float(i), "region": f"r{i}"})
    for key in (3, 4, 5, 17):
        writer.delete(key)
    writer.upsert({"id": 5, "amount": -5.0})
    commit = writer.flush()
    assert commit is not None
    assert commit["eventCount"] == 20  # one change per key
    writer.write_changes(pa.table({"id": [1, 2, 1, 30], "amount": [1.0, 2.0, 3.0, 30.0]}), ops=[0, 0, 1, 0])
    writer.close()

    chunks = chunks_in_their_partitions(catalog, scope, table)
    assert all(c.partition is not None for c in chunks)
    first = [c for c in chunks if c.sequence == commit["number"]]
    assert len(first) == len({tuple(c.partition["values"]) for c in first if c.partition is not None}) == 4
    # deletes stay in their key's partition, beside the chunk's upserts (checked above)
    assert deleted_keys(catalog, scope, table) == {1, 3, 4, 17}
    live: dict[int, dict[str, Any]] = {
        i % 20: {"id": i % 20, "ts": None, "region": f"r{i}", "amount": float(i)} for i in range(60)}
    for key in (1, 3, 4, 17):
        live.pop(key)
    live[5] = {"id": 5, "ts": None, "region": None, "amount": -5.0}
    live[2] = {"id": 2, "ts": None, "region": None, "amount": 2.0}
    live[30] = {"id": 30, "ts": None, "region": None, "amount": 30.0}
    assert read_all(catalog, client, scope, table) == [live[k] for k in sorted(live)]
    one_key = catalog.plan_chunks(scope, table, [{"op": "eq", "column": "id", "value": 7}])
    assert one_key.chunks_skipped > 0
    assert len({tuple(c.partition["values"]) for c in one_key.chunks if c.partition is not None}) == 1


def test_a_partial_update_table_keeps_a_keys_delete_before_its_upsert_in_one_chunk(
        catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope, "truncate(10, id)",
                      properties={"primary-key": "id", "merge-engine": "partial-update"})
    writer = StreamWriter(catalog, client, scope, table)
    writer.upsert({"id": 1, "amount": 1.0, "region": "eu"})
    writer.upsert({"id": 12, "amount": 12.0})
    writer.flush()
    writer.delete(1)
    writer.upsert({"id": 1, "region": "us"})
    writer.upsert({"id": 12, "region": "us"})
    writer.close()
    chunks_in_their_partitions(catalog, scope, table)
    assert read_all(catalog, client, scope, table) == [
        {"id": 1, "ts": None, "region": "us", "amount": None},
        {"id": 12, "ts": None, "region": "us", "amount": 12.0}]
