"""tables that change: commit kinds and cuts, chunk order and removal, retention, registered readers

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 08:30:00.000000

Every existing commit was an append or an overwrite (``commits.overwrite``), so it gets that
kind. Every existing chunk sorts by the commit that added it (``sequence`` = its commit number),
and a chunk that a later overwrite hid is marked removed by the first such overwrite
(``removed_at``): a read at cut n then sees the chunks added at or before n and not removed at or
before n, which is what the newest overwrite at or before n used to decide. Nothing is expired
(``retained_from`` = 0) and no reader is registered.

The downgrade drops all of it again, which is lossless only while every commit is an append or
an overwrite and no chunk holds position deletes: older servers would read a row-level commit's
or a compaction's chunks as plain appends (deleted rows back, compacted rows twice). So it
refuses, before changing anything, when the database holds such commits or chunks. Expiry is
forgotten: older servers offer every cut again, including ones whose files gc has deleted.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KINDS = "kind IN ('append', 'overwrite', 'row-level', 'compaction')"


def upgrade() -> None:
    """Add the columns (backfilled from what the overwrite flags said) and the readers table."""
    with op.batch_alter_table("commits") as batch:
        batch.add_column(sa.Column("kind", sa.String(length=16), nullable=False, server_default="append"))
        batch.add_column(sa.Column("read_cut", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("base_cut", sa.Integer(), nullable=True))
    commits = sa.table(
        "commits",
        sa.column("id", sa.Integer()),
        sa.column("stream_id", sa.Integer()),
        sa.column("number", sa.Integer()),
        sa.column("overwrite", sa.Boolean()),
        sa.column("kind", sa.String()),
    )
    op.execute(commits.update().where(commits.c.overwrite.is_(True)).values(kind="overwrite"))
    with op.batch_alter_table("commits") as batch:
        batch.alter_column("kind", server_default=None, existing_type=sa.String(length=16), existing_nullable=False)
        batch.create_check_constraint(op.f("ck_commits_kind"), _KINDS)

    with op.batch_alter_table("chunks") as batch:
        batch.add_column(sa.Column("sequence", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("removed_at", sa.Integer(), nullable=True))
    chunks = sa.table(
        "chunks",
        sa.column("stream_id", sa.Integer()),
        sa.column("commit_number", sa.Integer()),
        sa.column("sequence", sa.Integer()),
        sa.column("removed_at", sa.Integer()),
    )
    first_overwrite_after = (
        sa.select(sa.func.min(commits.c.number))
        .where(
            commits.c.stream_id == chunks.c.stream_id,
            commits.c.overwrite.is_(True),
            commits.c.number > chunks.c.commit_number,
        )
        .scalar_subquery()
    )
    op.execute(chunks.update().values(sequence=chunks.c.commit_number, removed_at=first_overwrite_after))
    with op.batch_alter_table("chunks") as batch:
        batch.alter_column("sequence", server_default=None, existing_type=sa.Integer(), existing_nullable=False)

    with op.batch_alter_table("streams") as batch:
        batch.add_column(sa.Column("retained_from", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("streams") as batch:
        batch.alter_column("retained_from", server_default=None, existing_type=sa.Integer(), existing_nullable=False)

    op.create_table(
        "readers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("stream_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("offset", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["stream_id"], ["streams.id"], name=op.f("fk_readers_stream_id_streams"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_readers")),
        sa.UniqueConstraint("stream_id", "name", name=op.f("uq_readers_stream_id_name")),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    """Drop the readers table and the columns; refused while row-level or compaction commits, or
    position-deletes chunks, exist (older servers would misread them)."""
    conn = op.get_bind()
    changed = conn.execute(
        sa.text("SELECT count(*) FROM commits WHERE kind IN ('row-level', 'compaction')")
    ).scalar_one()
    deletes = conn.execute(sa.text("SELECT count(*) FROM chunks WHERE kind = 'deletes'")).scalar_one()
    if changed or deletes:
        raise RuntimeError(
            f"cannot downgrade below 0008: {changed} row-level or compaction commits and {deletes} "
            "position-deletes chunks exist, which older servers would read as appends; drop those tables "
            "(or restore a backup taken before 0008) first"
        )
    op.drop_table("readers")
    with op.batch_alter_table("streams") as batch:
        batch.drop_column("retained_from")
    with op.batch_alter_table("chunks") as batch:
        batch.drop_column("removed_at")
        batch.drop_column("sequence")
    with op.batch_alter_table("commits") as batch:
        batch.drop_constraint(op.f("ck_commits_kind"), type_="check")
        batch.drop_column("base_cut")
        batch.drop_column("read_cut")
        batch.drop_column("kind")
