"""Events appended to and read from a buffer in place: the same bytes and records as one event at a time."""

from __future__ import annotations

import struct

import pytest

from registry.client import RegistryClient
from registry.serde import Deserializer, SerdeError, Serializer
from tests.registry.helpers import avro_record, field
from tests.serde.schemas import CODECS, USER_V1, USER_V2, new_group, user

_LENGTH = struct.Struct(">I")


def framed(events: list[bytes]) -> tuple[bytes, list[int]]:
    """``events`` laid out as an event chunk's body, after some leading bytes, and where each frame starts."""
    data, offsets = bytearray(b"HEAD"), []
    for event in events:
        offsets.append(len(data))
        data += _LENGTH.pack(len(event)) + event
    return bytes(data), offsets


@pytest.mark.parametrize("codec", CODECS)
def test_events_appended_in_place_are_what_serialize_returns(client: RegistryClient, codec: str) -> None:
    serializer = Serializer(client, new_group(client, "users"), USER_V1, codec)
    in_place = serializer.in_place()
    if codec:  # a codec transforms the whole payload: no appending in place
        assert in_place is None
        return
    assert in_place is not None
    out = bytearray(b"x")
    for i in range(5):
        out += in_place.head
        in_place.function(out, user(i), *in_place.arguments)
    assert bytes(out) == b"x" + b"".join(serializer.serialize(user(i)) for i in range(5))


def test_a_record_that_does_not_fit_fails_as_serialize_does(client: RegistryClient) -> None:
    serializer = Serializer(client, new_group(client, "users"), USER_V1)
    in_place = serializer.in_place()
    assert in_place is not None
    bad = {"id": "not a number", "name": "x", "visits": 1}
    with pytest.raises(SerdeError) as alone:
        serializer.serialize(bad)
    with pytest.raises((ValueError, TypeError)) as raised:  # fastavro's own error
        in_place.function(bytearray(), bad, *in_place.arguments)
    failure = in_place.failure(raised.value)
    assert isinstance(failure, SerdeError)
    assert str(failure) == str(alone.value)
    assert in_place.failure(KeyboardInterrupt()) is None


def test_a_validating_serializer_does_not_append_in_place(client: RegistryClient) -> None:
    assert Serializer(client, new_group(client, "users"), USER_V1, validate=True).in_place() is None


@pytest.mark.parametrize("codec", CODECS)
def test_framed_events_read_as_one_at_a_time(client: RegistryClient, codec: str) -> None:
    group = new_group(client, "users")
    old, new = Serializer(client, group, USER_V1, codec), Serializer(client, group, USER_V2)
    newer = {"id": 7, "name": "n", "visits": 2**40, "email": "n@example.com", "score": 0.5}
    events = [old.serialize(user(1)), new.serialize(newer), old.serialize(user(2)), new.serialize(newer)]
    data, offsets = framed(events)
    for reader in (None, USER_V2):
        expected = list(Deserializer(client, group, reader).deserialize_many(events))
        assert list(Deserializer(client, group, reader).deserialize_framed(data, offsets)) == expected
        again = Deserializer(client, group, reader)
        assert [again.deserialize(e) for e in events] == list(again.deserialize_framed(data, offsets))


def test_a_payload_cut_short_inside_its_frame_is_a_decode_error(client: RegistryClient) -> None:
    group = new_group(client, "users")
    serializer = Serializer(client, group, USER_V1)
    whole, cut = serializer.serialize(user(1)), serializer.serialize(user(2))[:-3]
    # The cut event's record would run on into the next frame: that is an error, as it is alone.
    data, offsets = framed([whole, cut, whole])
    deserializer = Deserializer(client, group)
    with pytest.raises(SerdeError, match=f"cannot decode event with encoding id {serializer.encoding_id}"):
        list(deserializer.deserialize_framed(data, offsets))
    with pytest.raises(SerdeError, match=f"cannot decode event with encoding id {serializer.encoding_id}"):
        deserializer.deserialize(cut)


def test_events_too_short_for_a_header_are_refused_as_alone(client: RegistryClient) -> None:
    group = new_group(client, "users")
    event = Serializer(client, group, USER_V1).serialize(user(1))
    deserializer = Deserializer(client, group)
    for bad in (b"\x01\x00", event[:4]):
        data, offsets = framed([event, bad])
        with pytest.raises(SerdeError, match="shorter than the 5-byte header"):
            list(deserializer.deserialize_framed(data, offsets))


def test_an_unknown_protocol_version_is_refused_as_alone(client: RegistryClient) -> None:
    group = new_group(client, "users")
    event = Serializer(client, group, USER_V1).serialize(user(1))
    data, offsets = framed([event, b"\x02" + event[1:]])
    with pytest.raises(SerdeError, match="protocol version 0x02"):
        list(Deserializer(client, group).deserialize_framed(data, offsets))


def test_a_reader_schema_that_cannot_read_a_version_fails_as_alone(client: RegistryClient) -> None:
    group = new_group(client, "users")
    event = Serializer(client, group, USER_V1).serialize(user(1))
    other = avro_record("User", field("id", "string"), namespace="example")
    data, offsets = framed([event])
    with pytest.raises(SerdeError, match="cannot read events with encoding id"):
        list(Deserializer(client, group, other).deserialize_framed(data, offsets))
