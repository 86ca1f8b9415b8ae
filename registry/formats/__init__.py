"""Schema formats, one module each, looked up by their Pravega name."""

from __future__ import annotations

from functools import cache

from registry.errors import BadRequest
from registry.formats.base import Incompatibility, ParsedSchema, SchemaFormat

__all__ = ["FORMAT_NAMES", "Incompatibility", "ParsedSchema", "SchemaFormat", "get_format"]

#: Every serialization format the registry accepts, by Pravega name.
FORMAT_NAMES = ("Avro", "Protobuf", "Json", "Any", "Custom")


@cache
def _formats() -> dict[str, SchemaFormat]:
    # Imported lazily so that importing the package costs nothing until a schema is parsed.
    from registry.formats.avro import AvroFormat
    from registry.formats.jsonschema import JsonSchemaFormat
    from registry.formats.opaque import OpaqueFormat
    from registry.formats.protobuf import ProtobufFormat

    found: list[SchemaFormat] = [
        AvroFormat(),
        ProtobufFormat(),
        JsonSchemaFormat(),
        OpaqueFormat("Any"),
        OpaqueFormat("Custom"),
    ]
    return {f.name: f for f in found}


def get_format(name: str) -> SchemaFormat:
    """The format registered under ``name``; :class:`BadRequest` if there is none."""
    try:
        return _formats()[name]
    except KeyError:
        raise BadRequest(
            f"unknown serialization format {name!r}; expected one of {', '.join(FORMAT_NAMES)}"
        ) from None
