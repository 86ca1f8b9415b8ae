"""Protobuf wire compatibility: can a parser of one message type read the bytes of another.

Fields are matched by number, never by name, and nested messages are compared by structure,
so renaming fields, messages or packages is compatible. The rules, reader against writer:

- types: those sharing an encoding read each other (int32/int64/uint32/uint64/bool/enum;
  sint32/sint64; fixed32/sfixed32; fixed64/sfixed64), as do string/bytes and message/bytes
  (see :mod:`registry.formats.protobuf_rules`); other changes are incompatible. A closed
  (proto2) enum reader of a plain integer is not: numbers it does not list are dropped.
- fields only one side has: compatible (unknown fields are skipped, missing ones read as
  defaults), except that a reader's ``required`` field must be ``required`` in the writer.
- repeated vs singular: a repeated reader parses a singular writer (packed or not); a singular
  reader keeps the last of an unpacked repeated writer's values (merges them for messages), as
  protobuf documents, but cannot parse packed values, so packed writer -> singular reader fails.
- oneofs: the fields of one reader oneof that the writer also has must sit in a single writer
  oneof, or the writer may set several and the reader keeps only the last. So a single field
  may move into a new oneof, and fields may leave a oneof, but merging fields into a oneof is
  reported. proto3 ``optional`` fields live in synthetic oneofs, which are not oneofs here.
- enums: a value name numbered differently on both sides is reported; a value number the
  writer has and a closed reader enum lacks is reported (parsers move it to unknown fields).
  Open (proto3) enums keep unknown numbers, so values missing from their reader are accepted:
  otherwise no proto3 enum could ever gain a value under Forward or Full compatibility.

Default values are not sent on the wire and are not compared. Extensions are not compared.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import lru_cache

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from registry.formats.base import Incompatibility
from registry.formats.protobuf_rules import ENCODING, type_label, wire_compatible


def check_protobuf(
    reader: descriptor_pb2.FileDescriptorSet,
    reader_type: str,
    writer: descriptor_pb2.FileDescriptorSet,
    writer_type: str,
) -> list[Incompatibility]:
    """Reasons why messages of ``reader_type`` cannot parse bytes of ``writer_type`` (empty: they can)."""
    reasons: list[Incompatibility] = []
    roots = []
    for role, fds, type_name in (("reader", reader, reader_type), ("writer", writer, writer_type)):
        try:
            schema = _load(fds.SerializeToString(deterministic=True))
        except DescriptorSetError as e:
            reasons.append(Incompatibility(f"message {type_name}", f"the {role} schema cannot be loaded: {e}"))
            continue
        root = schema.message(type_name)
        if root is None:
            reasons.append(Incompatibility(f"message {type_name}", f"the {role} schema has no message {type_name}"))
            continue
        roots.append((schema, root))
    if reasons:
        return reasons
    (reader_schema, reader_root), (writer_schema, writer_root) = roots
    checker = _Checker(reader_schema, writer_schema)
    checker.run(reader_root, writer_root)
    return checker.reasons


class DescriptorSetError(ValueError):
    """The descriptor set does not build into a descriptor pool (a missing import, an unknown type)."""


@dataclass(frozen=True)
class _Schema:
    """A descriptor set built into its own pool, so that names, features and packing are resolved."""

    pool: descriptor_pool.DescriptorPool
    #: (message full name, field number) of every proto3 ``optional`` field.
    proto3_optional: frozenset[tuple[str, int]]

    def message(self, type_name: str) -> Descriptor | None:
        """The message called ``type_name`` (a leading dot is allowed), or None."""
        try:
            return self.pool.FindMessageTypeByName(type_name.lstrip("."))
        except KeyError:
            return None

    def real_oneof(self, field: FieldDescriptor) -> str | None:
        """The full name of the oneof holding ``field``, unless there is none or it is synthetic."""
        oneof = field.containing_oneof
        if oneof is None or (field.containing_type.full_name, field.number) in self.proto3_optional:
            return None
        return str(oneof.full_name)


@lru_cache(maxsize=64)
def _load(serialized: bytes) -> _Schema:
    # Keyed by the serialized set: a transitive check compares one new schema with many old ones.
    fds = descriptor_pb2.FileDescriptorSet.FromString(serialized)
    pool = descriptor_pool.DescriptorPool()
    for file in _in_dependency_order(list(fds.file)):
        try:
            pool.Add(file)
        except TypeError as e:
            raise DescriptorSetError(f"{file.name}: {e}") from None
    optional: set[tuple[str, int]] = set()

    def walk(prefix: str, messages: list[descriptor_pb2.DescriptorProto]) -> None:
        for m in messages:
            full = f"{prefix}{m.name}"
            optional.update((full, f.number) for f in m.field if f.proto3_optional)
            walk(f"{full}.", list(m.nested_type))

    for file in fds.file:
        walk(f"{file.package}." if file.package else "", list(file.message_type))
    return _Schema(pool, frozenset(optional))


def load_descriptor_set(serialized: bytes) -> None:
    """Raise DescriptorSetError unless the descriptor set builds into a pool (imports all present)."""
    _load(serialized)


def _in_dependency_order(files: list[descriptor_pb2.FileDescriptorProto]) -> list[descriptor_pb2.FileDescriptorProto]:
    """The files with each one after the files it imports (protoc emits this order; uploads may not)."""
    by_name: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for f in files:
        by_name.setdefault(f.name, f)
    ordered: list[descriptor_pb2.FileDescriptorProto] = []
    placed: set[str] = set()

    def place(name: str, visiting: frozenset[str]) -> None:
        if name in placed or name in visiting or name not in by_name:
            return  # a missing import is left for the pool to name
        for dep in by_name[name].dependency:
            place(dep, visiting | {name})
        placed.add(name)
        ordered.append(by_name[name])

    for name in by_name:
        place(name, frozenset())
    return ordered


class _Checker:
    """Walks a reader message and a writer message side by side, collecting reasons."""

    def __init__(self, reader: _Schema, writer: _Schema) -> None:
        self.reader = reader
        self.writer = writer
        self.reasons: list[Incompatibility] = []
        # Pairs already compared: recursive messages terminate, and a type used by many
        # fields is reported once, at the shortest path that reaches it.
        self._messages_seen: set[tuple[str, str]] = set()
        self._enums_seen: set[tuple[str, str]] = set()
        # Message pairs still to compare, breadth first: a queue rather than recursion, so
        # that deeply nested schemas cannot exhaust the interpreter's stack.
        self._pending: deque[tuple[Descriptor, Descriptor, str]] = deque()

    def run(self, reader: Descriptor, writer: Descriptor) -> None:
        """Compare the two root messages and every message pair reachable through their fields."""
        self._pending.append((reader, writer, ""))
        while self._pending:
            self.message(*self._pending.popleft())

    def _report(self, path: str, message: str) -> None:
        self.reasons.append(Incompatibility(path, message))

    def message(self, reader: Descriptor, writer: Descriptor, prefix: str) -> None:
        """Compare two messages field by field; ``prefix`` is the path leading to them."""
        pair = (str(reader.full_name), str(writer.full_name))
        if pair in self._messages_seen:
            return
        self._messages_seen.add(pair)
        map_entry = bool(reader.GetOptions().map_entry)
        for number, reader_field in sorted(reader.fields_by_number.items()):
            if map_entry:
                path = f"{prefix}map {reader_field.name}"
            else:
                path = f"{prefix}message {reader.full_name} field {number} ({reader_field.name})"
            writer_field = writer.fields_by_number.get(number)
            if writer_field is None:
                if reader_field.is_required:
                    self._report(
                        path, "required in the reader but missing from the writer: the reader rejects every message"
                    )
                continue
            self.field(reader_field, writer_field, path)
        # Fields only the writer has are skipped by the reader as unknown fields.
        self.oneofs(reader, writer, prefix)

    def field(self, reader: FieldDescriptor, writer: FieldDescriptor, path: str) -> None:
        """Compare two fields with the same number."""
        if not wire_compatible(writer.type, reader.type):
            self._report(
                path,
                f"type changed from {type_label(writer)} (writer) to {type_label(reader)} (reader): "
                f"incompatible wire types ({ENCODING[writer.type]} vs {ENCODING[reader.type]})",
            )
            return
        if reader.is_required and not writer.is_required:
            kind = "repeated" if writer.is_repeated else "optional"
            self._report(
                path, f"required in the reader but {kind} in the writer: the reader rejects messages lacking it"
            )
        if writer.is_repeated and not reader.is_repeated and writer.is_packed:
            self._report(
                path,
                f"repeated and packed in the writer but singular in the reader: "
                f"a singular {type_label(reader)} field cannot parse packed values",
            )
        if reader.type == FieldDescriptor.TYPE_ENUM:
            if writer.type == FieldDescriptor.TYPE_ENUM:
                self.enum(reader.enum_type, writer.enum_type, path)
            elif reader.enum_type.is_closed:
                self._report(
                    path,
                    f"type changed from {type_label(writer)} (writer) to {type_label(reader)} (reader): "
                    "the reader's enum is closed and moves numbers it does not list to unknown fields",
                )
        elif reader.message_type is not None and writer.message_type is not None:
            self._pending.append((reader.message_type, writer.message_type, f"{path} > "))

    def enum(self, reader: EnumDescriptor, writer: EnumDescriptor, path: str) -> None:
        """Compare the values of two enums by number, and by name for renumbered values."""
        pair = (str(reader.full_name), str(writer.full_name))
        if pair in self._enums_seen:
            return
        self._enums_seen.add(pair)
        prefix = f"{path} > enum {reader.full_name}"
        for name, value in sorted(writer.values_by_name.items(), key=lambda item: item[1].number):
            own = reader.values_by_name.get(name)
            if own is not None and own.number != value.number:
                self._report(
                    f"{prefix} value {name}",
                    f"numbered {value.number} by the writer but {own.number} by the reader: "
                    f"the reader does not read the writer's {name} as {name}",
                )
        if not reader.is_closed:
            return  # open enums keep numbers they do not list
        for number, value in sorted(writer.values_by_number.items()):
            if number not in reader.values_by_number:
                self._report(
                    f"{prefix} value {number} ({value.name})",
                    "written by the writer but missing from the reader's closed enum: "
                    "parsers move it to unknown fields and the field reads as unset",
                )

    def oneofs(self, reader: Descriptor, writer: Descriptor, prefix: str) -> None:
        """Report reader oneofs whose fields the writer may set together."""
        for oneof in reader.oneofs:
            members = [f for f in oneof.fields if self.reader.real_oneof(f) is not None]
            shared = [f for f in members if f.number in writer.fields_by_number]
            if len(shared) < 2:
                continue
            homes = [self.writer.real_oneof(writer.fields_by_number[f.number]) for f in shared]
            if len(set(homes)) == 1 and homes[0] is not None:
                continue
            placement = ", ".join(
                f"{f.number} ({f.name}) " + (f"in oneof {home.rsplit('.', 1)[-1]}" if home else "outside any oneof")
                for f, home in zip(shared, homes, strict=True)
            )
            self._report(
                f"{prefix}message {reader.full_name} oneof {oneof.name}",
                f"the writer can set several of these fields at once (writer: {placement}), "
                "but the reader keeps only the last one parsed",
            )
