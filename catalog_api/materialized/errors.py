"""Errors of materialized tables, in the registry's error hierarchy (same JSON shape and status codes)."""

from __future__ import annotations

from registry.errors import Conflict, NotFound


class MaterializedTableNotFound(NotFound):
    """No materialized table of that name in the scope (there may be a plain table of that name)."""

    code = "MaterializedTableNotFound"


class LeaseHeld(Conflict):
    """Another refresher holds the table's lease and it has not expired: that one refreshes it."""

    code = "RefreshLeaseHeld"


class MaterializedWriteRefused(Conflict):
    """A commit to a materialized table that does not come from the refresher holding its lease:
    the table's content is its query's result, so only refreshes write it."""

    code = "MaterializedTableWriteRefused"
