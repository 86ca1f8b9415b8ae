"""from_registry / to_registry: framed payloads in a binary column, decoded and encoded in Spark."""

from __future__ import annotations

import datetime as dt
import json
import struct
import uuid
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from catalog_api.schema import to_schema
from registry.client import RegistryClient, schema_info
from registry.formats import get_format
from registry.model import Compatibility, GroupProperties, SchemaInfo, SerializationFormat
from registry.serde import ConfluentSerializer, Serializer
from registry.serde.protobuf import message_class
from spark_plugin.functions import PERMISSIVE, from_registry, reader_type, to_registry

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

TOPIC = SerializationContext("clicks", MessageField.VALUE)
CLICK_V1: dict[str, Any] = {
    "type": "record", "name": "Click", "namespace": "test.fn",
    "fields": [{"name": "id", "type": "long"}, {"name": "page", "type": "string"},
               {"name": "count", "type": "int"}],
}
#: v2 promotes count to long and adds a field with a default and a nullable one.
CLICK_V2: dict[str, Any] = {
    **CLICK_V1,
    "fields": [{"name": "id", "type": "long"}, {"name": "page", "type": "string"},
               {"name": "count", "type": "long"}, {"name": "source", "type": "string", "default": "web"},
               {"name": "score", "type": ["null", "double"], "default": None}],
}
#: Every type the conversions carry, nested.
WIDE = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "small", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "ratio", "type": "double", "nullable": True, "metadata": {}},
        {"name": "flag", "type": "boolean", "nullable": True, "metadata": {}},
        {"name": "amount", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
        {"name": "at", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "day", "type": "date", "nullable": True, "metadata": {}},
        {"name": "raw", "type": "binary", "nullable": True, "metadata": {}},
        {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True},
         "nullable": True, "metadata": {}},
        {"name": "attrs", "type": {"type": "map", "keyType": "string", "valueType": "long",
                                   "valueContainsNull": True}, "nullable": True, "metadata": {}},
        {"name": "ship", "type": {"type": "struct", "fields": [
            {"name": "city", "type": "string", "nullable": True, "metadata": {}},
            {"name": "zip", "type": "integer", "nullable": False, "metadata": {}}]},
         "nullable": True, "metadata": {}},
    ],
}
WIDE_ROWS = [
    (1, "ada", 7, 0.5, True, Decimal("12.50"), dt.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=dt.UTC),
     dt.date(2024, 5, 1), b"\x00\xff", ["a", None], {"k": 1, "n": None}, ("Oslo", 150)),
    (2, None, None, None, None, None, None, None, None, None, None, None),
]


@pytest.fixture
def registry(spark_server: str) -> RegistryClient:
    """A registry client in a namespace of this test's own."""
    return RegistryClient(spark_server, f"fn{uuid.uuid4().hex[:12]}")


def _group(registry: RegistryClient, name: str, fmt: str = "Avro") -> str:
    registry.create_group(name, GroupProperties(SerializationFormat(fmt), Compatibility.of("Backward"), False, {}))
    return name


def _avro(schema: dict[str, Any]) -> SchemaInfo:
    return schema_info("Avro", json.dumps(schema))


def _binary(spark: Any, payloads: list[bytes | None]) -> Any:
    return spark.createDataFrame([(p,) for p in payloads], "value binary")


def _decoded(frame: Any, *args: Any, **kwargs: Any) -> list[Any]:
    rows = frame.select(from_registry("value", *args, **kwargs).alias("r")).collect()
    return [None if r.r is None else r.r.asDict(recursive=True) for r in rows]


def test_confluent_payloads_of_two_versions_read_under_the_latest(spark: Any, spark_server: str,
                                                                   registry: RegistryClient) -> None:
    group = _group(registry, "clicks")
    sr = SchemaRegistryClient({"url": spark_server})
    conf = {"subject.name.strategy": lambda _ctx, _record: f":.{registry.namespace}:{group}"}
    old = AvroSerializer(sr, json.dumps(CLICK_V1), conf=conf)
    new = AvroSerializer(sr, json.dumps(CLICK_V2), conf=conf)
    payloads = [old({"id": 1, "page": "/a", "count": 3}, TOPIC),
                new({"id": 2, "page": "/b", "count": 2**40, "source": "app", "score": 0.5}, TOPIC),
                None,
                old({"id": 3, "page": "/c", "count": -1}, TOPIC)]
    assert len({p[1:5] for p in payloads if p is not None}) == 2  # two schema ids
    frame = _binary(spark, payloads)
    assert reader_type(spark_server, group, namespace=registry.namespace).simpleString() == (
        "struct<id:bigint,page:string,count:bigint,source:string,score:double>")
    assert _decoded(frame, spark_server, group, namespace=registry.namespace) == [
        {"id": 1, "page": "/a", "count": 3, "source": "web", "score": None},
        {"id": 2, "page": "/b", "count": 2**40, "source": "app", "score": 0.5},
        None,
        {"id": 3, "page": "/c", "count": -1, "source": "web", "score": None},
    ]
    # an older reader schema, given explicitly
    assert _decoded(frame.limit(1), spark_server, group, _avro(CLICK_V1), namespace=registry.namespace) == [
        {"id": 1, "page": "/a", "count": 3}]


def test_pravega_events_read_the_same_way(spark: Any, spark_server: str, registry: RegistryClient) -> None:
    group = _group(registry, "clicks")
    v1 = Serializer(registry, group, _avro(CLICK_V1))
    v2 = Serializer(registry, group, _avro(CLICK_V2), "application/x-zstd")  # the record path: a codec
    confluent = ConfluentSerializer(registry, group, _avro(CLICK_V2))
    events = [v1.serialize({"id": 1, "page": "/a", "count": 3}),
              v2.serialize({"id": 2, "page": "/b", "count": 4, "source": "s", "score": 1.0}),
              confluent.serialize({"id": 3, "page": "/c", "count": 5, "source": "t", "score": None})]
    many = [v1.serialize({"id": i, "page": f"/{i}", "count": i}) for i in range(10, 2010)]
    decoded = _decoded(_binary(spark, events + many), spark_server, group, namespace=registry.namespace)
    assert decoded[:3] == [
        {"id": 1, "page": "/a", "count": 3, "source": "web", "score": None},
        {"id": 2, "page": "/b", "count": 4, "source": "s", "score": 1.0},
        {"id": 3, "page": "/c", "count": 5, "source": "t", "score": None},
    ]
    assert [d["id"] for d in decoded[3:]] == list(range(10, 2010))


def test_protobuf_from_confluent_kafka(spark: Any, spark_server: str, registry: RegistryClient) -> None:
    struct_json = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": False},
         "nullable": True, "metadata": {}}]}
    type_name, data = to_schema(struct_json, "protobuf", "Tagged", "test.fn")
    group = _group(registry, "tagged", "Protobuf")
    registry.add_schema(group, schema_info("Protobuf", data, type_name))
    [latest] = registry.latest_schemas(group)
    cls = message_class(get_format("Protobuf").parse(latest.schema.data, type_name))
    sr = SchemaRegistryClient({"url": spark_server})
    conf = {"use.deprecated.format": False, "subject.name.strategy": lambda _c, _r: f":.{registry.namespace}:{group}"}
    theirs = ProtobufSerializer(cls, sr, conf)
    payloads = [theirs(cls(id=1, tags=["a", "b"]), TOPIC), theirs(cls(id=2), TOPIC)]
    assert _decoded(_binary(spark, payloads), spark_server, group, namespace=registry.namespace) == [
        {"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": []}]


@pytest.mark.parametrize(("fmt", "framing", "codec"), [
    ("avro", "confluent", ""), ("avro", "pravega", "application/x-gzip"), ("json", "confluent", ""),
    ("protobuf", "confluent", ""), ("protobuf", "pravega", ""),
])
def test_to_registry_then_from_registry(spark: Any, spark_server: str, registry: RegistryClient, fmt: str,
                                        framing: str, codec: str) -> None:
    from pyspark.sql import functions as f
    from pyspark.sql.types import StructType

    type_name, data = to_schema(WIDE, fmt, "Wide", "test.fn")
    group = _group(registry, "wide", {"avro": "Avro", "json": "Json", "protobuf": "Protobuf"}[fmt])
    registry.add_schema(group, schema_info({"avro": "Avro", "json": "Json", "protobuf": "Protobuf"}[fmt], data,
                                           type_name))
    frame = spark.createDataFrame(WIDE_ROWS, StructType.fromJson(WIDE))
    rows = frame.select(f.struct(*frame.columns).alias("row"))
    encoded = rows.select(to_registry("row", spark_server, group, namespace=registry.namespace, framing=framing,
                                      codec=codec).alias("value"))
    assert {r.value[0] for r in encoded.collect()} == {0 if framing == "confluent" else 1}
    decoded = _decoded(encoded, spark_server, group, namespace=registry.namespace)
    expected = [r.row.asDict(recursive=True) for r in rows.collect()]
    if fmt == "protobuf":
        # protobuf has no null collections: a null array or map reads back empty (docs/schema-mapping.md)
        expected[1] = {**expected[1], "tags": [], "attrs": {}}
    assert decoded == expected


def test_bad_payloads_fail_clearly_or_read_as_null(spark: Any, spark_server: str, registry: RegistryClient) -> None:
    from pyspark.errors import PythonException

    group = _group(registry, "clicks")
    good = ConfluentSerializer(registry, group, _avro(CLICK_V1)).serialize({"id": 1, "page": "/a", "count": 3})
    unknown = b"\x00" + struct.pack(">i", 2**31 - 1) + good[5:]
    truncated = good[:-3]
    for bad, message in [(unknown, f"schema id {2**31 - 1}, unknown to the registry"),
                         (truncated, "cannot decode event with schema id"),
                         (b"\x07\x00", "shorter than the 5-byte header")]:
        frame = _binary(spark, [good, bad])
        with pytest.raises(PythonException, match=message):
            _decoded(frame, spark_server, group, namespace=registry.namespace)
        assert _decoded(frame, spark_server, group, namespace=registry.namespace, mode=PERMISSIVE) == [
            {"id": 1, "page": "/a", "count": 3}, None]


def test_decode_registry_replaces_one_column_of_whole_rows(spark: Any, spark_server: str,
                                                          registry: RegistryClient) -> None:
    from pyspark.sql import functions as f

    from spark_plugin.functions import decode_registry

    group = _group(registry, "clicks")
    v1 = ConfluentSerializer(registry, group, _avro(CLICK_V1))
    v2 = Serializer(registry, group, _avro(CLICK_V2))
    at = dt.datetime(2024, 5, 1, 10, 0, 0, 5, tzinfo=dt.UTC)
    frame = spark.createDataFrame(
        [("k1", v1.serialize({"id": 1, "page": "/a", "count": 3}), at, 7),
         ("k2", v2.serialize({"id": 2, "page": "/b", "count": 4, "source": "s", "score": 2.0}), None, 8),
         (None, None, at, None)],
        "key string, value binary, at timestamp, n long")
    decoded = decode_registry(frame, "value", spark_server, group, namespace=registry.namespace)
    assert decoded.columns == ["key", "value", "at", "n"]
    rows = decoded.collect()
    assert [(r.key, r.at, r.n) for r in rows] == [(r.key, r.at, r.n) for r in frame.collect()]
    by_udf = frame.select(from_registry(f.col("value"), spark_server, group, namespace=registry.namespace))
    assert [r.value for r in rows] == [r[0] for r in by_udf.collect()]
    assert rows[0].value.asDict() == {"id": 1, "page": "/a", "count": 3, "source": "web", "score": None}


def test_integers_of_every_encoded_length(spark: Any, spark_server: str, registry: RegistryClient) -> None:
    """Varints of one to ten bytes, in batches that hold only short ones and in batches that mix in long ones."""
    group = _group(registry, "clicks")
    serialize = ConfluentSerializer(registry, group, _avro(CLICK_V1)).serialize
    longs = sorted({s * (2**bits + d) for bits in range(0, 63, 7) for d in (-1, 0) for s in (1, -1)}
                   | {2**63 - 1, -2**63, 2**62, -2**62 - 1})
    ints = [0, 1, -1, 63, -64, 64, 2**31 - 1, -2**31]
    records = [{"id": i, "page": "/p", "count": ints[k % len(ints)]} for k, i in enumerate(longs)]
    short = [r for r in records if abs(r["id"]) < 2**55]  # at most eight bytes: the whole-word read
    for batch in (short, records):
        decoded = _decoded(_binary(spark, [serialize(r) for r in batch]), spark_server, group,
                           namespace=registry.namespace)
        assert decoded == batch


def test_batches_decoded_together_as_they_are_one_by_one(spark_server: str, registry: RegistryClient) -> None:
    """Several batches as one ChunkedArray (slices, empty ones, every path mixed in) decode as each alone."""
    import pyarrow as pa

    from spark_plugin.functions import _batch_decoder

    group = _group(registry, "clicks")
    v1 = ConfluentSerializer(registry, group, _avro(CLICK_V1))
    v2 = Serializer(registry, group, _avro(CLICK_V2))
    zipped = Serializer(registry, group, _avro(CLICK_V2), "application/x-zstd")  # the record path
    payloads: list[bytes | None] = []
    for i in range(3000):
        kind = i % 7
        record = {"id": i, "page": f"/é{i}" if kind == 3 else f"/{i}", "count": i, "source": "s", "score": None}
        if kind == 5:
            payloads.append(None)
        elif kind == 6:
            payloads.append(b"\x07\x00")  # too short for a prefix: null in PERMISSIVE mode
        elif kind == 4:
            payloads.append(zipped.serialize(record))
        elif kind % 2:
            payloads.append(v2.serialize(record))
        else:
            payloads.append(v1.serialize({k: record[k] for k in ("id", "page", "count")}))
    whole = pa.array(payloads, pa.binary())
    chunks = [whole.slice(0, 1000), whole.slice(1000, 0), pa.array(payloads[1000:2500], pa.binary()),
              whole.slice(2500, 500)]
    decode = _batch_decoder(spark_server, group, None, registry.namespace, None, PERMISSIVE)
    one_by_one = [decode(chunk) for chunk in chunks]
    together = decode(pa.chunked_array(chunks))
    assert together.equals(pa.concat_arrays(one_by_one))
    rows = together.to_pylist()
    assert rows[5] is None
    assert rows[6] is None
    assert rows[3] == {"id": 3, "page": "/é3", "count": 3, "source": "s", "score": None}
    assert rows[4] == {"id": 4, "page": "/4", "count": 4, "source": "s", "score": None}
    assert rows[7] == {"id": 7, "page": "/7", "count": 7, "source": "web", "score": None}


def test_many_small_batches_are_answered_one_by_one(spark: Any, spark_server: str, registry: RegistryClient) -> None:
    """Small Arrow batches: read a few at a time, decoded together, answered each in its own batch."""
    from spark_plugin.functions import _merged, _split

    group = _group(registry, "clicks")
    serialize = ConfluentSerializer(registry, group, _avro(CLICK_V1)).serialize
    records = [{"id": i, "page": f"/{i}", "count": i % 100} for i in range(3000)]
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "64")
    try:
        decoded = _decoded(_binary(spark, [serialize(r) for r in records]), spark_server, group,
                           namespace=registry.namespace)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert decoded == records
    assert [[len(b) for b in group] for group in _merged(iter([[0] * 20000, [0] * 20000, [0] * 5]), len)] == [
        [20000, 20000], [5]]
    import pyarrow as pa
    assert [s.to_pylist() for s in _split(pa.array([1, 2, 3, 4]), [1, 0, 3])] == [[1], [], [2, 3, 4]]
