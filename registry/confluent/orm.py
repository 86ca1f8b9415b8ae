"""Tables of the Confluent API beside the registry's own (``registry.store.orm``).

Subjects are groups and versions are ``schema_versions`` rows, so these hold only what the
Confluent API has and the Pravega model lacks: subject version numbers that are not a version's
position in its subject, configuration and modes, and the references of schemas.
"""

from __future__ import annotations

from sqlalchemy import Boolean, ForeignKey, Index, String, Text, UniqueConstraint
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
