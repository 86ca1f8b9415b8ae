"""The reader side: events in, records out, whatever schema version and codec each event names."""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterable, Iterator, Sequence
from io import BytesIO
from typing import Any

from google.protobuf.message import Message

from registry.client import RegistryClient
from registry.errors import EncodingNotFound
from registry.formats import get_format
from registry.formats.base import ParsedSchema
from registry.ids import EncodingId
from registry.model import EncodingInfo, SchemaInfo
from registry.serde.base import PAYLOAD_ERRORS, Decode, ReadFrom, ReadOptions
from registry.serde.codecs import DECODE_ERRORS, DEFAULT_CODECS, CodecRegistry, NoCodec
from registry.serde.confluent import MAGIC_BYTE, ConfluentReader
from registry.serde.errors import SerdeError, UnknownEncoding
from registry.serde.record_formats import record_format
from registry.serde.wire import HEADER_SIZE, PROTOCOL_VERSION, check_header, encoding_id_of_key

_ERRORS = PAYLOAD_ERRORS + DECODE_ERRORS
#: The start of a framed event: its length, then the header (protocol version, encoding id).
_FRAME = struct.Struct(">IBi")
_LENGTH = struct.Struct(">I")
#: The first byte of Confluent-framed events (Pravega's header starts with 0x01).
_CONFLUENT = bytes([MAGIC_BYTE])


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
    Events in Confluent framing (first byte 0x00, then a global schema id) are read as well,
    under the same rules (:mod:`registry.serde.confluent`). Instances may be shared between threads.
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
        # Readers of records in place, by encoding id: those of formats whose records delimit
        # themselves, written without a codec.
        self._in_place: dict[int, ReadFrom] = {}
        self._confluent: ConfluentReader | None = None

    def deserialize(self, event: bytes) -> Any:
        """The record in one event."""
        decode = self._decoders.get(event[1:5])
        if decode is None or event[0] != PROTOCOL_VERSION:
            if event[:1] == _CONFLUENT:
                return self.confluent.deserialize(event)
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
                if event[:1] == _CONFLUENT:
                    yield self.confluent.deserialize(event)
                    continue
                decode = self._resolve(event)
            try:
                record = decode(event[HEADER_SIZE:])
            except _ERRORS as e:
                raise self._decode_error(event, e) from e
            yield record

    def deserialize_framed(self, data: bytes, offsets: Sequence[int]) -> Iterator[Any]:
        """The records of the events framed in ``data``, in order: each of ``offsets`` is where a frame
        starts, a uint32 big-endian length and then the event, as a stream's event chunks lay them
        out (the caller has checked that every frame lies within ``data``).

        The records of formats that delimit themselves (Avro), written without a codec, are read
        in place, without a bytes object per event; any other event is read as
        :meth:`deserialize` reads it, with the same answers and errors.
        """
        in_place = self._in_place
        stream = BytesIO(data)  # shares the bytes: no copy
        seek, tell = stream.seek, stream.tell
        unpack = _FRAME.unpack_from
        skip = _LENGTH.size + HEADER_SIZE
        for offset in offsets:
            try:
                length, version, encoding = unpack(data, offset)
            except struct.error:  # an event too short for a header, at the end of the data
                length, version, encoding = _LENGTH.unpack_from(data, offset)[0], -1, -1
            end = offset + 4 + length
            read_from = in_place.get(encoding) if version == PROTOCOL_VERSION and length >= HEADER_SIZE else None
            if read_from is None:
                yield self.deserialize(data[offset + 4 : end])
                continue
            seek(offset + skip)
            read, arguments = read_from
            try:
                record = read(stream, *arguments)
            except _ERRORS as e:
                raise self._decode_error(data[offset + 4 : end], e) from e
            if tell() > end:  # it read on into the next frame: the payload was cut short
                raise self._decode_error(data[offset + 4 : end], EOFError("the record runs past the end of its event"))
            yield record

    @property
    def confluent(self) -> ConfluentReader:
        """The reader of this deserializer's Confluent-framed events (schema ids resolved globally)."""
        reader = self._confluent
        if reader is None:
            with self._lock:
                reader = self._confluent
                if reader is None:
                    reader = self._confluent = ConfluentReader(
                        self.client.schema_by_global_id, self._reader, self._options
                    )
        return reader

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
            read_from = fmt.stream_decoder(writer, reader, self._options)
            if read_from is not None:
                self._in_place[info.id] = read_from
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
