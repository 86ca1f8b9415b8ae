"""Protobuf schemas: a serialized FileDescriptorSet (as Pravega sends) or ``.proto`` text.

``.proto`` text is compiled with the real protoc shipped in grpcio-tools and stored as
the FileDescriptorSet, so that every client gets descriptors back, as in Pravega. Compiling is
bounded (:class:`Protoc`): by input size, by how many compile at once, and the cache of results
by bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cachetools import LRUCache
from google.protobuf import descriptor_pb2, descriptor_pool, json_format
from google.protobuf.message import DecodeError

from registry.errors import Busy, InvalidSchema
from registry.formats.base import Incompatibility, ParsedSchema, Reference, SchemaFormat
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


#: The file name a compiled schema's own file gets (its imports keep the names they are imported by).
MAIN_FILE = "schema.proto"


class SchemaTooLarge(InvalidSchema):
    """Protobuf input larger than protoc is given."""

    code = "SchemaTooLarge"


class Protoc:
    """protoc as one process runs it: at most ``slots`` compiles at once, each of at most
    ``max_input`` bytes (``.proto`` text plus the descriptors it imports), and results remembered
    by content in an LRU cache of at most ``cache_bytes``.

    protoc takes about 0.1 s and a child process per file, and about 2 s for 1 MB of text, so a
    burst of large schemas would otherwise start a process per request thread. A compile that
    finds no free slot within ``wait`` seconds is refused with :class:`Busy` (503, Retry-After):
    better than a queue the client cannot see, and the same text is a cache hit once compiled.
    """

    def __init__(
        self, slots: int = 2, wait: float = 5.0, max_input: int = 512 * 1024, cache_bytes: int = 32 * 1024 * 1024
    ) -> None:
        self.slots, self.wait, self.max_input = slots, wait, max_input
        self._gate = threading.BoundedSemaphore(slots)
        self._cache: LRUCache[bytes, bytes] = LRUCache(maxsize=cache_bytes, getsizeof=lambda out: max(1, len(out)))
        self._lock = threading.Lock()

    def compile(self, kind: str, inputs: Sequence[bytes], run: Callable[[], bytes]) -> bytes:
        """The serialized FileDescriptorSet that ``run`` (protoc over ``inputs``, in the way ``kind``
        names) writes, from the cache when these inputs were compiled that way before."""
        size = sum(len(i) for i in inputs)
        if size > self.max_input:
            raise SchemaTooLarge(
                f"Protobuf schema of {size} bytes (with what it imports) is over the limit of {self.max_input} bytes"
            )
        digest = hashlib.sha256(kind.encode())
        for part in inputs:
            digest.update(len(part).to_bytes(8, "big") + part)
        key = digest.digest()
        with self._lock:
            found = self._cache.get(key)
        if found is not None:
            return found
        if not self._gate.acquire(timeout=self.wait):
            raise Busy(f"{self.slots} Protobuf schemas are being compiled already; retry the request")
        try:
            out = run()
        finally:
            self._gate.release()
        with self._lock, contextlib.suppress(ValueError):  # ValueError: larger than the whole cache
            self._cache[key] = out
        return out


#: This process's protoc (``configure_protoc`` replaces it).
_protoc = Protoc()


def configure_protoc(protoc: Protoc) -> None:
    """Compile with ``protoc``'s bounds from now on (its cache starts empty)."""
    global _protoc
    _protoc = protoc


def is_proto_text(data: bytes) -> bool:
    """Whether ``data`` looks like ``.proto`` source (rather than a serialized descriptor)."""
    return _PROTO_TEXT.match(data) is not None


def compile_proto(text: bytes) -> descriptor_pb2.FileDescriptorSet:
    """Compile one ``.proto`` file with protoc into a FileDescriptorSet (imports included)."""
    return descriptor_pb2.FileDescriptorSet.FromString(_compiled(text))


def _compiled(text: bytes) -> bytes:
    # protoc runs in a child process (~0.1 s); the same text always compiles the same.
    def run() -> bytes:
        with tempfile.TemporaryDirectory(prefix="streamcat-proto-") as tmp:
            source = Path(tmp) / MAIN_FILE
            source.write_bytes(text)
            out = Path(tmp) / "out.desc"
            args = ["protoc", f"-I{tmp}", f"-I{protoc_include_dir()}", "--include_imports",
                    f"--descriptor_set_out={out}", str(source)]
            return _run_protoc(args, out, tmp)

    return _protoc.compile("text", [text], run)


def _run_protoc(args: list[str], out: Path, tmp: str) -> bytes:
    # A child process: protoc reports on stderr, which a threaded server cannot
    # borrow, and a protoc crash must not take the server down.
    result = subprocess.run(
        [sys.executable, "-c", _RUN_PROTOC, *args], capture_output=True, text=True, timeout=60, check=False
    )
    if result.returncode != 0:
        message = result.stderr.strip().replace(f"{tmp}/", "")
        raise InvalidSchema(f"invalid .proto: {message or 'protoc failed'}")
    return out.read_bytes()


def compile_with(source: bytes | descriptor_pb2.FileDescriptorProto,
                 dependencies: descriptor_pb2.FileDescriptorSet) -> descriptor_pb2.FileDescriptorSet:
    """Compile one file, given as ``.proto`` text or as a FileDescriptorProto, whose imports are
    the files of ``dependencies`` or well-known (google/protobuf/*) files.

    protoc builds the file either way, so text and descriptor forms of one schema give the same
    descriptor set; the file itself comes last, named :data:`MAIN_FILE`.
    """
    if isinstance(source, bytes):
        if not dependencies.file:
            return compile_proto(source)
        return descriptor_pb2.FileDescriptorSet.FromString(
            _compiled_with(source, dependencies.SerializeToString(deterministic=True))
        )
    main = descriptor_pb2.FileDescriptorProto()
    main.CopyFrom(source)
    main.name = MAIN_FILE
    given = descriptor_pb2.FileDescriptorSet()
    given.file.extend(dependencies.file)
    given.file.append(main)
    return descriptor_pb2.FileDescriptorSet.FromString(_compiled_with(b"", given.SerializeToString(deterministic=True)))


def _compiled_with(text: bytes, descriptors: bytes) -> bytes:
    def run() -> bytes:
        with tempfile.TemporaryDirectory(prefix="streamcat-proto-") as tmp:
            sources = Path(tmp) / "src"
            sources.mkdir()
            if text:
                (sources / MAIN_FILE).write_bytes(text)
            given = Path(tmp) / "in.desc"
            given.write_bytes(descriptors)
            out = Path(tmp) / "out.desc"
            args = ["protoc", f"-I{sources}", f"-I{protoc_include_dir()}", f"--descriptor_set_in={given}",
                    "--include_imports", f"--descriptor_set_out={out}", MAIN_FILE]
            return _run_protoc(args, out, tmp)

    return _protoc.compile("with", [text, descriptors], run)


def protoc_include_dir() -> str:
    """Where grpcio-tools keeps the well-known .proto files (google/protobuf/*.proto)."""
    import grpc_tools

    return str(Path(grpc_tools.__file__).parent / "_proto")


def message_names(fds: descriptor_pb2.FileDescriptorSet) -> set[str]:
    """Full names of every message, nested ones included, in the descriptor set."""
    names: set[str] = set()
    for f in fds.file:
        names |= _file_names(f)[0]
    return names


def _file_names(file: descriptor_pb2.FileDescriptorProto) -> tuple[set[str], set[str]]:
    """Full names of the messages and of the enums one file declares, nested ones included."""
    messages: set[str] = set()
    enums: set[str] = set()

    def walk(prefix: str, declared: list[descriptor_pb2.DescriptorProto]) -> None:
        for m in declared:
            full = f"{prefix}{m.name}"
            messages.add(full)
            enums.update(f"{full}.{e.name}" for e in m.enum_type)
            walk(f"{full}.", list(m.nested_type))

    prefix = f"{file.package}." if file.package else ""
    walk(prefix, list(file.message_type))
    enums.update(f"{prefix}{e.name}" for e in file.enum_type)
    return messages, enums


def main_file(fds: descriptor_pb2.FileDescriptorSet, type_name: str) -> descriptor_pb2.FileDescriptorProto:
    """The schema's own file in a descriptor set: the last one declaring ``type_name`` (the last
    file when none does; protoc writes a file after everything it imports)."""
    for file in reversed(fds.file):
        messages, enums = _file_names(file)
        if type_name in messages or type_name in enums:
            return file
    return fds.file[-1]


def first_type(file: descriptor_pb2.FileDescriptorProto) -> str:
    """The type a file stands for when none is named: its first message (Confluent's default
    message), else its first enum; empty when it declares neither."""
    prefix = f"{file.package}." if file.package else ""
    if file.message_type:
        return prefix + file.message_type[0].name
    if file.enum_type:
        return prefix + file.enum_type[0].name
    return ""


def dependencies_of(references: Sequence[Reference]) -> descriptor_pb2.FileDescriptorSet:
    """The files that referenced schemas (stored descriptor sets) make importable, each
    schema's own file named as it is referenced (its import path)."""
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for reference in references:
        if reference.name == MAIN_FILE:
            raise InvalidSchema(f"a reference may not be called {MAIN_FILE!r} (the registry's name for the schema)")
        referenced = descriptor_pb2.FileDescriptorSet()
        try:
            referenced.ParseFromString(reference.data)
        except (DecodeError, RuntimeWarning) as e:
            raise InvalidSchema(f"referenced schema {reference.name!r} is not a descriptor set: {e}") from None
        if not referenced.file:
            raise InvalidSchema(f"referenced schema {reference.name!r} holds no files")
        own = main_file(referenced, reference.type_name)
        for file in referenced.file:
            named = descriptor_pb2.FileDescriptorProto()
            named.CopyFrom(file)
            if file is own:
                named.name = reference.name
            known = files.get(named.name)
            if known is not None and known != named:
                raise InvalidSchema(f"references bring two different files called {named.name!r}")
            files[named.name] = named
    return descriptor_pb2.FileDescriptorSet(file=list(files.values()))


@dataclass(frozen=True)
class WholeFile:
    """Marks a schema parsed as the Confluent API takes it: the file is the schema, so every
    message it declares is checked for compatibility, not only its type (first message)."""

    file: str


def _top_level(fds: descriptor_pb2.FileDescriptorSet, type_name: str) -> list[str]:
    file = main_file(fds, type_name)
    prefix = f"{file.package}." if file.package else ""
    return [prefix + m.name for m in file.message_type]


class ProtobufFormat(SchemaFormat):
    """Protobuf descriptors; the type is the full name of a message in them."""

    name = "Protobuf"

    def parse(self, data: bytes, type_name: str, references: Sequence[Reference] | None = None) -> ParsedSchema:
        declares_nothing = False
        if references is not None:
            fds = self._compile_file(data, references)
            if not type_name:
                own = fds.file[-1]
                type_name = first_type(own)
                if not type_name:
                    if own.service or own.extension:
                        raise InvalidSchema("a Protobuf schema must declare a message or an enum")
                    # Only imports (``import public`` ones, say), as Confluent takes them: the file stands
                    # for itself, and its type is its name in the descriptor set.
                    type_name, declares_nothing = own.name, True
        elif _PROTO_TEXT.match(data):
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
        if not type_name:
            raise InvalidSchema("Protobuf schemas need a type: the full name of a message")
        messages = message_names(fds)
        if not declares_nothing and type_name not in messages and not any(
            type_name in _file_names(f)[1] for f in fds.file
        ):
            known = ", ".join(sorted(messages)) or "none"
            raise InvalidSchema(f"message {type_name!r} is not in the Protobuf schema (messages: {known})")
        stored = fds.SerializeToString(deterministic=True)
        try:
            load_descriptor_set(stored)
        except DescriptorSetError as e:
            raise InvalidSchema(f"Protobuf descriptor set does not load: {e}") from None
        scope = WholeFile(main_file(fds, type_name).name) if references is not None else None
        return ParsedSchema(self.name, type_name, stored, type_name.encode() + b"\0" + stored, fds, scope)

    @staticmethod
    def _compile_file(data: bytes, references: Sequence[Reference]) -> descriptor_pb2.FileDescriptorSet:
        """One file as the Confluent API takes it (``.proto`` text, or a serialized
        FileDescriptorProto), compiled with its references and the well-known types."""
        dependencies = dependencies_of(references)
        if _PROTO_TEXT.match(data):
            return compile_with(data, dependencies)
        file = descriptor_pb2.FileDescriptorProto()
        try:
            file.ParseFromString(data)
        except (DecodeError, RuntimeWarning) as e:
            raise InvalidSchema(f"Protobuf schema is neither .proto text nor a FileDescriptorProto: {e}") from None
        return compile_with(file, dependencies)

    def check(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        messages = message_names(reader.parsed)
        if reader.type_name not in messages or writer.type_name not in message_names(writer.parsed):
            # A file of enums only, or of imports only: what it declares is checked in the messages of the
            # files importing it.
            return []
        reasons = check_protobuf(reader.parsed, reader.type_name, writer.parsed, writer.type_name)
        if isinstance(reader.summary, WholeFile) or isinstance(writer.summary, WholeFile):
            others = set(_top_level(writer.parsed, writer.type_name)) - {reader.type_name, writer.type_name}
            for name in _top_level(reader.parsed, reader.type_name):
                if name in others:
                    reasons += check_protobuf(reader.parsed, name, writer.parsed, name)
        return reasons

    def describe(self, schema: ParsedSchema) -> str:
        return json_format.MessageToJson(schema.parsed, indent=None)


def well_known_file(name: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The file of a Protobuf well-known type (``google/protobuf/timestamp.proto``...), which schemas may
    import without sending; None if ``name`` is not one."""
    # Importing the generated modules registers their files in the default pool.
    from google.protobuf import (  # noqa: F401
        any_pb2,
        duration_pb2,
        empty_pb2,
        field_mask_pb2,
        struct_pb2,
        timestamp_pb2,
        wrappers_pb2,
    )

    try:
        found = descriptor_pool.Default().FindFileByName(name)
    except KeyError:
        return None
    proto = descriptor_pb2.FileDescriptorProto()
    found.CopyToProto(proto)
    return proto
