"""partitioned tables: partition specs, each table's current spec, each chunk's partition

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07 09:00:00.000000

Every existing table is unpartitioned: its current spec is 0 (which never has a row) and no
partition field id has been used (999: fields count from 1000). Every existing chunk is in no
partition (NULL). Nothing is backfilled beyond those defaults.

The downgrade drops the specs and the columns. That loses only metadata: every chunk stays a
valid chunk of its table, and older servers read partitioned tables as unpartitioned ones (all
rows, no partition pruning), so nothing is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create ``partition_specs`` (empty) and add the columns with their defaults."""
    op.create_table(
        "partition_specs",
        sa.Column("stream_id", sa.Integer(), nullable=False),
        sa.Column("spec_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("fields", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["stream_id"], ["streams.id"], name=op.f("fk_partition_specs_stream_id_streams"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("stream_id", "spec_id", name=op.f("pk_partition_specs")),
    )
    with op.batch_alter_table("tables") as batch:
        batch.add_column(sa.Column("spec_id", sa.Integer(), nullable=False, server_default=sa.text("0")))
        batch.add_column(
            sa.Column("last_partition_field_id", sa.Integer(), nullable=False, server_default=sa.text("999"))
        )
    with op.batch_alter_table("chunks") as batch:
        batch.add_column(sa.Column("partition", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop the columns and ``partition_specs`` (every table reads as unpartitioned again)."""
    with op.batch_alter_table("chunks") as batch:
        batch.drop_column("partition")
    with op.batch_alter_table("tables") as batch:
        batch.drop_column("last_partition_field_id")
        batch.drop_column("spec_id")
    op.drop_table("partition_specs")
