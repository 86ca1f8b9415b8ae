"""Formats whose schemas the registry stores but does not interpret (Any, Custom)."""

from __future__ import annotations

from collections.abc import Sequence

from registry.errors import InvalidSchema
from registry.formats.base import Incompatibility, ParsedSchema, Reference, SchemaFormat


class OpaqueFormat(SchemaFormat):
    """Schema bytes kept as given; two schemas are the same only if their bytes are."""

    checks_compatibility = False

    def __init__(self, name: str) -> None:
        self.name = name

    def parse(self, data: bytes, type_name: str, references: Sequence[Reference] | None = None) -> ParsedSchema:
        if references:
            raise InvalidSchema(f"{self.name} schemas cannot have references")
        if not type_name:
            raise InvalidSchema(f"{self.name} schemas need a type name")
        return ParsedSchema(self.name, type_name, data, data, data)

    def check(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        if reader.canonical == writer.canonical:
            return []
        return [
            Incompatibility(
                "$",
                f"the registry cannot compare {self.name} schemas; only identical ones are compatible",
            )
        ]
