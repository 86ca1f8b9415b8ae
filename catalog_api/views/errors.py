"""Errors of views, in the registry's error hierarchy (same JSON shape and status codes)."""

from __future__ import annotations

from registry.errors import AlreadyExists, NotFound


class ViewNotFound(NotFound):
    """No view of that name in the scope."""

    code = "ViewNotFound"


class ViewAlreadyExists(AlreadyExists):
    """A view of that name exists, and the request must not replace it."""

    code = "ViewAlreadyExists"


class TableAlreadyExists(AlreadyExists):
    """A table of that name exists in the scope: tables and views share one name space."""

    code = "TableAlreadyExists"
