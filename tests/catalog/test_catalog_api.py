"""The catalog REST API: scopes, streams, tables over registry groups, commits and snapshots."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from catalog_api.api import models as catalog_wire
from catalog_api.client import CatalogClient
from catalog_api.errors import ScopeNotEmpty, ScopeNotFound, StreamNotFound, StreamSealed, TableNotFound
from catalog_api.model import Chunk
from catalog_api.schema.fieldids import without_field_ids
from registry.api import models as wire
from registry.client import RegistryClient
from registry.errors import AlreadyExists, BadRequest, Conflict, GroupNotFound, IncompatibleSchema, WriteConflict
from registry.ids import SchemaId, TypeName, Version
from registry.model import SchemaInfo, SerializationFormat, VersionInfo


def col(name: str, type_: Any, nullable: bool = True, **metadata: Any) -> dict[str, Any]:
    """A StructField in Spark's JSON form."""
    return {"name": name, "type": type_, "nullable": nullable, "metadata": metadata}


def struct(*fields: dict[str, Any]) -> dict[str, Any]:
    """A StructType in Spark's JSON form."""
    return {"type": "struct", "fields": list(fields)}


ORDERS = struct(col("id", "long", False), col("item", "string"), col("price", "decimal(10,2)"))


@pytest.fixture
def scope(catalog: CatalogClient, namespace: str) -> str:
    catalog.create_scope(namespace, comment="test scope", properties={"owner": "tests"})
    return namespace


def chunk(path: str, events: int = 10, **extra: Any) -> Chunk:
    return Chunk(path=path, kind=extra.pop("kind", "events"), event_count=events, bytes=100 * events, **extra)


def test_scope_lifecycle(catalog: CatalogClient, scope: str) -> None:
    assert catalog.get_scope(scope)["properties"] == {"owner": "tests"}
    updated = catalog.update_scope(scope, {"tier": "gold"}, remove=["owner"], comment="changed")
    assert (updated["properties"], updated["comment"]) == ({"tier": "gold"}, "changed")
    assert scope in [s["scopeName"] for s in catalog.list_scopes()]
    with pytest.raises(AlreadyExists):
        catalog.create_scope(scope)
    catalog.delete_scope(scope)
    with pytest.raises(ScopeNotFound):
        catalog.get_scope(scope)


def test_non_empty_scope_needs_cascade(
    catalog: CatalogClient, client: RegistryClient, scope: str, settings: Any
) -> None:
    table = catalog.create_table(scope, "orders", ORDERS)
    location = Path(table["stream"]["location"])
    location.mkdir(parents=True)
    (location / "leftover.events").write_bytes(b"x")
    with pytest.raises(ScopeNotEmpty):
        catalog.delete_scope(scope)
    catalog.delete_scope(scope, cascade=True, purge=True)
    with pytest.raises(GroupNotFound):
        client.get_group("orders")
    assert not location.exists()


def test_table_is_a_stream_plus_a_group(
    catalog: CatalogClient, client: RegistryClient, scope: str, settings: Any
) -> None:
    table = catalog.create_table(
        scope, "orders", ORDERS, properties={"compatibility": "FULL", "owner": "me"}, comment="all orders", segments=4
    )
    assert table["schema"] == ORDERS
    assert table["version"] == 1
    assert table["compatibility"] == {"policy": "Full"}
    assert table["properties"] == {"owner": "me"}
    assert table["stream"]["scalingPolicy"]["minSegments"] == 4
    assert table["stream"]["location"] == f"{settings.warehouse}/{scope}/orders"
    group = client.get_group("orders")
    assert (group.format.name, group.compatibility.policy) == ("Avro", "Full")
    versions = client.versions("orders")
    assert [wire.VersionInfo.of(v.version).model_dump(mode="json") for v in versions] == [table["schemaVersion"]]
    assert versions[0].version.type == table["typeName"]
    assert catalog.get_stream(scope, "orders")["streamName"] == "orders"
    assert [t["tableName"] for t in catalog.list_tables(scope)] == ["orders"]


@pytest.mark.parametrize("fmt", ["avro", "protobuf", "json"])
def test_tables_in_every_format(catalog: CatalogClient, client: RegistryClient, scope: str, fmt: str) -> None:
    table = catalog.create_table(scope, "orders", ORDERS, fmt=fmt)
    assert client.get_group("orders").format.name == {"avro": "Avro", "protobuf": "Protobuf", "json": "Json"}[fmt]
    altered = catalog.alter_table(
        scope, "orders", [{"op": "addColumn", "path": ["note"], "type": "string"}], expected_version=table["version"]
    )
    assert [f["name"] for f in altered["schema"]["fields"]] == ["id", "item", "price", "note"]
    assert len(client.versions("orders")) == 2


def test_refused_schema_leaves_nothing_behind(catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    bad = struct(col("m", {"type": "map", "keyType": "integer", "valueType": "string", "valueContainsNull": True}))
    with pytest.raises(BadRequest, match="m"):
        catalog.create_table(scope, "orders", bad)
    with pytest.raises(StreamNotFound):
        catalog.get_stream(scope, "orders")
    with pytest.raises(GroupNotFound):
        client.get_group("orders")
    catalog.create_table(scope, "orders", ORDERS)


def test_table_name_taken_by_a_group_rolls_back_the_stream(
    catalog: CatalogClient, client: RegistryClient, scope: str
) -> None:
    from tests.registry.helpers import group

    client.create_group("orders", group("Json", "AllowAny"))
    with pytest.raises(AlreadyExists):
        catalog.create_table(scope, "orders", ORDERS)
    with pytest.raises(StreamNotFound):
        catalog.get_stream(scope, "orders")
    assert client.get_group("orders").format.name == "Json"


def test_alter_adds_versions_under_the_policy(catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    catalog.create_table(scope, "orders", ORDERS)
    v2 = catalog.alter_table(
        scope, "orders", [{"op": "addColumn", "path": ["qty"], "type": "integer", "position": {"after": "item"}}]
    )
    assert [f["name"] for f in v2["schema"]["fields"]] == ["id", "item", "qty", "price"]
    with pytest.raises(IncompatibleSchema) as caught:
        catalog.alter_table(
            scope, "orders", [{"op": "addColumn", "path": ["zip"], "type": "string", "nullable": False}]
        )
    assert any("zip" in r.path for r in caught.value.reasons)
    assert catalog.get_table(scope, "orders")["version"] == v2["version"], "a refused alter changes nothing"
    assert len(client.versions("orders")) == 2


def test_alter_with_a_stale_version_conflicts(catalog: CatalogClient, scope: str) -> None:
    table = catalog.create_table(scope, "orders", ORDERS)
    catalog.alter_table(
        scope, "orders", [{"op": "setProperty", "key": "a", "value": "1"}], expected_version=table["version"]
    )
    with pytest.raises(WriteConflict):
        catalog.alter_table(
            scope, "orders", [{"op": "setProperty", "key": "b", "value": "2"}], expected_version=table["version"]
        )
    assert catalog.get_table(scope, "orders")["properties"] == {"a": "1"}


def test_alter_properties_comment_and_policy(catalog: CatalogClient, client: RegistryClient, scope: str) -> None:
    catalog.create_table(scope, "orders", ORDERS, properties={"a": "1"})
    table = catalog.alter_table(
        scope,
        "orders",
        [
            {"op": "setProperty", "key": "b", "value": "2"},
            {"op": "removeProperty", "key": "a"},
            {"op": "setComment", "comment": "now with b"},
            {"op": "setProperty", "key": "compatibility", "value": "forward_transitive"},
        ],
    )
    assert (table["properties"], table["comment"]) == ({"b": "2"}, "now with b")
    assert client.get_group("orders").compatibility.policy == "ForwardTransitive"
    with pytest.raises(BadRequest, match="compatibility"):
        catalog.alter_table(scope, "orders", [{"op": "setProperty", "key": "compatibility", "value": "sideways"}])


def test_nested_column_changes(catalog: CatalogClient, scope: str) -> None:
    address = struct(col("street", "string"), col("zip", "string"))
    catalog.create_table(scope, "people", struct(col("name", "string"), col("address", address)))
    table = catalog.alter_table(
        scope,
        "people",
        [
            {"op": "addColumn", "path": ["address", "city"], "type": "string", "comment": "town"},
            {"op": "updateColumnComment", "path": ["name"], "comment": "full name"},
        ],
    )
    fields = table["schema"]["fields"]
    assert [f["name"] for f in fields[1]["type"]["fields"]] == ["street", "zip", "city"]
    # The added column gets a field id of its own, after the four the table's columns had.
    assert fields[1]["type"]["fields"][2]["metadata"] == {"comment": "town", "parquet.field.id": 5}
    with pytest.raises(BadRequest, match=r"address\.nope"):
        catalog.alter_table(scope, "people", [{"op": "dropColumn", "path": ["address", "nope"]}])


def test_drop_table_removes_stream_group_and_with_purge_files(
    catalog: CatalogClient, client: RegistryClient, scope: str
) -> None:
    table = catalog.create_table(scope, "orders", ORDERS)
    location = Path(table["stream"]["location"])
    location.mkdir(parents=True)
    (location / "x.events").write_bytes(b"x")
    catalog.drop_table(scope, "orders", purge=True)
    with pytest.raises(TableNotFound):
        catalog.get_table(scope, "orders")
    with pytest.raises(GroupNotFound):
        client.get_group("orders")
    assert not location.exists()


def test_commits_are_numbered_atomic_and_deduplicated(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "events", segments=2)
    first = catalog.commit(
        scope, "events", [chunk("a/1.events"), chunk("b/1.events", segment=1)], writer_id="w1", writer_sequence=1
    )
    assert (first["number"], first["eventCount"], first["chunkCount"]) == (1, 20, 2)
    again = catalog.commit(
        scope, "events", [chunk("a/1.events"), chunk("b/1.events", segment=1)], writer_id="w1", writer_sequence=1
    )
    assert again["duplicate"] is True
    assert again["number"] == 1
    second = catalog.commit(scope, "events", [chunk("a/2.events")], writer_id="w1", writer_sequence=2)
    assert second["number"] == 2
    cut, chunks = catalog.snapshot(scope, "events")
    assert cut == 2
    assert [c.path for c in chunks] == ["a/1.events", "b/1.events", "a/2.events"]
    assert [c.commit for c in chunks] == [1, 1, 2]
    with pytest.raises(Conflict):
        catalog.commit(scope, "events", [chunk("a/2.events")])
    assert catalog.get_stream(scope, "events")["lastCommit"] == 2


def test_snapshot_time_travel_overwrite_and_truncate(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "events")
    catalog.commit(scope, "events", [chunk("1.events")])
    time.sleep(0.01)
    between = int(time.time() * 1000)
    time.sleep(0.01)
    catalog.commit(scope, "events", [chunk("2.events")])
    catalog.commit(scope, "events", [chunk("3.events")], overwrite=True)
    catalog.commit(scope, "events", [chunk("4.events")])
    paths = lambda **kw: [c.path for c in catalog.snapshot(scope, "events", **kw)[1]]  # noqa: E731
    assert paths() == ["3.events", "4.events"]
    assert paths(cut=2) == ["1.events", "2.events"]
    assert paths(as_of_time=between) == ["1.events"]
    assert paths(after=1, cut=2) == ["2.events"]
    catalog.truncate_stream(scope, "events", 1)
    assert paths(cut=2) == ["2.events"]
    with pytest.raises(BadRequest):
        catalog.truncate_stream(scope, "events", 9)
    with pytest.raises(BadRequest):
        catalog.snapshot(scope, "events", cut=9)
    commits = catalog.commits(scope, "events")
    assert [(c["number"], c["overwrite"]) for c in commits] == [(1, False), (2, False), (3, True), (4, False)]


def test_sealed_stream_takes_no_commits(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "events")
    catalog.seal_stream(scope, "events")
    with pytest.raises(StreamSealed):
        catalog.commit(scope, "events", [chunk("1.events")])
    assert catalog.get_stream(scope, "events")["streamState"] == "SEALED"


def test_table_commits_must_use_the_groups_encodings(
    catalog: CatalogClient, client: RegistryClient, scope: str
) -> None:
    table = catalog.create_table(scope, "orders", ORDERS)
    v = table["schemaVersion"]
    encoding = client.encoding_id("orders", VersionInfo(TypeName(v["type"]), Version(v["version"]), SchemaId(v["id"])))
    catalog.commit(scope, "orders", [chunk("ok.parquet", kind="columnar", encoding_ids=(encoding,))])
    with pytest.raises(BadRequest, match="encoding ids"):
        catalog.commit(scope, "orders", [chunk("bad.parquet", kind="columnar", encoding_ids=(encoding + 999,))])
    assert catalog.get_stream(scope, "orders")["lastCommit"] == 1


@pytest.mark.parametrize(
    ("path", "word"),
    [
        ("../escape.events", ".."),
        ("/abs/file.events", "relative"),
        ("a//b.events", "relative"),
        ("s3://bucket/x", "relative"),
        ("a\\b.events", "relative"),
    ],
)
def test_chunk_paths_stay_inside_the_stream(catalog: CatalogClient, scope: str, path: str, word: str) -> None:
    catalog.create_stream(scope, "events")
    with pytest.raises(BadRequest, match="relative"):
        catalog.commit(scope, "events", [chunk(path)])
    assert catalog.get_stream(scope, "events")["lastCommit"] == 0


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/v1/scopes", {"scopeName": "../etc"}, 400),
        ("POST", "/v1/scopes", {"scopeName": "x", "extra": 1}, 400),
        ("POST", "/v1/scopes/{scope}/streams", {"streamName": "a/b"}, 400),
        ("POST", "/v1/scopes/{scope}/streams", {"streamName": "s", "scalingPolicy": {"minSegments": 0}}, 400),
        ("POST", "/v1/scopes/nope-scope/streams", {"streamName": "s"}, 404),
        (
            "POST",
            "/v1/scopes/{scope}/tables",
            {
                "tableName": "t",
                "schema": {
                    "type": "struct",
                    "fields": [{"name": "a", "type": "nonsense", "nullable": True, "metadata": {}}],
                },
            },
            400,
        ),
        ("POST", "/v1/scopes/{scope}/tables", {"tableName": "t", "schema": {}}, 400),
        ("POST", "/v1/scopes/{scope}/tables", {"tableName": "t", "format": "xml", "schema": ORDERS}, 400),
        ("GET", "/v1/scopes/{scope}/streams/none/chunks?streamCut=-1", None, 400),
        ("GET", "/v1/scopes/{scope}/streams/none/chunks", None, 404),
        ("PATCH", "/v1/scopes/{scope}/tables/none", {"changes": []}, 404),
        ("DELETE", "/v1/scopes/{scope}?cascade=maybe", None, 400),
        (
            "POST",
            "/v1/scopes/{scope}/streams/none/commits",
            {"chunks": [{"path": "x", "kind": "events", "eventCount": -1, "bytes": 0}]},
            400,
        ),
    ],
)
def test_bad_catalog_requests_are_4xx_and_change_nothing(
    server_url: str, catalog: CatalogClient, scope: str, method: str, path: str, body: Any, status: int
) -> None:
    before = (catalog.list_scopes(), catalog.list_streams(scope))
    response = requests.request(method, server_url + path.format(scope=scope), json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"]
    assert error["message"]
    assert (catalog.list_scopes(), catalog.list_streams(scope)) == before


def test_table_created_from_avro_schema_reads_back_through_registry(
    catalog: CatalogClient, client: RegistryClient, scope: str
) -> None:
    table = catalog.create_table(scope, "orders", ORDERS)
    stored = client.latest_schemas("orders")[0]
    assert isinstance(stored.schema, SchemaInfo)
    assert stored.schema.format == SerializationFormat("Avro")
    assert b'"decimal"' in stored.schema.data
    assert stored.version.id == table["schemaVersion"]["id"]


@pytest.mark.parametrize("fmt", ["avro", "protobuf", "json"])
@pytest.mark.parametrize("name", ["int", "9lives", "my-table.v2", "spark_type"])
def test_table_names_that_are_not_schema_names(catalog: CatalogClient, scope: str, fmt: str, name: str) -> None:
    table = catalog.create_table(scope, name, ORDERS, fmt=fmt)
    assert table["tableName"] == name
    assert catalog.get_table(scope, name)["schema"] == ORDERS


def test_rename_keeps_the_old_name_as_an_avro_alias(catalog: CatalogClient, client: RegistryClient,
                                                    scope: str) -> None:
    catalog.create_table(scope, "orders", ORDERS)
    table = catalog.alter_table(scope, "orders", [{"op": "renameColumn", "path": ["item"], "newName": "product"}])
    assert [f["name"] for f in table["schema"]["fields"]] == ["id", "product", "price"]
    assert table["schema"]["fields"][1]["metadata"]["aliases"] == ["item"]
    latest = client.latest_schemas("orders")[0].schema.data
    product = next(f for f in json.loads(latest)["fields"] if f["name"] == "product")
    assert product["aliases"] == ["item"], "Backward accepts the rename because old data resolves by alias"
    back = catalog.alter_table(scope, "orders", [{"op": "renameColumn", "path": ["product"], "newName": "item"}])
    assert back["schema"]["fields"][1]["metadata"]["aliases"] == ["product"]


def test_a_tables_schema_is_its_groups_latest_version(
    catalog: CatalogClient, client: RegistryClient, scope: str
) -> None:
    catalog.create_table(scope, "orders", ORDERS)
    with_qty = catalog.alter_table(scope, "orders", [{"op": "addColumn", "path": ["qty"], "type": "integer"}])
    # Dropping the column again gives the first version's content: the table must say so, and
    # so must the group's latest version, which writers encode with.
    back = catalog.alter_table(scope, "orders", [{"op": "dropColumn", "path": ["qty"]}])
    assert without_field_ids(back["schema"]) == ORDERS
    assert back["schemaVersion"]["id"] != with_qty["schemaVersion"]["id"]
    [latest] = client.latest_schemas("orders")
    expected = back["schemaVersion"]
    assert (latest.version.id, latest.version.version) == (expected["id"], expected["version"])
    assert catalog.get_table(scope, "orders")["schemaVersion"] == back["schemaVersion"]
    # a schema added through the registry API is the table's schema from then on
    current = client.schema_by_id("orders", SchemaId(back["schemaVersion"]["id"]))
    record = json.loads(current.data)
    record["fields"].append({"name": "note", "type": ["null", "string"], "default": None})
    added = client.add_schema("orders", SchemaInfo(current.type, current.format, json.dumps(record).encode()))
    table = catalog.get_table(scope, "orders")
    assert table["schemaVersion"]["version"] == added.version
    assert [f["name"] for f in table["schema"]["fields"]] == ["id", "item", "price", "note"]


def test_a_tables_group_is_deleted_by_dropping_the_table(
    catalog: CatalogClient, client: RegistryClient, scope: str
) -> None:
    catalog.create_table(scope, "orders", ORDERS)
    with pytest.raises(Conflict, match="DROP TABLE"):
        client.delete_group("orders")
    assert catalog.get_table(scope, "orders")["schema"] == ORDERS, "the refused delete changed nothing"
    catalog.drop_table(scope, "orders")
    with pytest.raises(GroupNotFound):
        client.get_group("orders")


@pytest.mark.parametrize(
    ("schema", "partitioning", "says"),
    [
        ({"type": "struct", "fields": [col("id", "long"), "id"]}, None,
         r"at \$\.schema\.fields\[1\]: Input should be a valid dictionary"),
        (struct({"type": "long", "nullable": True}), None, r"at \$\.schema\.fields\[0\]\.name: Field required"),
        (struct(col("id", {"type": "array", "elementType": 7, "containsNull": True})), None,
         r"at \$\.schema\.fields\[0\]\.type\.elementType: a Spark type is a name"),
        (struct(col("id", "long"), col("n", "decimal(40,2)")), None,
         r"at \$\.schema\.fields\[1\]\.type: decimal precision must be between 1 and 38"),
        (struct(col("id", "long"), col("id", "string")), None, r"at \$\.schema: duplicate field name 'id'"),
        # the case the fuzzer found answering 500: a malformed schema and a partitioning
        (struct({"type": {"type": "struct"}, "nullable": True, "metadata": {}}), "bucket(4, a)", r"\$\.schema\.fields"),
        (struct(col("id", "long")), "days(ts)", "no column ts in the table"),
    ],
)
def test_a_malformed_table_schema_is_a_400_naming_the_field(
    server_url: str, catalog: CatalogClient, scope: str, schema: dict[str, Any], partitioning: str | None, says: str
) -> None:
    body = {"tableName": "t", "schema": schema, "partitioning": partitioning}
    response = requests.post(f"{server_url}/v1/scopes/{scope}/tables", json=body)
    assert response.status_code == 400, response.text
    assert re.search(says, response.json()["error"]["message"]), response.text
    assert catalog.list_streams(scope) == [], "nothing is left behind"


def test_the_client_takes_the_wire_models_of_table_changes(catalog: CatalogClient, scope: str) -> None:
    catalog.create_table(scope, "orders", ORDERS)
    table = catalog.alter_table(scope, "orders", [
        catalog_wire.AddColumn(op="addColumn", path=["note"], type="string", comment="free text"),
        {"op": "renameColumn", "path": ["item"], "newName": "product"},
        catalog_wire.SetComment(op="setComment", comment="renamed"),
    ])
    assert [f["name"] for f in table["schema"]["fields"]] == ["id", "product", "price", "note"]
    assert (table["schema"]["fields"][3]["metadata"]["comment"], table["comment"]) == ("free text", "renamed")
    with pytest.raises(BadRequest, match=r"at \$\.changes\[0\]\.type: unknown type 'text'"):
        catalog.alter_table(scope, "orders", [{"op": "addColumn", "path": ["x"], "type": "text"}])
