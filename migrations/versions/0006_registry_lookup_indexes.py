"""indexes for the registry's hot lookups at scale: keyset pages of groups, a group's newest version

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 08:30:00.000000

``groups (namespace, id)``: ``GET /v1/groups`` pages are ``namespace = ? AND id > ? ORDER BY id
LIMIT n``, a range of this index whatever the number of groups and namespaces.
``schema_versions (group_id, id)`` replaces ``(group_id)``: a group's newest live version is the
first live entry of a backward scan, instead of a sort of the group's whole history.

On PostgreSQL each CREATE INDEX holds a write lock on its table while it builds (a few seconds at
a million versions); run the upgrade in a quiet moment.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the two indexes; drop the one on group_id alone, a prefix of the new one."""
    op.create_index("ix_groups_namespace_id", "groups", ["namespace", "id"], unique=False)
    op.create_index("ix_schema_versions_group_id_id", "schema_versions", ["group_id", "id"], unique=False)
    op.drop_index("ix_schema_versions_group_id", table_name="schema_versions")


def downgrade() -> None:
    """Revert this revision."""
    op.create_index("ix_schema_versions_group_id", "schema_versions", ["group_id"], unique=False)
    op.drop_index("ix_schema_versions_group_id_id", table_name="schema_versions")
    op.drop_index("ix_groups_namespace_id", table_name="groups")
