"""data contracts: schema contracts, their configuration, the DEK registry's keys

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28 08:00:00.000000

Schemas registered so far have no contract and no configuration sets any, so nothing existing
changes: the new columns are null and the new tables empty.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CONFIG_COLUMNS = (
    ("compatibility_group", sa.String(length=255)),
    ("default_metadata", sa.Text()),
    ("override_metadata", sa.Text()),
    ("default_rule_set", sa.Text()),
    ("override_rule_set", sa.Text()),
)


def upgrade() -> None:
    """Add the configuration columns and create the three tables (empty)."""
    with op.batch_alter_table("confluent_configs") as batch:
        for name, kind in _CONFIG_COLUMNS:
            batch.add_column(sa.Column(name, kind, nullable=True))
    op.create_table(
        "confluent_contracts",
        sa.Column("schema_id", sa.Integer(), nullable=False),
        sa.Column("content", sa.String(length=64), nullable=False),
        sa.Column("contract", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["schema_id"], ["schemas.id"], name=op.f("fk_confluent_contracts_schema_id_schemas"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("schema_id", name=op.f("pk_confluent_contracts")),
    )
    op.create_index(op.f("ix_confluent_contracts_content"), "confluent_contracts", ["content"])
    op.create_table(
        "dek_keks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("namespace", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("kms_type", sa.String(length=64), nullable=False),
        sa.Column("kms_key_id", sa.String(length=1024), nullable=False),
        sa.Column("kms_props", sa.JSON(), nullable=False),
        sa.Column("doc", sa.Text(), nullable=True),
        sa.Column("shared", sa.Boolean(), nullable=False),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dek_keks")),
        sa.UniqueConstraint("namespace", "name", name=op.f("uq_dek_keks_namespace_name")),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "dek_deks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kek_id", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(length=600), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("algorithm", sa.String(length=32), nullable=False),
        sa.Column("encrypted", sa.Text(), nullable=False),
        sa.Column("ts", sa.BigInteger(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["kek_id"], ["dek_keks.id"], name=op.f("fk_dek_deks_kek_id_dek_keks"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dek_deks")),
        sa.UniqueConstraint(
            "kek_id", "subject", "version", "algorithm", name=op.f("uq_dek_deks_kek_id_subject_version_algorithm")
        ),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    """Drop what upgrade added."""
    op.drop_table("dek_deks")
    op.drop_table("dek_keks")
    op.drop_index(op.f("ix_confluent_contracts_content"), table_name="confluent_contracts")
    op.drop_table("confluent_contracts")
    with op.batch_alter_table("confluent_configs") as batch:
        for name, _kind in reversed(_CONFIG_COLUMNS):
            batch.drop_column(name)
