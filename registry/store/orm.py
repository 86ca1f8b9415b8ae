"""SQLAlchemy typed-ORM tables of the registry. Alembic revisions in ``migrations/``
create and change them; the application never calls ``create_all``."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, LargeBinary, String, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from registry.db import NEVER_REUSED, Base


class GroupRow(Base):
    """A schema group in a namespace."""

    __tablename__ = "groups"
    __table_args__ = (
        UniqueConstraint("namespace", "name"),
        # Listings are keyset pages of one namespace in id order: a page is a range of this index.
        Index("ix_groups_namespace_id", "namespace", "id"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    namespace: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(255))
    serialization_format: Mapped[str] = mapped_column(String(32))
    full_type_name: Mapped[str] = mapped_column(String(255), default="")
    allow_multiple_types: Mapped[bool] = mapped_column(Boolean)
    compatibility: Mapped[dict[str, Any]]
    properties: Mapped[dict[str, Any]]
    created_at: Mapped[int] = mapped_column(BigInteger)


class SchemaRow(Base):
    """Schema content, shared by every group that registers it: the id is global."""

    __tablename__ = "schemas"
    __table_args__ = (
        UniqueConstraint(
            "serialization_format", "full_type_name", "type_name", "fingerprint", name="uq_schemas_content"
        ),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    serialization_format: Mapped[str] = mapped_column(String(32))
    full_type_name: Mapped[str] = mapped_column(String(255), default="")
    type_name: Mapped[str] = mapped_column(String(1024))
    fingerprint: Mapped[str] = mapped_column(String(64))
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[int] = mapped_column(BigInteger)


class VersionRow(Base):
    """A schema registered in a group: its version number among its type, and history.

    The key orders a group's history; deleted versions stay, flagged, so that their
    numbers are never reused and data encoded with them stays readable.
    """

    __tablename__ = "schema_versions"
    __table_args__ = (
        UniqueConstraint("group_id", "type_name", "version"),
        Index(
            "uq_schema_versions_live_schema",
            "group_id",
            "schema_id",
            unique=True,
            sqlite_where=text("deleted = 0"),
            postgresql_where=text("NOT deleted"),
        ),
        # A group's versions in order of addition: its newest live one is the first entry of a
        # backward scan, however long the history (also what group_id alone was indexed for).
        Index("ix_schema_versions_group_id_id", "group_id", "id"),
        NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"))
    schema_id: Mapped[int] = mapped_column(ForeignKey("schemas.id"), index=True)
    type_name: Mapped[str] = mapped_column(String(1024))
    version: Mapped[int]
    properties: Mapped[dict[str, Any]]
    compatibility: Mapped[dict[str, Any]]
    created_at: Mapped[int] = mapped_column(BigInteger)
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)


class CodecRow(Base):
    """A codec type registered in a group."""

    __tablename__ = "codec_types"
    __table_args__ = (UniqueConstraint("group_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    properties: Mapped[dict[str, Any]]


class EncodingRow(Base):
    """An encoding id: one (schema version, codec) pair. The key is the global id."""

    __tablename__ = "encodings"
    __table_args__ = (UniqueConstraint("version_id", "codec"), NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("schema_versions.id", ondelete="CASCADE"))
    codec: Mapped[str] = mapped_column(String(255))
