"""Commits from Iceberg clients, policed by the registry: pyiceberg's ``update_schema()`` becomes a new
version of the table's schema group when the group's policy allows it, and is refused with the
registry's reason (changing nothing) when it does not; pyiceberg's appends become one Streamcat commit of
their Parquet files once their footers show the table's field ids, and an overwrite of the whole table one
overwrite; stale requirements answer 409; writes to
primary-key and materialized tables are refused with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import requests
from pyiceberg.exceptions import BadRequestError, CommitFailedException
from pyiceberg.io.pyarrow import parquet_file_to_data_file, schema_to_pyarrow
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, StringType

from catalog_api.client import CatalogClient
from catalog_api.iceberg.datafiles import AddedFile, check_footer
from catalog_api.partitioning.spec import PartitionField, PartitionSpec, Transform
from catalog_api.partitioning.transforms import apply
from registry.client import RegistryClient
from registry.errors import BadRequest
from tests.iceberg.clients import pyiceberg, rows, streamcat_rows
from tests.iceberg.test_read import events, new_table, writer


def test_update_schema_is_a_new_version_of_the_group_under_its_policy(
        server_url: str, catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    # No retries: pyiceberg would otherwise reload the table and append again on the stale commit's 409.
    table = new_table(catalog, scope, properties={"commit.retry.num-retries": "0"})
    with writer(catalog, client, scope, table) as w:
        w.write_table(events(0, 10))
    iceberg = pyiceberg(server_url)
    loaded = iceberg.load_table(f"{scope}.{table}")
    stale = iceberg.load_table(f"{scope}.{table}")
    amount = loaded.schema().find_field("amount").field_id
    with loaded.update_schema() as update:
        update.add_column("note", StringType())
        update.rename_column("amount", "total")
    described = catalog.get_table(scope, table)
    assert [f["name"] for f in described["schema"]["fields"]] == ["id", "ts", "region", "total", "note"]
    assert [v.version.version for v in client.versions(table)] == [0, 1]  # one new version of the group
    reloaded = iceberg.load_table(f"{scope}.{table}")
    assert reloaded.schema().find_field("total").field_id == amount
    assert reloaded.schema().find_field("note").field_id == 5
    assert len(reloaded.schemas()) == 2
    expected = streamcat_rows(catalog, client, scope, table)
    assert [r["total"] for r in expected] == [i / 4 for i in range(10)]
    assert rows(reloaded.scan().to_arrow()) == expected

    # Under BACKWARD, a new required column cannot read the old data: the registry refuses, nothing changes.
    refused = pytest.raises(CommitFailedException, match=r"incompatible under policy Backward: .*must has no default")
    with refused, reloaded.update_schema(allow_incompatible_changes=True) as update:
        update.add_column("must", LongType(), required=True)
    assert catalog.get_table(scope, table)["schema"] == described["schema"]
    # The same change from a stale schema id: the requirement fails first.
    with pytest.raises(CommitFailedException, match="current-schema-id"), stale.update_schema() as update:
        update.add_column("late", StringType())
    assert catalog.get_table(scope, table)["schema"] == described["schema"]


def test_properties_and_refused_updates(server_url: str, catalog: CatalogClient, client: RegistryClient,
                                        scope: str) -> None:
    table = new_table(catalog, scope)
    loaded = pyiceberg(server_url).load_table(f"{scope}.{table}")
    with loaded.transaction() as tx:
        tx.set_properties(owner="ana")
    assert catalog.get_table(scope, table)["properties"]["owner"] == "ana"
    url = f"{server_url}/iceberg/v1/namespaces/{scope}/tables/{table}"
    derived = requests.post(url, json={"updates": [{"action": "set-properties",
                                                    "updates": {"streamcat.commit": "9"}}]}, timeout=30)
    assert derived.status_code == 400
    assert "derived" in derived.json()["error"]["message"]

    keyed = new_table(catalog, scope, properties={"primary-key": "id"})
    answer = requests.post(f"{server_url}/iceberg/v1/namespaces/{scope}/tables/{keyed}", timeout=30,
                           json={"updates": [{"action": "set-properties", "updates": {"a": "b"}}]})
    assert answer.status_code == 406
    assert "primary-key table" in answer.json()["error"]["message"]


def test_pyiceberg_appends_and_overwrites_are_one_commit_read_alike_by_streamcat_and_iceberg(
        server_url: str, catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    # No retries: pyiceberg would otherwise reload the table and append again on the stale commit's 409.
    table = new_table(catalog, scope, properties={"commit.retry.num-retries": "0"})
    with writer(catalog, client, scope, table) as w:
        w.write_table(events(0, 10))
    iceberg = pyiceberg(server_url)
    loaded = iceberg.load_table(f"{scope}.{table}")
    stale = iceberg.load_table(f"{scope}.{table}")
    loaded.append(events(10, 25))
    commits = catalog.commits(scope, table)
    assert len(commits) == 2  # the append is one Streamcat commit of columnar chunks
    encoding = client.encoding_id(table, client.versions(table)[-1].version)
    chunks = catalog.snapshot(scope, table)[1]
    added = [c for c in chunks if c.commit == commits[-1]["number"]]
    assert added
    assert all(c.kind == "columnar" and c.encoding_ids == (int(encoding),) for c in added)
    expected = streamcat_rows(catalog, client, scope, table)
    assert [r["id"] for r in expected] == list(range(35))
    assert expected[12] == events(12, 1).to_pylist()[0]
    reloaded = iceberg.load_table(f"{scope}.{table}")
    assert reloaded.metadata.current_snapshot_id == commits[-1]["number"]
    assert rows(reloaded.scan().to_arrow()) == expected

    # A commit from the snapshot before the append: the ref requirement is stale, nothing is committed.
    with pytest.raises(CommitFailedException, match="ref main is at snapshot"):
        stale.append(events(100, 3))
    assert len(catalog.commits(scope, table)) == 2

    # pyiceberg's overwrite removes every file and adds its own: one Streamcat overwrite.
    reloaded.overwrite(events(50, 4))
    assert [c["kind"] for c in catalog.commits(scope, table)] == ["append", "append", "overwrite"]
    replaced = streamcat_rows(catalog, client, scope, table)
    assert [r["id"] for r in replaced] == [50, 51, 52, 53]
    assert rows(iceberg.load_table(f"{scope}.{table}").scan().to_arrow()) == replaced


def test_a_data_file_without_the_tables_field_ids_is_refused_naming_the_column(
        server_url: str, catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope)
    loaded = pyiceberg(server_url).load_table(f"{scope}.{table}")
    location = catalog.get_table(scope, table)["stream"]["location"]
    # pyiceberg adds a file it did not write (add_files): the same rows, its columns without field ids.
    path = Path(location) / "data" / "outside.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(events(0, 5), path)
    with pytest.raises(BadRequestError, match=r"column id has no field id"):
        loaded.add_files([f"file://{path}"])
    assert catalog.commits(scope, table) == []


def test_a_column_of_another_type_is_refused_by_the_footer_alone(tmp_path: Path) -> None:
    schema = {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "amount", "required": False, "type": "double"}]}
    fields = [pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"}),
              pa.field("amount", pa.string(), metadata={b"PARQUET:field_id": b"2"})]
    pq.write_table(pa.table({"id": [1], "amount": ["x"]}, schema=pa.schema(fields)), tmp_path / "f.parquet")
    with pytest.raises(BadRequest, match=r"data file f.parquet: column amount is string, not the table's double"):
        check_footer(str(tmp_path), AddedFile("f.parquet", 1, 0), schema)
    pq.write_table(pa.table({"amount": [1.0]}, schema=pa.schema([fields[1].with_type(pa.float64())])),
                   tmp_path / "g.parquet")
    with pytest.raises(BadRequest, match=r"required column id is missing"):
        check_footer(str(tmp_path), AddedFile("g.parquet", 1, 0), schema)


def test_pyiceberg_appends_to_a_partitioned_table_are_one_commit_of_checked_partitions(
        server_url: str, catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    table = new_table(catalog, scope, "days(ts), region", properties={"commit.retry.num-retries": "0"})
    iceberg = pyiceberg(server_url)
    loaded = iceberg.load_table(f"{scope}.{table}")
    loaded.append(events(0, 30))
    assert [c["kind"] for c in catalog.commits(scope, table)] == ["append"]
    chunks = catalog.snapshot(scope, table)[1]
    partitions = {tuple(c.partition["values"]) for c in chunks if c.partition and c.partition["specId"] == 1}
    assert len(partitions) == len(chunks) > 3  # a chunk per (day, region), as pyiceberg wrote them
    expected = streamcat_rows(catalog, client, scope, table)
    assert [r["id"] for r in expected] == list(range(30))
    reloaded = iceberg.load_table(f"{scope}.{table}")
    assert rows(reloaded.scan().to_arrow()) == expected
    eu = list(reloaded.scan(row_filter="region == 'eu'").plan_files())
    assert 0 < len(eu) < len(chunks)

    # A client whose manifest puts a file of eu rows in the us partition: refused naming the column.
    path = Path(catalog.get_table(scope, table)["stream"]["location"]) / "data" / "misplaced.parquet"
    pq.write_table(events(0, 1).cast(schema_to_pyarrow(reloaded.schema())), path)
    found = parquet_file_to_data_file(reloaded.io, reloaded.metadata, f"file://{path}")
    day = found.partition[0]
    wrong = DataFile.from_args(content=DataFileContent.DATA, file_path=f"file://{path}", file_format=FileFormat.PARQUET,
                               partition=Record(day, "us"), record_count=1, file_size_in_bytes=path.stat().st_size)
    wrong.spec_id = 1
    with pytest.raises(BadRequestError, match=r"misplaced.parquet: column region: partition region='us' \(identity\), "
                                              r"but the file's rows have 'eu'"), \
            reloaded.transaction() as tx, tx.update_snapshot().fast_append() as append:
        append.append_data_file(wrong)
    assert len(catalog.commits(scope, table)) == 1


def test_a_partition_is_proved_by_the_footers_statistics_or_refused(tmp_path: Path) -> None:
    schema = {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "region", "required": False, "type": "string"}]}
    spec = PartitionSpec(1, (PartitionField(1000, 2, "region", Transform.parse("identity"), "region"),
                             PartitionField(1001, 1, "id", Transform.parse("bucket[4]"), "id_bucket")))
    fields = [pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"}),
              pa.field("region", pa.string(), metadata={b"PARQUET:field_id": b"2"})]
    types = {1: "long", 2: "string"}

    def check(ids: list[int], regions: list[str | None], partition: dict[str, Any]) -> None:
        pq.write_table(pa.table({"id": ids, "region": regions}, schema=pa.schema(fields)), tmp_path / "f.parquet")
        check_footer(str(tmp_path), AddedFile("f.parquet", len(ids), 0, 1, partition), schema, spec, types)

    check([5, 5], [None, None], {"region": None, "id_bucket": apply("bucket[4]", 5)})
    with pytest.raises(BadRequest, match=r"column id: the bucket of each of its values \(5 to 6\) cannot be checked"):
        check([5, 6], ["eu", "eu"], {"region": "eu", "id_bucket": apply("bucket[4]", 5)})
    with pytest.raises(BadRequest, match=r"column region: partition region='eu' \(identity\), but the file's rows "
                                         r"have 'eu', None"):
        check([5, 5], ["eu", None], {"region": "eu", "id_bucket": apply("bucket[4]", 5)})
    with pytest.raises(BadRequest, match=r"f.parquet is written for partition spec 0, but the table's is spec 1"):
        check_footer(str(tmp_path), AddedFile("f.parquet", 2, 0), schema, spec, types)
