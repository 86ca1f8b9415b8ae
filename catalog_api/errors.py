"""Catalog errors, in the registry's error hierarchy (same JSON shape and status codes)."""

from __future__ import annotations

from registry.errors import Conflict, NotFound


class ScopeNotFound(NotFound):
    """No scope of that name."""

    code = "ScopeNotFound"


class StreamNotFound(NotFound):
    """No stream of that name in the scope."""

    code = "StreamNotFound"


class TableNotFound(NotFound):
    """No table of that name in the scope."""

    code = "TableNotFound"


class ScopeNotEmpty(Conflict):
    """A scope still holds streams or groups and was not deleted with cascade."""

    code = "ScopeNotEmpty"


class StreamSealed(Conflict):
    """A sealed stream takes no more commits."""

    code = "StreamSealed"
