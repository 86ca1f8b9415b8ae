"""Errors of the serializers: bad events, records that do not fit their schema, unknown encodings."""

from __future__ import annotations

from registry.errors import BadRequest


class SerdeError(BadRequest):
    """An event or a record cannot be serialized or deserialized; the message says why and where."""

    code = "SerdeError"


class UnknownEncoding(SerdeError):
    """An event names an encoding id that its group does not know."""

    code = "UnknownEncoding"
