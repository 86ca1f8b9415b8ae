"""Avro schemas: parsed and normalized by the ``avro`` package, checked by its resolution rules."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import avro.errors
import avro.name
import avro.schema
import fastavro
from fastavro.schema import SchemaParseException, UnknownType

from registry.errors import InvalidSchema
from registry.formats.avro_compat import check_avro
from registry.formats.base import Incompatibility, ParsedSchema, Reference, SchemaFormat
from registry.limits import check_text, reject_constant

# Logical types avro 1.12 does not know (local-timestamp-*, ...) are valid Avro: the schema
# stays as written and the compatibility checker knows them; the warning is noise.
warnings.filterwarnings("ignore", category=avro.errors.IgnoredLogicalType)


def _normalized(schema: avro.schema.Schema) -> bytes:
    # Parsing Canonical Form drops defaults, aliases and logical types, all of which
    # change how data resolves, so identity is the full JSON form with sorted keys.
    return json.dumps(schema.to_json(), sort_keys=True, separators=(",", ":")).encode()


_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


def _plain(kind: Any) -> bool:
    """Whether a field type's JSON names no named type, so that equal JSON means equal types."""
    if isinstance(kind, str):
        return kind in _PRIMITIVES
    if isinstance(kind, list):
        return all(_plain(k) for k in kind)
    if isinstance(kind, dict):
        if kind.get("type") == "array":
            return _plain(kind.get("items"))
        if kind.get("type") == "map":
            return _plain(kind.get("values"))
        return kind.get("type") in _PRIMITIVES
    return False


@dataclass(frozen=True)
class RecordSummary:
    """A top-level record whose fields are all of plain types, field by field.

    Avro resolves records field by field, so two such records with the same name resolve
    when every reader field either has an identical type in the writer or is missing from it
    and has a default: the common case of evolution, decided without walking the schemas
    (a transitive check against a thousand versions stays fast).
    """

    fullname: str
    types: dict[str, str]
    defaults: frozenset[str]

    @classmethod
    def of(cls, schema: Any) -> RecordSummary | None:
        """The summary of ``schema``, or None when it is not a record of plain, unaliased fields."""
        as_json = schema.to_json()
        if not isinstance(as_json, dict) or as_json.get("type") != "record":
            return None
        fields = as_json.get("fields", [])
        if any("aliases" in f or not _plain(f["type"]) for f in fields):
            return None
        types = {f["name"]: json.dumps(f["type"], sort_keys=True) for f in fields}
        return cls(schema.fullname, types, frozenset(f["name"] for f in fields if "default" in f))

    def reads(self, writer: RecordSummary) -> bool:
        """True when this (reader) record surely resolves ``writer``'s data; False: check fully."""
        if self.fullname != writer.fullname:
            return False
        for name, kind in self.types.items():
            written = writer.types.get(name)
            if written != kind and not (written is None and name in self.defaults):
                return False
        return True


def _without_logical_types(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_logical_types(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [_without_logical_types(v) for v in node]
    return node


_AVRO_ERRORS = (avro.errors.AvroException, SchemaParseException, UnknownType, TypeError, ValueError,
                AttributeError, KeyError)


def _referenced_names(references: Sequence[Reference]) -> tuple[avro.name.Names, dict[str, Any]]:
    """The named types the referenced schemas define, for the avro package and for fastavro.

    Each referenced schema is parsed on its own (it is self-contained); two of them may define
    the same type (both resolved it from a common reference), which is fine when they agree.
    """
    names = avro.name.Names()
    named: dict[str, Any] = {}
    for reference in references:
        try:
            document = json.loads(reference.data)
            own = avro.name.Names()
            avro.schema.make_avsc_object(document, own)
            own_named: dict[str, Any] = {}
            fastavro.parse_schema(_without_logical_types(document), named_schemas=own_named, _write_hint=False)
        except (json.JSONDecodeError, RecursionError, *_AVRO_ERRORS) as e:
            raise InvalidSchema(f"referenced schema {reference.name!r} is not a valid Avro schema: {e}") from None
        for fullname, defined in own.names.items():
            known = names.names.get(fullname)
            if known is not None and known.to_json() != defined.to_json():
                raise InvalidSchema(f"references define Avro type {fullname!r} twice, differently")
            names.names[fullname] = defined
        named.update(own_named)
    return names, named


def type_name_of(schema: avro.schema.Schema) -> str:
    """The Pravega type of an Avro schema: a named type's full name, else its type."""
    fullname = getattr(schema, "fullname", None)
    return str(fullname) if fullname else str(schema.type)


class AvroFormat(SchemaFormat):
    """Avro schema JSON; the type is the full name of the top-level named type."""

    name = "Avro"

    def parse(self, data: bytes, type_name: str, references: Sequence[Reference] | None = None) -> ParsedSchema:
        try:
            text = data.decode("utf-8")
            document = json.loads(text, parse_constant=reject_constant)
            check_text(document, error=InvalidSchema, allow_nul=True)
            names, named = _referenced_names(references or ())
            schema = avro.schema.make_avsc_object(document, names)
            # The avro package does not check field defaults against their types; fastavro does.
            # Logical types go: the spec makes an invalid one plain, fastavro refuses it.
            fastavro.parse_schema(_without_logical_types(document), named_schemas=named, _write_hint=False)
        except UnicodeDecodeError as e:
            raise InvalidSchema(f"Avro schema is not UTF-8 text: {e}") from None
        except json.JSONDecodeError as e:
            raise InvalidSchema(f"Avro schema is not valid JSON: {e}") from None
        except RecursionError:
            raise InvalidSchema("Avro schema nests too deeply") from None
        except _AVRO_ERRORS as e:
            raise InvalidSchema(f"invalid Avro schema: {e}") from None
        derived = type_name_of(schema)
        if type_name and type_name != derived:
            raise InvalidSchema(
                f"type {type_name!r} does not match the Avro schema, whose full name is {derived!r}"
            )
        if references:
            # Stored self-contained: every referenced type written out where it is first used.
            data = json.dumps(schema.to_json(), separators=(",", ":")).encode()
        return ParsedSchema(self.name, derived, data, _normalized(schema), schema, RecordSummary.of(schema))

    def check(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        if reader.summary is not None and writer.summary is not None and reader.summary.reads(writer.summary):
            return []
        return check_avro(reader.parsed, writer.parsed)

    def describe(self, schema: ParsedSchema) -> str:
        as_json: Any = schema.parsed.to_json()
        return json.dumps(as_json)
