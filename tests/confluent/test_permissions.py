"""Who may call the Confluent API: permissions on the subject's group, as grants give them."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from catalog_api.server.config import Settings
from tests.confluent.helpers import avro
from tests.support.auth import Api, add_user, auth_server, migrated


def test_grants_on_namespaces_and_groups_reach_subjects(tmp_path: Path) -> None:
    url = migrated(f"sqlite:///{tmp_path / 'auth.db'}")
    add_user(url, "root", "root-password", "admin")
    add_user(url, "ann", "ann-password")  # no role: grants only
    settings = Settings(database_url=url, warehouse=str(tmp_path), auth=("basic",))
    with auth_server(settings) as base:
        admin = Api(base, auth=("root", "root-password"))
        for permission, resource in (("write", "namespace:team"), ("read", "group:/shared")):
            admin.ok("POST", "/v1/admin/grants", json={"principal": "ann", "permission": permission,
                                                       "resource": resource})
        root = SchemaRegistryClient({"url": base, "basic.auth.user.info": "root:root-password"})
        secret = root.register_schema(":.other:secret", Schema(avro("Secret", ("s", "string"))))
        shared = root.register_schema("shared", Schema(avro("Shared", ("x", "int"))))

        ann = SchemaRegistryClient({"url": base, "basic.auth.user.info": "ann:ann-password"})
        mine = ann.register_schema(":.team:orders", Schema(avro("Order", ("id", "string"))))
        assert ann.get_latest_version(":.team:orders").schema_id == mine
        assert ann.get_version("shared", 1).schema_id == shared
        with pytest.raises(SchemaRegistryError) as refused:
            ann.register_schema("shared", Schema(avro("Shared", ("x", "int"), ("y", ["null", "int"]))))
        assert (refused.value.http_status_code, refused.value.error_code) == (403, 403)
        with pytest.raises(SchemaRegistryError):
            ann.get_latest_version(":.other:secret")
        # listings and ids show what she may read, and nothing else
        assert sorted(ann.get_subjects()) == sorted([":.team:orders", "shared"])
        listed = Api(base, auth=("ann", "ann-password")).ok("GET", "/schemas")
        assert {item["subject"] for item in listed} == {":.team:orders", "shared"}
        assert ann.get_contexts() == [".", ".team"]
        assert ann.get_schema(shared).schema_str == avro("Shared", ("x", "int"))
        with pytest.raises(SchemaRegistryError) as hidden:
            ann.get_schema(secret)
        assert hidden.value.error_code == 40403
        # config and deletes need admin: a context's on its namespace, the registry's everywhere
        with pytest.raises(SchemaRegistryError):
            ann.delete_subject(":.team:orders")
        with pytest.raises(SchemaRegistryError):
            ann.set_compatibility(":.team:orders", "NONE")
        with pytest.raises(SchemaRegistryError):
            ann.set_compatibility(level="NONE")
        admin.ok("POST", "/v1/admin/grants", json={"principal": "ann", "permission": "admin",
                                                   "resource": "namespace:team"})
        assert ann.set_compatibility(":.team:orders", "NONE") == {"compatibility": "NONE"}
        assert ann.set_compatibility(":.team:", "FULL") == {"compatibility": "FULL"}
        with pytest.raises(SchemaRegistryError):
            ann.set_compatibility(":.:", "NONE")  # the registry's own: admins everywhere only
        assert ann.delete_subject(":.team:orders") == [1]
