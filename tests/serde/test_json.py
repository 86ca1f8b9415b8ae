"""JSON events: round trips, and validation against the JSON Schema on write."""

from __future__ import annotations

import json

import pytest

from registry.client import RegistryClient
from registry.serde import Deserializer, SerdeError, Serializer
from tests.serde.schemas import CODECS, new_group, person_schema

ADA = {"id": 1, "name": "Ada", "address": {"zip": "75001"}, "tags": ["math", "é"]}


@pytest.mark.parametrize("codec", CODECS)
def test_records_round_trip_under_each_codec(client: RegistryClient, codec: str) -> None:
    group = new_group(client, "people", "Json")
    serializer = Serializer(client, group, person_schema(), codec, validate=True)
    event = serializer.serialize(ADA)
    assert Deserializer(client, group).deserialize(event) == ADA
    if not codec:
        assert json.loads(event[5:]) == ADA


@pytest.mark.parametrize(
    ("record", "where"),
    [
        ({"id": 1, "name": "Ada", "address": {"zip": 75001}}, r"at \$\.address\.zip: 75001 is not of type 'string'"),
        ({"id": 1, "name": "Ada", "tags": ["ok", 3]}, r"at \$\.tags\[1\]: 3 is not of type 'string'"),
        ({"id": 1}, r"at \$: 'name' is a required property"),
    ],
)
def test_validation_refuses_bad_records_naming_the_path(client: RegistryClient, record: object, where: str) -> None:
    group = new_group(client, "people", "Json")
    with pytest.raises(SerdeError, match=where):
        Serializer(client, group, person_schema(), validate=True).serialize(record)


def test_without_validation_any_json_value_is_written(client: RegistryClient) -> None:
    group = new_group(client, "people", "Json")
    event = Serializer(client, group, person_schema()).serialize({"id": "not checked"})
    assert Deserializer(client, group).deserialize(event) == {"id": "not checked"}


def test_values_json_cannot_hold_are_refused(client: RegistryClient) -> None:
    group = new_group(client, "people", "Json")
    with pytest.raises(SerdeError, match="is not JSON"):
        Serializer(client, group, person_schema()).serialize({"id": 1, "name": {1, 2}})
    with pytest.raises(SerdeError, match="is not JSON"):
        Serializer(client, group, person_schema()).serialize({"id": float("nan"), "name": "x"})
