"""The writer side: records in, events (header + codec-transformed payload) out."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from registry.client import RegistryClient
from registry.formats import get_format
from registry.formats.base import ParsedSchema
from registry.ids import EncodingId
from registry.model import NO_CODEC, SchemaInfo, VersionInfo
from registry.serde.base import Encode, InPlace
from registry.serde.codecs import DEFAULT_CODECS, Codec, CodecRegistry, NoCodec
from registry.serde.errors import SerdeError
from registry.serde.record_formats import record_format
from registry.serde.wire import encode_header


@dataclass(frozen=True)
class _Connection:
    """What a serializer learned from the registry: its encoder with the header, version and encoding id."""

    write: Encode
    in_place: InPlace | None
    version: VersionInfo
    encoding_id: EncodingId


class Serializer:
    """Serializes records of one schema into events of one group.

    On first use it registers the schema in the group (or, with ``register=False``, only
    looks its version up), registers the codec type, and gets the encoding id of
    (version, codec) once; every later call only encodes. Records are dicts for Avro and
    JSON, and messages or dicts for Protobuf. With ``validate=True`` records are checked
    against the schema before they are written (Avro and JSON Schema), and a SerdeError
    names the offending path. Instances may be shared between threads.
    """

    def __init__(
        self,
        client: RegistryClient,
        group: str,
        schema: SchemaInfo,
        codec: Codec | str = NO_CODEC,
        *,
        register: bool = True,
        validate: bool = False,
        codecs: CodecRegistry | None = None,
    ) -> None:
        self.client = client
        self.group = group
        self.schema = schema
        self.codec = (codecs or DEFAULT_CODECS).resolve(codec)
        self.register = register
        self.validate = validate
        self._format = record_format(schema.format.name)
        # Parsed now, so that a bad schema fails here rather than at the first record.
        self._parsed: ParsedSchema = get_format(schema.format.name).parse(schema.data, schema.type)
        self._lock = threading.Lock()
        self._write: Encode | None = None
        self._connection: _Connection | None = None

    def _connect(self) -> Encode:
        return self._connected().write

    def _connected(self) -> _Connection:
        """Register (or find) the schema and its encoding id once; every later call returns that."""
        with self._lock:
            if self._connection is not None:
                return self._connection
            client, group = self.client, self.group
            if self.codec.name:
                client.add_codec_type(group, self.codec.codec_type)
            if self.register:
                version = client.add_schema(group, self.schema)
            else:
                version = client.find_version(group, self.schema)
            encoding_id = client.encoding_id(group, version, self.codec.name)
            header = encode_header(encoding_id)
            in_place = None
            if isinstance(self.codec, NoCodec):
                # The header goes straight into the encoder's output: no second copy of the event.
                write = self._format.encoder(self._parsed, validate=self.validate, prefix=header)
                if not self.validate:
                    in_place = self._format.in_place(self._parsed, prefix=header)
            else:
                encode = self._format.encoder(self._parsed, validate=self.validate, prefix=b"")
                compress = self.codec.encode

                def write(record: Any) -> bytes:
                    return header + compress(encode(record))

            self._connection = _Connection(write, in_place, version, encoding_id)
            self._write = write
            return self._connection

    def serialize(self, record: Any) -> bytes:
        """One event: the 5-byte header, then the record serialized and transformed by the codec."""
        write = self._write
        if write is None:
            write = self._connect()
        return write(record)

    def in_place(self) -> InPlace | None:
        """How to append this serializer's events (what :meth:`serialize` returns) straight to a buffer
        from a loop of one's own, for writers that lay events out in a buffer, without a bytes object
        per event; None when the format, a codec or ``validate`` rules it out (use :meth:`serialize`).
        Registers the schema on first use, as :meth:`serialize` does."""
        return (self._connection or self._connected()).in_place

    def serialize_many(self, records: Iterable[Any]) -> list[bytes]:
        """Events for every record of an iterable, in order."""
        write = self._write or self._connect()
        return [write(r) for r in records]

    @property
    def version(self) -> VersionInfo:
        """The schema's version in the group (registering it if this serializer has not yet)."""
        return (self._connection or self._connected()).version

    @property
    def encoding_id(self) -> EncodingId:
        """The encoding id written in every event's header."""
        return (self._connection or self._connected()).encoding_id

    @property
    def message_class(self) -> type[Message]:
        """For Protobuf schemas: a message class built from the schema, to create records with."""
        if self._parsed.format != "Protobuf":
            raise SerdeError(f"message_class is for Protobuf schemas; this one is {self._parsed.format}")
        from registry.serde.protobuf import message_class

        return message_class(self._parsed)
