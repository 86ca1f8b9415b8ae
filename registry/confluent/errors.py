"""Errors of the Confluent API, with Confluent's status and ``error_code`` for each.

They are StreamcatErrors like every other; the Confluent blueprint answers them (and the
registry's own errors, translated by :func:`confluent_code`) as ``{"error_code": N, "message": ...}``.
"""

from __future__ import annotations

from typing import Any

from registry import errors


class ConfluentError(errors.StreamcatError):
    """An error whose Confluent ``error_code`` is known."""

    error_code: int = 50001

    def to_json(self) -> dict[str, Any]:
        return {"error_code": self.error_code, "message": self.message}


class SubjectNotFound(ConfluentError):
    """No subject of that name (or none with live versions, unless deleted ones were asked for)."""

    status, code, error_code = 404, "SubjectNotFound", 40401


class VersionNotFound(ConfluentError):
    """The subject has no such version."""

    status, code, error_code = 404, "VersionNotFound", 40402


class SchemaNotFound(ConfluentError):
    """No schema with that id, or the schema is not registered under the subject."""

    status, code, error_code = 404, "SchemaNotFound", 40403


class SubjectSoftDeleted(ConfluentError):
    """The subject was soft-deleted; ``permanent=true`` deletes it for good."""

    status, code, error_code = 404, "SubjectSoftDeleted", 40404


class SubjectNotSoftDeleted(ConfluentError):
    """A permanent delete of a subject that was not soft-deleted first."""

    status, code, error_code = 404, "SubjectNotSoftDeleted", 40405


class VersionSoftDeleted(ConfluentError):
    """The version was soft-deleted already."""

    status, code, error_code = 404, "VersionSoftDeleted", 40406


class VersionNotSoftDeleted(ConfluentError):
    """A permanent delete of a version that was not soft-deleted first."""

    status, code, error_code = 404, "VersionNotSoftDeleted", 40407


class CompatibilityNotConfigured(ConfluentError):
    """The subject has no compatibility level of its own (``defaultToGlobal=true`` answers the inherited one)."""

    status, code, error_code = 404, "SubjectLevelCompatibilityNotConfigured", 40408


class ModeNotConfigured(ConfluentError):
    """The subject has no mode of its own (``defaultToGlobal=true`` answers the inherited one)."""

    status, code, error_code = 404, "SubjectLevelModeNotConfigured", 40409


class InvalidSchema(ConfluentError):
    """The schema does not parse, or its references do not resolve."""

    status, code, error_code = 422, "InvalidSchema", 42201


class InvalidVersion(ConfluentError):
    """A version that is neither a number from 1 on, ``latest`` nor -1."""

    status, code, error_code = 422, "InvalidVersion", 42202


class InvalidCompatibilityLevel(ConfluentError):
    """A compatibility level Confluent does not define, or configuration that is not supported."""

    status, code, error_code = 422, "InvalidCompatibilityLevel", 42203


class InvalidMode(ConfluentError):
    """A mode Confluent does not define."""

    status, code, error_code = 422, "InvalidMode", 42204


class OperationNotPermitted(ConfluentError):
    """The mode forbids the operation, or IMPORT was asked to reuse an id for other content."""

    status, code, error_code = 422, "OperationNotPermitted", 42205


class ReferenceExists(ConfluentError):
    """The version is referenced by a live schema, so it cannot be deleted."""

    status, code, error_code = 422, "ReferenceExists", 42206


class InvalidSubject(ConfluentError):
    """A subject or context name that cannot be stored."""

    status, code, error_code = 422, "InvalidSubject", 42208


class Incompatible(ConfluentError):
    """The schema breaks the subject's compatibility level (status and code 409, as clients expect)."""

    status, code, error_code = 409, "IncompatibleSchema", 409


class InvalidRuleSet(ConfluentError):
    """A rule set Confluent would refuse: a rule without a name or type, a duplicate name, a
    mode its list does not take."""

    status, code, error_code = 422, "InvalidRuleSet", 42210


class KeyNotFound(ConfluentError):
    """No KEK (or DEK) of that name, subject, version and algorithm (DEK registry)."""

    status, code, error_code = 404, "KeyNotFound", 40470


class KeyNotSoftDeleted(ConfluentError):
    """A permanent delete of a key that was not soft-deleted first (DEK registry)."""

    status, code, error_code = 422, "KeyNotSoftDeleted", 40471


class KeyExists(ConfluentError):
    """A key of that name (or DEK of that subject, version and algorithm) exists already, with
    other values (DEK registry)."""

    status, code, error_code = 409, "KeyExists", 40972


class InvalidKey(ConfluentError):
    """A key the DEK registry cannot take: a bad name, KMS type, algorithm or key material."""

    status, code, error_code = 422, "InvalidKey", 42271


class KeyReferenceExists(ConfluentError):
    """A KEK that still has live DEKs cannot be deleted (DEK registry)."""

    status, code, error_code = 422, "KeyReferenceExists", 42272


class MalformedRequest(ConfluentError):
    """The body is not JSON, or not an object of the expected shape."""

    status, code, error_code = 422, "UnprocessableEntity", 422


#: error_code of the registry's own errors, by class (the first match in the MRO counts).
_CODES: dict[type[errors.StreamcatError], int] = {
    errors.InvalidSchema: 42201,
    errors.GroupNotFound: 40401,
    errors.SchemaNotFound: 40403,
    errors.IncompatibleSchema: 409,
    errors.FormatMismatch: 409,
    errors.BadRequest: 422,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.PayloadTooLarge: 413,
}
#: The status each translated code is answered with.
_STATUS = {42201: 422, 40401: 404, 40403: 404, 409: 409, 422: 422, 404: 404, 413: 413}


def confluent_code(error: errors.StreamcatError) -> tuple[int, int]:
    """(HTTP status, Confluent error_code) of any StreamcatError."""
    if isinstance(error, ConfluentError):
        return error.status, error.error_code
    if error.code == "SchemaTooLarge":  # a format's bound on what it parses (Protobuf's protoc input)
        return 422, 42209
    for cls in type(error).__mro__:
        code = _CODES.get(cls)
        if code is not None:
            return _STATUS[code], code
    return error.status, http_error_code(error.status)


def http_error_code(status: int) -> int:
    """The error_code of an HTTP error without a Confluent code of its own: Confluent's 500xx for
    server errors (50001 store error, 50002 timeout: the database was busy), the status otherwise."""
    if status == 503:
        return 50002
    if status >= 500:
        return 50001
    return status
