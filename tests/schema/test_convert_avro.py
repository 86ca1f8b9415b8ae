"""Spark StructType <-> Avro: exact round trips, hand-written records, refused types."""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import avro.schema
import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    CalendarIntervalType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    TimeType,
    VariantType,
)

from catalog_api.schema import UnsupportedType, to_schema, to_struct
from registry.errors import BadRequest
from registry.formats import get_format
from tests.schema.strategies import AVRO, identifiers, tables

# The avro package warns about logical types it does not know (local-timestamp-micros) or finds invalid, and
# reads them as their underlying type; both are expected here.
pytestmark = pytest.mark.filterwarnings("ignore::avro.errors.IgnoredLogicalType")


def round_trip(table: StructType, name: str = "Row", namespace: str | None = "shop.sales") -> dict[str, Any]:
    type_name, data = to_schema(table.jsonValue(), "avro", name, namespace)
    return to_struct("avro", get_format("Avro").parse(data, type_name).data, type_name)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(AVRO))
def test_every_avro_carried_type_round_trips_exactly(table: StructType) -> None:
    type_name, data = to_schema(table.jsonValue(), "avro", "Row", "shop.sales")
    assert type_name == "shop.sales.Row"
    avro.schema.parse(data.decode())
    fastavro.parse_schema(json.loads(data))
    back = to_struct("avro", get_format("Avro").parse(data, type_name).data, type_name)
    assert back == table.jsonValue()
    assert StructType.fromJson(back) == table  # last: fromJson rewrites the collation metadata it is given


def test_record_is_named_in_its_namespace_and_nullable_columns_default_to_null() -> None:
    table = StructType([
        StructField("id", LongType(), False, {"comment": "order number"}),
        StructField("note", StringType(), True),
        StructField("amount", DecimalType(12, 2), True),
    ])
    type_name, data = to_schema(table.jsonValue(), "avro", "Order", "shop")
    schema = json.loads(data)
    assert type_name == "shop.Order"
    assert (schema["name"], schema["namespace"]) == ("Order", "shop")
    id_field, note_field, amount_field = schema["fields"]
    assert id_field == {"name": "id", "type": "long", "doc": "order number"}
    assert note_field == {"name": "note", "type": ["null", "string"], "default": None}
    assert amount_field["type"][1] == {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}


def test_without_namespace_the_type_name_is_the_record_name() -> None:
    type_name, data = to_schema(StructType([StructField("a", IntegerType())]).jsonValue(), "Avro", "Row")
    assert type_name == "Row"
    assert "namespace" not in json.loads(data)


def record_names(node: Any) -> list[str]:
    """Full names of the records defined in an Avro schema's JSON, in order."""
    if isinstance(node, list):
        return [name for item in node for name in record_names(item)]
    if not isinstance(node, dict):
        return []
    own = [f"{node['namespace']}.{node['name']}"] if node.get("type") == "record" else []
    return own + [name for value in node.values() for name in record_names(value)]


def test_nested_record_names_follow_the_column_path_and_are_unique() -> None:
    inner = StructType([StructField("x", IntegerType())])
    table = StructType([
        StructField("a", inner),
        StructField("b", StructType([StructField("a", inner)])),
        StructField("c", ArrayType(inner)),
        StructField("d", MapType(StringType(), inner)),
    ])
    _, data = to_schema(table.jsonValue(), "avro", "Row", "ns")
    assert record_names(json.loads(data)) == [
        "ns.Row", "ns.Row.a", "ns.Row.b", "ns.Row.b.a", "ns.Row.c.element", "ns.Row.d.value",
    ]
    assert round_trip(table, "Row", "ns") == table.jsonValue()


def test_columns_named_like_avro_primitives_get_records_that_do_not_shadow_them() -> None:
    # A record named "null" or "int" would capture the primitive type of that name in its namespace.
    inner = StructType([
        StructField("null", StructType([StructField("n", LongType())])),
        StructField("i", IntegerType()),
    ])
    table = StructType([
        StructField("null", inner),
        StructField("null_", inner),
        StructField("int", ArrayType(inner)),
        StructField("long", LongType()),
    ])
    _, data = to_schema(table.jsonValue(), "avro", "Row", "ns")
    assert record_names(json.loads(data)) == [
        "ns.Row", "ns.Row.null_", "ns.Row.null_.null_", "ns.Row.null__", "ns.Row.null__.null_",
        "ns.Row.int_.element", "ns.Row.int_.element.null_",
    ]
    assert round_trip(table, "Row", "ns") == table.jsonValue()


def test_produced_schema_writes_and_reads_rows_with_fastavro() -> None:
    table = StructType([
        StructField("id", LongType(), False),
        StructField("tag", ByteType(), True),
        StructField("price", DecimalType(9, 2), True),
        StructField("day", DateType(), True),
        StructField("at", TimestampType(), True),
        StructField("tags", ArrayType(StringType(), True), True),
    ])
    _, data = to_schema(table.jsonValue(), "avro", "Row", "ns")
    parsed = fastavro.parse_schema(json.loads(data))
    rows = [
        {"id": 1, "tag": 7, "price": Decimal("12.34"), "day": date(2024, 5, 1),
         "at": datetime(2024, 5, 1, 12, 0, tzinfo=UTC), "tags": ["a", None]},
        {"id": 2, "tag": None, "price": None, "day": None, "at": None, "tags": None},
    ]
    buffer = io.BytesIO()
    fastavro.writer(buffer, parsed, rows)
    buffer.seek(0)
    assert list(fastavro.reader(buffer)) == rows


HAND_WRITTEN = {
    "type": "record",
    "name": "Click",
    "namespace": "web",
    "fields": [
        {"name": "user", "type": ["null", "string"], "default": None, "doc": "who clicked"},
        {"name": "page", "type": ["string", "null"]},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY"]}},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 16}},
        {"name": "geo", "type": {"type": "record", "name": "Geo", "fields": [
            {"name": "lat", "type": "double"}, {"name": "lon", "type": "double"}]}},
        {"name": "home", "type": ["null", "Geo"], "default": None},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "clock", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "cents", "type": {"type": "fixed", "name": "Money", "size": 8, "logicalType": "decimal",
                                   "precision": 18, "scale": 2}},
        {"name": "bad", "type": {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 5}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "counts", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "ids", "type": {"type": "array", "items": "int"}},
        {"name": "wide", "type": ["int", "long"]},
        {"name": "either", "type": ["null", "string", "int"]},
        {"name": "hint", "type": {"type": "int", "spark.type": "decimal(5,2)"}},
        {"name": "nothing", "type": "null"},
    ],
}


GEO = StructType([StructField("lat", DoubleType(), False), StructField("lon", DoubleType(), False)])


def test_hand_written_avro_record_maps_to_the_expected_spark_schema() -> None:
    expected = StructType([
        StructField("user", StringType(), True, {"comment": "who clicked"}),
        StructField("page", StringType(), True),
        StructField("kind", StringType(), False),
        StructField("hash", BinaryType(), False),
        StructField("geo", GEO, False),
        StructField("home", GEO, True),
        StructField("day", DateType(), False),
        StructField("ms", TimestampType(), False),
        StructField("local", TimestampNTZType(), False),
        StructField("clock", TimeType(3), False),
        StructField("cents", DecimalType(18, 2), False),
        StructField("bad", BinaryType(), False),  # an invalid logical type reads as its underlying type
        StructField("id", StringType(), False),
        StructField("counts", MapType(StringType(), LongType(), True), False),
        StructField("ids", ArrayType(IntegerType(), False), False),
        StructField("wide", LongType(), False),
        StructField("either", StructType([StructField("member0", StringType()), StructField("member1", IntegerType())]),
                    True),
        StructField("hint", IntegerType(), False),  # a spark.type the Avro type cannot carry is ignored
        StructField("nothing", NullType(), True),
    ])
    registered = get_format("Avro").parse(json.dumps(HAND_WRITTEN).encode(), "")
    back = to_struct("avro", registered.data, registered.type_name)
    assert StructType.fromJson(back) == expected


def test_recursive_record_is_refused_naming_the_column() -> None:
    schema = {"type": "record", "name": "Node", "fields": [
        {"name": "value", "type": "int"},
        {"name": "next", "type": ["null", "Node"], "default": None},
    ]}
    with pytest.raises(UnsupportedType, match=r"^column next: record Node contains itself"):
        to_struct("avro", json.dumps(schema).encode(), "Node")


def test_a_non_record_schema_is_not_a_table_and_a_wrong_type_name_is_refused() -> None:
    with pytest.raises(UnsupportedType, match="needs an Avro record schema, not string"):
        to_struct("avro", b'"string"', "")
    with pytest.raises(BadRequest, match=r"does not match the Avro record 'web\.Click'"):
        to_struct("avro", json.dumps(HAND_WRITTEN).encode(), "web.Other")
    with pytest.raises(BadRequest, match="invalid Avro schema"):
        to_struct("avro", b'{"type": "record"}', "")


REFUSED: list[tuple[DataType, str, str]] = [
    (VariantType(), "", "Avro has no type for variant"),
    (MapType(IntegerType(), StringType()), ".key", "Avro map keys are strings, not integer"),
    (ArrayType(MapType(DateType(), StringType())), ".element.key", "Avro map keys are strings, not date"),
    (CalendarIntervalType(), "", "Avro has no type for interval"),
]


@pytest.mark.parametrize(("dtype", "suffix", "message"), REFUSED)
@settings(max_examples=20, deadline=None)
@given(where=st.lists(identifiers, min_size=1, max_size=3, unique=True))
def test_types_avro_cannot_carry_are_refused_naming_the_column(
    dtype: DataType, suffix: str, message: str, where: list[str]
) -> None:
    column: DataType = dtype
    for name in reversed(where[1:]):
        column = StructType([StructField(name, column)])
    table = StructType([StructField("ok", IntegerType()), StructField(where[0], column)])
    with pytest.raises(UnsupportedType) as refused:
        to_schema(table.jsonValue(), "avro", "Row", "ns")
    assert str(refused.value) == f"column {'.'.join(where)}{suffix}: {message}"
    assert refused.value.status == 400


def test_names_avro_cannot_spell_are_refused() -> None:
    with pytest.raises(UnsupportedType, match=r"^column `unit price`: Avro field names must be letters"):
        to_schema(StructType([StructField("unit price", IntegerType())]).jsonValue(), "avro", "Row")
    with pytest.raises(UnsupportedType, match=r"^column `2024`: Avro field names"):
        to_schema(StructType([StructField("2024", IntegerType())]).jsonValue(), "avro", "Row")
    with pytest.raises(BadRequest, match="not a valid Avro record name"):
        to_schema(StructType([]).jsonValue(), "avro", "my-table")
    with pytest.raises(BadRequest, match="not a valid Avro namespace"):
        to_schema(StructType([]).jsonValue(), "avro", "Row", "my-db")
    for namespace in (None, "ns"):
        with pytest.raises(BadRequest, match="primitive type name"):
            to_schema(StructType([]).jsonValue(), "avro", "int", namespace)


def test_non_nullable_void_is_refused() -> None:
    with pytest.raises(UnsupportedType, match=r"^column x: a void value is always null"):
        to_schema(StructType([StructField("x", NullType(), False)]).jsonValue(), "avro", "Row")
