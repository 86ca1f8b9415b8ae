"""The reader side: events in, records out, whatever schema version and codec each event names."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any

from google.protobuf.message import Message

from registry.client import RegistryClient
from registry.errors import EncodingNotFound
from registry.formats import get_format
from registry.formats.base import ParsedSchema
from registry.ids import EncodingId
from registry.model import EncodingInfo, SchemaInfo
from registry.serde.base import PAYLOAD_ERRORS, Decode, ReadOptions, record_format
from registry.serde.codecs import DECODE_ERRORS, DEFAULT_CODECS, CodecRegistry, NoCodec
from registry.serde.errors import SerdeError, UnknownEncoding
from registry.serde.wire import HEADER_SIZE, PROTOCOL_VERSION, check_header, encoding_id_of_key

_ERRORS = PAYLOAD_ERRORS + DECODE_ERRORS


def _describe(info: EncodingInfo) -> str:
    codec = info.codec.name or "none"
    return (f"encoding id {info.id} ({info.schema.format.name} {info.version.type} "
            f"version {info.version.version}, codec {codec})")


class Deserializer:
    """Reads events of one group, written with any of its schema versions, types and codecs.

    Each encoding id is resolved through the registry once (the client caches it forever) and
    the decoder built for it is cached too. Records come back under the version they were
    written with, or, given ``reader_schema``, under that schema: for Avro by schema
    resolution (fields the writer lacked get their defaults, promotions apply). A reader
    schema that cannot read a writer version raises SerdeError naming what breaks, when the
    first event of that version arrives. Protobuf events come back as messages of a class
    built from the schema, as instances of ``message_class``, or as dicts (``as_dict``).
    Instances may be shared between threads.
    """

    def __init__(
        self,
        client: RegistryClient,
        group: str,
        reader_schema: SchemaInfo | None = None,
        *,
        as_dict: bool = False,
        message_class: type[Message] | None = None,
        codecs: CodecRegistry | None = None,
    ) -> None:
        self.client = client
        self.group = group
        self.reader_schema = reader_schema
        self.codecs = codecs or DEFAULT_CODECS
        self._options = ReadOptions(as_dict=as_dict, message_class=message_class)
        self._reader: ParsedSchema | None = None
        if reader_schema is not None:
            record_format(reader_schema.format.name)  # fails now for formats without a serializer
            self._reader = get_format(reader_schema.format.name).parse(reader_schema.data, reader_schema.type)
        self._lock = threading.Lock()
        # Keyed by the 4 raw id bytes of the header, which spares decoding them per event.
        self._decoders: dict[bytes, Decode] = {}

    def deserialize(self, event: bytes) -> Any:
        """The record in one event."""
        decode = self._decoders.get(event[1:5])
        if decode is None or event[0] != PROTOCOL_VERSION:
            decode = self._resolve(event)
        try:
            return decode(event[HEADER_SIZE:])
        except _ERRORS as e:
            raise self._decode_error(event, e) from e

    def deserialize_many(self, events: Iterable[bytes]) -> Iterator[Any]:
        """The records of many events, in order."""
        decoders = self._decoders
        for event in events:
            decode = decoders.get(event[1:5])
            if decode is None or event[0] != PROTOCOL_VERSION:
                decode = self._resolve(event)
            try:
                record = decode(event[HEADER_SIZE:])
            except _ERRORS as e:
                raise self._decode_error(event, e) from e
            yield record

    def _decode_error(self, event: bytes, error: Exception) -> SerdeError:
        info = self.encoding_info(event)
        return SerdeError(f"cannot decode event with {_describe(info)}: {error!r}")

    def encoding_info(self, event: bytes) -> EncodingInfo:
        """What the encoding id in an event's header stands for."""
        check_header(event)
        return self._encoding_info(encoding_id_of_key(bytes(event[1:5])))

    def _encoding_info(self, encoding_id: EncodingId) -> EncodingInfo:
        try:
            return self.client.encoding_info(self.group, encoding_id)
        except EncodingNotFound as e:
            raise UnknownEncoding(f"event names encoding id {encoding_id}, unknown to group {self.group!r}: {e}") from e

    def _resolve(self, event: bytes) -> Decode:
        check_header(event)
        key = bytes(event[1:5])
        with self._lock:
            found = self._decoders.get(key)
            if found is None:
                found = self._decoders[key] = self._build(self._encoding_info(encoding_id_of_key(key)))
            return found

    def _build(self, info: EncodingInfo) -> Decode:
        writer_info = info.schema
        fmt = record_format(writer_info.format.name)
        writer = get_format(writer_info.format.name).parse(writer_info.data, writer_info.type)
        reader = self._reader
        if reader is not None:
            self._check_reader(reader, writer, info)
        decode_record = fmt.decoder(writer, reader, self._options)
        codec = self.codecs.get(info.codec.name)
        if isinstance(codec, NoCodec):
            return decode_record
        decompress = codec.decode

        def decode(payload: bytes) -> Any:
            return decode_record(decompress(payload))

        return decode

    def _check_reader(self, reader: ParsedSchema, writer: ParsedSchema, info: EncodingInfo) -> None:
        where = _describe(info)
        if reader.format != writer.format:
            raise SerdeError(f"a {reader.format} reader schema cannot read events with {where}")
        if reader.type_name != writer.type_name:
            raise SerdeError(f"a reader schema of type {reader.type_name} cannot read events with {where}")
        if reader.canonical == writer.canonical:
            return
        reasons = get_format(reader.format).check(reader, writer)
        if reasons:
            raise SerdeError(
                f"the reader schema cannot read events with {where}: " + "; ".join(str(r) for r in reasons)
            )
