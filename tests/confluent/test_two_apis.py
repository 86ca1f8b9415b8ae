"""One storage, two APIs: what the Pravega API registers the Confluent API serves, with the same
ids and policies, and the other way round; a backup keeps both views."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import requests
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient

from catalog_api.client import CatalogClient
from catalog_api.server import backup, migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from registry.client import RegistryClient, schema_info
from registry.db import make_engine
from registry.ids import SchemaId
from registry.model import Compatibility
from tests.confluent.helpers import Raw, avro, enc
from tests.conftest import BACKENDS, new_database
from tests.registry.helpers import avro_record, field, group
from tests.support.net import serve_in_thread


def test_pravega_registrations_are_confluent_versions(
    server_url: str, sr: SchemaRegistryClient, raw: Raw, ctx: str
) -> None:
    pravega = RegistryClient(server_url, ctx)
    pravega.create_group("orders", group(policy="Backward"))
    v0 = pravega.add_schema("orders", avro_record("Order", field("id", "string"), namespace="shop"))
    v1 = pravega.add_schema(
        "orders", avro_record("Order", field("id", "string"), field("n", "int", default=0), namespace="shop")
    )
    subject = f":.{ctx}:orders"
    assert sr.get_versions(subject) == [1, 2]
    first, second = sr.get_version(subject, 1), sr.get_version(subject, 2)
    assert (first.schema_id, second.schema_id) == (v0.id, v1.id)
    assert json.loads(sr.get_schema(v0.id).schema_str)["name"] == "Order"
    config = raw.ok("GET", f"/config/{enc(subject)}", defaultToGlobal="true")
    assert config == {"compatibilityLevel": "BACKWARD"}
    # a Pravega delete is a Confluent soft delete
    pravega.delete_by_id("orders", SchemaId(v0.id))
    assert sr.get_versions(subject) == [2]
    assert sr.get_versions(subject, deleted=True) == [1, 2]


def test_confluent_registrations_are_pravega_versions(server_url: str, sr: SchemaRegistryClient, ctx: str) -> None:
    subject = f":.{ctx}:users"
    first = sr.register_schema(subject, Schema(avro("User", ("name", "string"))))
    optional = {"name": "a", "type": ["null", "int"], "default": None}
    second = sr.register_schema(subject, Schema(avro("User", ("name", "string"), optional)))
    pravega = RegistryClient(server_url, ctx)
    versions = pravega.versions("users")
    assert [(v.version.type, v.version.version, v.version.id) for v in versions] == [
        ("acme.User", 0, first),
        ("acme.User", 1, second),
    ]
    assert pravega.schema_by_id("users", SchemaId(first)).data == avro("User", ("name", "string")).encode()
    assert pravega.get_group("users").compatibility.policy == "Backward"
    # identical content through the other API: the same id
    pravega.create_group("copy", group())
    assert pravega.add_schema("copy", schema_info("Avro", avro("User", ("name", "string")))).id == first


def test_policies_set_through_one_api_are_seen_by_the_other(server_url: str, raw: Raw, ctx: str) -> None:
    pravega = RegistryClient(server_url, ctx)
    pravega.create_group("g", group(policy="Backward"))
    pravega.add_schema("g", avro_record("R", field("a", "string")))
    subject = enc(f":.{ctx}:g")
    pravega.update_compatibility("g", Compatibility.of("Forward"))
    assert raw.ok("GET", f"/config/{subject}") == {"compatibilityLevel": "FORWARD"}
    raw.ok("PUT", f"/config/{subject}", {"compatibility": "FULL_TRANSITIVE"})
    assert pravega.get_group("g").compatibility.policy == "FullTransitive"
    raw.ok("PUT", f"/config/{subject}", {"compatibilityLevel": "NONE"})
    assert pravega.get_group("g").compatibility.policy == "AllowAny"
    # the Pravega API checks what the Confluent level says
    pravega.update_compatibility("g", Compatibility.of("DenyAll"))
    assert raw.ok("GET", f"/config/{subject}") == {"compatibilityLevel": "FULL_TRANSITIVE"}
    code = raw.error("POST", f"/subjects/{subject}/versions", {"schema": avro("R", ("b", "int"), namespace="")})[1]
    assert code == 409
    # a context level reaches the groups that follow it, not those with a level of their own
    raw.ok("POST", f"/subjects/{enc(f':.{ctx}:follower')}/versions", {"schema": avro("F", ("x", "int"))})
    raw.ok("PUT", f"/config/{enc(f':.{ctx}:')}", {"compatibility": "FORWARD_TRANSITIVE"})
    assert pravega.get_group("follower").compatibility.policy == "ForwardTransitive"
    assert pravega.get_group("g").compatibility.policy == "DenyAll"


def test_references_in_the_pravega_api(server_url: str, sr: SchemaRegistryClient, ctx: str) -> None:
    address = avro("Address", ("street", "string"))
    sr.register_schema(f":.{ctx}:address", Schema(address))
    order = json.dumps({"type": "record", "name": "Order", "namespace": "acme",
                        "fields": [{"name": "to", "type": "acme.Address"}]})
    reference = SchemaReference("acme.Address", f":.{ctx}:address", 1)
    order_id = sr.register_schema(f":.{ctx}:orders", Schema(order, references=[reference]))
    # Pravega clients get a self-contained schema (the referenced type written out), and the
    # references as a property of the version
    stored = RegistryClient(server_url, ctx).schema_by_id("orders", SchemaId(order_id))
    resolved = json.loads(stored.data)
    assert resolved["fields"][0]["type"]["name"] == "Address"
    assert json.loads(stored.properties["streamcat.references"]) == [
        {"name": "acme.Address", "subject": "address", "version": 1}  # a subject of the same context
    ]
    # the Confluent API answers the schema as registered, or resolved
    assert sr.get_schema(order_id).schema_str == order
    answer = requests.get(f"{server_url}/schemas/ids/{order_id}", params={"format": "resolved"}, timeout=10).json()
    assert json.loads(answer["schema"]) == resolved


def _populate(url: str) -> list[str]:
    """Fill both APIs; the GET paths whose answers a restore must keep."""
    client = SchemaRegistryClient({"url": url})
    raw = Raw(url)
    client.register_schema("users-value", Schema(avro("User", ("name", "string"))))
    with_default = {"name": "n", "type": "int", "default": 0}
    client.register_schema("users-value", Schema(avro("User", ("name", "string"), with_default)))
    client.set_compatibility("users-value", "FULL")
    client.set_compatibility("free", "NONE")
    for i in range(3):
        client.register_schema("free", Schema(avro("F", (f"f{i}", "int"))))
    client.delete_version("free", 2)
    client.delete_version("free", 2, permanent=True)  # pins version 3
    client.update_mode("free", "READONLY")
    client.register_schema(":.ctx:address", Schema(avro("Address", ("street", "string"))))
    order = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "to", "type": "acme.Address"}]})
    order_id = client.register_schema(
        ":.ctx:orders", Schema(order, references=[SchemaReference("acme.Address", "address", 1)])
    )
    raw.ok("PUT", "/config/:.ctx:", {"compatibility": "FORWARD", "normalize": True})
    pravega = RegistryClient(url, "ctx")
    pravega.create_group("pravega", group("Json", "AllowAny"))
    pravega.add_schema("pravega", schema_info("Json", '{"type": "object"}', "Doc"))
    return [
        "/subjects?deleted=true",
        "/subjects/users-value/versions",
        "/subjects/users-value/versions/latest",
        "/config/users-value",
        "/subjects/free/versions",
        "/subjects/free/versions/3",
        "/mode/free",
        f"/schemas/ids/{order_id}",
        "/subjects/:.ctx:address/versions/1/referencedby",
        "/config/:.ctx:",
        "/schemas?deleted=true",
        "/contexts",
        "/v1/groups?namespace=ctx",
        "/v1/groups/orders/history?namespace=ctx",
        "/v1/groups/users-value/schemas/versions",
    ]


@pytest.mark.parametrize("kind", BACKENDS)
def test_backup_and_restore_keep_both_views(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    source, target = (new_database(kind, tmp_path, request) for _ in range(2))
    for url in (source, target):
        migrate.upgrade(url)
    with serve_in_thread(create_app(Settings(database_url=source, warehouse=str(tmp_path)))) as url:
        paths = _populate(url)
        before = {p: requests.get(url + p, timeout=10).json() for p in paths}
    out = io.StringIO()
    backup.backup(make_engine(source), out)
    counts = backup.restore(make_engine(target), io.StringIO(out.getvalue()))
    assert counts["subject_version_pins"] == 1
    assert counts["confluent_configs"] >= 3
    assert counts["schema_references"] == 1
    assert counts["confluent_schemas"] == 1
    with serve_in_thread(create_app(Settings(database_url=target, warehouse=str(tmp_path)))) as url:
        after = {p: requests.get(url + p, timeout=10).json() for p in paths}
        assert after == before
        # ids keep growing past the restored ones
        fresh = SchemaRegistryClient({"url": url}).register_schema("new", Schema(avro("N", ("x", "int"))))
        assert fresh > max(v["id"] for v in before["/schemas?deleted=true"])


def test_catalog_tables_are_subjects_deleted_only_by_their_owner(server_url: str, raw: Raw, ctx: str) -> None:
    catalog = CatalogClient(server_url)
    catalog.create_scope(ctx)
    columns = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}]}
    catalog.create_table(ctx, "orders", columns)
    subject = enc(f":.{ctx}:orders")
    assert raw.ok("GET", f"/subjects/{subject}/versions") == [1]
    assert raw.ok("GET", "/subjects", subjectPrefix=f":.{ctx}:") == [f":.{ctx}:orders"]
    status, code, message = raw.error("DELETE", f"/subjects/{subject}")
    assert (status, code) == (422, 42205)
    assert "DROP TABLE" in message
