"""The Iceberg REST catalog's namespaces and table operations through pyiceberg and plain HTTP: config
with the endpoints served, the table-exists HEAD in the OpenAPI document, scopes as namespaces with their
properties, drop with the catalog's rules, rename refused with the reason, and errors in Iceberg's shape."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import requests
from pyiceberg.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, DayTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestamptzType

from catalog_api.client import CatalogClient
from registry.client import RegistryClient
from tests.iceberg.clients import pyiceberg, rows, streamcat_rows
from tests.iceberg.test_read import events, new_table, writer


def test_config_accepts_any_warehouse_and_lists_the_endpoints_served(server_url: str) -> None:
    for params in ({}, {"warehouse": ""}, {"warehouse": "anything"}):
        answer = requests.get(f"{server_url}/iceberg/v1/config", params=params, timeout=30)
        assert answer.status_code == 200, answer.text
        endpoints = answer.json()["endpoints"]
        assert "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}" in endpoints
        assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}" in endpoints
        assert "POST /v1/{prefix}/namespaces/{namespace}/tables" in endpoints
        # only what is implemented: no rename (refused), no views, no registration
        assert not any("rename" in e or "views" in e or "register" in e for e in endpoints)
    # Declared like the other routes, the table-exists HEAD is an operation of the OpenAPI document.
    paths = requests.get(f"{server_url}/v1/openapi.json", timeout=30).json()["paths"]
    exists = paths["/iceberg/v1/namespaces/{scopeName}/tables/{tableName}"]["head"]
    assert exists["operationId"] == "icebergTableExists"
    assert sorted(exists["responses"]) == ["204", "400", "401", "403", "404"]


def test_namespaces_are_scopes_with_their_properties(server_url: str, catalog: CatalogClient) -> None:
    iceberg = pyiceberg(server_url)
    name = f"ns{uuid.uuid4().hex[:10]}"
    iceberg.create_namespace(name, {"comment": "from iceberg", "owner": "ana"})
    scope = catalog.get_scope(name)
    assert scope["comment"] == "from iceberg"
    assert scope["properties"] == {"owner": "ana"}
    assert (name,) in iceberg.list_namespaces()
    assert iceberg.namespace_exists(name)
    assert not iceberg.namespace_exists(f"{name}x")
    assert iceberg.list_namespaces(name) == []
    with pytest.raises(NamespaceAlreadyExistsError):
        iceberg.create_namespace(name)
    summary = iceberg.update_namespace_properties(name, removals={"owner", "nope"}, updates={"team": "data"})
    assert summary.removed == ["owner"]
    assert summary.missing == ["nope"]
    assert summary.updated == ["team"]
    assert iceberg.load_namespace_properties(name) == {"comment": "from iceberg", "team": "data"}

    table = new_table(catalog, name)
    with pytest.raises(NamespaceNotEmptyError, match="drop its tables first"):
        iceberg.drop_namespace(name)
    assert iceberg.table_exists(f"{name}.{table}")
    assert not iceberg.table_exists(f"{name}.nothing")
    with pytest.raises(NoSuchTableError):
        iceberg.load_table(f"{name}.nothing")
    iceberg.drop_table(f"{name}.{table}")
    assert catalog.list_tables(name) == []
    iceberg.drop_namespace(name)
    with pytest.raises(NoSuchNamespaceError):
        iceberg.load_namespace_properties(name)


def test_purge_deletes_only_what_the_server_manages(server_url: str, catalog: CatalogClient, scope: str) -> None:
    table = new_table(catalog, scope)
    location = Path(catalog.get_table(scope, table)["stream"]["location"])
    location.mkdir(parents=True, exist_ok=True)
    (location / "leftover.parquet").write_bytes(b"x")
    answer = requests.delete(f"{server_url}/iceberg/v1/namespaces/{scope}/tables/{table}",
                             params={"purgeRequested": "true"}, timeout=30)
    assert answer.status_code == 204
    assert not location.exists()


def test_rename_is_refused_with_the_reason_and_errors_have_icebergs_shape(server_url: str, scope: str) -> None:
    answer = requests.post(f"{server_url}/iceberg/v1/tables/rename", timeout=30, json={
        "source": {"namespace": [scope], "name": "a"}, "destination": {"namespace": [scope], "name": "b"}})
    assert answer.status_code == 406
    error = answer.json()["error"]
    assert error["type"] == "UnsupportedOperationException"
    assert error["code"] == 406
    assert "schema group" in error["message"]
    missing = requests.get(f"{server_url}/iceberg/v1/namespaces/{scope}/tables/none", timeout=30).json()["error"]
    assert missing == {"message": missing["message"], "type": "NoSuchTableException", "code": 404}
    bad = requests.post(f"{server_url}/iceberg/v1/namespaces", json={"namespace": ["a", "b"]}, timeout=30)
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "BadRequestException"
    assert "namespace" in bad.json()["error"]["message"]


def test_create_table_from_an_iceberg_schema_and_spec(server_url: str, catalog: CatalogClient,
                                                      client: RegistryClient, scope: str) -> None:
    iceberg = pyiceberg(server_url)
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "ts", TimestamptzType()),
                    NestedField(3, "region", StringType()), NestedField(4, "amount", DoubleType()))
    spec = PartitionSpec(PartitionField(2, 1000, DayTransform(), "ts_day"),
                         PartitionField(1, 1001, BucketTransform(4), "id_bucket"))
    created = iceberg.create_table(f"{scope}.made", schema, partition_spec=spec, properties={"owner": "ana"})
    assert [str(f.transform) for f in created.spec().fields] == ["day", "bucket[4]"]
    described = catalog.get_table(scope, "made")
    assert [f["name"] for f in described["schema"]["fields"]] == ["id", "ts", "region", "amount"]
    assert described["properties"]["owner"] == "ana"
    with writer(catalog, client, scope, "made") as w:
        w.write_table(events(0, 30))
    loaded = iceberg.load_table(f"{scope}.made")
    assert rows(loaded.scan().to_arrow()) == streamcat_rows(catalog, client, scope, "made")
    with pytest.raises(TableAlreadyExistsError):
        iceberg.create_table(f"{scope}.made", schema)
