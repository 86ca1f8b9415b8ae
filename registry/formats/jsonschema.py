"""JSON Schema documents, checked against their meta-schema with ``jsonschema``."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from registry.errors import InvalidSchema
from registry.formats.base import Incompatibility, ParsedSchema, SchemaFormat
from registry.formats.jsonschema_compat import check_json_schema
from registry.limits import check_text, reject_constant


class JsonSchemaFormat(SchemaFormat):
    """A JSON Schema (draft 4 to 2020-12, by ``$schema``; 2020-12 when absent)."""

    name = "Json"

    def parse(self, data: bytes, type_name: str) -> ParsedSchema:
        try:
            document: Any = json.loads(data.decode("utf-8"), parse_constant=reject_constant)
        except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as e:
            raise InvalidSchema(f"JSON Schema is not valid JSON: {e}") from None
        except RecursionError:
            raise InvalidSchema("JSON Schema nests too deeply") from None
        check_text(document, error=InvalidSchema, allow_nul=True)
        if not isinstance(document, (dict, bool)):
            raise InvalidSchema("a JSON Schema must be an object or a boolean")
        validator = jsonschema.validators.validator_for(document, default=jsonschema.Draft202012Validator)
        try:
            validator.check_schema(document)
        except jsonschema.exceptions.SchemaError as e:
            where = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
            raise InvalidSchema(f"invalid JSON Schema at {where}: {e.message}") from None
        name = type_name or (document.get("title", "") if isinstance(document, dict) else "")
        if not name:
            raise InvalidSchema("JSON schemas need a type (or a title in the schema)")
        canonical = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
        return ParsedSchema(self.name, name, data, canonical, document)

    def check(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        return check_json_schema(reader.parsed, writer.parsed)

    def describe(self, schema: ParsedSchema) -> str:
        return schema.data.decode("utf-8")
