"""Confluent Schema Registry framing: read and write events that carry a global schema id.

```
byte 0      magic byte, 0x00 (the Pravega header's first byte is 0x01: that tells them apart)
bytes 1..4  schema id, int32 big-endian: Streamcat's global schema id (the Confluent API's id)
Protobuf:   the message-index array: a zigzag-varint count, then zigzag-varint indexes naming
            the message inside the schema's file (top-level index, then nested ones);
            the common ``[0]`` is written as the single byte 0x00
bytes ...   payload: the record serialized under the schema (no codec: Confluent has none)
```

Ids are shared with the Pravega API, so a schema registered through either API frames the
same way. :class:`ConfluentSerializer` writes this framing; :class:`registry.serde.Deserializer`
reads it beside the Pravega header (it hands events whose first byte is 0x00 to a
:class:`ConfluentReader`), with the same reader-schema rules.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from registry.errors import NotFound
from registry.formats import get_format
from registry.formats.base import ParsedSchema
from registry.formats.protobuf import well_known_file
from registry.ids import SchemaId, TypeName
from registry.model import SchemaInfo, SerializationFormat
from registry.serde.base import PAYLOAD_ERRORS, Decode, Encode, ReadOptions
from registry.serde.errors import SerdeError
from registry.serde.record_formats import record_format

#: The first byte of a Confluent-framed event.
MAGIC_BYTE = 0x00
#: Magic byte and schema id: the bytes before the payload (before the message indexes for Protobuf).
PREFIX_SIZE = 5
#: Confluent's own bound on the message-index array (its deserializers refuse longer ones).
MAX_MESSAGE_INDEXES = 100_000

_PREFIX = struct.Struct(">bi")
_MAX_ID = 2**31 - 1
#: ``[0]``, the first top-level message, as Confluent writes it: no count, just 0.
_FIRST_MESSAGE = b"\x00"
#: Confluent's ``schemaType`` for each Streamcat format (absent means AVRO).
_SCHEMA_TYPES = {"AVRO": "Avro", "PROTOBUF": "Protobuf", "JSON": "Json"}
_PROTO_TEXT = re.compile(
    r"^\s*(//[^\n]*\n\s*|/\*.*?\*/\s*)*(syntax|edition|package|message|import|option|enum)\b", re.S
)


class UnknownSchema(SerdeError):
    """A Confluent-framed event names a schema id that the registry does not know."""

    code = "UnknownSchema"


# -- the framing ----------------------------------------------------------------------------------


def _zigzag_varint(value: int, out: bytearray) -> None:
    n = (value << 1) ^ (value >> 63)
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def encode_message_indexes(indexes: Sequence[int]) -> bytes:
    """The message-index array of a Protobuf event (``[0]`` is the single byte 0x00)."""
    if not indexes:
        raise SerdeError("a message-index array names at least one message")
    if list(indexes) == [0]:
        return _FIRST_MESSAGE
    out = bytearray()
    _zigzag_varint(len(indexes), out)
    for index in indexes:
        _zigzag_varint(index, out)
    return bytes(out)


def encode_prefix(schema_id: int, message_indexes: Sequence[int] | None = None) -> bytes:
    """The bytes before the payload: magic byte, schema id and, for Protobuf, the message indexes."""
    if not 0 <= schema_id <= _MAX_ID:
        raise SerdeError(f"schema id {schema_id} does not fit the Confluent framing's int32")
    prefix = _PREFIX.pack(MAGIC_BYTE, schema_id)
    return prefix if message_indexes is None else prefix + encode_message_indexes(message_indexes)


def is_confluent(event: bytes | bytearray | memoryview) -> bool:
    """Whether an event starts with the Confluent magic byte rather than the Pravega protocol byte."""
    return len(event) > 0 and event[0] == MAGIC_BYTE


def decode_schema_id(event: bytes | bytearray | memoryview) -> SchemaId:
    """The schema id of a Confluent-framed event (checked)."""
    if len(event) < PREFIX_SIZE:
        raise SerdeError(f"event of {len(event)} bytes is shorter than the {PREFIX_SIZE}-byte Confluent prefix")
    if event[0] != MAGIC_BYTE:
        raise SerdeError(f"event starts with 0x{event[0]:02x}; Confluent framing starts with 0x{MAGIC_BYTE:02x}")
    return SchemaId(_PREFIX.unpack_from(event)[1])


def _read_zigzag(event: bytes | bytearray | memoryview, offset: int) -> tuple[int, int]:
    value = shift = 0
    end = len(event)
    while True:
        if offset >= end:
            raise SerdeError("event ends inside its Protobuf message-index array")
        byte = event[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), offset
        shift += 7
        if shift > 63:
            raise SerdeError("malformed varint in the Protobuf message-index array")


def decode_message_indexes(event: bytes | bytearray | memoryview, offset: int = PREFIX_SIZE) -> tuple[list[int], int]:
    """The message-index array starting at ``offset``, and the offset of the payload after it."""
    count, offset = _read_zigzag(event, offset)
    if count == 0:
        return [0], offset
    if not 0 < count <= MAX_MESSAGE_INDEXES:
        raise SerdeError(f"Protobuf message-index array of invalid length {count}")
    indexes = []
    for _ in range(count):
        index, offset = _read_zigzag(event, offset)
        indexes.append(index)
    return indexes, offset


# -- Protobuf messages by index ---------------------------------------------------------------------


def _file_of(fds: descriptor_pb2.FileDescriptorSet,
             type_name: str) -> tuple[descriptor_pb2.FileDescriptorProto, list[int]]:
    for file in fds.file:
        prefix = f"{file.package}." if file.package else ""
        path = _path_in(list(file.message_type), prefix, type_name)
        if path is not None:
            return file, path
    raise SerdeError(f"message {type_name} is not in its Protobuf schema")


def _path_in(messages: list[descriptor_pb2.DescriptorProto], prefix: str, type_name: str) -> list[int] | None:
    for i, message in enumerate(messages):
        full = f"{prefix}{message.name}"
        if full == type_name:
            return [i]
        if type_name.startswith(full + "."):
            rest = _path_in(list(message.nested_type), full + ".", type_name)
            if rest is not None:
                return [i, *rest]
    return None


def message_indexes(schema: ParsedSchema) -> list[int]:
    """Where the schema's message sits in the file that declares it, as Confluent numbers it."""
    _, path = _file_of(schema.parsed, schema.type_name)
    return path


def message_at(fds: descriptor_pb2.FileDescriptorSet, indexes: Sequence[int]) -> str:
    """The full name of the message that ``indexes`` name in the schema's own file (the set's last)."""
    if not fds.file:
        raise SerdeError("Protobuf schema holds no files")
    file = fds.file[-1]
    name = file.package
    messages = list(file.message_type)
    for index in indexes:
        if not 0 <= index < len(messages):
            raise SerdeError(f"message indexes {list(indexes)} name no message of {file.name}")
        message = messages[index]
        name = f"{name}.{message.name}" if name else message.name
        messages = list(message.nested_type)
    return name


# -- schemas as the Confluent API answers them --------------------------------------------------------

#: Fetches a referenced schema: (subject, version) to the Confluent API's answer, as JSON.
FetchReference = Callable[[str, int], dict[str, Any]]


def schema_from_confluent(body: dict[str, Any], fetch_reference: FetchReference | None = None) -> SchemaInfo:
    """A SchemaInfo from the Confluent API's answer for one schema (``GET /schemas/ids/{id}``).

    Avro and JSON keep their text, typed by the record's full name and the schema's title.
    Protobuf (``.proto`` text, or the base64 FileDescriptorProto that ``?format=serialized``
    answers) becomes a FileDescriptorSet whose last file is the schema's own, typed by its first
    message; an event's message indexes choose the message. Protobuf references are fetched
    with ``fetch_reference``; google/protobuf imports come from the protobuf runtime.
    """
    try:
        kind = str(body.get("schemaType") or "AVRO").upper()
        text = body["schema"]
        references = body.get("references") or []
    except (AttributeError, KeyError) as e:
        raise SerdeError(f"the registry's answer is not a Confluent schema: {e!r}") from None
    if kind not in _SCHEMA_TYPES:
        raise SerdeError(f"schema type {kind} has no serializer here; expected one of {', '.join(_SCHEMA_TYPES)}")
    fmt = SerializationFormat(_SCHEMA_TYPES[kind])
    if kind == "PROTOBUF":
        fds = _descriptor_set(text, references, fetch_reference)
        return SchemaInfo(TypeName(message_at(fds, [0])), fmt, fds.SerializeToString(deterministic=True), {})
    if references:
        raise SerdeError(f"{fmt.name} schemas with references are not supported by the serializers yet")
    type_name = ""
    try:
        document = json.loads(text)
    except ValueError as e:
        raise SerdeError(f"invalid {fmt.name} schema: {e}") from None
    if kind == "AVRO" and isinstance(document, dict):
        name, namespace = document.get("name"), document.get("namespace")
        if isinstance(name, str):
            type_name = name if "." in name or not namespace else f"{namespace}.{name}"
    elif kind == "JSON" and isinstance(document, dict) and isinstance(document.get("title"), str):
        type_name = document["title"]
    return SchemaInfo(TypeName(type_name), fmt, text.encode(), {})


def _descriptor_set(text: str, references: list[dict[str, Any]],
                    fetch_reference: FetchReference | None) -> descriptor_pb2.FileDescriptorSet:
    if _PROTO_TEXT.match(text):
        if references:
            raise SerdeError("Protobuf .proto text with references is not supported; ask for ?format=serialized")
        from registry.formats.protobuf import compile_proto

        return compile_proto(text.encode())  # protoc writes dependencies first, the file itself last
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    main = _file_proto(text, "schema.proto")
    _add_references(references, fetch_reference, files, set())
    fds = descriptor_pb2.FileDescriptorSet()
    for dependency in _with_well_known(main, files):
        fds.file.add().CopyFrom(dependency)
    fds.file.add().CopyFrom(main)
    return fds


def _file_proto(text: str, name: str) -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto()
    try:
        proto.ParseFromString(base64.b64decode(text, validate=True))
    except (ValueError, DecodeError) as e:
        raise SerdeError(f"Protobuf schema is neither .proto text nor a base64 FileDescriptorProto: {e}") from None
    if not proto.name:
        proto.name = name
    return proto


def _add_references(references: list[dict[str, Any]], fetch: FetchReference | None,
                    files: dict[str, descriptor_pb2.FileDescriptorProto], seen: set[str]) -> None:
    for reference in references:
        name = str(reference.get("name", ""))
        if name in seen or name.startswith("google/protobuf/"):
            continue
        seen.add(name)
        if fetch is None:
            raise SerdeError(f"Protobuf schema imports {name}, and no way to fetch references was given")
        answer = fetch(str(reference["subject"]), int(reference["version"]))
        _add_references(answer.get("references") or [], fetch, files, seen)
        files[name] = _file_proto(answer["schema"], name)


def _with_well_known(main: descriptor_pb2.FileDescriptorProto,
                     files: dict[str, descriptor_pb2.FileDescriptorProto]) -> list[descriptor_pb2.FileDescriptorProto]:
    """Every file ``main`` imports, dependencies first; google/protobuf files from the runtime."""
    ordered: list[descriptor_pb2.FileDescriptorProto] = []
    placed: set[str] = set()

    def place(name: str, needed_by: str) -> None:
        if name in placed:
            return
        placed.add(name)
        proto = files.get(name) or _well_known(name, needed_by)
        for dependency in proto.dependency:
            place(dependency, name)
        ordered.append(proto)

    for dependency in main.dependency:
        place(dependency, main.name)
    return ordered


def _well_known(name: str, needed_by: str) -> descriptor_pb2.FileDescriptorProto:
    proto = well_known_file(name)
    if proto is None:
        raise SerdeError(f"Protobuf schema: {needed_by} imports {name}, which the registry did not send")
    return proto


# -- reading --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Writer:
    """What one schema id resolved to: its parsed schema, and for Protobuf a decoder per message."""

    schema_id: SchemaId
    info: SchemaInfo
    parsed: ParsedSchema
    #: Avro and JSON: the decoder of every event with this id. Protobuf: None (see ``by_message``).
    decode: Decode | None
    by_message: dict[bytes, Decode]


class ConfluentReader:
    """Decodes Confluent-framed events under an optional reader schema, as the Deserializer does.

    Each schema id is resolved once through the client's ``schema_by_global_id`` (cached by the
    client forever) and its decoder is cached here; a reader schema is checked against each writer
    schema (and each Protobuf message) when its first event arrives. Shared between threads.
    """

    def __init__(self, resolve: Callable[[SchemaId], SchemaInfo], reader: ParsedSchema | None,
                 options: ReadOptions) -> None:
        self._resolve_schema = resolve
        self._reader = reader
        self._options = options
        self._lock = threading.Lock()
        self._writers: dict[bytes, _Writer] = {}

    def deserialize(self, event: bytes) -> Any:
        """The record in one Confluent-framed event."""
        writer = self._writers.get(event[1:5])
        if writer is None or event[0] != MAGIC_BYTE:
            writer = self._writer(event)
        offset = PREFIX_SIZE
        decode = writer.decode
        if decode is None:
            # Protobuf: the common single-message case is one 0x00 byte after the prefix.
            if event[PREFIX_SIZE:PREFIX_SIZE + 1] == _FIRST_MESSAGE:
                key, offset = _FIRST_MESSAGE, PREFIX_SIZE + 1
            else:
                _, offset = decode_message_indexes(event)
                key = bytes(event[PREFIX_SIZE:offset])
            decode = writer.by_message.get(key) or self._message_decoder(writer, key)
        try:
            return decode(event[offset:])
        except PAYLOAD_ERRORS as e:
            raise SerdeError(f"cannot decode event with {_describe(writer.info, writer.schema_id)}: {e!r}") from e

    def deserialize_many(self, events: Iterable[bytes]) -> Iterable[Any]:
        """The records of many Confluent-framed events, in order."""
        deserialize = self.deserialize
        return (deserialize(e) for e in events)

    def schema(self, event: bytes) -> SchemaInfo:
        """The writer schema a Confluent-framed event names."""
        return self._writer(event).info

    def _writer(self, event: bytes) -> _Writer:
        schema_id = decode_schema_id(event)
        key = bytes(event[1:5])
        with self._lock:
            found = self._writers.get(key)
            if found is not None:
                return found
        try:
            info = self._resolve_schema(schema_id)
        except NotFound as e:
            raise UnknownSchema(f"event names schema id {schema_id}, unknown to the registry: {e}") from e
        fmt = record_format(info.format.name)
        type_name = info.type or (self._reader.type_name if self._reader is not None else info.format.name)
        parsed = get_format(info.format.name).parse(info.data, type_name)
        decode = None
        if parsed.format != "Protobuf":
            if self._reader is not None:
                _check_reader(self._reader, parsed, _describe(info, schema_id))
            decode = fmt.decoder(parsed, self._reader, self._options)
        found = _Writer(schema_id, info, parsed, decode, {})
        with self._lock:
            return self._writers.setdefault(key, found)

    def _message_decoder(self, writer: _Writer, key: bytes) -> Decode:
        indexes, _ = decode_message_indexes(key, 0)
        type_name = message_at(writer.parsed.parsed, indexes)
        # Same descriptors, the message the indexes name.
        parsed = get_format("Protobuf").parse(writer.parsed.data, type_name)
        where = _describe(SchemaInfo(TypeName(type_name), writer.info.format, b""), writer.schema_id)
        if self._reader is not None:
            _check_reader(self._reader, parsed, where)
        decode = record_format("Protobuf").decoder(parsed, self._reader, self._options)
        with self._lock:
            return writer.by_message.setdefault(key, decode)


def _describe(info: SchemaInfo, schema_id: int) -> str:
    kind = f"{info.format.name} {info.type}".rstrip()
    return f"schema id {schema_id} ({kind}, Confluent framing)"


def _check_reader(reader: ParsedSchema, writer: ParsedSchema, where: str) -> None:
    if reader.format != writer.format:
        raise SerdeError(f"a {reader.format} reader schema cannot read events with {where}")
    # JSON Schema has no type names of its own in the Confluent API: titles need not agree.
    if reader.format != "Json" and reader.type_name != writer.type_name:
        raise SerdeError(f"a reader schema of type {reader.type_name} cannot read events with {where}")
    if reader.canonical == writer.canonical:
        return
    reasons = get_format(reader.format).check(reader, writer)
    if reasons:
        raise SerdeError(f"the reader schema cannot read events with {where}: " + "; ".join(str(r) for r in reasons))


# -- writing ---------------------------------------------------------------------------------------------


def confluent_encoder(parsed: ParsedSchema, schema_id: int, *, validate: bool = False) -> Encode:
    """A function from a record to a Confluent-framed event of ``parsed`` registered as ``schema_id``."""
    indexes = message_indexes(parsed) if parsed.format == "Protobuf" else None
    prefix = encode_prefix(schema_id, indexes)
    return record_format(parsed.format).encoder(parsed, validate=validate, prefix=prefix)


class ConfluentSerializer:
    """Serializes records of one schema into Confluent-framed events, as confluent-kafka's serializers do.

    On first use it registers the schema in the group through the Pravega API (or, with
    ``register=False``, only looks it up) and writes its global schema id, which is the id the
    Confluent API knows it by. Protobuf events carry the message indexes of the schema's type.
    There is no codec: Confluent's framing has none. Records are what :class:`Serializer` takes.
    Instances may be shared between threads.
    """

    def __init__(self, client: Any, group: str, schema: SchemaInfo, *, register: bool = True,
                 validate: bool = False) -> None:
        self.client = client
        self.group = group
        self.schema = schema
        self.register = register
        self.validate = validate
        record_format(schema.format.name)  # fails now for formats without a serializer
        self._parsed = get_format(schema.format.name).parse(schema.data, schema.type)
        self._lock = threading.Lock()
        self._write: Encode | None = None
        self._schema_id: SchemaId | None = None

    def _connect(self) -> Encode:
        with self._lock:
            if self._write is None:
                if self.register:
                    version = self.client.add_schema(self.group, self.schema)
                else:
                    version = self.client.find_version(self.group, self.schema)
                self._schema_id = version.id
                self._write = confluent_encoder(self._parsed, version.id, validate=self.validate)
            return self._write

    def serialize(self, record: Any) -> bytes:
        """One event: magic byte, schema id, message indexes (Protobuf), then the record."""
        write = self._write or self._connect()
        return write(record)

    def serialize_many(self, records: Iterable[Any]) -> list[bytes]:
        """Events for every record of an iterable, in order."""
        write = self._write or self._connect()
        return [write(r) for r in records]

    @property
    def schema_id(self) -> SchemaId:
        """The global schema id written in every event."""
        self._connect()
        assert self._schema_id is not None
        return self._schema_id
