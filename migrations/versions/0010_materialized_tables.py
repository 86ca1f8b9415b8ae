"""materialized tables: definition, refresh state and refresher lease, one row per table

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30 09:00:00.000000

A new table only; nothing existing changes. The downgrade drops it: the tables stay, as plain
tables (their property ``streamcat.materialized`` still refuses writes through Spark).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create ``materialized_tables`` (empty)."""
    op.create_table(
        "materialized_tables",
        sa.Column("stream_id", sa.Integer(), nullable=False),
        sa.Column("query_text", sa.Text(), nullable=False),
        sa.Column("current_catalog", sa.String(length=255), nullable=True),
        sa.Column("current_namespace", sa.JSON(), nullable=False),
        sa.Column("sources", sa.JSON(), nullable=False),
        sa.Column("freshness_ms", sa.BigInteger(), nullable=False),
        sa.Column("refresh_mode", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("cuts", sa.JSON(), nullable=False),
        sa.Column("refresh_commit", sa.BigInteger(), nullable=False),
        sa.Column("last_refresh_at", sa.BigInteger(), nullable=True),
        sa.Column("last_refresh_duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_error_at", sa.BigInteger(), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.BigInteger(), nullable=True),
        sa.Column("lease_holder", sa.String(length=255), nullable=True),
        sa.Column("lease_expires_at", sa.BigInteger(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["stream_id"], ["streams.id"], name=op.f("fk_materialized_tables_stream_id_streams"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("stream_id", name=op.f("pk_materialized_tables")),
    )


def downgrade() -> None:
    """Drop ``materialized_tables`` (every definition is lost)."""
    op.drop_table("materialized_tables")
