"""Protobuf schemas: a serialized FileDescriptorSet (as Pravega sends) or ``.proto`` text.

``.proto`` text is compiled with the real protoc shipped in grpcio-tools and stored as
the FileDescriptorSet, so that every client gets descriptors back, as in Pravega.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2, json_format
from google.protobuf.message import DecodeError

from registry.errors import InvalidSchema
from registry.formats.base import Incompatibility, ParsedSchema, SchemaFormat
from registry.formats.protobuf_compat import check_protobuf

_PROTO_TEXT = re.compile(rb"^\s*(//[^\n]*\n\s*|/\*.*?\*/\s*)*(syntax|edition|package|message|import|option|enum)\b", re.S)


def compile_proto(text: bytes) -> descriptor_pb2.FileDescriptorSet:
    """Compile one ``.proto`` file with protoc into a FileDescriptorSet (imports included)."""
    from grpc_tools import protoc  # imported here: loading protoc costs time and memory

    with tempfile.TemporaryDirectory(prefix="streamcat-proto-") as tmp:
        source = Path(tmp) / "schema.proto"
        source.write_bytes(text)
        out = Path(tmp) / "out.desc"
        include = protoc_include_dir()
        errors = Path(tmp) / "errors.txt"
        # protoc reports errors on stderr of this process; capture them through a file
        # descriptor redirect so that the message can name the problem.
        import os

        saved = os.dup(2)
        with errors.open("wb") as err:
            os.dup2(err.fileno(), 2)
            try:
                code = protoc.main(
                    ["protoc", f"-I{tmp}", f"-I{include}", "--include_imports",
                     f"--descriptor_set_out={out}", str(source)]
                )
            finally:
                os.dup2(saved, 2)
                os.close(saved)
        if code != 0:
            message = errors.read_text(errors="replace").strip().replace(f"{tmp}/", "")
            raise InvalidSchema(f"invalid .proto: {message or 'protoc failed'}")
        fds = descriptor_pb2.FileDescriptorSet()
        fds.ParseFromString(out.read_bytes())
        return fds


def protoc_include_dir() -> str:
    """Where grpcio-tools keeps the well-known .proto files (google/protobuf/*.proto)."""
    import grpc_tools

    return str(Path(grpc_tools.__file__).parent / "_proto")


def message_names(fds: descriptor_pb2.FileDescriptorSet) -> set[str]:
    """Full names of every message, nested ones included, in the descriptor set."""
    names: set[str] = set()

    def walk(prefix: str, messages: list[descriptor_pb2.DescriptorProto]) -> None:
        for m in messages:
            full = f"{prefix}{m.name}"
            names.add(full)
            walk(f"{full}.", list(m.nested_type))

    for f in fds.file:
        walk(f"{f.package}." if f.package else "", list(f.message_type))
    return names


class ProtobufFormat(SchemaFormat):
    """Protobuf descriptors; the type is the full name of a message in them."""

    name = "Protobuf"

    def parse(self, data: bytes, type_name: str) -> ParsedSchema:
        if _PROTO_TEXT.match(data):
            fds = compile_proto(data)
        else:
            fds = descriptor_pb2.FileDescriptorSet()
            try:
                fds.ParseFromString(data)
            except (DecodeError, RuntimeWarning) as e:
                raise InvalidSchema(f"Protobuf schemaData is neither a FileDescriptorSet nor .proto text: {e}") from None
            if not fds.file:
                raise InvalidSchema("Protobuf FileDescriptorSet holds no files")
        names = message_names(fds)
        if not type_name:
            raise InvalidSchema("Protobuf schemas need a type: the full name of a message")
        if type_name not in names:
            known = ", ".join(sorted(names)) or "none"
            raise InvalidSchema(f"message {type_name!r} is not in the Protobuf schema (messages: {known})")
        stored = fds.SerializeToString(deterministic=True)
        return ParsedSchema(self.name, type_name, stored, type_name.encode() + b"\0" + stored, fds)

    def check(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        return check_protobuf(reader.parsed, reader.type_name, writer.parsed, writer.type_name)

    def describe(self, schema: ParsedSchema) -> str:
        return json_format.MessageToJson(schema.parsed, indent=None)
