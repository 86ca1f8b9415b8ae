"""Groups: create, list with pagination, properties, policy changes, delete, namespaces."""

from __future__ import annotations

import pytest
import requests

from registry.client import RegistryClient
from registry.errors import AlreadyExists, BadRequest, GroupNotFound, WriteConflict
from registry.ids import SchemaId, TypeName, Version
from registry.model import Compatibility, Rule, VersionInfo
from tests.registry.helpers import avro_record, field, group


def test_created_group_reports_its_properties(client: RegistryClient) -> None:
    client.create_group("orders", group("Avro", "FullTransitive", multiple=True, team="payments"))
    props = client.get_group("orders")
    assert props.format.name == "Avro"
    assert props.compatibility.policy == "FullTransitive"
    assert props.allow_multiple_types is True
    assert props.properties == {"team": "payments"}


def test_creating_a_group_twice_conflicts(client: RegistryClient) -> None:
    client.create_group("orders", group())
    with pytest.raises(AlreadyExists):
        client.create_group("orders", group("Json"))
    assert client.get_group("orders").format.name == "Avro"


def test_list_pages_through_every_group_once(client: RegistryClient) -> None:
    names = [f"g{i:02d}" for i in range(23)]
    for name in names:
        client.create_group(name, group())
    listed = [name for name, _ in client.list_groups(page_size=5)]
    assert listed == names


def test_continuation_token_resumes_after_the_last_group(
    server_url: str, client: RegistryClient, namespace: str
) -> None:
    for name in ("a", "b", "c"):
        client.create_group(name, group())
    first = requests.get(f"{server_url}/v1/groups", params={"namespace": namespace, "limit": 2}).json()
    assert list(first["groups"]) == ["a", "b"]
    second = requests.get(
        f"{server_url}/v1/groups",
        params={"namespace": namespace, "limit": 2, "continuationToken": first["continuationToken"]},
    ).json()
    assert list(second["groups"]) == ["c"]


def test_namespaces_keep_groups_apart(server_url: str, namespace: str) -> None:
    one = RegistryClient(server_url, namespace + "a")
    two = RegistryClient(server_url, namespace + "b")
    one.create_group("shared", group("Avro"))
    two.create_group("shared", group("Json"))
    assert one.get_group("shared").format.name == "Avro"
    assert two.get_group("shared").format.name == "Json"
    with pytest.raises(GroupNotFound):
        RegistryClient(server_url, namespace + "c").get_group("shared")


def test_namespace_in_the_path_is_the_namespace_query(server_url: str, client: RegistryClient, namespace: str) -> None:
    client.create_group("orders", group("Protobuf"))
    by_path = requests.get(f"{server_url}/v1/namespace/{namespace}/groups/orders")
    assert by_path.status_code == 200
    assert by_path.json()["serializationFormat"] == {"serializationFormat": "Protobuf"}


def test_compatibility_update_is_compare_and_set(client: RegistryClient) -> None:
    client.create_group("orders", group(policy="Backward"))
    client.update_compatibility("orders", Compatibility.of("Full"), previous=Compatibility.of("Backward"))
    assert client.get_group("orders").compatibility.policy == "Full"
    with pytest.raises(WriteConflict):
        client.update_compatibility("orders", Compatibility.of("AllowAny"), previous=Compatibility.of("Backward"))
    assert client.get_group("orders").compatibility.policy == "Full"


def test_advanced_policy_round_trips(client: RegistryClient) -> None:
    till = VersionInfo(TypeName("User"), Version(1), SchemaId(7))
    policy = Compatibility("Advanced", Rule("till", till), Rule("all"))
    client.create_group("orders", group())
    client.update_compatibility("orders", policy)
    assert client.get_group("orders").compatibility == policy


def test_opaque_formats_take_only_allow_any_or_deny_all(client: RegistryClient) -> None:
    with pytest.raises(BadRequest, match="AllowAny or DenyAll"):
        client.create_group("blobs", group("Any", "Backward"))
    client.create_group("blobs", group("Any", "AllowAny"))
    with pytest.raises(BadRequest):
        client.update_compatibility("blobs", Compatibility.of("Full"))


def test_deleted_group_is_gone_with_its_schemas(client: RegistryClient) -> None:
    client.create_group("orders", group())
    version = client.add_schema("orders", avro_record("User", field("name", "string")))
    client.delete_group("orders")
    with pytest.raises(GroupNotFound):
        client.get_group("orders")
    client.create_group("orders", group())
    assert client.versions("orders") == []
    assert client.add_schema("orders", avro_record("User", field("name", "string"))).version == 0
    assert version.version == 0
    with pytest.raises(GroupNotFound):
        client.delete_group("never-there")
