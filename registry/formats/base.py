"""The contract every schema format implements: parse, canonical form, compatibility."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
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


@dataclass(frozen=True)
class Reference:
    """A schema that another one uses by name (Confluent's schema references).

    ``name`` is how the referring schema names it: the import path of a Protobuf file, the URI of
    a JSON Schema ``$ref``, the full name of an Avro type. ``data`` and ``type_name`` are the
    referenced schema as the registry stores it, which is self-contained (its own references
    already resolved into it), so references never need resolving more than one level deep.
    """

    name: str
    data: bytes
    type_name: str = ""


class SchemaFormat(ABC):
    """One serialization format: how to parse its schemas and compare two of them."""

    #: The Pravega name of the format (``Avro``, ``Protobuf``, ``Json``, ``Any``, ``Custom``).
    name: str
    #: Whether the registry can judge compatibility between two schemas of this format.
    checks_compatibility: bool = True

    @abstractmethod
    def parse(self, data: bytes, type_name: str, references: Sequence[Reference] | None = None) -> ParsedSchema:
        """Validate ``data`` as a schema of this format describing ``type_name``.

        ``type_name`` may be empty when the format can derive it (Avro's full name).
        Raises :class:`registry.errors.InvalidSchema` naming the problem.

        ``references`` None: ``data`` is self-contained, as the Pravega API takes schemas. A
        sequence (even empty): ``data`` is a schema as the Confluent API takes it, which may use
        the referenced schemas by name and whose type is derived when ``type_name`` is empty.
        The result's ``data`` is then self-contained (what the registry stores: the referenced
        schemas resolved into it), so parsing it again needs no references.
        """

    @abstractmethod
    def check(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        """Reasons why ``reader`` cannot read data written with ``writer`` (empty: it can)."""

    def describe(self, schema: ParsedSchema) -> str | None:
        """The schema as a human-readable string for group history, if the format has one."""
        return None
