"""Catalog errors, in the registry's error hierarchy (same JSON shape and status codes)."""

from __future__ import annotations

from registry.errors import BadRequest, Conflict, NotFound


class ScopeNotFound(NotFound):
    """No scope of that name."""

    code = "ScopeNotFound"


class StreamNotFound(NotFound):
    """No stream of that name in the scope."""

    code = "StreamNotFound"


class TableNotFound(NotFound):
    """No table of that name in the scope."""

    code = "TableNotFound"


class CommitNotFound(NotFound):
    """No commit of that writer id and sequence on the stream (the writer's commit was not made)."""

    code = "CommitNotFound"


class ReaderNotFound(NotFound):
    """No registered reader of that name on the stream."""

    code = "ReaderNotFound"


class ScopeNotEmpty(Conflict):
    """A scope still holds streams or groups and was not deleted with cascade."""

    code = "ScopeNotEmpty"


class StreamSealed(Conflict):
    """A sealed stream takes no more commits."""

    code = "StreamSealed"


class LocationNotAllowed(BadRequest):
    """A stream location the server does not give: outside the warehouse and every allowed root,
    spelled with ``..``, escaping its root through a symlink, or on a filesystem no root is on."""

    code = "LocationNotAllowed"


class LocationOverlaps(Conflict):
    """A stream location that is, holds, or sits inside another live stream's location."""

    code = "LocationOverlaps"


class CommitConflict(Conflict):
    """A commit lost a race: the stream moved past the commit it expected, a chunk it removes is no
    longer live, or (checked by the committing client) a commit since its read cut touched what it
    changes. Retryable: read again and run the statement again."""

    code = "CommitConflict"
