"""Spark StructType <-> JSON Schema: exact round trips, hand-written schemas, refused types."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CalendarIntervalType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    VariantType,
)

from catalog_api.schema import UnsupportedType, to_schema, to_struct
from registry.errors import BadRequest, InvalidSchema
from registry.formats import get_format
from tests.schema.strategies import JSON, identifiers, tables


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(JSON))
def test_every_json_carried_type_round_trips_exactly(table: StructType) -> None:
    type_name, data = to_schema(table.jsonValue(), "json", "Row", "shop.sales")
    assert type_name == "Row"
    document = json.loads(data)
    jsonschema.Draft202012Validator.check_schema(document)
    back = to_struct("json", get_format("Json").parse(data, type_name).data, type_name)
    assert back == table.jsonValue()
    assert StructType.fromJson(back) == table  # last: fromJson rewrites the collation metadata it is given


ORDER = StructType([
    StructField("id", LongType(), False, {"comment": "order number"}),
    StructField("qty", ByteType(), False),
    StructField("price", DecimalType(7, 2), True),
    StructField("day", DateType(), True),
    StructField("at", TimestampType(), True),
    StructField("local", TimestampNTZType(), True),
    StructField("photo", BinaryType(), True),
    StructField("tags", ArrayType(StringType(), True), True),
    StructField("ship", StructType([StructField("city", StringType(), False)]), True),
])


def test_produced_schema_describes_the_rows_of_the_table() -> None:
    _, data = to_schema(ORDER.jsonValue(), "json", "Order")
    document = json.loads(data)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert document["title"] == "Order"
    assert document["required"] == ["id", "qty"]
    assert document["additionalProperties"] is False
    assert document["properties"]["id"] == {
        "type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1, "description": "order number",
    }
    assert document["properties"]["day"] == {"type": ["string", "null"], "format": "date"}
    assert document["properties"]["photo"] == {"type": ["string", "null"], "contentEncoding": "base64"}
    validator = jsonschema.Draft202012Validator(document, format_checker=jsonschema.FormatChecker())
    good = {"id": 1, "qty": 3, "price": "-12.50", "day": "2024-05-01", "at": "2024-05-01T12:00:00Z",
            "local": "2024-05-01T12:00:00.123456", "photo": "AAEC", "tags": ["a", None], "ship": {"city": "Oslo"}}
    assert list(validator.iter_errors(good)) == []
    assert validator.is_valid({"id": 2, "qty": 1, "price": None, "tags": None, "ship": None})
    for bad in (
        {**good, "qty": 300},  # beyond a byte
        {**good, "price": "123456.7"},  # more integral digits than decimal(7,2) holds
        {**good, "price": "1.234"},  # more fractional digits
        {**good, "day": "yesterday"},
        {**good, "local": "2024-05-01T12:00:00Z"},  # timestamp_ntz has no offset
        {**good, "ship": {"city": "Oslo", "zip": "0150"}},  # structs are closed
        {"qty": 1},  # a non-nullable column is required
    ):
        assert not validator.is_valid(bad), bad


CUSTOMER = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Customer",
    "type": "object",
    "$defs": {
        "Address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "zip": {"type": ["string", "null"]}},
            "required": ["street"],
        }
    },
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string", "description": "full name"},
        "email": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "age": {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
        "score": {"type": "number"},
        "ratio": {"type": "number", "format": "float"},
        "active": {"type": "boolean"},
        "born": {"type": "string", "format": "date"},
        "seen": {"type": "string", "format": "date-time"},
        "photo": {"type": "string", "contentEncoding": "base64"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {"$ref": "#/$defs/Address", "description": "where to ship"},
        "history": {"type": "array", "items": {"$ref": "#/$defs/Address"}},
        "prefs": {"type": "object", "additionalProperties": {"type": ["integer", "null"]}},
        "extra": {},
        "tier": {"enum": ["gold", "silver"]},
        "either": {"type": ["string", "integer"]},
        "numberish": {"type": ["integer", "number"]},
        "blob": {"type": "object"},
        "nothing": {"type": "null"},
        "hint": {"type": "integer", "x-spark-type": "decimal(5,2)"},
    },
    "required": ["id", "name", "tags", "address"],
}
ADDRESS = StructType([StructField("street", StringType(), False), StructField("zip", StringType(), True)])


def test_hand_written_json_schema_maps_to_the_expected_spark_schema() -> None:
    expected = StructType([
        StructField("id", LongType(), False),
        StructField("name", StringType(), False, {"comment": "full name"}),
        StructField("email", StringType(), True),
        StructField("age", IntegerType(), True),
        StructField("score", DoubleType(), True),
        StructField("ratio", FloatType(), True),
        StructField("active", BooleanType(), True),
        StructField("born", DateType(), True),
        StructField("seen", TimestampType(), True),
        StructField("photo", BinaryType(), True),
        StructField("tags", ArrayType(StringType(), False), False),
        StructField("address", ADDRESS, False, {"comment": "where to ship"}),
        StructField("history", ArrayType(ADDRESS, False), True),
        StructField("prefs", MapType(StringType(), LongType(), True), True),
        StructField("extra", VariantType(), True),
        StructField("tier", StringType(), True),
        StructField("either", VariantType(), True),
        StructField("numberish", DoubleType(), True),
        StructField("blob", VariantType(), True),
        StructField("nothing", NullType(), True),
        StructField("hint", LongType(), True),  # an x-spark-type the JSON type cannot carry is ignored
    ])
    registered = get_format("Json").parse(json.dumps(CUSTOMER).encode(), "")
    back = to_struct("json", registered.data, registered.type_name)
    assert StructType.fromJson(back) == expected


def test_recursive_and_unresolvable_references_are_refused() -> None:
    tree = {"type": "object", "$defs": {"Node": {"type": "object", "properties": {
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
        "properties": {"root": {"$ref": "#/$defs/Node"}}}
    with pytest.raises(UnsupportedType, match=r"^column root\.children\.element: #/\$defs/Node refers to itself"):
        to_struct("json", json.dumps(tree).encode(), "Tree")
    dangling = {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}
    with pytest.raises(InvalidSchema, match="does not resolve"):
        to_struct("json", json.dumps(dangling).encode(), "T")


def test_schemas_that_do_not_describe_rows_are_refused() -> None:
    with pytest.raises(UnsupportedType, match="describing objects"):
        to_struct("json", b'{"type": "string"}', "T")
    with pytest.raises(UnsupportedType, match="describing objects"):
        to_struct("json", b"true", "T")
    with pytest.raises(UnsupportedType, match=r"^column pair: tuples \(prefixItems\)"):
        to_struct("json", b'{"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{}]}}}', "T")
    with pytest.raises(InvalidSchema, match="not valid JSON"):
        to_struct("json", b"{", "T")


REFUSED: list[tuple[DataType, str, str]] = [
    (MapType(IntegerType(), StringType()), ".key",
     "JSON object keys are strings, and JSON Schema writes integer otherwise"),
    (ArrayType(MapType(BooleanType(), StringType())), ".element.key",
     "JSON object keys are strings, and JSON Schema writes boolean otherwise"),
    (CalendarIntervalType(), "", "JSON Schema has no type for interval"),
]


@pytest.mark.parametrize(("dtype", "suffix", "message"), REFUSED)
@settings(max_examples=20, deadline=None)
@given(where=st.lists(identifiers, min_size=1, max_size=3, unique=True).filter(lambda w: "ok" not in w))
def test_types_json_schema_cannot_carry_are_refused_naming_the_column(
    dtype: DataType, suffix: str, message: str, where: list[str]
) -> None:
    column: DataType = dtype
    for name in reversed(where[1:]):
        column = StructType([StructField(name, column)])
    table = StructType([StructField("ok", IntegerType()), StructField(where[0], column)])
    with pytest.raises(UnsupportedType) as refused:
        to_schema(table.jsonValue(), "json", "Row")
    assert str(refused.value) == f"column {'.'.join(where)}{suffix}: {message}"


def test_column_names_are_free_but_quoted_in_messages() -> None:
    table = StructType([StructField("unit price", StructType([StructField("a.b", NullType(), False)]))])
    with pytest.raises(UnsupportedType, match=r"^column `unit price`\.`a\.b`: a void value is always null"):
        to_schema(table.jsonValue(), "json", "Row")
    table = StructType([StructField("unit price", IntegerType()), StructField("größe", StringType(), False)])
    type_name, data = to_schema(table.jsonValue(), "json", "Row")
    assert to_struct("json", data, type_name) == table.jsonValue()
    with pytest.raises(BadRequest, match="non-empty title"):
        to_schema(table.jsonValue(), "json", "")


def test_namespace_does_not_change_the_document() -> None:
    with_namespace: Any = to_schema(ORDER.jsonValue(), "json", "Order", "shop")
    assert with_namespace == to_schema(ORDER.jsonValue(), "json", "Order")
