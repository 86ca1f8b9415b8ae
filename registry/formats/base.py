"""The contract every schema format implements: parse, canonical form, compatibility."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Incompatibility:
    """One reason why a reader schema cannot read data written with a writer schema.

    ``path`` locates the problem inside the schema (``$.address.zip`` for Avro and
    JSON Schema, ``message Order field 3`` for Protobuf); ``message`` says what broke.
    """

    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        """The JSON form used in error bodies and validate responses."""
        return {"path": self.path, "message": self.message}

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class ParsedSchema:
    """A schema that passed its format's validation.

    ``canonical`` is the normalized byte form whose sha-256 identifies the schema's
    content; ``data`` is what the registry stores and hands back as ``schemaData``;
    ``parsed`` is the format's own object, used by its compatibility checker.
    """

    format: str
    type_name: str
    data: bytes
    canonical: bytes
    parsed: Any = field(compare=False, repr=False)
    #: format-specific facts computed once at parse time to speed up checks
    summary: Any = field(default=None, compare=False, repr=False)

    @property
    def fingerprint(self) -> str:
        """sha-256 of the canonical form, hex encoded."""
        return hashlib.sha256(self.canonical).hexdigest()


class SchemaFormat(ABC):
    """One serialization format: how to parse its schemas and compare two of them."""

    #: The Pravega name of the format (``Avro``, ``Protobuf``, ``Json``, ``Any``, ``Custom``).
    name: str
    #: Whether the registry can judge compatibility between two schemas of this format.
    checks_compatibility: bool = True

    @abstractmethod
    def parse(self, data: bytes, type_name: str) -> ParsedSchema:
        """Validate ``data`` as a schema of this format describing ``type_name``.

        ``type_name`` may be empty when the format can derive it (Avro's full name).
        Raises :class:`registry.errors.InvalidSchema` naming the problem.
        """

    @abstractmethod
    def check(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        """Reasons why ``reader`` cannot read data written with ``writer`` (empty: it can)."""

    def describe(self, schema: ParsedSchema) -> str | None:
        """The schema as a human-readable string for group history, if the format has one."""
        return None
