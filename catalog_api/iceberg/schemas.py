"""Spark table schemas and partition specs in Iceberg's JSON forms.

Columns keep the table's own field ids (``parquet.field.id``, :mod:`catalog_api.schema.fieldids`), the
ids its Parquet chunks carry. Array elements and map keys and values have no id in a Spark schema;
Iceberg needs one, so each gets one derived from its parent's id alone (:func:`inner_id`), which stays
the same from one schema version to the next. A schema made before the table had ids is given them
in schema order, as the catalog gives them at the table's first column change.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from catalog_api.partitioning.spec import IDENTITY, PartitionSpec
from catalog_api.schema.fieldids import assign_field_ids, field_id, has_field_ids
from registry.errors import Conflict

Struct = dict[str, Any]

_PRIMITIVES = {
    "boolean": "boolean", "byte": "int", "short": "int", "integer": "int", "long": "long", "float": "float",
    "double": "double", "string": "string", "binary": "binary", "date": "date", "timestamp": "timestamptz",
    "timestamp_ntz": "timestamp",
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_CHAR = re.compile(r"(?:var)?char\(\s*\d+\s*\)")
#: Where the ids of array elements and map keys and values start (above any column's id).
INNER_IDS = 1 << 24


class NotExpressible(Conflict):
    """A table Iceberg cannot describe (a column of a type Iceberg lacks)."""

    code = "NotExpressible"


def inner_id(parent: int, slot: int) -> int:
    """The id of the element (slot 0) of an array, or the key (0) or value (1) of a map, whose field
    has id ``parent``: stable across schema versions, since it depends on the parent's id only."""
    return INNER_IDS + 2 * parent + slot


def with_ids(schema: Struct) -> Struct:
    """``schema`` if its columns have ids, else a copy with ids given in schema order."""
    return schema if has_field_ids(schema) else assign_field_ids(copy.deepcopy(schema))


def iceberg_type(dtype: Any, owner: int, where: str) -> Any:
    """The Iceberg type of a Spark type (JSON form); ``owner`` is the id of the field that has it."""
    if isinstance(dtype, str):
        if dtype in _PRIMITIVES:
            return _PRIMITIVES[dtype]
        if _CHAR.fullmatch(dtype):
            return "string"
        decimal = _DECIMAL.fullmatch(dtype)
        if decimal:
            return f"decimal({decimal.group(1)}, {decimal.group(2)})"
        raise NotExpressible(f"column {where} has type {dtype!r}, which Iceberg cannot express")
    kind = dtype.get("type") if isinstance(dtype, dict) else None
    if kind == "struct":
        return iceberg_struct(dtype, where + ".")
    if kind == "array":
        element = inner_id(owner, 0)
        return {"type": "list", "element-id": element,
                "element": iceberg_type(dtype["elementType"], element, where + ".element"),
                "element-required": not dtype.get("containsNull", True)}
    if kind == "map":
        key, value = inner_id(owner, 0), inner_id(owner, 1)
        return {"type": "map", "key-id": key, "key": iceberg_type(dtype["keyType"], key, where + ".key"),
                "value-id": value, "value": iceberg_type(dtype["valueType"], value, where + ".value"),
                "value-required": not dtype.get("valueContainsNull", True)}
    raise NotExpressible(f"column {where} has type {dtype!r}, which Iceberg cannot express")


def iceberg_struct(struct: Struct, prefix: str = "") -> Struct:
    """The Iceberg struct of a Spark struct whose fields carry ids."""
    fields = []
    for f in struct.get("fields", []):
        fid = field_id(f)
        name = f"{prefix}{f['name']}"
        if fid is None:
            raise NotExpressible(f"column {name} has no field id")
        fields.append({"id": fid, "name": f["name"], "required": not f.get("nullable", True),
                       "type": iceberg_type(f["type"], fid, name)})
    return {"type": "struct", "fields": fields}


def iceberg_schema(schema: Struct, schema_id: int) -> Struct:
    """The Iceberg schema (``schema-id`` ``schema_id``) of a table's Spark schema."""
    return {**iceberg_struct(with_ids(schema)), "schema-id": schema_id}


def highest_id(schema: Struct) -> int:
    """The highest id an Iceberg schema (JSON) uses, inner ids included."""
    best = 0

    def visit(t: Any) -> None:
        nonlocal best
        if not isinstance(t, dict):
            return
        if t["type"] == "struct":
            for f in t["fields"]:
                best = max(best, f["id"])
                visit(f["type"])
        elif t["type"] == "list":
            best = max(best, t["element-id"])
            visit(t["element"])
        elif t["type"] == "map":
            best = max(best, t["key-id"], t["value-id"])
            visit(t["key"])
            visit(t["value"])

    visit(schema)
    return best


def _children(t: Any) -> list[tuple[int, str, Any]]:
    """The (id, name, type) of what a type holds: a struct's fields, a list's element, a map's key and value
    (named as Parquet names them)."""
    if not isinstance(t, dict):
        return []
    if t["type"] == "struct":
        return [(f["id"], f["name"], f["type"]) for f in t["fields"]]
    if t["type"] == "list":
        return [(t["element-id"], "element", t["element"])]
    return [(t["key-id"], "key", t["key"]), (t["value-id"], "value", t["value"])]


def name_mapping(types: list[Any]) -> list[Struct]:
    """Iceberg's name mapping (``schema.name-mapping.default``) of what the schemas (or nested types)
    ``types`` hold, oldest first: every name each id had, for files written without field ids. A name two
    ids had stays with the newest."""
    names: dict[int, list[str]] = {}
    nested: dict[int, list[Any]] = {}
    order: list[int] = []
    for t in types:
        for fid, name, inner in _children(t):
            if fid not in names:
                names[fid] = []
                order.append(fid)
            if name not in names[fid]:
                names[fid].append(name)
            if isinstance(inner, dict):
                nested.setdefault(fid, []).append(inner)
    taken: set[str] = set()
    mapping = []
    for fid in reversed(order):
        mine = [n for n in names[fid] if n not in taken]
        taken.update(mine)
        entry: Struct = {"field-id": fid, "names": mine}
        if fid in nested:
            entry["fields"] = name_mapping(nested[fid])
        mapping.append(entry)
    return list(reversed(mapping))


def iceberg_spec(spec: PartitionSpec) -> Struct:
    """The Iceberg form of a partition spec (the same transforms, field ids from 1000)."""
    return {"spec-id": spec.spec_id, "fields": [
        {"source-id": f.source_id, "field-id": f.field_id, "name": f.name, "transform": str(f.transform)}
        for f in spec.fields
    ]}


def partition_avro_type(transform: str, source: Any) -> Any:
    """The Avro type (nullable) of a partition field with ``transform`` of a source of Iceberg type
    ``source``, as manifests store it."""
    kind = transform.split("[")[0]
    if kind in ("year", "month", "hour", "bucket"):
        inner: Any = "int"
    elif kind == "day":
        inner = {"type": "int", "logicalType": "date"}
    else:  # identity and truncate keep the source's type
        inner = _AVRO.get(source if isinstance(source, str) else "", "string")
        if kind != IDENTITY and source == "binary":
            inner = "bytes"
    return ["null", inner]


_AVRO: dict[str, Any] = {
    "boolean": "boolean", "int": "int", "long": "long", "float": "float", "double": "double", "string": "string",
    "binary": "bytes", "date": {"type": "int", "logicalType": "date"},
    "timestamp": {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False},
    "timestamptz": {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True},
}
