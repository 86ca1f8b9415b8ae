"""JSON Schema documents, checked against their meta-schema with ``jsonschema``."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from registry.errors import InvalidSchema
from registry.formats.base import Incompatibility, ParsedSchema, Reference, SchemaFormat
from registry.formats.jsonschema_compat import check_json_schema
from registry.limits import check_text, reject_constant

_OLD_DRAFTS = ("draft-04", "draft-06", "draft-07")


def _bundle(document: Any, references: Sequence[Reference]) -> Any:
    """``document`` with every referenced schema embedded as a resource of its own, identified by
    the name it is referenced by, so that its ``$ref`` resolve without the registry.

    The referenced schemas go under ``$defs`` (``definitions`` before draft 2019-09), keyed by
    their names, each with ``$id`` (``id`` in draft 4) set to its name.
    """
    if not isinstance(document, dict):
        raise InvalidSchema("a JSON Schema with references must be an object")
    dialect = str(document.get("$schema", ""))
    old = any(draft in dialect for draft in _OLD_DRAFTS)
    holder = "definitions" if old else "$defs"
    id_keyword = "id" if "draft-04" in dialect else "$id"
    bundled = dict(document)
    if not isinstance(bundled.get(holder, {}), dict):
        raise InvalidSchema(f"{holder} of a JSON Schema with references must be an object")
    embedded = dict(bundled.get(holder) or {})
    for reference in references:
        try:
            referenced = json.loads(reference.data)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
            raise InvalidSchema(f"referenced schema {reference.name!r} is not valid JSON: {e}") from None
        if not isinstance(referenced, dict):
            referenced = {"allOf": [referenced]}
        resource = copy.copy(referenced)
        resource[id_keyword] = reference.name
        if reference.name in embedded and embedded[reference.name] != resource:
            raise InvalidSchema(f"{holder} of the schema already has an entry {reference.name!r}")
        embedded[reference.name] = resource
    bundled[holder] = embedded
    return bundled


class JsonSchemaFormat(SchemaFormat):
    """A JSON Schema (draft 4 to 2020-12, by ``$schema``; 2020-12 when absent)."""

    name = "Json"

    def parse(self, data: bytes, type_name: str, references: Sequence[Reference] | None = None) -> ParsedSchema:
        try:
            document: Any = json.loads(data.decode("utf-8"), parse_constant=reject_constant)
        except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as e:
            raise InvalidSchema(f"JSON Schema is not valid JSON: {e}") from None
        except RecursionError:
            raise InvalidSchema("JSON Schema nests too deeply") from None
        check_text(document, error=InvalidSchema, allow_nul=True)
        if not isinstance(document, (dict, bool)):
            raise InvalidSchema("a JSON Schema must be an object or a boolean")
        if references:
            document = _bundle(document, references)
            data = json.dumps(document, separators=(",", ":")).encode()
        validator = jsonschema.validators.validator_for(document, default=jsonschema.Draft202012Validator)
        try:
            validator.check_schema(document)
        except jsonschema.exceptions.SchemaError as e:
            where = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
            raise InvalidSchema(f"invalid JSON Schema at {where}: {e.message}") from None
        name = type_name or (document.get("title", "") if isinstance(document, dict) else "")
        if not name and references is not None:
            name = derived_type(document)
        if not name:
            raise InvalidSchema("JSON schemas need a type (or a title in the schema)")
        canonical = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
        return ParsedSchema(self.name, name, data, canonical, document)

    def check(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        return check_json_schema(reader.parsed, writer.parsed)

    def describe(self, schema: ParsedSchema) -> str:
        return schema.data.decode("utf-8")


#: The type of a JSON Schema that names none (no title, no ``$id``), when the registry derives it.
UNTITLED = "json"


def derived_type(document: Any) -> str:
    """The type of a schema registered without one: its title, else its ``$id``, else ``json``."""
    if isinstance(document, dict):
        for key in ("title", "$id", "id"):
            value = document.get(key)
            if isinstance(value, str) and value:
                return value[:1024]
    return UNTITLED
