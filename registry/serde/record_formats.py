"""The lookup of a record format's serializer by format name.

The formats are imported lazily, each when first asked for, and none of them imports this module:
a reader of Avro events need not load protobuf's descriptor machinery, nor a JSON Schema validator.
"""

from __future__ import annotations

from functools import cache

from registry.serde.base import RecordFormat
from registry.serde.errors import SerdeError

#: The formats that have a serializer.
_SERIALIZED = ("Avro", "Json", "Protobuf")


@cache
def _record_format(name: str) -> RecordFormat:
    if name == "Avro":
        from registry.serde.avro import AvroRecords

        return AvroRecords()
    if name == "Protobuf":
        from registry.serde.protobuf import ProtobufRecords

        return ProtobufRecords()
    from registry.serde.json import JsonRecords

    return JsonRecords()


def record_format(name: str) -> RecordFormat:
    """The serializer of format ``name``; SerdeError for formats without one (Any, Custom)."""
    if name not in _SERIALIZED:
        raise SerdeError(f"no serializer for serialization format {name!r}; supported: {', '.join(_SERIALIZED)}")
    return _record_format(name)
