"""Avro schemas: parsed and normalized by the ``avro`` package, checked by its resolution rules."""

from __future__ import annotations

import json
import warnings
from typing import Any

import avro.errors
import avro.schema

from registry.errors import InvalidSchema
from registry.formats.avro_compat import check_avro
from registry.formats.base import Incompatibility, ParsedSchema, SchemaFormat

# Logical types avro 1.12 does not know (local-timestamp-*, ...) are valid Avro: the schema
# stays as written and the compatibility checker knows them; the warning is noise.
warnings.filterwarnings("ignore", category=avro.errors.IgnoredLogicalType)


def _normalized(schema: avro.schema.Schema) -> bytes:
    # Parsing Canonical Form drops defaults, aliases and logical types, all of which
    # change how data resolves, so identity is the full JSON form with sorted keys.
    return json.dumps(schema.to_json(), sort_keys=True, separators=(",", ":")).encode()


def type_name_of(schema: avro.schema.Schema) -> str:
    """The Pravega type of an Avro schema: a named type's full name, else its type."""
    fullname = getattr(schema, "fullname", None)
    return str(fullname) if fullname else str(schema.type)


class AvroFormat(SchemaFormat):
    """Avro schema JSON; the type is the full name of the top-level named type."""

    name = "Avro"

    def parse(self, data: bytes, type_name: str) -> ParsedSchema:
        try:
            text = data.decode("utf-8")
            schema = avro.schema.parse(text)
        except UnicodeDecodeError as e:
            raise InvalidSchema(f"Avro schema is not UTF-8 text: {e}") from None
        except json.JSONDecodeError as e:
            raise InvalidSchema(f"Avro schema is not valid JSON: {e}") from None
        except (avro.errors.AvroException, TypeError, ValueError, AttributeError, KeyError) as e:
            raise InvalidSchema(f"invalid Avro schema: {e}") from None
        derived = type_name_of(schema)
        if type_name and type_name != derived:
            raise InvalidSchema(
                f"type {type_name!r} does not match the Avro schema, whose full name is {derived!r}"
            )
        return ParsedSchema(self.name, derived, data, _normalized(schema), schema)

    def check(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        return check_avro(reader.parsed, writer.parsed)

    def describe(self, schema: ParsedSchema) -> str:
        as_json: Any = schema.parsed.to_json()
        return json.dumps(as_json)
