"""Serializers: records to events in the registry's wire format and back (Pravega's serializers, in Python).

An event is one protocol byte (0x01), the encoding id as a big-endian int32, then the
record serialized under its schema and transformed by the codec::

    serializer = Serializer(client, "orders", schema, codec="application/x-zstd")
    event = serializer.serialize({"id": 1, "amount": 9.5})
    record = Deserializer(client, "orders").deserialize(event)

Confluent framing (byte 0x00, the global schema id, for Protobuf the message indexes, then the
record) is written by :class:`ConfluentSerializer` and read by the same Deserializer.
"""

from __future__ import annotations

from registry.serde.codecs import (
    DEFAULT_CODECS,
    GZIP,
    SNAPPY_FRAMED,
    ZSTD,
    Codec,
    CodecRegistry,
    GzipCodec,
    NoCodec,
    SnappyFramedCodec,
    ZstdCodec,
    default_codecs,
)
from registry.serde.confluent import ConfluentSerializer, UnknownSchema
from registry.serde.deserializer import Deserializer
from registry.serde.errors import SerdeError, UnknownEncoding
from registry.serde.serializer import Serializer
from registry.serde.wire import HEADER_SIZE, PROTOCOL_VERSION, decode_header, encode_header

__all__ = [
    "DEFAULT_CODECS",
    "GZIP",
    "HEADER_SIZE",
    "PROTOCOL_VERSION",
    "SNAPPY_FRAMED",
    "ZSTD",
    "Codec",
    "CodecRegistry",
    "ConfluentSerializer",
    "Deserializer",
    "GzipCodec",
    "NoCodec",
    "SerdeError",
    "Serializer",
    "SnappyFramedCodec",
    "UnknownEncoding",
    "UnknownSchema",
    "ZstdCodec",
    "decode_header",
    "default_codecs",
    "encode_header",
]
