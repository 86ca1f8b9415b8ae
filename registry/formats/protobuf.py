"""Protobuf schemas: a serialized FileDescriptorSet (as Pravega sends) or ``.proto`` text.

``.proto`` text is compiled with the real protoc shipped in grpcio-tools and stored as
the FileDescriptorSet, so that every client gets descriptors back, as in Pravega.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from google.protobuf import descriptor_pb2, json_format
from google.protobuf.message import DecodeError

from registry.errors import InvalidSchema
from registry.formats.base import Incompatibility, ParsedSchema, SchemaFormat
from registry.formats.protobuf_compat import DescriptorSetError, check_protobuf, load_descriptor_set

_PROTO_TEXT = re.compile(
    rb"^\s*(//[^\n]*\n\s*|/\*.*?\*/\s*)*(syntax|edition|package|message|import|option|enum)\b", re.S
)


# Calls the compiler extension directly: importing grpc_tools.protoc would load grpc too.
_RUN_PROTOC = (
    "import sys\n"
    "from grpc_tools import _protoc_compiler\n"
    "sys.exit(_protoc_compiler.run_main([a.encode() for a in sys.argv[1:]]))"
)


def compile_proto(text: bytes) -> descriptor_pb2.FileDescriptorSet:
    """Compile one ``.proto`` file with protoc into a FileDescriptorSet (imports included)."""
    return descriptor_pb2.FileDescriptorSet.FromString(_compiled(text))


@lru_cache(maxsize=256)
def _compiled(text: bytes) -> bytes:
    # protoc runs in a child process (~0.1 s); the same text always compiles the same.
    with tempfile.TemporaryDirectory(prefix="streamcat-proto-") as tmp:
        source = Path(tmp) / "schema.proto"
        source.write_bytes(text)
        out = Path(tmp) / "out.desc"
        # A child process: protoc reports on stderr, which a threaded server cannot
        # borrow, and a protoc crash must not take the server down.
        args = ["protoc", f"-I{tmp}", f"-I{protoc_include_dir()}", "--include_imports",
                f"--descriptor_set_out={out}", str(source)]
        result = subprocess.run(
            [sys.executable, "-c", _RUN_PROTOC, *args], capture_output=True, text=True, timeout=60, check=False
        )
        if result.returncode != 0:
            message = result.stderr.strip().replace(f"{tmp}/", "")
            raise InvalidSchema(f"invalid .proto: {message or 'protoc failed'}")
        return out.read_bytes()


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
                raise InvalidSchema(
                    f"Protobuf schemaData is neither a FileDescriptorSet nor .proto text: {e}"
                ) from None
            if not fds.file:
                raise InvalidSchema("Protobuf FileDescriptorSet holds no files")
        names = message_names(fds)
        if not type_name:
            raise InvalidSchema("Protobuf schemas need a type: the full name of a message")
        if type_name not in names:
            known = ", ".join(sorted(names)) or "none"
            raise InvalidSchema(f"message {type_name!r} is not in the Protobuf schema (messages: {known})")
        stored = fds.SerializeToString(deterministic=True)
        try:
            load_descriptor_set(stored)
        except DescriptorSetError as e:
            raise InvalidSchema(f"Protobuf descriptor set does not load: {e}") from None
        return ParsedSchema(self.name, type_name, stored, type_name.encode() + b"\0" + stored, fds)

    def check(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        return check_protobuf(reader.parsed, reader.type_name, writer.parsed, writer.type_name)

    def describe(self, schema: ParsedSchema) -> str:
        return json_format.MessageToJson(schema.parsed, indent=None)
