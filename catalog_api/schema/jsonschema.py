"""Spark StructType <-> JSON Schema 2020-12 (mapping table in docs/schema-mapping.md)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import referencing
import referencing.exceptions
import referencing.jsonschema

from catalog_api.schema.errors import UnsupportedType
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

if TYPE_CHECKING:
    from referencing._core import Resolver  # the package exports it only for typing, as here

DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: Keyword naming the Spark type where the JSON Schema alone would read back as another one.
SPARK_TYPE = "x-spark-type"
#: Keyword on a property holding the Spark field metadata other than the comment.
SPARK_METADATA = "x-spark-metadata"

_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}
_LOCAL_TIMESTAMP = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?$"
_NOT_NULL = {"not": {"type": "null"}}


# --- Spark -> JSON Schema ------------------------------------------------------------------


def to_schema(struct: StructType, name: str, namespace: str | None) -> tuple[str, bytes]:
    """A JSON Schema 2020-12 document titled ``name`` for objects with one property per column.

    JSON Schema has no namespaces: ``namespace`` does not change the document, and the type name is ``name``.
    """
    if not name:
        raise BadRequest("a JSON Schema needs a non-empty title")
    document = {"$schema": DIALECT, "title": name, **_object(struct, "")}
    return name, json.dumps(document, indent=2, ensure_ascii=False).encode()


def _object(struct: StructType, path: str) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in struct.fields:
        schema = _nullable(f.type, f.nullable, child_path(path, f.name))
        if f.comment is not None:
            schema["description"] = f.comment
        if f.other_metadata:
            schema[SPARK_METADATA] = f.other_metadata
        properties[f.name] = schema
        if not f.nullable:
            required.append(f.name)
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def _nullable(dtype: DataType, nullable: bool, path: str) -> dict[str, Any]:
    schema = _type(dtype, path)
    if "type" not in schema:  # variant: any JSON value, JSON null included
        return schema if nullable else dict(_NOT_NULL)
    if schema["type"] == "null":
        if not nullable:
            raise UnsupportedType(path, "a void value is always null, so it cannot be non-nullable")
    elif nullable:
        schema["type"] = [schema["type"], "null"]
    return schema


def _type(dtype: DataType, path: str) -> dict[str, Any]:
    match dtype:
        case StructType():
            return _object(dtype, path)
        case ArrayType(element, contains_null):
            return {"type": "array", "items": _nullable(element, contains_null, element_path(path))}
        case MapType(key, value, value_contains_null):
            out: dict[str, Any] = {"type": "object"}
            if key != Simple("string"):
                key_schema = _type(key, key_path(path))
                if key_schema.get("type") != "string":
                    raise UnsupportedType(
                        key_path(path), f"JSON object keys are strings, and JSON Schema writes {key.json()} otherwise"
                    )
                out["propertyNames"] = key_schema
            out["additionalProperties"] = _nullable(value, value_contains_null, value_path(path))
            return out
        case _:
            return _atomic(dtype, path)


def _atomic(dtype: DataType, path: str) -> dict[str, Any]:
    match dtype:
        case Simple(name) if name in _RANGES:
            low, high = _RANGES[name]
            return {"type": "integer", "minimum": low, "maximum": high}
        case Simple("boolean"):
            return {"type": "boolean"}
        case Simple("float"):
            return {"type": "number", SPARK_TYPE: "float"}
        case Simple("double"):
            return {"type": "number"}
        case Simple("string"):
            return {"type": "string"}
        case Simple("binary"):
            return {"type": "string", "contentEncoding": "base64"}
        case Simple("date"):
            return {"type": "string", "format": "date"}
        case Simple("timestamp"):
            return {"type": "string", "format": "date-time"}
        case Simple("timestamp_ntz"):
            return {"type": "string", "pattern": _LOCAL_TIMESTAMP, SPARK_TYPE: "timestamp_ntz"}
        case Simple("void"):
            return {"type": "null"}
        case Simple("variant"):
            return {}
        case Decimal(precision, scale):
            return {"type": "string", "pattern": _decimal_pattern(precision, scale), SPARK_TYPE: dtype.json()}
        case Char(length) | Varchar(length):
            return {"type": "string", "maxLength": length, SPARK_TYPE: dtype.json()}
        case Time(precision):
            fraction = rf"(\.\d{{1,{precision}}})?" if precision else ""
            return {"type": "string", "pattern": rf"^\d{{2}}:\d{{2}}:\d{{2}}{fraction}$", SPARK_TYPE: dtype.json()}
        case DayTimeInterval() | YearMonthInterval():
            return {"type": "integer", SPARK_TYPE: dtype.json()}
        case Opaque(_, description):
            raise UnsupportedType(path, f"JSON Schema has no type for {description}")
    raise UnsupportedType(path, f"JSON Schema has no type for {dtype.json()}")


def _decimal_pattern(precision: int, scale: int) -> str:
    whole = precision - scale
    integral = rf"(0|[1-9]\d{{0,{whole - 1}}})" if whole else "0"
    fraction = rf"(\.\d{{1,{scale}}})?" if scale else ""
    return f"^-?{integral}{fraction}$"


# --- JSON Schema -> Spark ------------------------------------------------------------------


def to_struct(schema: bytes, type_name: str) -> StructType:
    """The Spark schema of a JSON Schema whose root describes objects (``type_name`` is only a label)."""
    try:
        document = json.loads(schema.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InvalidSchema(f"JSON Schema is not valid JSON: {e}") from None
    if not isinstance(document, dict):
        raise UnsupportedType("", "a table needs a JSON Schema describing objects")
    resource = referencing.Resource.from_contents(document, default_specification=referencing.jsonschema.DRAFT202012)
    resolver = referencing.Registry().resolver_with_root(resource)
    dtype, _ = _Reader().read(document, resolver, "", ())
    if not isinstance(dtype, StructType):
        raise UnsupportedType("", f"a table needs a JSON Schema describing objects with properties, not {dtype.json()}")
    return dtype


class _Reader:
    """Turns (sub)schemas into Spark types, following local and in-document ``$ref``s."""

    def read(self, schema: Any, resolver: Resolver[Any], path: str, refs: tuple[int, ...]) -> tuple[DataType, bool]:
        """The Spark type of ``schema`` and whether it admits JSON null."""
        if schema is True:
            return Simple("variant"), True
        if schema is False or not isinstance(schema, dict):
            return Simple("void"), True
        if "$id" in schema:
            resolver = resolver.in_subresource(referencing.jsonschema.DRAFT202012.create_resource(schema))
        schema, resolver, refs = self._deref(schema, resolver, path, refs)
        for keyword in ("anyOf", "oneOf"):
            if isinstance(schema.get(keyword), list):
                return self._alternatives(schema[keyword], resolver, path, refs)
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            return self.read(all_of[0], resolver, path, refs)
        types = _types(schema)
        nullable = "null" in types
        kinds = sorted(types - {"null"})
        if not kinds:
            if nullable:
                return Simple("void"), True
            # No type at all: any JSON value.
            return Simple("variant"), schema.get("not") != {"type": "null"}
        if kinds == ["integer", "number"]:
            kinds = ["number"]
        if len(kinds) > 1:
            return Simple("variant"), True
        return self._typed(schema, kinds[0], resolver, path, refs), nullable

    def _deref(self, schema: dict[str, Any], resolver: Resolver[Any], path: str,
               refs: tuple[int, ...]) -> tuple[dict[str, Any], Resolver[Any], tuple[int, ...]]:
        while isinstance(schema.get("$ref"), str):
            try:
                resolved = resolver.lookup(schema["$ref"])
            except referencing.exceptions.Unresolvable as e:
                raise InvalidSchema(f"JSON Schema reference {schema['$ref']!r} does not resolve: {e}") from None
            target = resolved.contents
            if id(target) in refs:
                raise UnsupportedType(path, f"{schema['$ref']} refers to itself; Spark types cannot be recursive")
            refs = (*refs, id(target))
            if not isinstance(target, dict):
                target = {} if target is True else {"not": {}}
            # Keywords beside $ref apply too (2020-12); the referenced ones come first.
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            resolver = resolved.resolver
        return schema, resolver, refs

    def _alternatives(self, branches: list[Any], resolver: Resolver[Any], path: str,
                      refs: tuple[int, ...]) -> tuple[DataType, bool]:
        others = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
        if len(others) == 1:
            dtype, nullable = self.read(others[0], resolver, path, refs)
            return dtype, nullable or len(others) < len(branches)
        # A value of one of several shapes: only a variant holds each of them.
        return Simple("variant"), True

    def _typed(self, schema: dict[str, Any], kind: str, resolver: Resolver[Any], path: str,
               refs: tuple[int, ...]) -> DataType:
        declared = _override(schema.get(SPARK_TYPE), kind)
        if declared is not None:
            return declared
        if kind == "object":
            return self._object(schema, resolver, path, refs)
        if kind == "array":
            if "prefixItems" in schema:
                raise UnsupportedType(path, "tuples (prefixItems) have no Spark type")
            element, contains_null = self.read(schema.get("items", True), resolver, element_path(path), refs)
            return ArrayType(element, contains_null)
        if kind == "string":
            return _string(schema)
        if kind == "integer":
            return _integer(schema)
        if kind == "number":
            return Simple("float" if schema.get("format") == "float" else "double")
        if kind == "boolean":
            return Simple("boolean")
        raise UnsupportedType(path, f"JSON Schema type {kind!r} has no Spark type")

    def _object(self, schema: dict[str, Any], resolver: Resolver[Any], path: str, refs: tuple[int, ...]) -> DataType:
        properties = schema.get("properties")
        additional = schema.get("additionalProperties", True)
        if not (isinstance(properties, dict) and (properties or additional is False)):
            if isinstance(additional, dict):
                value, value_contains_null = self.read(additional, resolver, value_path(path), refs)
                key = self._key(schema.get("propertyNames"), resolver, path, refs)
                return MapType(key, value, value_contains_null)
            if additional is not False:
                return Simple("variant")  # an object of any shape
            properties = {}
        required = schema.get("required", [])
        fields = []
        for name, sub in properties.items():
            here = child_path(path, name)
            dtype, admits_null = self.read(sub, resolver, here, refs)
            metadata: dict[str, Any] = {}
            if isinstance(sub, dict):
                extra = sub.get(SPARK_METADATA)
                if isinstance(extra, dict):
                    metadata.update(extra)
                if isinstance(sub.get("description"), str):
                    metadata["comment"] = sub["description"]
            nullable = admits_null or not (isinstance(required, list) and name in required)
            fields.append(StructField(name, dtype, nullable, metadata))
        return StructType(tuple(fields))

    def _key(self, schema: Any, resolver: Resolver[Any], path: str, refs: tuple[int, ...]) -> DataType:
        if schema is None:
            return Simple("string")
        key, _ = self.read(schema, resolver, key_path(path), refs)
        # Whatever propertyNames says, keys are JSON strings: keep the Spark types written as strings.
        try:
            written = _atomic(key, "")
        except UnsupportedType:
            return Simple("string")
        return key if written.get("type") == "string" else Simple("string")


def _types(schema: dict[str, Any]) -> set[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    if "properties" in schema or "additionalProperties" in schema:
        return {"object"}
    if "items" in schema or "prefixItems" in schema:
        return {"array"}
    values = schema["enum"] if isinstance(schema.get("enum"), list) else [schema["const"]] if "const" in schema else []
    found = {_json_type(v) for v in values}
    return found if values and "other" not in found else set()


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


def _string(schema: dict[str, Any]) -> DataType:
    if schema.get("format") == "date":
        return Simple("date")
    if schema.get("format") == "date-time":
        return Simple("timestamp")
    if schema.get("contentEncoding") == "base64":
        return Simple("binary")
    return Simple("string")


def _integer(schema: dict[str, Any]) -> DataType:
    bounds = (schema.get("minimum"), schema.get("maximum"))
    for name, limits in _RANGES.items():
        if bounds == limits:
            return Simple(name)
    return Simple("integer" if schema.get("format") == "int32" else "long")


def _override(declared: Any, kind: str) -> DataType | None:
    """The Spark type an x-spark-type keyword names, if it is one that this JSON type carries."""
    if not isinstance(declared, str):
        return None
    try:
        dtype = parse_atomic(declared, "")
        written = _atomic(dtype, "")
    except BadRequest:  # UnsupportedType included: a keyword we did not write is only a hint
        return None
    return dtype if written.get("type") == kind else None
