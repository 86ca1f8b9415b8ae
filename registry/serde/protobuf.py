"""Protobuf messages: generated classes, dynamic classes built from the registered descriptors, or dicts."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import FileDescriptor
from google.protobuf.message import EncodeError, Message

from registry.formats.base import ParsedSchema
from registry.formats.protobuf import well_known_file
from registry.ids import TypeName
from registry.model import SchemaInfo, SerializationFormat
from registry.serde.base import Decode, Encode, ReadOptions, RecordFormat
from registry.serde.errors import SerdeError


def _add_files(pool: descriptor_pool.DescriptorPool, fds: descriptor_pb2.FileDescriptorSet) -> None:
    by_name = {f.name: f for f in fds.file}
    added: set[str] = set()

    def add(name: str, needed_by: str) -> None:
        if name in added:
            return
        added.add(name)
        proto = by_name.get(name)
        if proto is None:
            proto = _well_known_file(name, needed_by)
        for dependency in proto.dependency:
            add(dependency, name)
        pool.Add(proto)

    for f in fds.file:
        add(f.name, "")


def _well_known_file(name: str, needed_by: str) -> descriptor_pb2.FileDescriptorProto:
    # A descriptor set may leave out google/protobuf/*.proto; the protobuf runtime has them.
    proto = well_known_file(name)
    if proto is None:
        raise SerdeError(f"Protobuf schema: {needed_by} imports {name}, which the descriptor set lacks")
    return proto


@lru_cache(maxsize=512)
def _message_class(fds_bytes: bytes, type_name: str) -> type[Message]:
    fds = descriptor_pb2.FileDescriptorSet.FromString(fds_bytes)
    # A pool of its own per schema: two versions of one message must not collide in a shared pool.
    pool = descriptor_pool.DescriptorPool()
    try:
        _add_files(pool, fds)
        descriptor = pool.FindMessageTypeByName(type_name)
    except (TypeError, KeyError) as e:
        raise SerdeError(f"Protobuf schema {type_name}: cannot build its descriptors: {e}") from None
    return message_factory.GetMessageClass(descriptor)


def message_class(schema: ParsedSchema) -> type[Message]:
    """A message class for the schema's type, built from its descriptors (one class per schema)."""
    return _message_class(schema.data, schema.type_name)


def schema_of(message_type: type[Message]) -> SchemaInfo:
    """The SchemaInfo of a (generated) message class: its file and every file it imports."""
    descriptor = message_type.DESCRIPTOR
    fds = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add(file: FileDescriptor) -> None:
        if file.name in seen:
            return
        seen.add(file.name)
        for dependency in file.dependencies:
            add(dependency)
        file.CopyToProto(fds.file.add())

    add(descriptor.file)
    return SchemaInfo(TypeName(descriptor.full_name), SerializationFormat("Protobuf"),
                      fds.SerializeToString(deterministic=True), {})


def to_dict(message: Message) -> dict[str, Any]:
    """A message as a dict: the schema's field names, every field present, int64 kept as int."""
    return json_format.MessageToDict(
        message,
        always_print_fields_with_no_presence=True,
        preserving_proto_field_name=True,
        unquote_int64_if_possible=True,
    )


class ProtobufRecords(RecordFormat):
    """Messages of the schema's type: instances of any class with that full name, or dicts."""

    name = "Protobuf"

    def encoder(self, schema: ParsedSchema, *, validate: bool, prefix: bytes) -> Encode:
        # ``validate`` adds nothing here: a message object cannot hold a value its field's type forbids.
        cls = message_class(schema)
        type_name = schema.type_name

        def encode(record: Any) -> bytes:
            if isinstance(record, Message):
                if record.DESCRIPTOR.full_name != type_name:
                    raise SerdeError(f"a {record.DESCRIPTOR.full_name} message cannot be written as {type_name}")
                message = record
            elif isinstance(record, Mapping):
                message = cls()
                try:
                    json_format.ParseDict(record, message)
                except json_format.ParseError as e:
                    raise SerdeError(f"record does not fit Protobuf message {type_name}: {e}") from e
            else:
                raise SerdeError(f"a Protobuf serializer takes messages or dicts, not {type(record).__name__}")
            try:
                return prefix + message.SerializeToString()
            except EncodeError as e:
                raise SerdeError(f"record does not fit Protobuf message {type_name}: {e}") from e

        return encode

    def decoder(self, writer: ParsedSchema, reader: ParsedSchema | None, options: ReadOptions) -> Decode:
        cls = options.message_class
        if cls is None:
            # Protobuf resolves by field number: parsing with the reader's class is the resolution.
            cls = message_class(reader or writer)
        elif cls.DESCRIPTOR.full_name != writer.type_name:
            raise SerdeError(
                f"events of type {writer.type_name} cannot be read as {cls.DESCRIPTOR.full_name} messages"
            )
        parse = cls.FromString
        if not options.as_dict:
            return parse

        def decode(payload: bytes) -> Any:
            return to_dict(parse(payload))

        return decode
