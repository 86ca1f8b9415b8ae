"""Schema formats, one module each, looked up by their Pravega name."""

from __future__ import annotations

from functools import cache

from registry.errors import BadRequest
from registry.formats.base import Incompatibility, ParsedSchema, SchemaFormat

__all__ = ["FORMAT_NAMES", "Incompatibility", "ParsedSchema", "SchemaFormat", "get_format"]

#: Every serialization format the registry accepts, by Pravega name.
FORMAT_NAMES = ("Avro", "Protobuf", "Json", "Any", "Custom")


@cache
def _format(name: str) -> SchemaFormat:
    # Imported lazily, each format when first asked for: importing the package costs nothing until a schema
    # is parsed, and parsing an Avro schema loads no JSON Schema validator.
    if name == "Avro":
        from registry.formats.avro import AvroFormat

        return AvroFormat()
    if name == "Protobuf":
        from registry.formats.protobuf import ProtobufFormat

        return ProtobufFormat()
    if name == "Json":
        from registry.formats.jsonschema import JsonSchemaFormat

        return JsonSchemaFormat()
    from registry.formats.opaque import OpaqueFormat

    return OpaqueFormat(name)


def get_format(name: str) -> SchemaFormat:
    """The format registered under ``name``; :class:`BadRequest` if there is none."""
    if name not in FORMAT_NAMES:
        raise BadRequest(f"unknown serialization format {name!r}; expected one of {', '.join(FORMAT_NAMES)}")
    return _format(name)
