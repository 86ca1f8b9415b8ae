"""Request bodies of the Pravega registry API that several test modules send."""

from __future__ import annotations

import base64
import json
from typing import Any


def avro_schema_info(schema: dict[str, Any]) -> dict[str, Any]:
    """A SchemaInfo body for an Avro record schema (its type is the record's name)."""
    data = base64.b64encode(json.dumps(schema).encode()).decode()
    return {"type": schema["name"], "serializationFormat": {"serializationFormat": "Avro"}, "schemaData": data}


def avro_group(name: str) -> dict[str, Any]:
    """A createGroup body: Avro, Backward."""
    return {
        "groupName": name,
        "groupProperties": {
            "serializationFormat": {"serializationFormat": "Avro"},
            "compatibility": {"policy": "Backward"},
        },
    }
