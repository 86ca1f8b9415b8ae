"""Conversion between a Spark table schema (StructType JSON) and registry schemas.

A Spark table's schema is the latest schema of its registry group; the server converts
both ways so that the Java catalog shim never converts types.

- :func:`to_schema` turns StructType JSON into (registry type name, schema bytes) for
  ``avro`` (a record), ``protobuf`` (a proto3 ``.proto`` file) or ``json`` (JSON Schema
  2020-12).
- :func:`to_struct` turns a registered schema (for protobuf: the serialized
  FileDescriptorSet the registry stores) back into StructType JSON, including schemas
  that producers wrote by hand.

Round trips are exact for every type a format carries: where the format's own type is
ambiguous (byte and short as Avro ``int``, decimal as a protobuf ``string``...) the Spark
type is recorded next to it (Avro property ``spark.type``, protobuf option
``spark_type``, JSON Schema keyword ``x-spark-type``). A type a format cannot carry
raises :class:`UnsupportedType` naming the column. The main rules:

===============  ============================  ====================  ============================
Spark            Avro                          protobuf (proto3)     JSON Schema
===============  ============================  ====================  ============================
byte/short/int   int (+spark.type)             int32 (+spark_type)   integer with min/max
long             long                          int64                 integer with min/max
float / double   float / double                float / double        number (+x-spark-type)
decimal(p,s)     bytes, decimal(p,s)           string (+spark_type)  string, pattern
string/char/...  string (+spark.type)          string (+spark_type)  string (+maxLength)
binary           bytes                         bytes                 string, base64
date             int, date                     int32 days            string, format date
timestamp        long, timestamp-micros        int64 micros          string, format date-time
timestamp_ntz    long, local-timestamp-micros  int64 micros          string, pattern
array            array                         repeated (wrappers)   array
map              map (string keys)             map (wrappers)        object, additionalProperties
struct           record named by its path      nested message        object, closed
nullable         ["null", T], default null     optional / presence   type list with null
comment          doc                           spark_comment         description
===============  ============================  ====================  ============================

Every rule, the hand-written schemas understood, and the types each format refuses are
in ``docs/schema-mapping.md``.
"""

from __future__ import annotations

import copy
from typing import Any

from catalog_api.schema import avro
from catalog_api.schema.defaults import check_defaults
from catalog_api.schema.errors import UnsupportedType
from catalog_api.schema.fieldids import assign_field_ids, has_field_ids
from catalog_api.schema.spark import StructType, parse_struct
from registry.errors import BadRequest

__all__ = ["FORMATS", "UnsupportedType", "to_schema", "to_struct"]

#: Format names accepted by :func:`to_schema` and :func:`to_struct` (case does not matter, so the
#: registry's own names ``Avro``, ``Protobuf`` and ``Json`` work too).
FORMATS = ("avro", "protobuf", "json")


def to_schema(struct: dict[str, Any], fmt: str, name: str, namespace: str | None = None) -> tuple[str, bytes]:
    """Convert StructType JSON into ``(type name, schema bytes)`` for the registry.

    Avro: a record ``name`` in ``namespace``, type name its full name. Protobuf: ``.proto``
    text with package ``namespace`` and message ``name``, type name the full message name.
    JSON: a JSON Schema titled ``name``, type name ``name``.
    """
    model = parse_struct(struct)
    if has_field_ids(struct):
        # Ids must be unique and on every column once some column has one (a schema put together from
        # several sources may repeat them); a schema without any keeps none until its first column change.
        model = parse_struct(assign_field_ids(copy.deepcopy(struct)))
    kind = _format(fmt)
    check_defaults(model)
    if kind == "avro":
        return avro.to_schema(model, name, namespace)
    if kind == "protobuf":
        from catalog_api.schema import protobuf

        return protobuf.to_schema(model, name, namespace)
    from catalog_api.schema import jsonschema

    return jsonschema.to_schema(model, name, namespace)


def to_struct(fmt: str, schema: bytes, type_name: str) -> dict[str, Any]:
    """Convert a registered schema of ``type_name`` back into StructType JSON."""
    kind = _format(fmt)
    model: StructType
    if kind == "avro":
        model = avro.to_struct(schema, type_name)
    elif kind == "protobuf":
        from catalog_api.schema import protobuf

        model = protobuf.to_struct(schema, type_name)
    else:
        from catalog_api.schema import jsonschema

        model = jsonschema.to_struct(schema, type_name)
    return model.json()


def _format(fmt: str) -> str:
    kind = fmt.lower()
    if kind not in FORMATS:
        expected = ", ".join(FORMATS)
        raise BadRequest(f"cannot convert Spark schemas to or from format {fmt!r}; expected one of {expected}")
    return kind
