"""The event header: its exact bytes, and events whose header cannot be read."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registry.client import RegistryClient
from registry.errors import BadRequest
from registry.serde import Deserializer, SerdeError, Serializer, decode_header, encode_header
from tests.serde.schemas import USER_V1, new_group, user


@given(st.integers(min_value=0, max_value=2**31 - 1))
def test_header_round_trips_every_encoding_id(encoding_id: int) -> None:
    header = encode_header(encoding_id)
    assert header == bytes([1]) + struct.pack(">i", encoding_id)
    assert decode_header(header + b"payload") == encoding_id


@pytest.mark.parametrize("encoding_id", [-1, 2**31])
def test_ids_outside_int32_are_refused(encoding_id: int) -> None:
    with pytest.raises(SerdeError, match="int32"):
        encode_header(encoding_id)


def test_serde_errors_are_bad_requests() -> None:
    assert issubclass(SerdeError, BadRequest)


def test_events_carry_protocol_byte_then_encoding_id_big_endian(client: RegistryClient) -> None:
    group = new_group(client, "users")
    serializer = Serializer(client, group, USER_V1)
    event = serializer.serialize(user(1))
    assert event[0] == 1
    assert event[1:5] == serializer.encoding_id.to_bytes(4, "big")
    info = client.encoding_info(group, serializer.encoding_id)
    assert info.version == serializer.version
    assert info.schema.type == "test.serde.User"
    assert info.codec.name == ""


@pytest.mark.parametrize(
    ("event", "complaint"),
    [
        (b"", "shorter than the 5-byte header"),
        (b"\x01\x00\x00", "shorter than the 5-byte header"),
        # 0x00 is Confluent's magic byte, read as Confluent framing (test_confluent_framing.py)
        (b"\x07\x00\x00\x00\x01\x02", "protocol version 0x07"),
    ],
)
def test_unreadable_headers_are_refused(client: RegistryClient, event: bytes, complaint: str) -> None:
    group = new_group(client, "users")
    with pytest.raises(SerdeError, match=complaint):
        Deserializer(client, group).deserialize(event)


def test_protocol_byte_is_checked_even_for_a_known_encoding_id(client: RegistryClient) -> None:
    group = new_group(client, "users")
    event = Serializer(client, group, USER_V1).serialize(user(1))
    deserializer = Deserializer(client, group)
    assert deserializer.deserialize(event) == user(1)
    with pytest.raises(SerdeError, match="protocol version 0x02"):
        deserializer.deserialize(b"\x02" + event[1:])
    with pytest.raises(SerdeError, match="protocol version 0x02"):
        list(deserializer.deserialize_many([event, b"\x02" + event[1:]]))
