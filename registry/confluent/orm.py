"""Tables of the Confluent API beside the registry's own (``registry.store.orm``).

Subjects are groups and versions are ``schema_versions`` rows, so these hold only what the
Confluent API has and the Pravega model lacks: subject version numbers that are not a version's
position in its subject, configuration and modes, the references of schemas, their data
contracts, and the keys of the DEK registry.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from registry.db import NEVER_REUSED, Base


class VersionPinRow(Base):
    """The subject version number of a version whose number is not one more than the previous
    version's: the versions after a permanently deleted one keep their numbers, and IMPORT mode
    registers a version under the number it is given."""

    __tablename__ = "subject_version_pins"
    __table_args__ = (UniqueConstraint("group_id", "number"),)

    version_id: Mapped[int] = mapped_column(ForeignKey("schema_versions.id", ondelete="CASCADE"), primary_key=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"))
    number: Mapped[int]


class ConfigRow(Base):
    """Compatibility level, normalization and mode set for a subject, for a context (``subject``
    empty) or for the whole registry (``namespace`` and ``subject`` empty). None: not set here."""

    __tablename__ = "confluent_configs"
    __table_args__ = (UniqueConstraint("namespace", "subject"), NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    namespace: Mapped[str] = mapped_column(String(255))
    subject: Mapped[str] = mapped_column(String(255))
    compatibility: Mapped[str | None] = mapped_column(String(32))
    normalize: Mapped[bool | None] = mapped_column(Boolean)
    mode: Mapped[str | None] = mapped_column(String(32))
    #: data contracts (registry.confluent.contracts.ContractConfig): a metadata property name,
    #: and metadata and rule sets as JSON text
    compatibility_group: Mapped[str | None] = mapped_column(String(255))
    default_metadata: Mapped[str | None] = mapped_column(Text)
    override_metadata: Mapped[str | None] = mapped_column(Text)
    default_rule_set: Mapped[str | None] = mapped_column(Text)
    override_rule_set: Mapped[str | None] = mapped_column(Text)


class RegisteredTextRow(Base):
    """A schema with references as it was registered, using the referenced schemas by name.
    The registry stores the self-contained form (``schemas.data``); this is what the Confluent
    API answers."""

    __tablename__ = "confluent_schemas"

    schema_id: Mapped[int] = mapped_column(ForeignKey("schemas.id", ondelete="CASCADE"), primary_key=True)
    schema: Mapped[str] = mapped_column(Text)


class ReferenceRow(Base):
    """One reference of a schema: the name it uses, and the subject version it names (a subject
    without a context is in the context of the subject the schema is registered under)."""

    __tablename__ = "schema_references"
    __table_args__ = (
        UniqueConstraint("schema_id", "position"),
        # ``referencedby``: which schemas name this subject version.
        Index("ix_schema_references_subject_version", "subject", "version"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    schema_id: Mapped[int] = mapped_column(ForeignKey("schemas.id", ondelete="CASCADE"))
    position: Mapped[int]
    name: Mapped[str] = mapped_column(String(1024))
    subject: Mapped[str] = mapped_column(String(600))
    version: Mapped[int]


class ContractRow(Base):
    """The data contract (metadata and rule set) of a schema registered with one. The contract
    is part of the schema's identity (its ``fingerprint``), so a schema id has one contract and
    every version of that id carries it. ``content`` is the fingerprint of the same schema
    without a contract: a lookup that gives no contract finds the versions with any."""

    __tablename__ = "confluent_contracts"

    schema_id: Mapped[int] = mapped_column(ForeignKey("schemas.id", ondelete="CASCADE"), primary_key=True)
    content: Mapped[str] = mapped_column(String(64), index=True)
    #: registry.confluent.contracts.contract_key: canonical JSON of the metadata and rule set
    contract: Mapped[str] = mapped_column(Text)


class KekRow(Base):
    """A key encryption key of the DEK registry: a key in a KMS (never its material), by name
    within a context (``namespace``). ``shared``: the registry may use the KMS itself, to make
    and unwrap DEKs for clients."""

    __tablename__ = "dek_keks"
    __table_args__ = (UniqueConstraint("namespace", "name"), NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    namespace: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(255))
    kms_type: Mapped[str] = mapped_column(String(64))
    kms_key_id: Mapped[str] = mapped_column(String(1024))
    kms_props: Mapped[dict[str, Any]]
    doc: Mapped[str | None] = mapped_column(Text)
    shared: Mapped[bool] = mapped_column(Boolean)
    ts: Mapped[int] = mapped_column(BigInteger)
    deleted: Mapped[bool] = mapped_column(Boolean)


class DekRow(Base):
    """A data encryption key of a subject, wrapped by its KEK (``encrypted``, base64), one per
    (subject, version, algorithm). The registry keeps only wrapped material."""

    __tablename__ = "dek_deks"
    __table_args__ = (UniqueConstraint("kek_id", "subject", "version", "algorithm"), NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    kek_id: Mapped[int] = mapped_column(ForeignKey("dek_keks.id", ondelete="CASCADE"))
    subject: Mapped[str] = mapped_column(String(600))
    version: Mapped[int]
    algorithm: Mapped[str] = mapped_column(String(32))
    encrypted: Mapped[str] = mapped_column(Text)
    ts: Mapped[int] = mapped_column(BigInteger)
    deleted: Mapped[bool] = mapped_column(Boolean)
