"""The ``views`` table, on the shared declarative base (one database, one Alembic history)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from registry.db import NEVER_REUSED, Base


class ViewRow(Base):
    """A view of a scope: its query text and what Spark needs to resolve and describe it.

    Deleting the scope deletes its views (the service refuses that without cascade).
    """

    __tablename__ = "views"
    __table_args__ = (UniqueConstraint("scope_id", "name"), NEVER_REUSED)

    id: Mapped[int] = mapped_column(primary_key=True)
    scope_id: Mapped[int] = mapped_column(ForeignKey("scopes.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    query_text: Mapped[str] = mapped_column(Text)
    #: the catalog and namespace in force at creation, against which the query's names resolve
    current_catalog: Mapped[str | None] = mapped_column(String(255))
    current_namespace: Mapped[list[Any]] = mapped_column(JSON)
    #: the view's columns: a Spark StructType in its JSON form (names, types, comments)
    schema: Mapped[dict[str, Any]]
    query_column_names: Mapped[list[Any]] = mapped_column(JSON)
    sql_configs: Mapped[dict[str, Any]]
    schema_mode: Mapped[str | None] = mapped_column(String(64))
    comment: Mapped[str] = mapped_column(Text, default="")
    properties: Mapped[dict[str, Any]]
    owner: Mapped[str | None] = mapped_column(String(255))
    #: bumped by every replace, for optimistic concurrency
    version: Mapped[int]
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
