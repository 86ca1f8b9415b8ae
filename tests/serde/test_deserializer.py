"""Resolving encoding ids: unknown ids, caching, codecs a reader lacks, corrupt payloads."""

from __future__ import annotations

import struct

import pytest

from registry.client import RegistryClient, schema_info
from registry.ids import CodecName, EncodingId
from registry.model import EncodingInfo
from registry.serde import Codec, CodecRegistry, Deserializer, SerdeError, Serializer, UnknownEncoding
from registry.serde.codecs import DEFAULT_CODECS
from tests.registry.helpers import avro_record, field, group
from tests.serde.schemas import USER_V1, USER_V2, new_group, user


class XorCodec(Codec):
    """A stand-in for an encryption codec a user plugs in."""

    name = CodecName("application/x-test-xor")

    def encode(self, data: bytes) -> bytes:
        return bytes(b ^ 0x5A for b in data)

    decode = encode


def test_an_unknown_encoding_id_is_a_clear_error(client: RegistryClient) -> None:
    group = new_group(client, "users")
    Serializer(client, group, USER_V1).serialize(user(1))
    event = b"\x01" + struct.pack(">i", 2**31 - 1) + b"\x02"
    with pytest.raises(UnknownEncoding, match=rf"encoding id {2**31 - 1}, unknown to group 'users'"):
        Deserializer(client, group).deserialize(event)


def test_each_encoding_id_is_resolved_once(client: RegistryClient, monkeypatch: pytest.MonkeyPatch) -> None:
    group = new_group(client, "users")
    one, two = Serializer(client, group, USER_V1), Serializer(client, group, USER_V2, "application/x-gzip")
    v2 = {**user(0), "email": "e", "score": None}
    events = [one.serialize(user(i)) if i % 2 == 0 else two.serialize({**v2, "id": i}) for i in range(40)]
    asked: list[EncodingId] = []
    resolve = client.encoding_info

    def counting(group_name: str, encoding: EncodingId) -> EncodingInfo:
        asked.append(encoding)
        return resolve(group_name, encoding)

    monkeypatch.setattr(client, "encoding_info", counting)
    deserializer = Deserializer(client, group)
    records = list(deserializer.deserialize_many(events)) + [deserializer.deserialize(e) for e in events]
    assert [r["id"] for r in records] == list(range(40)) * 2
    assert sorted(asked) == sorted([one.encoding_id, two.encoding_id])


def test_a_reader_needs_the_codec_the_writer_used(client: RegistryClient) -> None:
    group = new_group(client, "users")
    codecs = CodecRegistry((XorCodec(),))
    for codec in (DEFAULT_CODECS.get(name) for name in DEFAULT_CODECS.names()):
        codecs.register(codec)
    event = Serializer(client, group, USER_V1, XorCodec()).serialize(user(9))
    assert event[5:] == XorCodec().encode(Serializer(client, group, USER_V1).serialize(user(9))[5:])
    with pytest.raises(SerdeError, match="no codec for codec type 'application/x-test-xor'"):
        Deserializer(client, group).deserialize(event)
    assert Deserializer(client, group, codecs=codecs).deserialize(event) == user(9)


@pytest.mark.parametrize("codec", ["application/x-gzip", "application/x-snappy-framed", "application/x-zstd"])
def test_a_payload_the_codec_cannot_undo_fails_clearly(client: RegistryClient, codec: str) -> None:
    group = new_group(client, "users")
    event = Serializer(client, group, USER_V1, codec).serialize(user(1))
    corrupt = event[:5] + b"\x00garbage" + event[5:]
    with pytest.raises(SerdeError, match=rf"cannot decode event with encoding id \d+ .*codec {codec}"):
        Deserializer(client, group).deserialize(corrupt)


def test_encoding_info_of_an_event(client: RegistryClient) -> None:
    group = new_group(client, "users")
    serializer = Serializer(client, group, USER_V2, "application/x-zstd")
    info = Deserializer(client, group).encoding_info(serializer.serialize({**user(1), "email": "e", "score": 1.0}))
    expected = (serializer.encoding_id, serializer.version, "application/x-zstd")
    assert (info.id, info.version, info.codec.name) == expected


def test_formats_without_a_serializer_are_refused(client: RegistryClient) -> None:
    with pytest.raises(SerdeError, match="no serializer for serialization format 'Any'"):
        Serializer(client, "g", schema_info("Any", b"opaque", "blob"))



def test_one_stream_may_mix_types_versions_and_codecs(client: RegistryClient) -> None:
    client.create_group("mixed", group("Avro", "Backward", multiple=True))
    account = avro_record("Account", field("iban", "string"), namespace="test.serde")
    writers = [
        Serializer(client, "mixed", USER_V1),
        Serializer(client, "mixed", account, "application/x-snappy-framed"),
        Serializer(client, "mixed", USER_V2, "application/x-gzip"),
    ]
    records = [user(1), {"iban": "FR76"}, {**user(2), "email": "e", "score": 2.5}]
    events = [w.serialize(r) for w, r in zip(writers, records, strict=True)]
    assert len({w.encoding_id for w in writers}) == 3
    assert list(Deserializer(client, "mixed").deserialize_many(events)) == records
