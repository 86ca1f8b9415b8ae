"""The Iceberg catalog's own refusals."""

from __future__ import annotations

from registry.errors import Conflict, StreamcatError


class NotSupported(StreamcatError):
    """An Iceberg operation this catalog refuses, with the reason (Iceberg's 406)."""

    status = 406
    code = "NotSupported"


class RequirementFailed(Conflict):
    """A commit's requirement does not hold any more: another change came first (Iceberg's 409)."""

    code = "CommitFailed"
