"""Small identifier types, so that a schema id is never passed where a version belongs."""

from __future__ import annotations

from typing import NewType

Namespace = NewType("Namespace", str)
GroupName = NewType("GroupName", str)
TypeName = NewType("TypeName", str)
SchemaId = NewType("SchemaId", int)
EncodingId = NewType("EncodingId", int)
Version = NewType("Version", int)
CodecName = NewType("CodecName", str)
