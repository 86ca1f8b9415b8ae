"""Schemas and group settings the registry tests share."""

from __future__ import annotations

import json
from typing import Any

from registry.client import schema_info
from registry.model import Compatibility, GroupProperties, SchemaInfo, SerializationFormat


def avro_record(name: str, *fields: dict[str, Any], namespace: str | None = None) -> SchemaInfo:
    """An Avro record schema as a SchemaInfo."""
    schema: dict[str, Any] = {"type": "record", "name": name, "fields": list(fields)}
    if namespace:
        schema["namespace"] = namespace
    return schema_info("Avro", json.dumps(schema))


def field(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    """An Avro record field."""
    return {"name": name, "type": type_, **extra}


def group(fmt: str = "Avro", policy: str = "Backward", multiple: bool = False, **props: str) -> GroupProperties:
    """Group properties for a simple policy."""
    full = "my.custom" if fmt == "Custom" else ""
    return GroupProperties(SerializationFormat(fmt, full), Compatibility.of(policy), multiple, dict(props))
