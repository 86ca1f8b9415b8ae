"""catalog tables

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 15:00:41.266454
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "scopes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scopes")),
        sa.UniqueConstraint("name", name=op.f("uq_scopes_name")),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "streams",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scope_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("segments", sa.Integer(), nullable=False),
        sa.Column("retention_ms", sa.BigInteger(), nullable=True),
        sa.Column("retention_bytes", sa.BigInteger(), nullable=True),
        sa.Column("sealed", sa.Boolean(), nullable=False),
        sa.Column("truncated_at", sa.Integer(), nullable=False),
        sa.Column("last_commit", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["scope_id"], ["scopes.id"], name=op.f("fk_streams_scope_id_scopes"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_streams")),
        sa.UniqueConstraint("scope_id", "name", name=op.f("uq_streams_scope_id_name")),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "commits",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("stream_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("overwrite", sa.Boolean(), nullable=False),
        sa.Column("writer_id", sa.String(length=255), nullable=True),
        sa.Column("writer_sequence", sa.BigInteger(), nullable=True),
        sa.Column("event_count", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["stream_id"], ["streams.id"], name=op.f("fk_commits_stream_id_streams"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_commits")),
        sa.UniqueConstraint("stream_id", "number", name=op.f("uq_commits_stream_id_number")),
        sa.UniqueConstraint(
            "stream_id", "writer_id", "writer_sequence", name=op.f("uq_commits_stream_id_writer_id_writer_sequence")
        ),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "tables",
        sa.Column("stream_id", sa.Integer(), nullable=False),
        sa.Column("format", sa.String(length=32), nullable=False),
        sa.Column("type_name", sa.String(length=1024), nullable=False),
        sa.Column("schema", sa.JSON(), nullable=False),
        sa.Column("schema_id", sa.Integer(), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["stream_id"], ["streams.id"], name=op.f("fk_tables_stream_id_streams"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("stream_id", name=op.f("pk_tables")),
    )
    op.create_table(
        "chunks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("stream_id", sa.Integer(), nullable=False),
        sa.Column("commit_id", sa.Integer(), nullable=False),
        sa.Column("commit_number", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("segment", sa.Integer(), nullable=False),
        sa.Column("event_count", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("encoding_ids", sa.JSON(), nullable=False),
        sa.Column("min_event_time", sa.BigInteger(), nullable=True),
        sa.Column("max_event_time", sa.BigInteger(), nullable=True),
        sa.Column("stats", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["commit_id"], ["commits.id"], name=op.f("fk_chunks_commit_id_commits"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["stream_id"], ["streams.id"], name=op.f("fk_chunks_stream_id_streams"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chunks")),
        sa.UniqueConstraint("stream_id", "path", name=op.f("uq_chunks_stream_id_path")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("chunks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_chunks_commit_id"), ["commit_id"], unique=False)
        batch_op.create_index("ix_chunks_stream_commit", ["stream_id", "commit_number"], unique=False)


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("chunks", schema=None) as batch_op:
        batch_op.drop_index("ix_chunks_stream_commit")
        batch_op.drop_index(batch_op.f("ix_chunks_commit_id"))

    op.drop_table("chunks")
    op.drop_table("tables")
    op.drop_table("commits")
    op.drop_table("streams")
    op.drop_table("scopes")
