"""streams record whether the server manages their location (only managed locations are purged)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 06:30:00.000000

Which existing locations the server chose cannot be known for sure here (the warehouse is a
setting of the server, not of the database, and may have moved). A stream is taken as managed
when its location has the shape the server gives, ``.../<scope>/<stream>``, and as external
otherwise: a location a client spelled some other way keeps its files. A managed location is
still purged only while it lies inside the warehouse the server runs with, with no symlink on the
way (catalog_api/locations.py), so a row written before locations were confined, at a path of the
default shape outside the warehouse, is never purged either.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add ``streams.managed``, true for locations of the default shape."""
    with op.batch_alter_table("streams") as batch:
        batch.add_column(sa.Column("managed", sa.Boolean(), nullable=False, server_default=sa.true()))
    conn = op.get_bind()
    rows = conn.execute(
        sa.text("SELECT st.id, sc.name, st.name, st.location FROM streams st JOIN scopes sc ON sc.id = st.scope_id")
    ).all()
    external = [
        {"stream_id": stream_id}
        for stream_id, scope, name, location in rows
        if not str(location).rstrip("/").endswith(f"/{scope}/{name}")
    ]
    if external:
        streams = sa.table("streams", sa.column("id", sa.Integer()), sa.column("managed", sa.Boolean()))
        conn.execute(streams.update().where(streams.c.id == sa.bindparam("stream_id")).values(managed=False), external)
    # From here on the store says, for every new stream, which it is.
    with op.batch_alter_table("streams") as batch:
        batch.alter_column("managed", server_default=None, existing_type=sa.Boolean(), existing_nullable=False)


def downgrade() -> None:
    """Drop ``streams.managed`` (purge then deletes any stream's files again, as before 0004)."""
    with op.batch_alter_table("streams") as batch:
        batch.drop_column("managed")
