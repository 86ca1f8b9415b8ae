"""The DEK registry's domain: KEKs (keys in a KMS, by name within a context) and DEKs (a
subject's data keys, wrapped by a KEK, by version and algorithm)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from registry.confluent.errors import InvalidKey

ALGORITHMS = ("AES128_GCM", "AES256_GCM", "AES256_SIV")
DEFAULT_ALGORITHM = "AES256_GCM"
_KEK_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-.]{0,254}")


def kek_name(name: str) -> str:
    """``name`` if it is a valid KEK name (a letter or ``_`` first, then letters, digits, ``_``,
    ``-`` and ``.``); InvalidKey otherwise."""
    if not _KEK_NAME.fullmatch(name):
        raise InvalidKey(f"invalid KEK name {name[:80]!r}: a letter or '_', then letters, digits, '_', '-' or '.'")
    return name


def algorithm(value: str | None) -> str:
    """The DEK algorithm ``value`` names (AES256_GCM when absent); InvalidKey otherwise."""
    if value is None or value == "":
        return DEFAULT_ALGORITHM
    if value not in ALGORITHMS:
        raise InvalidKey(f"invalid DEK algorithm {value[:40]!r}: expected one of {', '.join(ALGORITHMS)}")
    return value


@dataclass(frozen=True)
class Kek:
    """A key encryption key: where it lives (``kms_type``, ``kms_key_id``, ``kms_props``), never
    its material. ``shared``: the registry may use the KMS itself (to make DEKs for clients and
    hand them the key material)."""

    namespace: str
    name: str
    kms_type: str
    kms_key_id: str
    kms_props: Mapping[str, str] = field(default_factory=dict)
    doc: str | None = None
    shared: bool = False
    ts: int = 0
    deleted: bool = False

    def same_key(self, other: Kek) -> bool:
        """Whether ``other`` names the same key with the same settings (a repeated create)."""
        return (self.kms_type, self.kms_key_id, dict(self.kms_props), self.doc, self.shared) == (
            other.kms_type, other.kms_key_id, dict(other.kms_props), other.doc, other.shared)


@dataclass(frozen=True)
class Dek:
    """A data encryption key of ``subject``: its material wrapped by the KEK (base64), and, for a
    shared KEK, the material itself (base64; never stored)."""

    kek_name: str
    subject: str
    version: int
    algorithm: str
    encrypted_key_material: str
    ts: int = 0
    deleted: bool = False
    key_material: str | None = None
