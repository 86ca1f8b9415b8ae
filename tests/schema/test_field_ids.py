"""Field ids of table schemas, column defaults, and matching a chunk's columns to the reader's by id."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from catalog_api.schema import UnsupportedType, to_schema, to_struct
from catalog_api.schema.defaults import default_value
from catalog_api.schema.fieldids import FIELD_ID, LAST_FIELD_ID, assign_field_ids, carry_field_ids
from catalog_api.schema.resolution import (
    PARQUET_FIELD_ID,
    exact_avro_reader,
    file_fields,
    plan,
    select_columns,
)
from catalog_api.schema.spark import Decimal as DecimalType
from catalog_api.schema.spark import Simple
from registry.formats import get_format
from tests.support.table_changes import apply_column_changes


def col(name: str, type_: Any, nullable: bool = True, **metadata: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": metadata}


def struct(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


def ids(schema: dict[str, Any]) -> list[Any]:
    return [f["metadata"].get(FIELD_ID) for f in schema["fields"]]


BASE = struct(col("id", "long", False), col("a", "integer"), col("s", struct(col("x", "integer"), col("y", "string"))))


def test_the_first_column_change_gives_ids_in_schema_order_and_renames_keep_them() -> None:
    changed = apply_column_changes(BASE, [{"op": "renameColumn", "path": ["a"], "newName": "b"}])
    assert ids(changed) == [1, 2, 3]
    assert [f["metadata"][FIELD_ID] for f in changed["fields"][2]["type"]["fields"]] == [4, 5]
    assert changed["fields"][1]["metadata"]["aliases"] == ["a"]
    assert apply_column_changes(BASE, [{"op": "setProperty", "key": "k", "value": "v"}]) == BASE, "no column change"


def test_added_columns_get_the_highest_id_ever_used_plus_one() -> None:
    schema = apply_column_changes(BASE, [{"op": "addColumn", "path": ["c"], "type": "string"}])
    assert ids(schema)[-1] == 6
    schema = apply_column_changes(schema, [{"op": "dropColumn", "path": ["c"]}])
    assert schema["fields"][0]["metadata"][LAST_FIELD_ID] == 6, "the highest id outlives its column"
    schema = apply_column_changes(schema, [{"op": "addColumn", "path": ["c"], "type": "string"}])
    assert ids(schema)[-1] == 7, "a column added again under a dropped one's name is a new column"
    assert LAST_FIELD_ID not in schema["fields"][0]["metadata"]


def test_ids_round_trip_through_every_format_and_sit_on_avro_fields() -> None:
    schema = apply_column_changes(BASE, [{"op": "addColumn", "path": ["s", "z"], "type": "long"}])
    for fmt, registry_name in (("avro", "Avro"), ("protobuf", "Protobuf"), ("json", "Json")):
        type_name, data = to_schema(schema, fmt, "Row", "ns")
        if fmt == "avro":
            assert [f["field-id"] for f in json.loads(data)["fields"]] == [1, 2, 3]
        registered = get_format(registry_name).parse(data, type_name).data
        assert to_struct(fmt, registered, type_name) == schema, fmt


def test_repeated_ids_are_made_unique_and_carried_by_path() -> None:
    repeated = struct(col("a", "long", True, **{FIELD_ID: 1}), col("b", "long", True, **{FIELD_ID: 1}))
    assert ids(assign_field_ids(repeated)) == [1, 2]
    current = apply_column_changes(BASE, [{"op": "dropColumn", "path": ["a"]}])
    wanted = struct(col("s", struct(col("x", "integer"))), col("id", "long", False), col("a", "integer"))
    carried = carry_field_ids(current, wanted)
    assert ids(carried) == [3, 1, 6], "a dropped column's name coming back is a new column"


@pytest.mark.parametrize(
    ("sql", "dtype", "value"),
    [
        ("42", Simple("integer"), 42),
        ("-7L", Simple("long"), -7),
        ("1.5D", Simple("double"), 1.5),
        ("CAST('1.5' AS FLOAT)", Simple("float"), 1.5),
        ("'it''s'", Simple("string"), "it's"),
        ("DATE '2026-01-31'", Simple("date"), dt.date(2026, 1, 31)),
        ("X'CAFE'", Simple("binary"), b"\xca\xfe"),
        ("1.50BD", DecimalType(5, 2), Decimal("1.50")),
        ("true", Simple("boolean"), True),
        ("NULL", Simple("integer"), None),
    ],
)
def test_spark_literals_are_default_values(sql: str, dtype: Any, value: Any) -> None:
    assert default_value(sql, dtype, "c") == value


def test_defaults_that_are_no_literal_are_refused_naming_the_column() -> None:
    schema = struct(col("id", "long"), col("d", "date", CURRENT_DEFAULT="current_date()"))
    with pytest.raises(UnsupportedType, match=r"column d: DEFAULT current_date\(\) is not a constant literal"):
        to_schema(schema, "avro", "Row")
    with pytest.raises(UnsupportedType, match="column n: DEFAULT 'x' is not a constant literal of type integer"):
        to_schema(struct(col("n", "integer", EXISTS_DEFAULT="'x'")), "avro", "Row")


def test_a_default_becomes_the_avro_default_and_a_changes_metadata() -> None:
    schema = apply_column_changes(BASE, [{"op": "addColumn", "path": ["n"], "type": "integer",
                                          "default": {"current": "40 + 2", "exists": "42"}}])
    metadata = schema["fields"][-1]["metadata"]
    assert (metadata["CURRENT_DEFAULT"], metadata["EXISTS_DEFAULT"]) == ("40 + 2", "42")
    with pytest.raises(UnsupportedType, match="column n"):
        to_schema(schema, "avro", "Row")
    schema = apply_column_changes(schema, [{"op": "updateColumnDefault", "path": ["n"], "default": "7"}])
    _, data = to_schema(schema, "avro", "Row")
    field = json.loads(data)["fields"][-1]
    assert (field["type"], field["default"]) == (["int", "null"], 42), "the value's branch first"
    schema = apply_column_changes(schema, [{"op": "updateColumnDefault", "path": ["n"], "default": ""}])
    assert "CURRENT_DEFAULT" not in schema["fields"][-1]["metadata"]
    assert schema["fields"][-1]["metadata"]["EXISTS_DEFAULT"] == "42", "older rows keep reading it"


# -- matching a chunk's columns ---------------------------------------------------------------------


def _with_id(field: pa.Field, fid: int) -> pa.Field:
    return field.with_metadata({PARQUET_FIELD_ID: str(fid).encode()})


def test_parquet_ids_decide_over_names() -> None:
    reader = apply_column_changes(BASE, [
        {"op": "renameColumn", "path": ["a"], "newName": "b"},
        {"op": "dropColumn", "path": ["id"]},
        {"op": "addColumn", "path": ["id"], "type": "long"},
    ])
    file = pa.schema([_with_id(pa.field("id", pa.int64()), 1), _with_id(pa.field("a", pa.int32()), 2)])
    columns = plan(reader, file_fields(file, None))
    assert {k: v.name for k, v in columns.items()} == {"b": "a"}, "id 1 was dropped: the new id column is missing"


def test_a_version_without_ids_maps_by_its_positional_ids_nested_too() -> None:
    writer = BASE
    reader = apply_column_changes(BASE, [
        {"op": "renameColumn", "path": ["s", "x"], "newName": "xx"},
        {"op": "renameColumn", "path": ["a"], "newName": "b"},
    ])
    table = pa.table({"id": [1], "a": [10], "s": [{"x": 5, "y": "t"}]})
    columns = plan(reader, file_fields(table.schema, writer))
    assert select_columns(table, columns).to_pylist() == [{"id": 1, "b": 10, "s": {"xx": 5, "y": "t"}}]


def test_events_of_a_dropped_and_added_again_column_resolve_by_id() -> None:
    _, v1 = to_schema(BASE, "avro", "Row")
    reader = apply_column_changes(BASE, [{"op": "dropColumn", "path": ["a"]}])
    reader = apply_column_changes(reader, [{"op": "addColumn", "path": ["a"], "type": "integer"}])
    _, v2 = to_schema(reader, "avro", "Row")
    exact = exact_avro_reader(json.loads(v2), reader, BASE, json.loads(v1))
    assert exact is not None
    schema, names = exact
    assert [f.get("aliases") for f in schema["fields"]] == [["id"], ["s"], []]
    assert sorted(names.values()) == ["a", "id", "s"]
    assert exact_avro_reader(json.loads(v1), BASE, BASE, json.loads(v1)) is None, "names and ids agree"
