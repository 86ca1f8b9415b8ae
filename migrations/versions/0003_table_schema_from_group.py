"""a table's schema is its group's latest version: drop the copy kept in the tables row

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 05:40:00.000000
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COPIED = ("type_name", "schema", "schema_id", "schema_version")


def upgrade() -> None:
    """Apply this revision; and mark each table's group as the table's (the registry API will not delete it)."""
    with op.batch_alter_table("tables") as batch:
        for column in _COPIED:
            batch.drop_column(column)
    conn = op.get_bind()
    owned = conn.execute(
        sa.text(
            "SELECT g.id, g.properties, sc.name, st.name FROM tables t JOIN streams st ON st.id = t.stream_id"
            " JOIN scopes sc ON sc.id = st.scope_id JOIN groups g ON g.namespace = sc.name AND g.name = st.name"
        )
    ).all()
    groups = sa.table("groups", sa.column("id", sa.Integer()), sa.column("properties", sa.JSON()))
    for group_id, properties, scope, table in owned:
        marked = {**_json(properties), "streamcat.owner": f"table {scope}.{table}"}
        conn.execute(groups.update().where(groups.c.id == group_id).values(properties=marked))


def _json(value: object) -> dict[str, str]:
    # SQLite hands JSON columns back as text in raw SQL; PostgreSQL as decoded objects.
    return dict(json.loads(value) if isinstance(value, str) else value or {})  # type: ignore[arg-type]


def downgrade() -> None:
    """Put the copies back, filled from each table's group (its latest live version)."""
    from catalog_api.schema import to_struct  # the conversion the server itself uses

    with op.batch_alter_table("tables") as batch:
        batch.add_column(sa.Column("type_name", sa.String(length=1024), nullable=True))
        batch.add_column(sa.Column("schema", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("schema_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("schema_version", sa.Integer(), nullable=True))
    conn = op.get_bind()
    latest = conn.execute(
        sa.text(
            "SELECT t.stream_id, t.format, v.type_name, v.version, s.id, s.data"
            " FROM tables t JOIN streams st ON st.id = t.stream_id JOIN scopes sc ON sc.id = st.scope_id"
            " JOIN groups g ON g.namespace = sc.name AND g.name = st.name"
            " JOIN schema_versions v ON v.group_id = g.id"
            " JOIN schemas s ON s.id = v.schema_id"
            " WHERE v.id = (SELECT max(v2.id) FROM schema_versions v2 WHERE v2.group_id = g.id AND NOT v2.deleted)"
        )
    ).all()
    tables = sa.table(
        "tables",
        sa.column("stream_id", sa.Integer()),
        sa.column("type_name", sa.String()),
        sa.column("schema", sa.JSON()),
        sa.column("schema_id", sa.Integer()),
        sa.column("schema_version", sa.Integer()),
    )
    for stream_id, fmt, type_name, version, schema_id, data in latest:
        conn.execute(
            tables.update()
            .where(tables.c.stream_id == stream_id)
            .values(
                type_name=type_name,
                schema=to_struct(fmt, bytes(data), type_name),
                schema_id=schema_id,
                schema_version=version,
            )
        )
    with op.batch_alter_table("tables") as batch:
        for column in _COPIED:
            batch.alter_column(column, nullable=False)
