"""JSON records: UTF-8 JSON text, optionally validated against the JSON Schema on write."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from registry.formats.base import ParsedSchema
from registry.serde.base import Decode, Encode, ReadOptions, RecordFormat
from registry.serde.errors import SerdeError


def json_path(path: Any) -> str:
    """A jsonschema error path as ``$.items[0].name``."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


class JsonRecords(RecordFormat):
    """Any JSON value: dicts, lists, strings, numbers, booleans and None."""

    name = "Json"

    def encoder(self, schema: ParsedSchema, *, validate: bool, prefix: bytes) -> Encode:
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
        type_name = schema.type_name

        def encode(record: Any) -> bytes:
            try:
                return prefix + dumps(record).encode()
            except (TypeError, ValueError) as e:
                raise SerdeError(f"record of type {type_name} is not JSON: {e}") from e

        if not validate:
            return encode
        cls = jsonschema.validators.validator_for(schema.parsed, default=jsonschema.Draft202012Validator)
        validator = cls(schema.parsed, format_checker=cls.FORMAT_CHECKER)

        def validate_and_encode(record: Any) -> bytes:
            error = jsonschema.exceptions.best_match(validator.iter_errors(record))
            if error is not None:
                raise SerdeError(
                    f"record does not match JSON schema {type_name} at {json_path(error.absolute_path)}: "
                    f"{error.message}"
                )
            return encode(record)

        return validate_and_encode

    def decoder(self, writer: ParsedSchema, reader: ParsedSchema | None, options: ReadOptions) -> Decode:
        # JSON has no schema resolution: a compatible reader schema reads the same document.
        return json.loads
