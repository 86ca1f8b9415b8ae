"""registry tables

Revision ID: 0001
Revises:
Create Date: 2026-11-22 14:56:33.983994
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "groups",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("namespace", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("serialization_format", sa.String(length=32), nullable=False),
        sa.Column("full_type_name", sa.String(length=255), nullable=False),
        sa.Column("allow_multiple_types", sa.Boolean(), nullable=False),
        sa.Column("compatibility", sa.JSON(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_groups")),
        sa.UniqueConstraint("namespace", "name", name=op.f("uq_groups_namespace_name")),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "schemas",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("serialization_format", sa.String(length=32), nullable=False),
        sa.Column("full_type_name", sa.String(length=255), nullable=False),
        sa.Column("type_name", sa.String(length=1024), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schemas")),
        sa.UniqueConstraint(
            "serialization_format",
            "full_type_name",
            "type_name",
            "fingerprint",
            name="uq_schemas_content",
        ),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "codec_types",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_id"], ["groups.id"], name=op.f("fk_codec_types_group_id_groups"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_codec_types")),
        sa.UniqueConstraint("group_id", "name", name=op.f("uq_codec_types_group_id_name")),
    )
    op.create_table(
        "schema_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("schema_id", sa.Integer(), nullable=False),
        sa.Column("type_name", sa.String(length=1024), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("compatibility", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_id"], ["groups.id"], name=op.f("fk_schema_versions_group_id_groups"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["schema_id"], ["schemas.id"], name=op.f("fk_schema_versions_schema_id_schemas")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schema_versions")),
        sa.UniqueConstraint(
            "group_id", "type_name", "version", name=op.f("uq_schema_versions_group_id_type_name_version")
        ),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("schema_versions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_schema_versions_group_id"), ["group_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_schema_versions_schema_id"), ["schema_id"], unique=False)
        batch_op.create_index(
            "uq_schema_versions_live_schema",
            ["group_id", "schema_id"],
            unique=True,
            sqlite_where=sa.text("deleted = 0"),
            postgresql_where=sa.text("NOT deleted"),
        )

    op.create_table(
        "encodings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("codec", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_id"], ["groups.id"], name=op.f("fk_encodings_group_id_groups"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["schema_versions.id"],
            name=op.f("fk_encodings_version_id_schema_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_encodings")),
        sa.UniqueConstraint("version_id", "codec", name=op.f("uq_encodings_version_id_codec")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("encodings", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_encodings_group_id"), ["group_id"], unique=False)


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("encodings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_encodings_group_id"))

    op.drop_table("encodings")
    with op.batch_alter_table("schema_versions", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_schema_versions_live_schema",
            sqlite_where=sa.text("deleted = 0"),
            postgresql_where=sa.text("NOT deleted"),
        )
        batch_op.drop_index(batch_op.f("ix_schema_versions_schema_id"))
        batch_op.drop_index(batch_op.f("ix_schema_versions_group_id"))

    op.drop_table("schema_versions")
    op.drop_table("codec_types")
    op.drop_table("schemas")
    op.drop_table("groups")
