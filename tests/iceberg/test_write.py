"""Commits from Iceberg clients, policed by the registry: pyiceberg's ``update_schema()`` becomes a new
version of the table's schema group when the group's policy allows it, and is refused with the
registry's reason (changing nothing) when it does not; pyiceberg's appends become one Streamcat commit of
their Parquet files once their footers show the table's field ids, and an overwrite of the whole table one
overwrite; stale requirements answer 409; writes to
primary-key and materialized tables are refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import requests
from pyiceberg.exceptions import BadRequestError, CommitFailedException
from pyiceberg.types import LongType, StringType

from catalog_api.client import CatalogClient
from catalog_api.iceberg.datafiles import AddedFile, check_footer
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
