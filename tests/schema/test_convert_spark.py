"""The StructType JSON model and the format dispatcher shared by every conversion."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.ml.linalg import VectorUDT
from pyspark.sql.types import (
    ArrayType,
    CalendarIntervalType,
    CharType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    VarcharType,
)

from catalog_api.schema import FORMATS, UnsupportedType, to_schema, to_struct
from catalog_api.schema.spark import parse_struct
from registry.errors import BadRequest
from registry.formats import get_format
from tests.schema.strategies import Carries, any_names, data_types, every_atomic, structs

EVERYTHING = Carries(
    atomic=st.one_of(every_atomic, st.just(CalendarIntervalType())),
    keys=every_atomic,
    names=any_names,
)
REGISTRY_NAMES = {"avro": "Avro", "protobuf": "Protobuf", "json": "Json"}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(structs(EVERYTHING, data_types(EVERYTHING)))
def test_model_writes_back_exactly_the_json_pyspark_writes(table: StructType) -> None:
    assert parse_struct(table.jsonValue()).json() == table.jsonValue()


def field(type_json: Any, name: str = "a", **extra: Any) -> dict[str, Any]:
    return {"type": "struct", "fields": [{"name": name, "type": type_json, "nullable": True, "metadata": {}, **extra}]}


MALFORMED: list[tuple[Any, str]] = [
    ([], "a table schema must be a struct, not a list"),
    ("integer", "a table schema must be a struct, not the string 'integer'"),
    ({"type": "struct"}, "struct type lacks 'fields'"),
    ({"type": "struct", "fields": {}}, "'fields' must be a list, not an object"),
    ({"type": "struct", "fields": ["a"]}, "a struct field must be an object, not the string 'a'"),
    ({"type": "struct", "fields": [{"type": "integer", "nullable": True}]}, "needs a string 'name', not null"),
    ({"type": "struct", "fields": [{"name": "a", "nullable": True}]}, "at column a: the field has no 'type'"),
    ({"type": "struct", "fields": [{"name": "a", "type": "integer"}]}, "at column a: 'nullable' must be true or false"),
    (field("integer", metadata=[]), "at column a: 'metadata' must be an object, not a list"),
    (field("int"), "at column a: unknown type 'int'"),
    (field(7), "at column a: a type must be a string or an object, not a number"),
    (field("decimal(40,2)"), "at column a: decimal precision must be between 1 and 38, not 40"),
    (field("decimal(5,6)"), "at column a: decimal scale must be between 0 and the precision 5, not 6"),
    (field("time(9)"), "at column a: time precision must be between 0 and 6, not 9"),
    (field("interval second to day"), "at column a: interval fields out of order"),
    (field({"type": "array", "elementType": "long"}), "at column a: array type lacks 'containsNull'"),
    (field({"type": "map", "keyType": "x", "valueType": "long", "valueContainsNull": True}),
     "at column a.key: unknown type 'x'"),
    (field({"type": "tuple"}), "at column a: unknown complex type 'tuple'"),
    (field(field("long", "b.c", nullable="yes")), "at column a.`b.c`: 'nullable' must be true or false"),
    ({"type": "struct", "fields": [field("long")["fields"][0]] * 2}, "duplicate field name 'a'"),
]


@pytest.mark.parametrize(("struct", "message"), MALFORMED)
@pytest.mark.parametrize("fmt", FORMATS)
def test_malformed_struct_json_is_a_bad_request_naming_the_problem(fmt: str, struct: Any, message: str) -> None:
    with pytest.raises(BadRequest) as refused:
        to_schema(struct, fmt, "Row")
    assert not isinstance(refused.value, UnsupportedType)
    assert refused.value.message.startswith("malformed Spark schema")
    assert message in refused.value.message
    assert refused.value.to_json()["error"]["code"] == "BadRequest"


def test_spark_spellings_are_normalized_as_spark_does() -> None:
    table = parse_struct(field({"type": "array", "elementType": "decimal( 5 , 2 )", "containsNull": True}))
    assert table.json()["fields"][0]["type"]["elementType"] == "decimal(5,2)"
    assert parse_struct(field("decimal")).json()["fields"][0]["type"] == "decimal(10,0)"
    assert parse_struct(field("interval day to day")).json()["fields"][0]["type"] == "interval day"
    no_metadata = {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": False}]}
    assert parse_struct(no_metadata).json()["fields"][0]["metadata"] == {}


def test_unknown_format_is_refused_and_registry_names_are_accepted() -> None:
    table = StructType([StructField("a", LongType())]).jsonValue()
    with pytest.raises(BadRequest, match="cannot convert Spark schemas to or from format 'Thrift'"):
        to_schema(table, "Thrift", "Row")
    with pytest.raises(BadRequest, match="format 'Any'"):
        to_struct("Any", b"", "Row")
    for fmt, registry_name in REGISTRY_NAMES.items():
        assert to_schema(table, registry_name, "Row", "ns") == to_schema(table, fmt, "Row", "ns")


@pytest.mark.parametrize("fmt", FORMATS)
def test_unsupported_type_is_a_400_naming_the_column(fmt: str) -> None:
    vector = StructType([StructField("features", ArrayType(VectorUDT()))])
    with pytest.raises(UnsupportedType) as refused:
        to_schema(vector.jsonValue(), fmt, "Row")
    assert str(refused.value).startswith("column features.element: ")
    assert "user-defined type" in str(refused.value)
    assert refused.value.status == 400
    assert refused.value.to_json()["error"]["code"] == "UnsupportedType"


@pytest.mark.parametrize("fmt", FORMATS)
def test_char_and_varchar_round_trip_in_both_of_sparks_spellings(fmt: str) -> None:
    # Spark writes char/varchar either as their own types or as string with the original type in metadata.
    table = StructType([
        StructField("code", CharType(3), False),
        StructField("name", VarcharType(20), True, {"comment": "display name"}),
        StructField("legacy", StringType(), True, {"__CHAR_VARCHAR_TYPE_STRING": "varchar(5)"}),
        StructField("by_code", MapType(StringType(), IntegerType()), True),
    ])
    type_name, data = to_schema(table.jsonValue(), fmt, "Row", "ns")
    stored = get_format(REGISTRY_NAMES[fmt]).parse(data, type_name).data
    assert to_struct(fmt, stored, type_name) == table.jsonValue()
