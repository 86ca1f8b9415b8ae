"""Domain errors. Each carries the HTTP status and error code the API answers with.

One JSON error handler in the application factory turns any of these into
``{"error": {"code": ..., "message": ...}}``; views never catch them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from registry.formats.base import Incompatibility


class StreamcatError(Exception):
    """Base of every error the server reports to a client."""

    status: int = 500
    code: str = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_json(self) -> dict[str, Any]:
        """The body of the error response."""
        return {"error": {"code": self.code, "message": self.message}}


class BadRequest(StreamcatError):
    """The request is malformed: bad JSON, a missing or unknown field, a bad value."""

    status = 400
    code = "BadRequest"


class InvalidSchema(BadRequest):
    """The schema data does not parse or validate under its format."""

    code = "InvalidSchema"


class PayloadTooLarge(StreamcatError):
    """The request body exceeds the configured limit."""

    status = 413
    code = "PayloadTooLarge"


class Unauthorized(StreamcatError):
    """The server wants credentials, or refused the ones given (wrong, expired, revoked): 401."""

    status = 401
    code = "Unauthorized"


class Forbidden(StreamcatError):
    """The credentials were accepted but do not permit this on that resource: 403."""

    status = 403
    code = "Forbidden"


class NotFound(StreamcatError):
    """A named resource does not exist."""

    status = 404
    code = "NotFound"


class GroupNotFound(NotFound):
    """No group of that name in that namespace."""

    code = "GroupNotFound"


class SchemaNotFound(NotFound):
    """No such schema, version or id in the group."""

    code = "SchemaNotFound"


class EncodingNotFound(NotFound):
    """No such encoding id in the group."""

    code = "EncodingNotFound"


class Conflict(StreamcatError):
    """The request conflicts with the current state."""

    status = 409
    code = "Conflict"


class AlreadyExists(Conflict):
    """A resource of that name exists already."""

    code = "AlreadyExists"


class WriteConflict(Conflict):
    """A compare-and-set or expected version did not match the stored one."""

    code = "WriteConflict"


class IncompatibleSchema(Conflict):
    """The schema breaks the group's compatibility policy; ``reasons`` say where."""

    code = "IncompatibleSchema"

    def __init__(self, message: str, reasons: Sequence[Incompatibility] = ()) -> None:
        super().__init__(message)
        self.reasons = list(reasons)

    def to_json(self) -> dict[str, Any]:
        body = super().to_json()
        body["error"]["reasons"] = [r.to_json() for r in self.reasons]
        return body


class Busy(StreamcatError):
    """The server is doing as much of this as it takes at once; the same request may succeed in a
    moment (503 with Retry-After, like a busy database)."""

    status = 503
    code = "ServerBusy"
    headers = (("Retry-After", "1"),)


class CodecNotRegistered(StreamcatError):
    """An encoding was asked for with a codec type the group does not have."""

    status = 412
    code = "CodecTypeNotRegistered"


class FormatMismatch(StreamcatError):
    """The schema's serialization format is not the one the group accepts."""

    status = 417
    code = "SerializationFormatMismatch"
