"""views: the named queries of Spark's ViewCatalog, one row per view of a scope

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 09:00:00.000000

A new table only; nothing existing changes. The downgrade drops it, and every view with it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create ``views`` (empty)."""
    op.create_table(
        "views",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scope_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("query_text", sa.Text(), nullable=False),
        sa.Column("current_catalog", sa.String(length=255), nullable=True),
        sa.Column("current_namespace", sa.JSON(), nullable=False),
        sa.Column("schema", sa.JSON(), nullable=False),
        sa.Column("query_column_names", sa.JSON(), nullable=False),
        sa.Column("sql_configs", sa.JSON(), nullable=False),
        sa.Column("schema_mode", sa.String(length=64), nullable=True),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("owner", sa.String(length=255), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["scope_id"], ["scopes.id"], name=op.f("fk_views_scope_id_scopes"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_views")),
        sa.UniqueConstraint("scope_id", "name", name=op.f("uq_views_scope_id_name")),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    """Drop ``views`` (every view is lost)."""
    op.drop_table("views")
