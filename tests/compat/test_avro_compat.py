"""Avro compatibility: the resolution rules, each reason's path and message, and properties over generated schemas."""

from __future__ import annotations

import io
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any

import avro.errors
import fastavro
import pytest
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.formats import Incompatibility, get_format
from registry.formats.avro_compat import check_avro

Json = Any

# --------------------------------------------------------------------------------------------------------------------
# Helpers


def parse(schema: Json) -> Any:
    """The avro package's schema object, parsed as the registry parses it."""
    with warnings.catch_warnings():
        # The avro package warns about logical types it does not know (local-timestamp-*) or finds invalid;
        # ignoring them is the behaviour under test.
        warnings.simplefilter("ignore", avro.errors.IgnoredLogicalType)
        return get_format("Avro").parse(json.dumps(schema).encode(), "").parsed


def check(reader: Json, writer: Json) -> list[Incompatibility]:
    return check_avro(parse(reader), parse(writer))


def record(name: str, *fields: Json, namespace: str | None = "a", **props: Any) -> Json:
    schema: dict[str, Any] = {"type": "record", "name": name, "fields": list(fields), **props}
    if namespace is not None:
        schema["namespace"] = namespace
    return schema


def field(name: str, type_: Json, **props: Any) -> Json:
    return {"name": name, "type": type_, **props}


def root(*fields: Json) -> Json:
    """A top-level record ``a.Root`` holding ``fields``."""
    return record("Root", *fields)


def enum(name: str, *symbols: str, **props: Any) -> Json:
    return {"type": "enum", "name": name, "symbols": list(symbols), **props}


def fixed(name: str, size: int, **props: Any) -> Json:
    return {"type": "fixed", "name": name, "size": size, **props}


def decimal(precision: int, scale: int) -> Json:
    return {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}


def logical(type_: str, name: str) -> Json:
    return {"type": type_, "logicalType": name}


def node(value_type: str, *extra: Json) -> Json:
    """A linked-list node: a record that refers to itself."""
    return record("Node", field("value", value_type), field("next", ["null", "Node"], default=None), *extra)


def missing(name: str) -> str:
    return f"field {name} has no default in the reader and is missing in the writer"


def changed(old: str, new: str) -> str:
    return f"type changed from {old} to {new}"


ADDRESS = record("Address", field("zip", "string"), namespace=None)
ADDRESS_INT_ZIP = record("Address", field("zip", "int"), namespace=None)
ADDRESS_WITH_CITY = record("Address", field("zip", "string"), field("city", "string"), namespace=None)

# --------------------------------------------------------------------------------------------------------------------
# The rules, one case each: backward is check(reader=new, writer=old), forward is check(reader=old, writer=new).


@dataclass(frozen=True)
class Case:
    rule: str
    old: Json
    new: Json
    backward: tuple[tuple[str, str], ...] = ()
    forward: tuple[tuple[str, str], ...] = ()


def value_case(rule: str, old: Json, new: Json, backward: str | None, forward: str | None) -> Case:
    """A case on one field ``v`` of ``a.Root``; the expectations are the messages reported at ``$.v``."""
    return Case(
        rule,
        root(field("v", old)),
        root(field("v", new)),
        (("$.v", backward),) if backward else (),
        (("$.v", forward),) if forward else (),
    )


CASES = [
    # Primitive types and the promotions the specification allows (int -> long -> float -> double).
    value_case("same_primitive_is_compatible", "string", "string", None, None),
    value_case("promote_int_to_long", "int", "long", None, changed("long", "int")),
    value_case("promote_int_to_float", "int", "float", None, changed("float", "int")),
    value_case("promote_int_to_double", "int", "double", None, changed("double", "int")),
    value_case("promote_long_to_float", "long", "float", None, changed("float", "long")),
    value_case("promote_long_to_double", "long", "double", None, changed("double", "long")),
    value_case("promote_float_to_double", "float", "double", None, changed("double", "float")),
    value_case("string_and_bytes_read_each_other", "string", "bytes", None, None),
    value_case("int_to_string_is_not_a_promotion", "int", "string", changed("int", "string"), changed("string", "int")),
    value_case(
        "boolean_to_int_is_not_a_promotion", "boolean", "int", changed("boolean", "int"), changed("int", "boolean")
    ),
    value_case("double_to_float_narrows", "double", "float", changed("double", "float"), None),
    Case("top_level_long_to_int_narrows", "long", "int", (("$", changed("long", "int")),), ()),
    # Record fields: added or removed, with or without defaults, renamed with aliases.
    Case(
        "field_added_with_default",
        root(field("id", "long")),
        root(field("id", "long"), field("zip", "string", default="")),
    ),
    Case(
        "field_added_without_default",
        root(field("id", "long")),
        root(field("id", "long"), field("zip", "string")),
        backward=(("$.zip", missing("zip")),),
    ),
    Case(
        "field_removed_that_had_a_default",
        root(field("id", "long"), field("zip", "string", default="")),
        root(field("id", "long")),
    ),
    Case(
        "field_removed_without_default",
        root(field("id", "long"), field("zip", "string")),
        root(field("id", "long")),
        forward=(("$.zip", missing("zip")),),
    ),
    Case(
        "field_renamed_with_alias",
        root(field("zip", "string")),
        root(field("postcode", "string", aliases=["zip"])),
        forward=(("$.zip", missing("zip")),),
    ),
    Case(
        "field_renamed_without_alias",
        root(field("zip", "string")),
        root(field("postcode", "string")),
        backward=(("$.postcode", missing("postcode")),),
        forward=(("$.zip", missing("zip")),),
    ),
    Case(
        "fields_reordered",
        root(field("a", "int"), field("b", "string")),
        root(field("b", "string"), field("a", "int")),
    ),
    Case(
        "nested_record_field_type_changed",
        root(field("address", ADDRESS)),
        root(field("address", ADDRESS_INT_ZIP)),
        backward=(("$.address.zip", changed("string", "int")),),
        forward=(("$.address.zip", changed("int", "string")),),
    ),
    Case(
        "nested_record_field_added_without_default",
        root(field("address", ADDRESS)),
        root(field("address", ADDRESS_WITH_CITY)),
        backward=(("$.address.city", missing("city")),),
    ),
    Case(
        "several_reasons_each_at_its_own_path",
        root(field("id", "long"), field("address", ADDRESS)),
        root(field("id", "int"), field("address", ADDRESS_WITH_CITY), field("tag", "string")),
        backward=(
            ("$.address.city", missing("city")),
            ("$.id", changed("long", "int")),
            ("$.tag", missing("tag")),
        ),
    ),
    # Enums: symbols added and removed, the enum default, renames.
    Case(
        "enum_symbol_added",
        root(field("color", enum("Color", "RED", "GREEN"))),
        root(field("color", enum("Color", "RED", "GREEN", "PURPLE"))),
        forward=(("$.color", "enum Color lacks symbols writer writes: PURPLE"),),
    ),
    Case(
        "enum_symbols_removed",
        root(field("color", enum("Color", "RED", "PURPLE", "GREEN", "BLUE"))),
        root(field("color", enum("Color", "RED"))),
        backward=(("$.color", "enum Color lacks symbols writer writes: PURPLE, GREEN, BLUE"),),
    ),
    Case(
        "enum_default_covers_unknown_symbols",
        root(field("color", enum("Color", "RED", "GREEN", default="RED"))),
        root(field("color", enum("Color", "RED", "GREEN", "PURPLE", default="RED"))),
    ),
    Case(
        "enum_default_does_not_stand_in_for_a_missing_field",
        root(field("id", "long")),
        root(field("id", "long"), field("color", enum("Color", "RED", default="RED"))),
        backward=(("$.color", missing("color")),),
    ),
    Case(
        "enum_renamed",
        root(field("color", enum("Color", "RED"))),
        root(field("color", enum("Colour", "RED"))),
        backward=(("$.color", "name mismatch: reader a.Colour vs writer a.Color"),),
        forward=(("$.color", "name mismatch: reader a.Color vs writer a.Colour"),),
    ),
    Case(
        "enum_renamed_with_alias",
        root(field("color", enum("Color", "RED"))),
        root(field("color", enum("Colour", "RED", aliases=["Color"]))),
        forward=(("$.color", "name mismatch: reader a.Color vs writer a.Colour"),),
    ),
    # Unions: branches added and removed, unions against single types.
    value_case("union_branch_added", ["null", "string"], ["null", "string", "int"], None, "union lacks branch int"),
    value_case("union_branch_removed", ["null", "string", "long"], ["null", "string"], "union lacks branch long", None),
    value_case("union_branch_promoted", ["null", "int"], ["null", "long"], None, "union lacks branch long"),
    Case(
        "reader_union_prefers_the_writers_own_type_to_a_promotion",
        root(field("v", ["null", decimal(4, 2)])),
        root(field("v", ["null", logical("string", "uuid"), decimal(4, 2)])),
        forward=(("$.v<bytes>", "logical type changed from uuid to decimal"),),
    ),
    Case(
        "union_branches_reordered",
        root(field("v", ["null", "string", "int"])),
        root(field("v", ["int", "null", "string"])),
    ),
    Case(
        "reader_union_reads_its_writer_branch",
        root(field("v", "string")),
        root(field("v", ["null", "string"])),
        forward=(("$.v<null>", changed("null", "string")),),
    ),
    Case(
        "reader_union_reads_a_promoted_branch",
        root(field("v", "int")),
        root(field("v", ["null", "double"])),
        forward=(("$.v<double>", changed("double", "int")), ("$.v<null>", changed("null", "int"))),
    ),
    Case(
        "writer_union_needs_every_branch_readable",
        root(field("v", "int")),
        root(field("v", ["null", "string"])),
        backward=(("$.v", "union lacks branch int"),),
        forward=(("$.v<null>", changed("null", "int")), ("$.v<string>", changed("string", "int"))),
    ),
    Case(
        "union_record_branch_changed_inside",
        root(field("address", ["null", ADDRESS])),
        root(field("address", ["null", ADDRESS_WITH_CITY])),
        backward=(("$.address<a.Address>.city", missing("city")),),
    ),
    Case(
        "record_made_optional_with_changed_field",
        root(field("address", ADDRESS)),
        root(field("address", ["null", ADDRESS_INT_ZIP], default=None)),
        backward=(("$.address<a.Address>.zip", changed("string", "int")),),
        forward=(
            ("$.address<a.Address>.zip", changed("int", "string")),
            ("$.address<null>", changed("null", "record a.Address")),
        ),
    ),
    Case(
        "top_level_union_branch_removed",
        ["int", "string"],
        ["int"],
        backward=(("$", "union lacks branch string"),),
    ),
    # Fixed.
    Case(
        "fixed_size_changed",
        root(field("hash", fixed("Hash", 16))),
        root(field("hash", fixed("Hash", 32))),
        backward=(("$.hash", "fixed Hash size 16 in the writer != 32 in the reader"),),
        forward=(("$.hash", "fixed Hash size 32 in the writer != 16 in the reader"),),
    ),
    Case(
        "fixed_renamed_and_resized",
        root(field("hash", fixed("Hash", 16))),
        root(field("hash", fixed("Digest", 32))),
        backward=(
            ("$.hash", "fixed Digest size 16 in the writer != 32 in the reader"),
            ("$.hash", "name mismatch: reader a.Digest vs writer a.Hash"),
        ),
        forward=(
            ("$.hash", "fixed Hash size 32 in the writer != 16 in the reader"),
            ("$.hash", "name mismatch: reader a.Hash vs writer a.Digest"),
        ),
    ),
    Case(
        "fixed_in_union_resized",
        root(field("hash", ["null", fixed("Hash", 16)])),
        root(field("hash", ["null", fixed("Hash", 32)])),
        backward=(("$.hash<a.Hash>", "fixed Hash size 16 in the writer != 32 in the reader"),),
        forward=(("$.hash<a.Hash>", "fixed Hash size 32 in the writer != 16 in the reader"),),
    ),
    # Arrays and maps.
    Case(
        "array_items_promoted",
        root(field("v", {"type": "array", "items": "int"})),
        root(field("v", {"type": "array", "items": "long"})),
        forward=(("$.v[]", changed("long", "int")),),
    ),
    Case(
        "array_items_narrowed",
        root(field("v", {"type": "array", "items": "long"})),
        root(field("v", {"type": "array", "items": "int"})),
        backward=(("$.v[]", changed("long", "int")),),
    ),
    Case(
        "array_of_records_field_added",
        root(field("lines", {"type": "array", "items": record("Line", field("sku", "string"))})),
        root(field("lines", {"type": "array", "items": record("Line", field("sku", "string"), field("qty", "int"))})),
        backward=(("$.lines[].qty", missing("qty")),),
    ),
    Case(
        "map_values_promoted",
        root(field("v", {"type": "map", "values": "float"})),
        root(field("v", {"type": "map", "values": "double"})),
        forward=(("$.v{}", changed("double", "float")),),
    ),
    value_case(
        "map_to_array",
        {"type": "map", "values": "int"},
        {"type": "array", "items": "int"},
        changed("map", "array"),
        changed("array", "map"),
    ),
    Case(
        "array_of_maps_of_unions",
        root(field("v", {"type": "array", "items": {"type": "map", "values": ["null", "int"]}})),
        root(field("v", {"type": "array", "items": {"type": "map", "values": ["null", "string"]}})),
        backward=(("$.v[]{}", "union lacks branch int"),),
        forward=(("$.v[]{}", "union lacks branch string"),),
    ),
    # Recursive types: a check in progress counts as compatible, so each reason is reported once.
    Case(
        "recursive_type_unchanged",
        node("int"),
        node("int"),
    ),
    Case(
        "recursive_type_promoted_and_extended",
        node("int"),
        node("long", field("label", "string", default="")),
        forward=(("$.value", changed("long", "int")),),
    ),
    Case(
        "recursive_type_through_array",
        record("Tree", field("name", "string"), field("children", {"type": "array", "items": "Tree"})),
        record(
            "Tree", field("name", "string"), field("children", {"type": "array", "items": "Tree"}), field("n", "int")
        ),
        backward=(("$.n", missing("n")),),
    ),
    Case(
        "named_type_reused_is_reported_where_used",
        root(field("home", ADDRESS), field("work", "Address")),
        root(field("home", ADDRESS_INT_ZIP), field("work", "Address")),
        backward=(("$.home.zip", changed("string", "int")), ("$.work.zip", changed("string", "int"))),
        forward=(("$.home.zip", changed("int", "string")), ("$.work.zip", changed("int", "string"))),
    ),
    # Names and namespaces: unqualified names match; aliases are qualified by the declaring type's namespace.
    Case(
        "record_namespace_changed",
        record("Order", field("id", "long"), namespace="shop.v1"),
        record("Order", field("id", "long"), namespace="shop.v2"),
    ),
    Case(
        "record_renamed",
        record("Order", field("id", "long")),
        record("Purchase", field("id", "long")),
        backward=(("$", "name mismatch: reader a.Purchase vs writer a.Order"),),
        forward=(("$", "name mismatch: reader a.Order vs writer a.Purchase"),),
    ),
    Case(
        "record_renamed_with_relative_alias",
        record("Order", field("id", "long")),
        record("Purchase", field("id", "long"), aliases=["Order"]),
        forward=(("$", "name mismatch: reader a.Order vs writer a.Purchase"),),
    ),
    Case(
        "record_renamed_with_full_alias_from_other_namespace",
        record("Order", field("id", "long"), namespace="legacy"),
        record("Purchase", field("id", "long"), aliases=["legacy.Order"]),
        forward=(("$", "name mismatch: reader legacy.Order vs writer a.Purchase"),),
    ),
    Case(
        "relative_alias_names_the_declaring_namespace",
        record("Order", field("id", "long"), namespace="legacy"),
        record("Purchase", field("id", "long"), aliases=["Order"]),
        backward=(("$", "name mismatch: reader a.Purchase vs writer legacy.Order"),),
        forward=(("$", "name mismatch: reader legacy.Order vs writer a.Purchase"),),
    ),
    Case(
        "nested_alias_is_relative_to_the_inherited_namespace",
        root(field("address", ADDRESS)),
        root(field("address", record("Location", field("zip", "string"), namespace=None, aliases=["Address"]))),
        forward=(("$.address", "name mismatch: reader a.Address vs writer a.Location"),),
    ),
    Case(
        "nested_type_moved_to_another_namespace",
        root(field("address", ADDRESS)),
        root(field("address", record("Address", field("zip", "string"), namespace="geo"))),
    ),
    # Logical types: ignored when only one side has one; a different meaning of the same bytes is reported.
    value_case("timestamp_added_to_long", "long", logical("long", "timestamp-millis"), None, None),
    value_case(
        "timestamp_millis_to_micros",
        logical("long", "timestamp-millis"),
        logical("long", "timestamp-micros"),
        "logical type changed from timestamp-millis to timestamp-micros",
        "logical type changed from timestamp-micros to timestamp-millis",
    ),
    value_case(
        "local_timestamp_millis_to_micros",
        logical("long", "local-timestamp-millis"),
        logical("long", "local-timestamp-micros"),
        "logical type changed from local-timestamp-millis to local-timestamp-micros",
        "logical type changed from local-timestamp-micros to local-timestamp-millis",
    ),
    value_case(
        "date_promoted_to_timestamp_changes_meaning",
        logical("int", "date"),
        logical("long", "timestamp-millis"),
        "logical type changed from date to timestamp-millis",
        changed("long", "int"),
    ),
    value_case("decimal_added_to_bytes", "bytes", decimal(10, 2), None, None),
    value_case(
        "decimal_scale_changed",
        decimal(10, 2),
        decimal(10, 3),
        "decimal scale changed from 2 to 3",
        "decimal scale changed from 3 to 2",
    ),
    value_case(
        "decimal_precision_widened", decimal(10, 2), decimal(12, 2), None, "decimal precision narrowed from 12 to 10"
    ),
    value_case(
        "fixed_decimal_scale_changed",
        fixed("Money", 8, logicalType="decimal", precision=12, scale=2),
        fixed("Money", 8, logicalType="decimal", precision=12, scale=4),
        "decimal scale changed from 2 to 4",
        "decimal scale changed from 4 to 2",
    ),
    value_case(
        "invalid_decimal_is_plain_bytes",
        decimal(4, 2),
        {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 5},
        None,
        None,
    ),
    value_case(
        "fixed_uuid_to_fixed_decimal",
        fixed("Id", 16, logicalType="uuid"),
        fixed("Id", 16, logicalType="decimal", precision=20, scale=0),
        "logical type changed from uuid to decimal",
        "logical type changed from decimal to uuid",
    ),
    Case(
        "protocol_error_type_resolves_as_a_record",
        {"type": "error", "name": "Failure", "fields": [field("reason", "string")]},
        record("Failure", field("reason", "string"), field("code", "int"), namespace=None),
        backward=(("$.code", missing("code")),),
    ),
    value_case("uuid_removed_from_string", logical("string", "uuid"), "string", None, None),
    value_case(
        "unknown_logical_type_is_ignored",
        logical("long", "epoch-days"),
        logical("long", "timestamp-micros"),
        None,
        None,
    ),
]


def test_the_table_covers_at_least_forty_rules() -> None:
    assert len(CASES) >= 40
    assert len({case.rule for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.rule for case in CASES])
def test_rule(case: Case) -> None:
    backward = check(reader=case.new, writer=case.old)
    forward = check(reader=case.old, writer=case.new)
    assert [(i.path, i.message) for i in backward] == list(case.backward)
    assert [(i.path, i.message) for i in forward] == list(case.forward)


def test_the_format_checks_with_these_rules() -> None:
    avro_format = get_format("Avro")
    old = avro_format.parse(json.dumps(root(field("id", "long"))).encode(), "a.Root")
    new = avro_format.parse(json.dumps(root(field("id", "long"), field("zip", "string"))).encode(), "a.Root")
    assert avro_format.check(reader=new, writer=old) == [Incompatibility("$.zip", missing("zip"))]
    assert avro_format.check(reader=old, writer=new) == []


# --------------------------------------------------------------------------------------------------------------------
# Properties over generated schemas and their evolutions.

PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
PROMOTIONS = {"int": ["long", "float", "double"], "long": ["float", "double"], "float": ["double"], "string": ["bytes"]}
PROMOTIONS["bytes"] = ["string"]
TIME_TYPES = [
    logical("int", "date"),
    logical("int", "time-millis"),
    logical("long", "time-micros"),
    logical("long", "timestamp-millis"),
    logical("long", "timestamp-micros"),
    logical("long", "local-timestamp-millis"),
    logical("string", "uuid"),
]
SYMBOLS = ["A", "B", "C", "D"]
NAMESPACES = [None, "x", "y"]
NO_DEFAULT = object()
PATH = r"\$(\.\w+|\[\]|\{\}|<[\w.]+>)*"


@st.composite
def decimals(draw: st.DrawFn) -> Json:
    precision = draw(st.integers(1, 12))
    return decimal(precision, draw(st.integers(0, precision)))


def logical_types() -> st.SearchStrategy[Json]:
    return st.one_of(st.sampled_from(TIME_TYPES), decimals())


def default_of(schema: Json) -> Any:
    """A valid field default for ``schema``, or NO_DEFAULT where writing one is not worth it."""
    if isinstance(schema, list):
        return default_of(schema[0])
    kind = schema if isinstance(schema, str) else schema["type"]
    simple = {
        "null": None,
        "boolean": False,
        "int": 0,
        "long": 0,
        "float": 0.0,
        "double": 0.0,
        "bytes": "",
        "string": "",
    }
    if kind in simple:
        return simple[kind]
    if kind == "enum":
        return schema["symbols"][0]
    if kind == "fixed":
        return "\u0000" * schema["size"]
    return {"array": [], "map": {}}.get(kind, NO_DEFAULT)


class Evolver:
    """Draws a schema and an evolved copy of it together; about one node in five changes."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.serial = 0

    def changes(self) -> bool:
        return self.draw(st.integers(0, 4)) == 0

    def pair(self, depth: int, spaces: tuple[str | None, str | None], union_ok: bool = True) -> tuple[Json, Json]:
        kinds = ["primitive", "logical", "enum", "fixed"]
        if depth > 0:
            kinds += ["record", "array", "map"] + (["union"] if union_ok else [])
        kind = self.draw(st.sampled_from(kinds))
        if kind == "primitive":
            old = self.draw(st.sampled_from(PRIMITIVES))
            choices = PRIMITIVES + 3 * PROMOTIONS.get(old, [])
            return old, self.draw(st.sampled_from(choices)) if self.changes() else old
        if kind == "logical":
            old = self.draw(logical_types())
            return old, self.draw(st.one_of(logical_types(), st.just(old["type"]))) if self.changes() else old
        if kind == "array":
            old_items, new_items = self.pair(depth - 1, spaces)
            return {"type": "array", "items": old_items}, {"type": "array", "items": new_items}
        if kind == "map":
            old_values, new_values = self.pair(depth - 1, spaces)
            return {"type": "map", "values": old_values}, {"type": "map", "values": new_values}
        if kind == "union":
            return self.union(depth, spaces)
        return self.named(kind, depth, spaces)

    def named(self, kind: str, depth: int, spaces: tuple[str | None, str | None]) -> tuple[Json, Json]:
        self.serial += 1
        name = f"{kind[0].upper()}{self.serial}"
        namespace = self.draw(st.sampled_from(NAMESPACES))
        old: dict[str, Any] = {"type": kind, "name": name}
        if namespace:
            old["namespace"] = namespace
        new = dict(old)
        old_space, new_space = namespace or spaces[0], namespace or spaces[1]
        if self.changes():
            if self.draw(st.booleans()):
                new_space = self.draw(st.sampled_from(["x", "y"]))
                new["namespace"] = new_space
            else:
                new["name"] = name + "r"
                if self.draw(st.booleans()):
                    new["aliases"] = [f"{old_space}.{name}" if old_space else name]
        if kind == "enum":
            old["symbols"] = self.draw(st.lists(st.sampled_from(SYMBOLS), min_size=1, unique=True))
            new["symbols"] = old["symbols"]
            # Symbols change more often than other nodes: a lost symbol only breaks a reader when it is written.
            if self.draw(st.booleans()):
                new["symbols"] = self.draw(st.lists(st.sampled_from(SYMBOLS), min_size=1, unique=True))
            for version in (old, new):
                if self.changes():
                    version["default"] = version["symbols"][0]
        elif kind == "fixed":
            old["size"] = self.draw(st.integers(4, 8))
            new["size"] = self.draw(st.integers(4, 8)) if self.changes() else old["size"]
            if self.draw(st.booleans()):
                precision = self.draw(st.integers(1, 9))
                old.update(logicalType="decimal", precision=precision, scale=self.draw(st.integers(0, precision)))
                new.update(logicalType="decimal", precision=precision, scale=old["scale"])
                if self.changes():
                    new["scale"] = self.draw(st.integers(0, precision))
        else:
            old["fields"], new["fields"] = self.fields(depth, (old_space, new_space))
        return old, new

    def fields(self, depth: int, spaces: tuple[str | None, str | None]) -> tuple[list[Json], list[Json]]:
        old_fields: list[Json] = []
        new_fields: list[Json] = []
        for i in range(self.draw(st.integers(1, 3))):
            old_type, new_type = self.pair(depth - 1, spaces)
            old_field, new_field = field(f"f{i}", old_type), field(f"f{i}", new_type)
            for version in (old_field, new_field):
                default = default_of(version["type"])
                if default is not NO_DEFAULT and self.draw(st.booleans()):
                    version["default"] = default
            presence = self.draw(st.sampled_from(["old", "new", "renamed"])) if self.changes() else "both"
            if presence == "renamed":
                new_field["name"] = f"g{i}"
                if self.draw(st.booleans()):
                    new_field["aliases"] = [f"f{i}"]
            if presence != "new":
                old_fields.append(old_field)
            if presence != "old":
                new_fields.append(new_field)
        return old_fields, new_fields

    def union(self, depth: int, spaces: tuple[str | None, str | None]) -> tuple[Json, Json]:
        def key(schema: Json) -> str:
            # Branches of a union must differ in type, or in name for named types.
            return schema if isinstance(schema, str) else schema.get("name", schema["type"])

        pairs = [("null", "null")] if self.draw(st.booleans()) else []
        pairs += [self.pair(depth - 1, spaces, union_ok=False) for _ in range(self.draw(st.integers(1, 3)))]
        old: list[Json] = []
        new: list[Json] = []
        for old_branch, new_branch in pairs:
            if key(old_branch) not in map(key, old) and key(new_branch) not in map(key, new):
                old.append(old_branch)
                new.append(new_branch)
        if len(old) > 1 and self.changes():
            dropped = self.draw(st.integers(0, len(old) - 1))
            (old if self.draw(st.booleans()) else new).pop(dropped)
        return old, new


@st.composite
def evolutions(draw: st.DrawFn) -> tuple[Json, Json]:
    """A record schema ``a.Root`` and an evolution of it (fields added, removed, retyped, renamed, ...)."""
    evolver = Evolver(draw)
    old_fields, new_fields = evolver.fields(3, ("a", "a"))
    return root(*old_fields), root(*new_fields)


def strip(schema: Json, keys: set[str]) -> Json:
    """``schema`` without the given properties anywhere in it."""
    if isinstance(schema, list):
        return [strip(item, keys) for item in schema]
    if isinstance(schema, dict):
        return {k: strip(v, keys) for k, v in schema.items() if k not in keys}
    return schema


@st.composite
def datum_for(draw: st.DrawFn, schema: Json, named: dict[str, Json]) -> Any:
    """A value of a fastavro-parsed ``schema``; union values in fastavro's (branch, value) notation."""
    if isinstance(schema, str) and schema in named:
        return draw(datum_for(named[schema], named))
    if isinstance(schema, list):
        branch = draw(st.sampled_from(schema))
        resolved = named.get(branch, branch) if isinstance(branch, str) else branch
        label = resolved["name"] if isinstance(resolved, dict) and "name" in resolved else resolved
        label = label if isinstance(label, str) else resolved["type"]
        return (label, draw(datum_for(branch, named)))
    kind = schema if isinstance(schema, str) else schema["type"]
    logical_type = None if isinstance(schema, str) else schema.get("logicalType")
    # Values a writer can hold under its logical type (fastavro converts them on reading).
    ranges = {
        "date": (-700_000, 2_900_000),
        "time-millis": (0, 86_399_999),
        "time-micros": (0, 86_399_999_999),
        "timestamp-millis": (-(2**40), 2**40),
        "timestamp-micros": (-(2**40), 2**40),
        "local-timestamp-millis": (-(2**40), 2**40),
    }
    if logical_type in ranges:
        low, high = ranges[logical_type]
        return draw(st.integers(low, high))
    if logical_type == "uuid" and kind == "string":
        return str(draw(st.uuids()))
    strategies: dict[str, st.SearchStrategy[Any]] = {
        "null": st.none(),
        "boolean": st.booleans(),
        "int": st.integers(-(2**31), 2**31 - 1),
        "long": st.integers(-(2**63), 2**63 - 1),
        "float": st.floats(width=32, allow_nan=False),
        "double": st.floats(allow_nan=False),
        # The specification promotes bytes to string, which presumes the bytes are UTF-8.
        "bytes": st.text(max_size=6).map(str.encode),
        "string": st.text(max_size=6),
    }
    if kind in strategies:
        return draw(strategies[kind])
    if kind == "fixed":
        return draw(st.binary(min_size=schema["size"], max_size=schema["size"]))
    if kind == "enum":
        return draw(st.sampled_from(schema["symbols"]))
    if kind == "array":
        return draw(st.lists(datum_for(schema["items"], named), max_size=2))
    if kind == "map":
        return draw(st.dictionaries(st.text(max_size=3), datum_for(schema["values"], named), max_size=2))
    return {f["name"]: draw(datum_for(f["type"], named)) for f in schema["fields"]}


PROPERTY_SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@settings(PROPERTY_SETTINGS, max_examples=80)
@given(evolutions())
def test_every_schema_is_compatible_with_itself(pair: tuple[Json, Json]) -> None:
    for schema in pair:
        one, other = parse(schema), parse(schema)
        assert check_avro(one, other) == []
        assert check_avro(other, one) == []


@PROPERTY_SETTINGS
@given(evolutions(), st.data())
def test_compatible_means_a_reader_resolves_the_writers_data(pair: tuple[Json, Json], data: st.DataObject) -> None:
    """Soundness against fastavro's own schema resolution, in both directions of every evolution."""
    old, new = pair
    for reader, writer in ((new, old), (old, new)):
        reasons = check(reader, writer)
        for reason in reasons:
            assert re.fullmatch(PATH, reason.path), reason
        if reasons:
            continue
        parsed_writer: Any = fastavro.parse_schema(writer)
        datum = data.draw(datum_for(parsed_writer, parsed_writer["__named_schemas"]))
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed_writer, datum)
        buffer.seek(0)
        fastavro.schemaless_reader(buffer, parsed_writer, fastavro.parse_schema(reader))
        assert buffer.read() == b"", "the reader left bytes of the datum unread"


@settings(PROPERTY_SETTINGS, max_examples=80)
@given(evolutions())
def test_verdicts_match_the_avro_package_where_it_follows_the_spec(pair: tuple[Json, Json]) -> None:
    """Without aliases and logical types (where the package strays), the verdict is the package's own."""
    old, new = (strip(schema, {"aliases", "logicalType"}) for schema in pair)
    for reader, writer in ((new, old), (old, new)):
        package = ReaderWriterCompatibilityChecker().get_compatibility(parse(reader), parse(writer))
        package_says_compatible = package.compatibility is SchemaCompatibilityType.compatible
        assert (check(reader, writer) == []) == package_says_compatible


@settings(PROPERTY_SETTINGS, max_examples=60)
@given(evolutions(), st.booleans())
def test_an_added_field_needs_a_default(pair: tuple[Json, Json], with_default: bool) -> None:
    old = pair[0]
    added = field("added", "string", **({"default": ""} if with_default else {}))
    new = {**old, "fields": [*old["fields"], added]}
    expected = [] if with_default else [Incompatibility("$.added", missing("added"))]
    assert check(reader=new, writer=old) == expected
    assert check(reader=old, writer=new) == []
