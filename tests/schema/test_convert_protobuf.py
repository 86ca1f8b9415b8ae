"""Spark StructType <-> protobuf: exact round trips through protoc, hand-written .proto files, refused types."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
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
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    VariantType,
)

from catalog_api.schema import UnsupportedType, to_schema, to_struct
from registry.errors import BadRequest
from registry.formats import get_format
from tests.schema.strategies import PROTOBUF, identifiers, tables


def register(text: bytes, type_name: str) -> bytes:
    """What the registry stores for a .proto: the compiled FileDescriptorSet."""
    data: bytes = get_format("Protobuf").parse(text, type_name).data
    return data


def round_trip(table: StructType, name: str = "Row", namespace: str | None = "shop.sales") -> dict[str, Any]:
    type_name, text = to_schema(table.jsonValue(), "protobuf", name, namespace)
    return to_struct("protobuf", register(text, type_name), type_name)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(PROTOBUF))
def test_every_protobuf_carried_type_round_trips_exactly(table: StructType) -> None:
    type_name, text = to_schema(table.jsonValue(), "protobuf", "Row", "shop.sales")
    assert type_name == "shop.sales.Row"
    back = to_struct("protobuf", register(text, type_name), type_name)
    assert back == table.jsonValue()
    assert StructType.fromJson(back) == table  # last: fromJson rewrites the collation metadata it is given


def test_generated_proto_is_idiomatic_where_protobuf_has_the_type() -> None:
    table = StructType([
        StructField("id", LongType(), False),
        StructField("note", StringType(), True, {"comment": "free text"}),
        StructField("scores", ArrayType(DoubleType(), False), False),
        StructField("labels", MapType(StringType(), StringType(), False), True),
        StructField("tiny", ByteType(), False),
    ])
    type_name, text = to_schema(table.jsonValue(), "protobuf", "Order", "shop")
    assert type_name == "shop.Order"
    source = text.decode()
    assert 'syntax = "proto3";' in source
    assert "package shop;" in source
    assert "  int64 id = 1;" in source
    assert "  // free text\n  optional string note = 2 [(.shop.spark_comment) = \"free text\"];" in source
    assert "  repeated double scores = 3 [(.shop.spark_not_null) = true];" in source
    assert "  map<string, string> labels = 4;" in source
    assert '  int32 tiny = 5 [(.shop.spark_type) = "byte"];' in source


def test_a_schema_without_special_types_needs_no_options_or_imports() -> None:
    table = StructType([StructField("id", LongType(), False), StructField("name", StringType(), True)])
    _, text = to_schema(table.jsonValue(), "protobuf", "Row")
    assert text.decode() == 'syntax = "proto3";\n\nmessage Row {\n  int64 id = 1;\n  optional string name = 2;\n}\n'


def test_null_elements_are_carried_in_wrapper_messages() -> None:
    table = StructType([StructField("xs", ArrayType(IntegerType(), True), False)])
    type_name, text = to_schema(table.jsonValue(), "protobuf", "Row", "ns")
    fds = descriptor_pb2.FileDescriptorSet.FromString(register(text, type_name))
    pool = descriptor_pool.DescriptorPool()
    for file in fds.file:
        pool.Add(file)
    row_class = message_factory.GetMessageClass(pool.FindMessageTypeByName(type_name))
    row = row_class()
    row.xs.add(value=1)
    row.xs.add()  # a null element: the wrapper's optional value is unset
    row.xs.add(value=0)
    decoded = row_class.FromString(row.SerializeToString())
    assert [e.value if e.HasField("value") else None for e in decoded.xs] == [1, None, 0]


HAND_WRITTEN = b"""
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";

enum Status { UNKNOWN = 0; PAID = 1; }

message Order {
  message Line { string sku = 1; int32 qty = 2; }
  int64 id = 1;
  optional string note = 2;
  Status status = 3;
  repeated Line lines = 4;
  map<string, double> prices = 5;
  google.protobuf.Timestamp created = 6;
  google.protobuf.Int32Value maybe = 7;
  uint64 big = 8;
  uint32 small = 9;
  oneof payment { string card = 10; bytes token = 11; }
  repeated string tags = 12;
  Line first = 13;
  map<int64, Line> by_id = 14;
  google.protobuf.Struct attrs = 15;
  sint32 delta = 16;
  float ratio = 17;
  bool paid = 18;
}
"""

LINE = StructType([StructField("sku", StringType(), False), StructField("qty", IntegerType(), False)])


def test_hand_written_proto3_maps_to_the_expected_spark_schema() -> None:
    expected = StructType([
        StructField("id", LongType(), False),
        StructField("note", StringType(), True),
        StructField("status", StringType(), False),
        StructField("lines", ArrayType(LINE, False), True),
        StructField("prices", MapType(StringType(), DoubleType(), False), True),
        StructField("created", TimestampType(), True),
        StructField("maybe", IntegerType(), True),
        StructField("big", DecimalType(20, 0), False),
        StructField("small", LongType(), False),
        StructField("card", StringType(), True),
        StructField("token", BinaryType(), True),
        StructField("tags", ArrayType(StringType(), False), True),
        StructField("first", LINE, True),
        StructField("by_id", MapType(LongType(), LINE, False), True),
        StructField("attrs", VariantType(), True),
        StructField("delta", IntegerType(), False),
        StructField("ratio", FloatType(), False),
        StructField("paid", BooleanType(), False),
    ])
    back = to_struct("protobuf", register(HAND_WRITTEN, "shop.Order"), "shop.Order")
    assert StructType.fromJson(back) == expected
    nested = to_struct("protobuf", register(HAND_WRITTEN, "shop.Order.Line"), "shop.Order.Line")
    assert StructType.fromJson(nested) == LINE


def test_descriptor_sets_without_the_well_known_files_still_resolve_them() -> None:
    fds = descriptor_pb2.FileDescriptorSet.FromString(register(HAND_WRITTEN, "shop.Order"))
    own = descriptor_pb2.FileDescriptorSet(file=[f for f in fds.file if not f.name.startswith("google/")])
    back = to_struct("protobuf", own.SerializeToString(), "shop.Order")
    assert [f["type"] for f in back["fields"] if f["name"] in ("created", "attrs")] == ["timestamp", "variant"]


def test_proto2_required_fields_are_not_nullable() -> None:
    text = b'syntax = "proto2"; message Old { required int32 a = 1; optional string b = 2; repeated int64 c = 3; }'
    back = to_struct("protobuf", register(text, "Old"), "Old")
    assert StructType.fromJson(back) == StructType([
        StructField("a", IntegerType(), False),
        StructField("b", StringType(), True),
        StructField("c", ArrayType(LongType(), False), True),
    ])


def test_recursive_message_is_refused_naming_the_column() -> None:
    text = b'syntax = "proto3"; package t; message Node { int32 v = 1; repeated Node children = 2; }'
    with pytest.raises(UnsupportedType, match=r"^column children\.element: message t\.Node contains itself"):
        to_struct("protobuf", register(text, "t.Node"), "t.Node")


def test_unknown_message_and_garbage_are_refused() -> None:
    with pytest.raises(BadRequest, match=r"message 'shop\.Missing' is not in the Protobuf schema"):
        to_struct("protobuf", register(HAND_WRITTEN, "shop.Order"), "shop.Missing")
    with pytest.raises(BadRequest, match="not a FileDescriptorSet"):
        to_struct("protobuf", b"\xff\xff\xff", "x.Y")


REFUSED: list[tuple[DataType, str, str]] = [
    (MapType(DoubleType(), StringType()), ".key", "protobuf map keys must be integral, bool or string, not double"),
    (MapType(BinaryType(), StringType()), ".key", "protobuf map keys must be integral, bool or string, not binary"),
    (ArrayType(MapType(FloatType(), ShortType())), ".element.key",
     "protobuf map keys must be integral, bool or string, not float"),
    (CalendarIntervalType(), "", "protobuf has no type for interval"),
]


@pytest.mark.parametrize(("dtype", "suffix", "message"), REFUSED)
@settings(max_examples=20, deadline=None)
@given(where=st.lists(identifiers, min_size=1, max_size=3, unique=True).filter(lambda w: "ok" not in w))
def test_types_protobuf_cannot_carry_are_refused_naming_the_column(
    dtype: DataType, suffix: str, message: str, where: list[str]
) -> None:
    column: DataType = dtype
    for name in reversed(where[1:]):
        column = StructType([StructField(name, column)])
    table = StructType([StructField("ok", IntegerType()), StructField(where[0], column)])
    with pytest.raises(UnsupportedType) as refused:
        to_schema(table.jsonValue(), "protobuf", "Row", "ns")
    assert str(refused.value) == f"column {'.'.join(where)}{suffix}: {message}"


def test_names_protobuf_cannot_spell_are_refused() -> None:
    with pytest.raises(UnsupportedType, match=r"^column `unit price`: protobuf field names"):
        to_schema(StructType([StructField("unit price", IntegerType())]).jsonValue(), "protobuf", "Row")
    inner = StructType([StructField("a_b", IntegerType()), StructField("aB", DateType())])
    clash = StructType([StructField("s", inner)])
    with pytest.raises(UnsupportedType, match=r"^column s\.aB: protobuf needs distinct JSON names, and 'aB' and 'a_b'"):
        to_schema(clash.jsonValue(), "protobuf", "Row")
    with pytest.raises(BadRequest, match="not a valid protobuf message name"):
        to_schema(StructType([]).jsonValue(), "protobuf", "my-table")
    with pytest.raises(BadRequest, match="not a valid protobuf package"):
        to_schema(StructType([]).jsonValue(), "protobuf", "Row", "my-db")
    with pytest.raises(BadRequest, match="name of an option"):
        to_schema(StructType([]).jsonValue(), "protobuf", "spark_type")


def test_non_nullable_void_is_refused_and_nullable_void_round_trips() -> None:
    with pytest.raises(UnsupportedType, match=r"^column x\.element: a void value is always null"):
        to_schema(StructType([StructField("x", ArrayType(NullType(), False))]).jsonValue(), "protobuf", "Row")
    table = StructType([StructField("x", NullType(), True), StructField("y", ArrayType(NullType(), True), True)])
    assert round_trip(table) == table.jsonValue()


def test_nested_message_names_avoid_the_top_level_field_names() -> None:
    table = StructType([
        StructField("A", IntegerType(), True),
        StructField("a", StructType([StructField("x", DayTimeIntervalType(), True)]), False),
    ])
    _, text = to_schema(table.jsonValue(), "protobuf", "Row", "ns")
    assert "message A_2 {" in text.decode()
    assert round_trip(table, "Row", "ns") == table.jsonValue()


def test_maps_whose_protoc_entry_type_names_clash_are_refused() -> None:
    table = StructType([
        StructField("k", MapType(StringType(), LongType())),
        StructField("K", MapType(StringType(), LongType())),
    ])
    with pytest.raises(UnsupportedType, match=r"^column K: .* 'KEntry' is already the entry type of map 'k'"):
        to_schema(table.jsonValue(), "protobuf", "Row")
    table = StructType([StructField("_1", MapType(StringType(), LongType()))])
    with pytest.raises(UnsupportedType, match=r"^column _1: .* '1Entry' is not a valid name"):
        to_schema(table.jsonValue(), "protobuf", "Row")
