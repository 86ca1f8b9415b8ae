"""The ``materialized_tables`` table, on the shared declarative base (one database, one Alembic history)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from registry.db import Base


class MaterializedTableRow(Base):
    """The definition and refresh state of a materialized table, one row per table.

    Keyed by the table's stream: dropping the table (its stream row) deletes this row with it (ON
    DELETE CASCADE), which is what stops its refreshes. The lease columns say which refresher
    may commit to the table until when; ``cuts`` are the source cuts the table's content equals
    the query at.
    """

    __tablename__ = "materialized_tables"

    stream_id: Mapped[int] = mapped_column(ForeignKey("streams.id", ondelete="CASCADE"), primary_key=True)
    query_text: Mapped[str] = mapped_column(Text)
    #: the catalog and namespace against which the query's unqualified names resolve
    current_catalog: Mapped[str | None] = mapped_column(String(255))
    current_namespace: Mapped[list[Any]] = mapped_column(JSON)
    #: the tables the query reads: [{"scope": ..., "table": ...}]
    sources: Mapped[list[Any]] = mapped_column(JSON)
    freshness_ms: Mapped[int] = mapped_column(BigInteger)
    #: what the user asked for (auto, continuous, full)
    refresh_mode: Mapped[str] = mapped_column(String(16))
    #: initializing, activated, suspended or failed
    status: Mapped[str] = mapped_column(String(16))
    #: {"scope.table": cut} of the last refresh; {} before the first one
    cuts: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: the commit of the table that holds the last refresh's result (0: none yet)
    refresh_commit: Mapped[int] = mapped_column(BigInteger, default=0)
    last_refresh_at: Mapped[int | None] = mapped_column(BigInteger)
    last_refresh_duration_ms: Mapped[int | None] = mapped_column(BigInteger)
    last_error: Mapped[str | None] = mapped_column(Text)
    last_error_at: Mapped[int | None] = mapped_column(BigInteger)
    #: failures since the last success; the refresher waits (backoff) until ``next_attempt_at``
    failures: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[int | None] = mapped_column(BigInteger)
    lease_holder: Mapped[str | None] = mapped_column(String(255))
    lease_expires_at: Mapped[int | None] = mapped_column(BigInteger)
    #: the WITH options kept with the definition (null: none; migration 0013)
    options: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    #: the scheduled time the last scheduled refresh ran for (null: none recorded)
    scheduled_at: Mapped[int | None] = mapped_column(BigInteger)
    #: bumped by every change of the definition or the status
    version: Mapped[int]
    created_at: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[int] = mapped_column(BigInteger)
