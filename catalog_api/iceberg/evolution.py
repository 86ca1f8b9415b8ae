"""An Iceberg client's new schema as the catalog's column changes: columns are matched by field id, so a
renamed column is a rename (its data stays), a new id an added column, a missing id a dropped one, a
changed primitive type a type change and a required column made optional a nullability change. The
catalog then applies them as ALTER TABLE does, and the group's compatibility policy decides."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from catalog_api.changes import (
    AddColumn,
    ColumnChange,
    DropColumn,
    RenameColumn,
    UpdateColumnNullability,
    UpdateColumnType,
)
from catalog_api.iceberg.errors import NotSupported
from registry.errors import BadRequest

_SPARK = {
    "boolean": "boolean", "int": "integer", "long": "long", "float": "float", "double": "double",
    "string": "string", "binary": "binary", "date": "date", "timestamptz": "timestamp", "timestamp": "timestamp_ntz",
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def spark_type(iceberg: Any, where: str) -> str:
    """The Spark type of an Iceberg primitive type; nested types are changed through Spark or Streamcat's API."""
    if isinstance(iceberg, str):
        if iceberg in _SPARK:
            return _SPARK[iceberg]
        decimal = _DECIMAL.fullmatch(iceberg)
        if decimal:
            return f"decimal({decimal.group(1)},{decimal.group(2)})"
        raise BadRequest(f"column {where}: Streamcat tables cannot hold Iceberg type {iceberg!r}")
    raise NotSupported(
        f"column {where}: nested types are changed through Spark (ALTER TABLE) or Streamcat's API, not Iceberg's"
    )


def _fields(schema: Mapping[str, Any], what: str) -> dict[int, dict[str, Any]]:
    fields = schema.get("fields")
    if not isinstance(fields, list):
        raise BadRequest(f"{what} has no list of fields")
    found: dict[int, dict[str, Any]] = {}
    for f in fields:
        if not (isinstance(f, dict) and isinstance(f.get("id"), int) and isinstance(f.get("name"), str)
                and "type" in f and isinstance(f.get("required"), bool)):
            raise BadRequest(f"{what}: every field needs an integer id, a name, a type and required, not {f!r}")
        if f["id"] in found:
            raise BadRequest(f"{what}: field id {f['id']} appears twice")
        found[f["id"]] = f
    return found


def column_changes(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[ColumnChange]:
    """The changes that make the table's Iceberg schema ``current`` into ``wanted`` (top-level columns)."""
    old, new = _fields(current, "the table's schema"), _fields(wanted, "the new schema")
    changes: list[ColumnChange] = []
    for fid, f in old.items():
        if fid not in new:
            changes.append(DropColumn((f["name"],)))
    for fid, f in new.items():
        name = f["name"]
        if fid not in old:
            changes.append(AddColumn((name,), spark_type(f["type"], name), nullable=not f["required"]))
            continue
        before = old[fid]
        if before["name"] != name:
            changes.append(RenameColumn((before["name"],), name))
        if before["type"] != f["type"]:
            if not isinstance(before["type"], str):
                spark_type(before["type"], name)  # refuses nested changes
            changes.append(UpdateColumnType((name,), spark_type(f["type"], name)))
        if before["required"] and not f["required"]:
            changes.append(UpdateColumnNullability((name,), True))
        elif f["required"] and not before["required"]:
            raise BadRequest(f"column {name}: an optional column cannot be made required (its rows may hold nulls)")
    return changes


def spark_data_type(iceberg: Any, where: str) -> Any:
    """The Spark type (JSON form) of any Iceberg type, nested ones included."""
    if isinstance(iceberg, str):
        return spark_type(iceberg, where)
    kind = iceberg.get("type") if isinstance(iceberg, dict) else None
    if kind == "struct":
        return spark_struct(iceberg, where + ".")
    if kind == "list":
        return {"type": "array", "elementType": spark_data_type(iceberg.get("element"), where + ".element"),
                "containsNull": not iceberg.get("element-required", False)}
    if kind == "map":
        return {"type": "map", "keyType": spark_data_type(iceberg.get("key"), where + ".key"),
                "valueType": spark_data_type(iceberg.get("value"), where + ".value"),
                "valueContainsNull": not iceberg.get("value-required", False)}
    raise BadRequest(f"column {where}: {iceberg!r} is not an Iceberg type")


def spark_struct(schema: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The Spark StructType (JSON form) of an Iceberg struct or schema; the catalog gives the ids."""
    fields = _fields(schema, f"schema {prefix.rstrip('.') or 'of the table'}")
    return {"type": "struct", "fields": [
        {"name": f["name"], "type": spark_data_type(f["type"], prefix + f["name"]), "nullable": not f["required"],
         "metadata": {}}
        for f in fields.values()
    ]}
