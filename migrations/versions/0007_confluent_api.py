"""tables of the Confluent API: subject version pins, configs and modes, schema references

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 09:30:00.000000

Subjects are groups and their versions the groups' versions, so nothing existing changes: a
version's Confluent number is its position in its group unless a pin says otherwise, which no
version has yet.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the four tables (empty)."""
    op.create_table(
        "subject_version_pins",
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["version_id"], ["schema_versions.id"],
            name=op.f("fk_subject_version_pins_version_id_schema_versions"), ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["group_id"], ["groups.id"], name=op.f("fk_subject_version_pins_group_id_groups"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("version_id", name=op.f("pk_subject_version_pins")),
        sa.UniqueConstraint("group_id", "number", name=op.f("uq_subject_version_pins_group_id_number")),
    )
    op.create_table(
        "confluent_configs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("namespace", sa.String(length=255), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("compatibility", sa.String(length=32), nullable=True),
        sa.Column("normalize", sa.Boolean(), nullable=True),
        sa.Column("mode", sa.String(length=32), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_confluent_configs")),
        sa.UniqueConstraint("namespace", "subject", name=op.f("uq_confluent_configs_namespace_subject")),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "confluent_schemas",
        sa.Column("schema_id", sa.Integer(), nullable=False),
        sa.Column("schema", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["schema_id"], ["schemas.id"], name=op.f("fk_confluent_schemas_schema_id_schemas"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("schema_id", name=op.f("pk_confluent_schemas")),
    )
    op.create_table(
        "schema_references",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("schema_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=1024), nullable=False),
        sa.Column("subject", sa.String(length=600), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["schema_id"], ["schemas.id"], name=op.f("fk_schema_references_schema_id_schemas"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schema_references")),
        sa.UniqueConstraint("schema_id", "position", name=op.f("uq_schema_references_schema_id_position")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_schema_references_subject_version", "schema_references", ["subject", "version"])


def downgrade() -> None:
    """Drop the four tables (subject config, modes, pins and references are lost)."""
    op.drop_index("ix_schema_references_subject_version", table_name="schema_references")
    op.drop_table("schema_references")
    op.drop_table("confluent_schemas")
    op.drop_table("confluent_configs")
    op.drop_table("subject_version_pins")
