"""Spark StructType <-> Avro record schema (mapping table in docs/schema-mapping.md)."""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import avro.errors
import avro.schema

from catalog_api.schema.defaults import EXISTS_DEFAULT, avro_default, default_value
from catalog_api.schema.errors import UnsupportedType
from catalog_api.schema.fieldids import FIELD_ID
from catalog_api.schema.spark import (
    ArrayType,
    Char,
    DataType,
    DayTimeInterval,
    Decimal,
    MapType,
    Opaque,
    Simple,
    StructField,
    StructType,
    Time,
    Varchar,
    YearMonthInterval,
    child_path,
    element_path,
    key_path,
    parse_atomic,
    value_path,
)
from registry.errors import BadRequest, InvalidSchema

#: Property on an Avro type naming the Spark type when the Avro type alone would read back as another one.
SPARK_TYPE = "spark.type"
#: Property on an Avro map naming the Spark key type when it is char(n) or varchar(n).
SPARK_KEY_TYPE = "spark.key.type"
#: Property on an Avro field holding the Spark field metadata other than the comment and the field id.
SPARK_METADATA = "spark.metadata"
#: Property on an Avro field holding its stable id (Spark metadata ``parquet.field.id``), as Iceberg names it.
FIELD_ID_PROPERTY = "field-id"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PRIMITIVE_NAMES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_SIMPLE: dict[str, Any] = {
    "boolean": "boolean",
    "byte": {"type": "int", SPARK_TYPE: "byte"},
    "short": {"type": "int", SPARK_TYPE: "short"},
    "integer": "int",
    "long": "long",
    "float": "float",
    "double": "double",
    "string": "string",
    "binary": "bytes",
    "date": {"type": "int", "logicalType": "date"},
    "timestamp": {"type": "long", "logicalType": "timestamp-micros"},
    "timestamp_ntz": {"type": "long", "logicalType": "local-timestamp-micros"},
    "void": "null",
}


# --- Spark -> Avro -------------------------------------------------------------------------


def to_schema(struct: StructType, name: str, namespace: str | None) -> tuple[str, bytes]:
    """An Avro record named ``name`` in ``namespace`` with one field per column; returns (full name, JSON)."""
    if not _NAME.fullmatch(name):
        raise BadRequest(f"{name!r} is not a valid Avro record name (letters, digits and _, not first a digit)")
    if namespace and not all(_NAME.fullmatch(part) for part in namespace.split(".")):
        raise BadRequest(f"{namespace!r} is not a valid Avro namespace (dot-separated Avro names)")
    if name in _PRIMITIVE_NAMES:
        raise BadRequest(f"{name!r} is an Avro primitive type name and cannot name a record")
    fullname = f"{namespace}.{name}" if namespace else name
    record = _record(struct, name, namespace, fullname, "")
    return fullname, json.dumps(record, indent=2, ensure_ascii=False).encode()


def _record(struct: StructType, name: str, namespace: str | None, fullname: str, path: str) -> dict[str, Any]:
    record: dict[str, Any] = {"type": "record", "name": name}
    if namespace:
        record["namespace"] = namespace
    record["fields"] = [_field(f, fullname, path) for f in struct.fields]
    return record


def _field(f: StructField, record_fullname: str, parent: str) -> dict[str, Any]:
    path = child_path(parent, f.name)
    if not _NAME.fullmatch(f.name):
        raise UnsupportedType(path, "Avro field names must be letters, digits and _, not starting with a digit")
    scope = f"{record_fullname}.{_record_name(f.name)}"
    other = f.other_metadata
    field_id = other.pop(FIELD_ID, None)
    avro_type = _nullable(f.type, f.nullable, scope, path)
    out: dict[str, Any] = {"name": f.name, "type": avro_type}
    if isinstance(field_id, int) and not isinstance(field_id, bool):
        out[FIELD_ID_PROPERTY] = field_id
    elif field_id is not None:
        other[FIELD_ID] = field_id  # not an id we made: kept as it came
    exists = other.get(EXISTS_DEFAULT)
    holds, default = (False, None)
    if isinstance(exists, str):
        holds, default = avro_default(default_value(exists, f.type, path), f.type)
    if holds and default is not None:
        # Avro takes a union's default from its first branch: the value's branch goes first.
        out["type"] = [avro_type[1], "null"] if isinstance(avro_type, list) else avro_type
        out["default"] = default
    elif f.nullable:
        out["default"] = None
    if f.comment is not None:
        out["doc"] = f.comment
    if other:
        out[SPARK_METADATA] = other
        aliases = other.get("aliases")
        if isinstance(aliases, list) and all(isinstance(a, str) and _NAME.fullmatch(a) for a in aliases):
            # Former names of a renamed column: Avro resolution reads old data through them.
            out["aliases"] = list(aliases)
    return out


def _record_name(column: str) -> str:
    # Avro resolves a short name in a namespace to a record of that name before the primitive type, so
    # a record named "int" would capture every "int" near it: such names get a "_", kept injective by
    # also suffixing names that are a primitive name followed by underscores.
    return f"{column}_" if column.rstrip("_") in _PRIMITIVE_NAMES else column


def _nullable(dtype: DataType, nullable: bool, scope: str, path: str) -> Any:
    schema = _type(dtype, scope, path)
    if schema == "null":
        if not nullable:
            raise UnsupportedType(path, "a void value is always null, so it cannot be non-nullable")
        return schema
    return ["null", schema] if nullable else schema


def _type(dtype: DataType, scope: str, path: str) -> Any:
    """The Avro form of ``dtype``; records made for it are named ``scope`` (the Spark path, dotted)."""
    match dtype:
        case StructType():
            namespace, _, name = scope.rpartition(".")
            return _record(dtype, name, namespace, scope, path)
        case ArrayType(element, contains_null):
            return {"type": "array", "items": _nullable(element, contains_null, f"{scope}.element", element_path(path))}
        case MapType(key, value, value_contains_null):
            out: dict[str, Any] = {
                "type": "map",
                "values": _nullable(value, value_contains_null, f"{scope}.value", value_path(path)),
            }
            if isinstance(key, (Char, Varchar)):
                out[SPARK_KEY_TYPE] = key.json()
            elif key != Simple("string"):
                raise UnsupportedType(key_path(path), f"Avro map keys are strings, not {key.json()}")
            return out
        case _:
            return _atomic(dtype, path)


def _atomic(dtype: DataType, path: str) -> Any:
    match dtype:
        case Simple(name) if name in _SIMPLE:
            return _SIMPLE[name]
        case Simple("variant"):
            raise UnsupportedType(path, "Avro has no type for variant")
        case Decimal(precision, scale):
            return {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}
        case Char() | Varchar():
            return {"type": "string", SPARK_TYPE: dtype.json()}
        case Time(precision):
            time: dict[str, Any] = {"type": "long", "logicalType": "time-micros"}
            if precision != 6:
                time[SPARK_TYPE] = dtype.json()
            return time
        case DayTimeInterval():
            return {"type": "long", SPARK_TYPE: dtype.json()}
        case YearMonthInterval():
            return {"type": "int", SPARK_TYPE: dtype.json()}
        case Opaque(_, description):
            raise UnsupportedType(path, f"Avro has no type for {description}")
    raise UnsupportedType(path, f"Avro has no type for {dtype.json()}")


# --- Avro -> Spark -------------------------------------------------------------------------


def to_struct(schema: bytes, type_name: str) -> StructType:
    """The Spark schema of an Avro record schema (``type_name``, if given, must be its full name)."""
    try:
        with warnings.catch_warnings():
            # Invalid logical types fall back to their underlying type, as the Avro spec says.
            warnings.simplefilter("ignore", avro.errors.IgnoredLogicalType)
            parsed = avro.schema.parse(schema.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, avro.errors.AvroException, TypeError, ValueError) as e:
        raise InvalidSchema(f"invalid Avro schema: {e}") from None
    if not isinstance(parsed, avro.schema.RecordSchema):
        raise UnsupportedType("", f"a table needs an Avro record schema, not {parsed.type}")
    if type_name and type_name != parsed.fullname:
        raise BadRequest(f"type {type_name!r} does not match the Avro record {parsed.fullname!r}")
    return _read_record(parsed, "", frozenset())


def _read_record(record: avro.schema.RecordSchema, path: str, seen: frozenset[str]) -> StructType:
    if record.fullname in seen:
        raise UnsupportedType(path, f"record {record.fullname} contains itself; Spark types cannot be recursive")
    seen = seen | {record.fullname}
    fields = []
    for f in record.fields:
        here = child_path(path, f.name)
        dtype, nullable = _read(f.type, here, seen)
        metadata: dict[str, Any] = {}
        extra = f.other_props.get(SPARK_METADATA)
        if isinstance(extra, dict):
            metadata.update(extra)
        field_id = f.other_props.get(FIELD_ID_PROPERTY)
        if isinstance(field_id, int) and not isinstance(field_id, bool) and field_id > 0:
            metadata[FIELD_ID] = field_id
        if f.doc is not None:
            metadata["comment"] = f.doc
        fields.append(StructField(f.name, dtype, nullable, metadata))
    return StructType(tuple(fields))


def _read(schema: avro.schema.Schema, path: str, seen: frozenset[str]) -> tuple[DataType, bool]:
    """The Spark type of an Avro schema and whether it admits null."""
    if isinstance(schema, avro.schema.UnionSchema):
        return _read_union(schema, path, seen)
    if schema.type == "null":
        return Simple("void"), True
    return _read_non_null(schema, path, seen), False


def _read_union(union: avro.schema.UnionSchema, path: str, seen: frozenset[str]) -> tuple[DataType, bool]:
    branches = [s for s in union.schemas if s.type != "null"]
    nullable = len(branches) < len(union.schemas)
    if not branches:
        return Simple("void"), True
    if len(branches) == 1:
        return _read_non_null(branches[0], path, seen), nullable
    kinds = {b.type for b in branches if not b.props.get("logicalType")}
    # Spark's own Avro reader widens these two unions and turns any other into a struct.
    if len(branches) == 2 and kinds in ({"int", "long"}, {"float", "double"}):
        return Simple("long" if "long" in kinds else "double"), nullable
    members = []
    for i, branch in enumerate(branches):
        name = f"member{i}"
        members.append(StructField(name, _read_non_null(branch, child_path(path, name), seen), True, {}))
    return StructType(tuple(members)), nullable


def _read_non_null(schema: avro.schema.Schema, path: str, seen: frozenset[str]) -> DataType:
    if isinstance(schema, avro.schema.RecordSchema):
        return _read_record(schema, path, seen)
    if isinstance(schema, avro.schema.ArraySchema):
        element, contains_null = _read(schema.items, element_path(path), seen)
        return ArrayType(element, contains_null)
    if isinstance(schema, avro.schema.MapSchema):
        value, value_contains_null = _read(schema.values, value_path(path), seen)
        key = _override(schema.props.get(SPARK_KEY_TYPE), "string")
        return MapType(key if isinstance(key, (Char, Varchar)) else Simple("string"), value, value_contains_null)
    if isinstance(schema, avro.schema.EnumSchema):
        return Simple("string")
    if isinstance(schema, (avro.schema.BytesDecimalSchema, avro.schema.FixedDecimalSchema)):
        precision, scale = schema.get_prop("precision"), schema.get_prop("scale") or 0
        if not (isinstance(precision, int) and isinstance(scale, int)):  # the avro package validated both
            return Simple("binary")
        if precision > 38:
            raise UnsupportedType(path, f"Spark decimals hold at most 38 digits, not {precision}")
        return Decimal(precision, scale)
    if isinstance(schema, avro.schema.FixedSchema):
        return Simple("binary")
    return _read_primitive(schema, path)


def _read_primitive(schema: avro.schema.Schema, path: str) -> DataType:
    props = schema.props
    base = str(props["type"])
    logical_type = props.get("logicalType")
    logical = logical_type if isinstance(logical_type, str) else None
    declared = _override(props.get(SPARK_TYPE), base, logical)
    if declared is not None:
        return declared
    match base, logical:
        case "int", "date":
            return Simple("date")
        case "int", "time-millis":
            return Time(3)
        case "long", "time-micros":
            return Time(6)
        case "long", "timestamp-millis" | "timestamp-micros" | "timestamp-nanos":
            return Simple("timestamp")
        case "long", "local-timestamp-millis" | "local-timestamp-micros" | "local-timestamp-nanos":
            return Simple("timestamp_ntz")
    plain = {
        "boolean": "boolean", "int": "integer", "long": "long", "float": "float", "double": "double",
        "bytes": "binary", "string": "string",
    }
    if base in plain:
        return Simple(plain[base])
    raise UnsupportedType(path, f"Avro type {base} has no Spark type")


def _override(declared: Any, base: str, logical: str | None = None) -> DataType | None:
    """The Spark type a ``spark.type`` property names, if it is one that this Avro type carries."""
    if not isinstance(declared, str):
        return None
    try:
        dtype = parse_atomic(declared, "")
        written = _atomic(dtype, "")
    except BadRequest:  # UnsupportedType included: a property we did not write is only a hint
        return None
    written_base = written if isinstance(written, str) else written["type"]
    written_logical = None if isinstance(written, str) else written.get("logicalType")
    return dtype if (written_base, written_logical) == (base, logical) else None
