"""The columnar Avro decoder against fastavro (the oracle), record for record; no SparkSession needed."""

from __future__ import annotations

import json
import random
from io import BytesIO
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql.types import StructType
from pyspark_streamcat.arrow import spark_arrow_schema

from catalog_api.schema import to_struct
from spark_plugin.avro_columns import columnar_decoder, pad

PREFIX = b"\x00\x00\x00\x00\x01"


def _record(fields: list[dict[str, Any]], name: str = "R") -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": "t", "fields": fields}


def _arrow_type(schema: dict[str, Any]) -> pa.StructType:
    struct = StructType.fromJson(to_struct("avro", json.dumps(schema).encode(), ""))
    return pa.struct(list(spark_arrow_schema(struct)))


def _encode(schema: dict[str, Any], records: list[dict[str, Any]]) -> list[bytes]:
    parsed = fastavro.parse_schema(schema)
    out = []
    for r in records:
        buffer = BytesIO()
        fastavro.schemaless_writer(buffer, parsed, r)
        out.append(PREFIX + buffer.getvalue())
    return out


def _decode(writer: dict[str, Any], reader: dict[str, Any] | None,
            payloads: list[bytes]) -> tuple[pa.Array | None, list[bool]]:
    decoder = columnar_decoder(writer, reader, _arrow_type(reader or writer))
    assert decoder is not None
    array = pa.array(payloads, pa.binary())
    offsets = np.frombuffer(array.buffers()[1], np.int32, len(array) + 1).astype(np.int64)
    data = pad(np.frombuffer(array.buffers()[2], np.uint8))
    decoded, bad = decoder.decode(data, offsets[:-1] + len(PREFIX), offsets[1:])
    return decoded, bad.tolist()


def _oracle(writer: dict[str, Any], reader: dict[str, Any] | None, payloads: list[bytes]) -> pa.Array:
    records = [fastavro.schemaless_reader(BytesIO(p[len(PREFIX):]), writer, reader) for p in payloads]
    return pa.array(records, _arrow_type(reader or writer))


WIDE = _record([
    {"name": "i", "type": "int"},
    {"name": "l", "type": "long"},
    {"name": "f", "type": "float"},
    {"name": "d", "type": "double"},
    {"name": "b", "type": "boolean"},
    {"name": "s", "type": "string"},
    {"name": "raw", "type": "bytes"},
    {"name": "opt", "type": ["null", "string"], "default": None},
    {"name": "opt_last", "type": ["long", "null"]},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
    {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "inner", "type": ["null", _record([{"name": "x", "type": "long"},
                                                {"name": "y", "type": ["null", "Kind"]}], "Inner")]},
    {"name": "again", "type": "Inner"},
])


def _wide(rng: random.Random) -> dict[str, Any]:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.3 else value

    big = rng.choice([0, 1, -1, 63, 64, -65, 2**31 - 1, -(2**31), 2**62, -(2**63)])
    return {
        "i": rng.randint(-(2**31), 2**31 - 1), "l": big, "f": float(np.float32(rng.uniform(-1e6, 1e6))),
        "d": rng.uniform(-1e300, 1e300), "b": rng.random() < 0.5,
        "s": "".join(rng.choice("aé€😀z") for _ in range(rng.randint(0, 40))),
        "raw": bytes(rng.randrange(256) for _ in range(rng.randint(0, 20))), "opt": maybe("x" * rng.randint(0, 3)),
        "opt_last": maybe(big), "kind": rng.choice("ABC"), "hash": bytes(rng.randrange(256) for _ in range(4)),
        "at": rng.randint(0, 2**52), "at_ms": rng.randint(0, 2**40), "local": rng.randint(-(2**50), 2**50),
        "day": rng.randint(-20000, 20000),
        "inner": maybe({"x": big, "y": maybe(rng.choice("AC"))}), "again": {"x": 1, "y": None},
    }


def test_every_supported_type_decodes_as_fastavro_does() -> None:
    rng = random.Random(7)
    payloads = _encode(WIDE, [_wide(rng) for _ in range(3000)])
    decoded, bad = _decode(WIDE, None, payloads)
    assert not any(bad)
    assert decoded is not None
    assert decoded.equals(_oracle(WIDE, None, payloads))


def test_resolution_as_fastavro_resolves() -> None:
    writer = _record([
        {"name": "id", "type": "int"},
        {"name": "gone", "type": ["null", _record([{"name": "q", "type": "string"}], "Gone")]},
        {"name": "user", "type": "string"},
        {"name": "ratio", "type": "float"},
        {"name": "blob", "type": "string"},
        {"name": "plain", "type": "long"},
    ])
    reader = _record([
        {"name": "plain", "type": ["null", "long"], "default": None},  # now nullable, and moved first
        {"name": "id", "type": "long"},  # int -> long
        {"name": "login", "type": "string", "aliases": ["user"]},  # renamed
        {"name": "ratio", "type": "double"},  # float -> double
        {"name": "blob", "type": "bytes"},  # string -> bytes
        {"name": "added", "type": "string", "default": "d"},
        {"name": "maybe", "type": ["null", "int"], "default": None},
        {"name": "flag", "type": "boolean", "default": True},
    ])
    rng = random.Random(3)
    records = [{"id": rng.randint(-9, 9), "gone": None if i % 2 else {"q": "zz"}, "user": f"u{i}",
                "ratio": 0.5 * i, "blob": "é" * (i % 3), "plain": i * 10**12} for i in range(500)]
    payloads = _encode(writer, records)
    decoded, bad = _decode(writer, reader, payloads)
    assert not any(bad)
    assert decoded is not None
    assert decoded.equals(_oracle(writer, reader, payloads))


@pytest.mark.parametrize("field_type", [
    {"type": "array", "items": "long"},
    {"type": "map", "values": "long"},
    {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2},
    ["null", "long", "string"],
])
def test_what_it_does_not_handle_is_left_to_the_record_path(field_type: Any) -> None:
    schema = _record([{"name": "x", "type": field_type}])
    assert columnar_decoder(schema, None, _arrow_type(schema)) is None


def test_a_nullable_writer_field_read_as_required_is_left_to_the_record_path() -> None:
    writer = _record([{"name": "x", "type": ["null", "long"]}])
    reader = _record([{"name": "x", "type": "long"}])
    assert columnar_decoder(writer, reader, _arrow_type(reader)) is None


def test_bad_records_are_reported_not_guessed() -> None:
    schema = _record([{"name": "id", "type": "long"}, {"name": "s", "type": "string"}])
    good = _encode(schema, [{"id": i, "s": "abc" * i} for i in range(4)])
    truncated = good[2][:-2]
    decoded, bad = _decode(schema, None, [good[0], good[1], truncated, good[3]])
    assert bad == [False, False, True, False]
    assert decoded is not None
    assert decoded[3].as_py() == {"id": 3, "s": "abcabcabc"}
    # an impossible length (negative) in any record: the batch goes to the record path
    negative = PREFIX + b"\x02\x01"
    decoded, bad = _decode(schema, None, [good[0], negative])
    assert decoded is None
    assert bad == [True, True]
    # invalid UTF-8 in a string, as fastavro's strict decoding refuses
    decoded, bad = _decode(schema, None, [PREFIX + b"\x02\x02\xff\xfe"])
    assert decoded is None


NULLABLE = _record([
    {"name": "i", "type": ["null", "int"]},
    {"name": "l", "type": ["long", "null"]},
    {"name": "f", "type": ["null", "float"]},
    {"name": "d", "type": ["null", "double"]},
    {"name": "b", "type": ["null", "boolean"]},
    {"name": "s", "type": ["null", "string"]},
    {"name": "raw", "type": ["null", "bytes"]},
    {"name": "kind", "type": ["null", {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}]},
    {"name": "at", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
    {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
])


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
def test_nullable_fields_of_every_kind_as_fastavro_reads_them(share: float) -> None:
    """Values spread over their rows with a validity bitmap (strings, numbers) or taken (the rest)."""
    rng = random.Random(11)

    def maybe(value: Any) -> Any:
        return None if rng.random() < share else value

    records = [{"i": maybe(rng.randint(-(2**31), 2**31 - 1)), "l": maybe(rng.randint(-(2**62), 2**62)),
                "f": maybe(float(np.float32(rng.uniform(-1e3, 1e3)))), "d": maybe(rng.uniform(-1e9, 1e9)),
                "b": maybe(rng.random() < 0.5), "s": maybe("é" * rng.randint(0, 5) + "x" * rng.randint(0, 30)),
                "raw": maybe(bytes(rng.randrange(256) for _ in range(rng.randint(0, 9)))),
                "kind": maybe(rng.choice("AB")), "at": maybe(rng.randint(0, 2**52)), "day": maybe(rng.randint(0, 9999))}
               for _ in range(700)]
    payloads = _encode(NULLABLE, records)
    decoded, bad = _decode(NULLABLE, None, payloads)
    assert not any(bad)
    assert decoded is not None
    assert decoded.equals(_oracle(NULLABLE, None, payloads))


def test_strings_of_records_that_overrun_their_end_are_gathered_apart() -> None:
    """A string that runs into the next record's bytes: the others still decode, that record is reported."""
    schema = _record([{"name": "s", "type": "string"}, {"name": "n", "type": "long"}])
    good = _encode(schema, [{"s": "ascii" * i, "n": i} for i in range(6)])
    long_claim = PREFIX + b"\x14abc"  # says ten characters, holds three: reads into the next record
    decoded, bad = _decode(schema, None, [good[1], long_claim, *good[2:]])
    assert bad == [False, True, False, False, False, False]
    assert decoded is not None
    assert [decoded[k].as_py() for k in (0, 2, 5)] == [{"s": "ascii", "n": 1}, {"s": "ascii" * 2, "n": 2},
                                                      {"s": "ascii" * 5, "n": 5}]
