"""Avro records through fastavro: schemaless binary encoding, schema resolution on read.

fastavro's public ``schemaless_writer`` / ``schemaless_reader`` re-check the schema and build
option dicts on every call, which costs about as much as this package's whole framing. When
fastavro's record-level entry points (``write_data`` / ``_read_data``) answer exactly as the
public functions do (checked once, on a probe record), they are called directly instead;
otherwise the public functions are used.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import cache
from io import BytesIO
from typing import Any

import fastavro
from fastavro.validation import ValidationError
from fastavro.validation import validate as validate_record

from registry.formats.base import ParsedSchema
from registry.serde.base import Decode, Encode, InPlace, ReadFrom, ReadOptions, RecordFormat
from registry.serde.errors import SerdeError

#: What fastavro's writer raises on a record that does not fit the schema.
_WRITE_ERRORS = (ValueError, TypeError, KeyError, AttributeError, OverflowError)
#: The options the public functions pass down by default.
_WRITE_OPTIONS = {"strict": False, "strict_allow_default": False, "disable_tuple_notation": False}
_READ_OPTIONS = {
    "return_record_name": False,
    "return_record_name_override": False,
    "handle_unicode_errors": "strict",
    "return_named_type": False,
    "return_named_type_override": False,
}

_PROBE_WRITER: dict[str, Any] = {
    "type": "record",
    "name": "Probe",
    "namespace": "streamcat.probe",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "tags", "type": {"type": "map", "values": {"type": "array", "items": "string"}}},
        {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "double"}]}},
        {"name": "more", "type": ["null", "Inner"]},
        {"name": "flag", "type": "boolean"},
    ],
}
_PROBE_READER: dict[str, Any] = {
    **_PROBE_WRITER,
    "fields": [*_PROBE_WRITER["fields"][:4], {"name": "extra", "type": "string", "default": "d"}],
}
_PROBE_RECORD = {"id": -5, "tags": {"a": ["x", "é"]}, "inner": {"x": 1.5}, "more": {"x": -2.0}, "flag": True}


@cache
def _internals() -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """fastavro's (write_data, _read_data) if they behave as the public functions, else None."""
    try:
        # Not in fastavro's type stubs: these are the functions behind the public ones.
        from fastavro._read import _read_data  # type: ignore[attr-defined]
        from fastavro._write import write_data  # type: ignore[attr-defined]

        named: dict[str, Any] = {}
        schema = fastavro.parse_schema(_PROBE_WRITER, named)
        out = bytearray(b"\x01")
        write_data(out, _PROBE_RECORD, schema, named, "", _WRITE_OPTIONS)
        public = BytesIO()
        fastavro.schemaless_writer(public, fastavro.parse_schema(_PROBE_WRITER), _PROBE_RECORD)
        if bytes(out[1:]) != public.getvalue():
            return None
        read_named: dict[str, Any] = {"writer": {}, "reader": {}}
        writer = fastavro.parse_schema(_PROBE_WRITER, read_named["writer"])
        reader = fastavro.parse_schema(_PROBE_READER, read_named["reader"])
        for target, named_reader in ((None, None), (reader, _PROBE_READER)):
            got = _read_data(BytesIO(public.getvalue()), writer, read_named, target, _READ_OPTIONS)
            expected = fastavro.schemaless_reader(BytesIO(public.getvalue()), _PROBE_WRITER, named_reader)
            if got != expected:
                return None
    except Exception:  # any change in fastavro's internals means: use the public functions
        return None
    return write_data, _read_data


@cache
def _reads_in_place(read_data: Callable[..., Any]) -> bool:
    """Whether fastavro's reader, started inside a larger stream, reads exactly one record and stops
    at its end (no read-ahead): what decoding a chunk's events in place relies on."""
    try:
        one = BytesIO()
        fastavro.schemaless_writer(one, fastavro.parse_schema(_PROBE_WRITER), _PROBE_RECORD)
        record = one.getvalue()
        stream = BytesIO(b"\xff\xff" + record + record + b"\xff")
        named: dict[str, Any] = {"writer": {}, "reader": {}}
        writer = fastavro.parse_schema(_PROBE_WRITER, named["writer"])
        for start in (2, 2 + len(record)):
            stream.seek(start)
            got = read_data(stream, writer, named, None, _READ_OPTIONS)
            if got != _PROBE_RECORD or stream.tell() != start + len(record):
                return False
    except Exception:  # any change in fastavro's internals means: decode each event on its own
        return False
    return True


def _document(schema: ParsedSchema) -> Any:
    return _interned(json.loads(schema.data))


def _interned(node: Any) -> Any:
    """``node`` with every string interned. fastavro compares type names and looks field names up in
    records per value; with interned strings (as a schema written as a Python literal has) those are
    identity checks, where strings parsed from JSON make each a full comparison: about a tenth of
    the time of encoding a 10-field record."""
    if isinstance(node, str):
        return sys.intern(node)
    if isinstance(node, dict):
        return {sys.intern(k): _interned(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_interned(v) for v in node]
    return node


def _validation_message(error: ValidationError) -> str:
    problems = []
    for e in error.errors:
        expected = (e.schema.get("name") or e.schema.get("type")) if isinstance(e.schema, dict) else e.schema
        problems.append(f"{e.field or '$'}: {e.datum!r} is not a valid {expected}")
    return "; ".join(problems)


def _failure(type_name: str) -> Callable[[BaseException], Exception | None]:
    """The error a failed write of a record of ``type_name`` becomes (None: raise it as it is)."""

    def failure(error: BaseException) -> Exception | None:
        if isinstance(error, _WRITE_ERRORS):
            return SerdeError(f"record does not fit Avro schema {type_name}: {error}")
        return None

    return failure


def _encoder(schema: ParsedSchema, prefix: bytes) -> Encode:
    type_name = schema.type_name
    internals = _internals()
    if internals is not None:
        write_data = internals[0]
        named: dict[str, Any] = {}
        parsed = fastavro.parse_schema(_document(schema), named)
        options = _WRITE_OPTIONS

        def encode(record: Any) -> bytes:
            out = bytearray(prefix)
            try:
                write_data(out, record, parsed, named, "", options)
            except _WRITE_ERRORS as e:
                raise SerdeError(f"record does not fit Avro schema {type_name}: {e}") from e
            return bytes(out)

        return encode

    public_parsed = fastavro.parse_schema(_document(schema))
    write = fastavro.schemaless_writer

    def encode_public(record: Any) -> bytes:
        out = BytesIO()
        out.write(prefix)
        try:
            write(out, public_parsed, record)
        except _WRITE_ERRORS as e:
            raise SerdeError(f"record does not fit Avro schema {type_name}: {e}") from e
        return out.getvalue()

    return encode_public


class AvroRecords(RecordFormat):
    """Records as dicts (fastavro's representation), written without a container file."""

    name = "Avro"

    def encoder(self, schema: ParsedSchema, *, validate: bool, prefix: bytes) -> Encode:
        encode = _encoder(schema, prefix)
        if not validate:
            return encode
        parsed = fastavro.parse_schema(_document(schema))
        type_name = schema.type_name

        def validate_and_encode(record: Any) -> bytes:
            try:
                validate_record(record, parsed, raise_errors=True)
            except ValidationError as e:
                raise SerdeError(f"record does not fit Avro schema {type_name}: {_validation_message(e)}") from e
            return encode(record)

        return validate_and_encode

    def in_place(self, schema: ParsedSchema, *, prefix: bytes) -> InPlace | None:
        internals = _internals()
        if internals is None:
            return None
        named: dict[str, Any] = {}
        parsed = fastavro.parse_schema(_document(schema), named)
        return InPlace(prefix, internals[0], (parsed, named, "", _WRITE_OPTIONS), _failure(schema.type_name))

    def stream_decoder(
        self, writer: ParsedSchema, reader: ParsedSchema | None, options: ReadOptions
    ) -> ReadFrom | None:
        # Avro binary delimits itself: fastavro's reader stops at the record's last byte.
        internals = _internals()
        if internals is None or not _reads_in_place(internals[1]):
            return None
        read_data = internals[1]
        if reader is not None and reader.canonical == writer.canonical:
            reader = None
        named: dict[str, Any] = {"writer": {}, "reader": {}}
        writer_schema = fastavro.parse_schema(_document(writer), named["writer"])
        reader_schema = None if reader is None else fastavro.parse_schema(_document(reader), named["reader"])
        return read_data, (writer_schema, named, reader_schema, _READ_OPTIONS)

    def decoder(self, writer: ParsedSchema, reader: ParsedSchema | None, options: ReadOptions) -> Decode:
        # Without a reader schema (or with the writer's own) fastavro skips resolution altogether.
        if reader is not None and reader.canonical == writer.canonical:
            reader = None
        internals = _internals()
        if internals is not None:
            read_data = internals[1]
            named: dict[str, Any] = {"writer": {}, "reader": {}}
            writer_schema = fastavro.parse_schema(_document(writer), named["writer"])
            reader_schema = None if reader is None else fastavro.parse_schema(_document(reader), named["reader"])
            read_options = _READ_OPTIONS

            def decode(payload: bytes) -> Any:
                return read_data(BytesIO(payload), writer_schema, named, reader_schema, read_options)

            return decode

        public_writer = fastavro.parse_schema(_document(writer))
        public_reader = None if reader is None else fastavro.parse_schema(_document(reader))
        read = fastavro.schemaless_reader

        def decode_public(payload: bytes) -> Any:
            return read(BytesIO(payload), public_writer, public_reader)

        return decode_public
