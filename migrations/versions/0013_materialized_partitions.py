"""materialized tables: WITH options (partition date formatters) and the tick of the last scheduled refresh

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28 11:00:00.000000

Two nullable columns: existing definitions have no options (null reads as none), and their next
scheduled refresh is reckoned from their last refresh until a scheduled one records its tick.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add ``options`` and ``scheduled_at`` to ``materialized_tables``."""
    with op.batch_alter_table("materialized_tables") as batch:
        batch.add_column(sa.Column("options", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("scheduled_at", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    """Drop the two columns (the tables' partitioning stays; their scheduled refreshes become full ones)."""
    with op.batch_alter_table("materialized_tables") as batch:
        batch.drop_column("scheduled_at")
        batch.drop_column("options")
