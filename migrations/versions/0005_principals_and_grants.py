"""principals (users, API tokens) and grants: who may call the API, and on what

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 07:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create ``principals`` and ``grants`` (empty: with STREAMCAT_AUTH=none nothing reads them)."""
    op.create_table(
        "principals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=True),
        sa.Column("secret_hash", sa.String(length=255), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("kind IN ('user', 'token')", name=op.f("ck_principals_kind")),
        sa.CheckConstraint("role IS NULL OR role IN ('reader', 'writer', 'admin')", name=op.f("ck_principals_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_principals")),
        sa.UniqueConstraint("name", name=op.f("uq_principals_name")),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_principals_secret_hash")),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "grants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("principal", sa.String(length=255), nullable=False),
        sa.Column("permission", sa.String(length=16), nullable=False),
        sa.Column("resource", sa.String(length=600), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("permission IN ('read', 'write', 'admin')", name=op.f("ck_grants_permission")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_grants")),
        sa.UniqueConstraint(
            "principal", "permission", "resource", name=op.f("uq_grants_principal_permission_resource")
        ),
        sqlite_autoincrement=True,
    )
    op.create_index(op.f("ix_grants_principal"), "grants", ["principal"], unique=False)


def downgrade() -> None:
    """Drop ``grants`` and ``principals`` (every user, token and grant is lost)."""
    op.drop_index(op.f("ix_grants_principal"), table_name="grants")
    op.drop_table("grants")
    op.drop_table("principals")
