"""JSON Schema compatibility: content-model rules by table, reasons and paths, properties over generated schemas."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from registry.formats import Incompatibility, get_format
from registry.formats.jsonschema_compat import check_json_schema

Json = Any
DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT7 = "http://json-schema.org/draft-07/schema#"

# --------------------------------------------------------------------------------------------------------------------
# Helpers


def obj(properties: dict[str, Json] | None = None, *, required: list[str] | None = None, **extra: Json) -> Json:
    """An object schema with ``properties`` (and ``required``, when given)."""
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if required is not None:
        schema["required"] = required
    schema.update(extra)
    return schema


def arr(items: Json = None, **extra: Json) -> Json:
    schema: dict[str, Any] = {"type": "array"}
    if items is not None:
        schema["items"] = items
    schema.update(extra)
    return schema


S: Json = {"type": "string"}
INT: Json = {"type": "integer"}
N: Json = {"type": "number"}
B: Json = {"type": "boolean"}
NULL: Json = {"type": "null"}


def linked_list(value: Json, **extra: Json) -> Json:
    """A recursive linked list whose nodes hold ``value``."""
    node = obj({"value": value, "next": {"$ref": "#/$defs/node"}})
    return {"$defs": {"node": node}, "$ref": "#/$defs/node", **extra}


def pet(kind: str, **properties: Json) -> Json:
    return obj({"kind": {"const": kind}, **properties}, required=["kind"])


# Expected result of one direction: None when compatible, else (path of one reason, fragment of its message).
Expect = tuple[str, str] | None
OK: Expect = None


@dataclass(frozen=True)
class Case:
    """``old`` and ``new`` schemas with the expected backward (reader=new) and forward (reader=old) results."""

    name: str
    old: Json
    new: Json
    backward: Expect
    forward: Expect


CASES = [
    # ---- types
    Case("type_unchanged", S, {"type": "string", "title": "t"}, OK, OK),
    Case("type_integer_widened_to_number", INT, N, OK, ("$", "type narrowed from number to integer")),
    Case("type_changed_string_to_integer", S, INT, ("$", "type changed from string to integer"), ("$", "type changed")),
    Case(
        "type_list_adds_null", S, {"type": ["string", "null"]}, OK, ("$", "type narrowed from [null, string] to string")
    ),
    Case("type_removed_accepts_anything", S, {}, OK, ("$", "type narrowed from any to string")),
    Case("true_schema_accepts_everything", obj({"a": S}), True, OK, ("$", "type narrowed from any to object")),
    Case("false_schema_accepts_nothing", S, False, ("$", "accepts no value"), OK),
    Case("empty_schema_equals_true", {}, True, OK, OK),
    Case("type_list_reordered", {"type": ["null", "integer"]}, {"type": ["integer", "null"]}, OK, OK),
    # ---- required
    Case(
        "required_added",
        obj({"a": S, "b": S}, required=["a"]),
        obj({"a": S, "b": S}, required=["a", "b"]),
        ("$.b", "property b is required by the reader but optional in the writer"),
        OK,
    ),
    Case(
        "required_removed",
        obj({"a": S, "b": S}, required=["a", "b"]),
        obj({"a": S, "b": S}, required=["a"]),
        OK,
        ("$.b", "required by the reader"),
    ),
    Case(
        "nested_required_added",
        obj({"address": obj({"zip": S})}),
        obj({"address": obj({"zip": S}, required=["zip"])}),
        ("$.address.zip", "property zip is required by the reader but optional in the writer"),
        OK,
    ),
    # ---- properties under open and closed content models
    Case(
        "property_added_to_open_model",
        obj({"a": S}),
        obj({"a": S, "b": S}),
        ("$.b", "property b added to the reader is stricter"),
        OK,
    ),
    Case("property_added_unconstrained_to_open_model", obj({"a": S}), obj({"a": S, "b": {}}), OK, OK),
    Case(
        "property_added_matching_writer_additional_schema",
        obj({"a": S}, additionalProperties=S),
        obj({"a": S, "b": S}, additionalProperties=S),
        OK,
        OK,
    ),
    Case(
        "property_added_narrower_than_writer_additional_schema",
        obj({"a": S}, additionalProperties=S),
        obj({"a": S, "b": {"type": "string", "maxLength": 3}}, additionalProperties=S),
        ("$.b", "maxLength lowered from none to 3"),
        OK,
    ),
    Case(
        "property_removed_from_closed_model",
        obj({"a": S, "b": S}, additionalProperties=False),
        obj({"a": S}, additionalProperties=False),
        ("$.b", "rejected by the reader's closed content model"),
        OK,
    ),
    Case(
        "property_added_to_closed_model",
        obj({"a": S}, additionalProperties=False),
        obj({"a": S, "b": S}, additionalProperties=False),
        OK,
        ("$.b", "closed content model"),
    ),
    Case(
        "property_removed_from_open_model",
        obj({"a": S, "b": INT}),
        obj({"a": S}),
        OK,
        ("$.b", "property b added to the reader is stricter"),
    ),
    Case(
        "content_model_opened",
        obj({"a": S}, additionalProperties=False),
        obj({"a": S}),
        OK,
        ("$.*", "the writer allows undeclared properties but the reader's content model is closed"),
    ),
    Case(
        "property_forbidden_explicitly",
        obj({"a": S, "b": S}),
        obj({"a": S, "b": False}),
        ("$.b", "property b is forbidden by the reader"),
        OK,
    ),
    Case(
        "nested_property_type_changed",
        obj({"address": obj({"zip": S})}),
        obj({"address": obj({"zip": INT})}),
        ("$.address.zip", "type changed from string to integer"),
        ("$.address.zip", "type changed from integer to string"),
    ),
    Case(
        "property_name_needing_quotes",
        obj({"first name": S}),
        obj({"first name": INT}),
        ('$["first name"]', "type changed"),
        ('$["first name"]', "type changed"),
    ),
    Case(
        "additional_properties_schema_narrowed",
        obj({}, additionalProperties={"type": ["string", "integer"]}),
        obj({}, additionalProperties=S),
        ("$.*", "type narrowed from [integer, string] to string"),
        OK,
    ),
    Case(
        "pattern_properties_unchanged",
        obj({}, patternProperties={"^x_": S, "^y_": INT}, additionalProperties=False),
        obj({}, patternProperties={"^x_": S, "^y_": INT}, additionalProperties=False, title="v2"),
        OK,
        OK,
    ),
    Case(
        "pattern_properties_added_to_reader",
        obj({}),
        obj({}, patternProperties={"^x_": S}),
        ("$./^x_/", "patternProperties ^x_ added to the reader"),
        OK,
    ),
    Case(
        "pattern_properties_removed_from_closed_model",
        obj({}, patternProperties={"^x_": S}, additionalProperties=False),
        obj({}, additionalProperties=False),
        ("$./^x_/", "properties matching ^x_ are allowed by the writer but rejected by the reader"),
        OK,
    ),
    Case(
        "pattern_property_narrowed",
        obj({}, patternProperties={"^x_": {"type": ["string", "null"]}}),
        obj({}, patternProperties={"^x_": S}),
        ("$./^x_/", "type narrowed"),
        OK,
    ),
    Case(
        "declared_property_matching_reader_pattern",
        obj({"x_a": {"type": ["string", "integer"]}}),
        obj({"x_a": {"type": ["string", "integer"]}}, patternProperties={"^x_": S}),
        ("$.x_a", "type narrowed"),
        OK,
    ),
    # ---- enum and const
    Case(
        "enum_value_added",
        {"enum": ["a", "b"]},
        {"enum": ["a", "b", "c"]},
        OK,
        ("$", 'value "c" allowed by the writer is missing from the reader\'s enum'),
    ),
    Case("enum_value_removed", {"enum": ["a", "b", "c"]}, {"enum": ["a", "b"]}, ("$", 'value "c"'), OK),
    Case("const_widened_to_enum", {"const": "a"}, {"enum": ["a", "b"]}, OK, ("$", "missing from the reader's const")),
    Case("enum_added_to_open_string", S, {"type": "string", "enum": ["a"]}, ("$", "enum added"), OK),
    Case(
        "enum_values_of_the_wrong_type_are_ignored",
        {"type": "string", "enum": ["a", 1]},
        {"type": "string", "enum": ["a"]},
        OK,
        OK,
    ),
    Case("enum_numbers_compare_by_value", {"enum": [1, 2]}, {"enum": [1.0, 2.0, 3]}, OK, ("$", "value 3")),
    Case("boolean_type_to_enum_with_null", B, {"enum": [True, False, None]}, OK, ("$", "the writer allows null")),
    # ---- numeric limits
    Case(
        "minimum_raised",
        {"type": "number", "minimum": 0},
        {"type": "number", "minimum": 5},
        ("$", "minimum tightened from >= 0 to >= 5"),
        OK,
    ),
    Case(
        "maximum_lowered",
        {"type": "number", "maximum": 10},
        {"type": "number", "maximum": 5},
        ("$", "maximum tightened from <= 10 to <= 5"),
        OK,
    ),
    Case("minimum_added", N, {"type": "number", "minimum": 0}, ("$", "minimum tightened from none to >= 0"), OK),
    Case(
        "exclusive_minimum_draft4_boolean",
        {"$schema": DRAFT4, "type": "number", "minimum": 0},
        {"$schema": DRAFT4, "type": "number", "minimum": 0, "exclusiveMinimum": True},
        ("$", "minimum tightened from >= 0 to > 0"),
        OK,
    ),
    Case(
        "exclusive_maximum_numeric",
        {"type": "number", "maximum": 10},
        {"type": "number", "exclusiveMaximum": 10},
        ("$", "maximum tightened from <= 10 to < 10"),
        OK,
    ),
    Case(
        "exclusive_minimum_equals_minimum_for_integers",
        {"type": "integer", "minimum": 1},
        {"type": "integer", "exclusiveMinimum": 0},
        OK,
        OK,
    ),
    Case(
        "multiple_of_added", INT, {"type": "integer", "multipleOf": 2}, ("$", "multipleOf changed from none to 2"), OK
    ),
    Case(
        "multiple_of_refined",
        {"type": "integer", "multipleOf": 2},
        {"type": "integer", "multipleOf": 4},
        ("$", "multipleOf changed from 2 to 4"),
        OK,
    ),
    # ---- string limits
    Case(
        "min_length_raised",
        {"type": "string", "minLength": 1},
        {"type": "string", "minLength": 3},
        ("$", "minLength raised from 1 to 3"),
        OK,
    ),
    Case(
        "max_length_lowered",
        {"type": "string", "maxLength": 10},
        {"type": "string", "maxLength": 5},
        ("$", "maxLength lowered from 10 to 5"),
        OK,
    ),
    Case(
        "pattern_changed",
        {"type": "string", "pattern": "^[a-z]+$"},
        {"type": "string", "pattern": "^[a-z0-9]+$"},
        ("$", "pattern changed from ^[a-z]+$ to ^[a-z0-9]+$"),
        ("$", "pattern changed"),
    ),
    Case("pattern_removed", {"type": "string", "pattern": "^a"}, S, OK, ("$", "pattern changed from none to ^a")),
    Case("format_added", S, {"type": "string", "format": "date"}, ("$", "format changed from none to date"), OK),
    # ---- arrays
    Case(
        "items_type_narrowed",
        obj({"tags": arr({"type": ["string", "null"]})}),
        obj({"tags": arr(S)}),
        ("$.tags[]", "type narrowed from [null, string] to string"),
        OK,
    ),
    Case("min_items_raised", arr(S, minItems=1), arr(S, minItems=2), ("$", "minItems raised from 1 to 2"), OK),
    Case("max_items_lowered", arr(S, maxItems=5), arr(S, maxItems=3), ("$", "maxItems lowered from 5 to 3"), OK),
    Case("unique_items_added", arr(S), arr(S, uniqueItems=True), ("$", "uniqueItems added"), OK),
    Case(
        "tuple_extended_draft7",
        {"$schema": DRAFT7, **arr([S, INT], additionalItems=False)},
        {"$schema": DRAFT7, **arr([S, INT, B], additionalItems=False)},
        OK,
        ("$[2]", "the writer allows item 2, the reader's tuple ends before it"),
    ),
    Case(
        "prefix_items_position_changed",
        obj({"point": {"type": "array", "prefixItems": [N, N]}}),
        obj({"point": {"type": "array", "prefixItems": [N, S]}}),
        ("$.point[1]", "type changed from number to string"),
        ("$.point[1]", "type changed from string to number"),
    ),
    Case(
        "list_form_equals_prefix_and_items",
        arr(S),
        {"type": "array", "prefixItems": [S], "items": S},
        OK,
        OK,
    ),
    Case(
        "closed_tuple_read_as_list",
        {"type": "array", "prefixItems": [S, S], "items": False},
        arr(S),
        OK,
        ("$[]", "the writer allows more than 2 items, the reader does not"),
    ),
    Case(
        "draft7_additional_items_narrowed",
        {"$schema": DRAFT7, **arr([S], additionalItems={"type": ["string", "integer"]})},
        {"$schema": DRAFT7, **arr([S], additionalItems=S)},
        ("$[]", "type narrowed"),
        OK,
    ),
    Case("contains_added", arr(S), arr(S, contains={"const": "x"}), ("$", "contains added or changed"), OK),
    # ---- object limits
    Case(
        "min_properties_raised",
        obj({}, minProperties=1),
        obj({}, minProperties=2),
        ("$", "minProperties raised from 1 to 2"),
        OK,
    ),
    Case(
        "max_properties_lowered",
        obj({}, maxProperties=5),
        obj({}, maxProperties=2),
        ("$", "maxProperties lowered from 5 to 2"),
        OK,
    ),
    Case(
        "max_properties_implied_by_closed_model",
        obj({"a": S, "b": S}, additionalProperties=False),
        obj({"a": S, "b": S}, additionalProperties=False, maxProperties=2),
        OK,
        OK,
    ),
    # ---- references
    Case(
        "ref_target_changed",
        {"definitions": {"addr": obj({"zip": S})}, **obj({"address": {"$ref": "#/definitions/addr"}})},
        {"definitions": {"addr": obj({"zip": INT})}, **obj({"address": {"$ref": "#/definitions/addr"}})},
        ("$.address.zip", "type changed from string to integer"),
        ("$.address.zip", "type changed from integer to string"),
    ),
    Case(
        "ref_replaced_by_inline_schema",
        {"$defs": {"addr": obj({"zip": S})}, **obj({"address": {"$ref": "#/$defs/addr"}})},
        obj({"address": obj({"zip": S})}),
        OK,
        OK,
    ),
    Case(
        "recursive_ref_widened",
        linked_list(INT),
        linked_list(N),
        OK,
        ("$.value", "type narrowed from number to integer"),
    ),
    Case("recursive_ref_annotated", linked_list(S), linked_list(S, title="list"), OK, OK),
    Case(
        "recursive_ref_deep_change",
        linked_list(obj({"x": S})),
        linked_list(obj({"x": S}, required=["x"])),
        ("$.value.x", "required by the reader"),
        OK,
    ),
    Case(
        "unresolvable_ref",
        S,
        {"$ref": "other.json#/string"},
        ("$", "cannot resolve $ref other.json#/string in the reader"),
        ("$", "type narrowed from any to string"),  # an unknown writer schema may write anything
    ),
    # ---- combinators
    Case("any_of_branch_added", {"anyOf": [S, INT]}, {"anyOf": [S, INT, NULL]}, OK, ("$", "the writer allows null")),
    Case("any_of_branch_removed", {"anyOf": [S, INT, NULL]}, {"anyOf": [S, INT]}, ("$", "the writer allows null"), OK),
    Case(
        "any_of_branch_narrowed", {"anyOf": [S, N]}, {"anyOf": [S, INT]}, ("$", "no branch of the reader's anyOf"), OK
    ),
    Case("any_of_to_type_list", {"anyOf": [S, INT]}, {"type": ["string", "integer"]}, OK, OK),
    Case(
        "one_of_disjoint_types_widened",
        {"oneOf": [S, INT]},
        {"anyOf": [S, INT, B]},
        OK,
        ("$", "the writer allows boolean true"),
    ),
    Case("one_of_of_disjoint_types_reads_type_list", {"oneOf": [S, INT]}, {"type": ["string", "integer"]}, OK, OK),
    Case(
        "one_of_discriminated_branch_added",
        {"oneOf": [pet("cat"), pet("dog")]},
        {"oneOf": [pet("cat"), pet("dog"), pet("bird")]},
        OK,
        ("$", "no single branch of the reader's oneOf"),
    ),
    Case(
        "one_of_overlapping_branches_unchanged",
        {"oneOf": [obj({"a": S}), obj({"b": S})]},
        {"oneOf": [obj({"a": S}), obj({"b": S})], "title": "v2"},
        OK,
        OK,
    ),
    Case(
        "one_of_branch_becomes_overlapping",
        {"type": "object", "oneOf": [pet("cat")]},
        {"type": "object", "oneOf": [pet("cat"), obj({"name": S})]},
        ("$", "no single branch of the reader's oneOf"),  # cats match both new branches
        ("$", "no single branch of the reader's oneOf"),  # nameless objects match no old branch
    ),
    Case(
        "all_of_conjunct_added",
        obj({"id": S}),
        {"allOf": [obj({"id": S}), {"required": ["id"]}]},
        ("$.id", "property id is required by the reader but optional in the writer"),
        OK,
    ),
    Case(
        "all_of_split_equivalent",
        obj({"id": S, "n": INT}, required=["id"]),
        {"allOf": [obj({"id": S}, required=["id"]), obj({"n": INT})]},
        OK,
        OK,
    ),
    # ---- nullability
    Case("nullable_type_list_to_any_of", {"type": ["string", "null"]}, {"anyOf": [NULL, S]}, OK, OK),
    Case(
        "nullable_removed",
        obj({"name": {"anyOf": [NULL, S]}}),
        obj({"name": S}),
        ("$.name", "type narrowed: the writer allows null, the reader's type is string"),
        OK,
    ),
    Case(
        "nullable_one_of_added",
        S,
        {"oneOf": [NULL, S]},
        OK,
        ("$", "the writer allows null, the reader's type is string"),
    ),
    # ---- not
    Case("not_added", {}, {"not": NULL}, ("$", "not-schema may match"), OK),
    Case("not_disjoint_from_writer_type", S, {"type": "string", "not": NULL}, OK, OK),
    Case(
        "not_enum_shrunk",
        {"type": "string", "not": {"enum": ["a", "b"]}},
        {"type": "string", "not": {"enum": ["a"]}},
        OK,
        ("$", "not-schema may match"),
    ),
    # ---- if / then / else, dependencies
    Case(
        "if_then_requirement_added",
        {"type": "object", "if": pet("cat"), "then": {"required": ["kind", "lives"]}},
        {"type": "object", "if": pet("cat"), "then": {"required": ["kind", "lives", "name"]}},
        ("$.name", "required by the reader"),
        OK,
    ),
    Case(
        "if_condition_excluded_by_writer",
        pet("dog"),
        {**pet("dog"), "if": pet("cat"), "then": {"required": ["lives"]}},
        OK,
        OK,
    ),
    Case(
        "dependent_required_added",
        obj({"card": S, "billing": S}),
        obj({"card": S, "billing": S}, dependentRequired={"card": ["billing"]}),
        ("$.card", "the reader requires property billing when card is present"),
        OK,
    ),
    Case(
        "draft7_dependencies_added",
        {"$schema": DRAFT7, **obj({"card": S})},
        {"$schema": DRAFT7, **obj({"card": S}, dependencies={"card": ["billing"]})},
        ("$.card", "the reader requires property billing when card is present"),
        OK,
    ),
    Case(
        "draft7_dependencies_with_new_declared_property",
        {"$schema": DRAFT7, **obj({"card": S}, dependencies={"card": ["billing"]})},
        {"$schema": DRAFT7, **obj({"card": S, "billing": S}, dependencies={"card": ["billing"]})},
        ("$.billing", "property billing added to the reader"),
        OK,
    ),
    Case(
        "dependent_schemas_strengthened",
        obj({}, dependentSchemas={"a": {"required": ["b"]}}),
        obj({}, dependentSchemas={"a": {"required": ["b", "c"]}}),
        ("$.a", "the reader's dependent schema for a rejects some writer values"),
        OK,
    ),
    Case(
        "writer_conditional_branches_checked",
        {"type": "object", "if": {"required": ["x"]}, "then": obj({"a": S}), "else": obj({"a": INT})},
        obj({"a": S}),
        ("$.a", "type changed from integer to string"),
        ("$.a", "type changed from string to integer"),
    ),
    # ---- property names, drafts, anchors
    Case("property_names_added", obj({}), obj({}, propertyNames={"maxLength": 3}), ("$", "propertyNames added"), OK),
    Case(
        "property_names_met_by_closed_model",
        obj({"abc": S}, additionalProperties=False),
        obj({"abc": S}, additionalProperties=False, propertyNames={"maxLength": 3}),
        OK,
        OK,
    ),
    Case(
        "draft4_reader_rejects_integers_written_as_floats",
        INT,
        {"$schema": DRAFT4, "type": "integer"},
        ("$", "which a draft-4 reader rejects"),
        OK,
    ),
    Case(
        "anchor_ref_target_changed",
        {"$defs": {"a": {"$anchor": "thing", "type": "string"}}, **obj({"p": {"$ref": "#thing"}})},
        {"$defs": {"a": {"$anchor": "thing", "type": "integer"}}, **obj({"p": {"$ref": "#thing"}})},
        ("$.p", "type changed from string to integer"),
        ("$.p", "type changed from integer to string"),
    ),
    # ---- not provable
    Case(
        "unevaluated_properties_not_provable",
        obj({"a": S}),
        obj({"a": S}, unevaluatedProperties=False),
        ("$", "unevaluatedProperties cannot be proven"),
        OK,
    ),
]


def expected_in(reasons: list[Incompatibility], expect: tuple[str, str]) -> bool:
    path, fragment = expect
    return any(r.path == path and fragment in r.message for r in reasons)


def assert_result(reasons: list[Incompatibility], expect: Expect) -> None:
    if expect is None:
        assert reasons == []
    else:
        assert expected_in(reasons, expect), [str(r) for r in reasons]


# --------------------------------------------------------------------------------------------------------------------
# The rules, by table


def test_the_table_is_large_and_names_are_unique() -> None:
    assert len(CASES) >= 60
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_backward(case: Case) -> None:
    assert_result(check_json_schema(case.new, case.old), case.backward)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_forward(case: Case) -> None:
    assert_result(check_json_schema(case.old, case.new), case.forward)


# Schemas whose own constructs cannot be proven: only a textually identical copy is known to read them.
UNPROVABLE = {"unresolvable_ref", "unevaluated_properties_not_provable"}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_schema_of_the_table_reads_itself(case: Case) -> None:
    for schema in (case.old, case.new):
        assert check_json_schema(schema, copy.deepcopy(schema)) == []
        reasons = check_json_schema(schema, annotated(schema)) + check_json_schema(annotated(schema), schema)
        assert (reasons != []) == (case.name in UNPROVABLE and schema is case.new), [str(r) for r in reasons]


# --------------------------------------------------------------------------------------------------------------------
# Reasons and the format's entry point


def test_each_broken_property_gets_its_own_reason() -> None:
    old = obj({"a": S, "b": N, "c": arr(S)}, required=["a"])
    new = obj({"a": INT, "b": INT, "c": arr(S, maxItems=1)}, required=["a", "b"])
    reasons = check_json_schema(new, old)
    assert {r.path for r in reasons} == {"$.a", "$.b", "$.c"}
    assert Incompatibility("$.b", "property b is required by the reader but optional in the writer") in reasons
    assert Incompatibility("$.b", "type narrowed from number to integer") in reasons


def test_json_format_checks_parsed_documents() -> None:
    fmt = get_format("Json")
    old = fmt.parse(json.dumps(obj({"id": S})).encode(), "T")
    new = fmt.parse(json.dumps(obj({"id": S}, required=["id"])).encode(), "T")
    assert fmt.check(new, old) == [
        Incompatibility("$.id", "property id is required by the reader but optional in the writer")
    ]
    assert fmt.check(old, new) == []


def test_writer_that_accepts_nothing_is_readable_by_anything() -> None:
    assert check_json_schema(False, True) == [Incompatibility("$", "the reader accepts no value here, the writer does")]
    assert check_json_schema({"type": "string"}, False) == []
    assert check_json_schema({"type": "string"}, {"type": "string", "enum": []}) == []


def test_non_descending_reference_cycle_is_reported_not_looped() -> None:
    reader = {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, S]}}, "$ref": "#/$defs/a"}
    reasons = check_json_schema(reader, INT)
    assert reasons
    assert all(r.path == "$" for r in reasons)


def test_large_union_products_stay_bounded() -> None:
    # 2^12 writer branches if every anyOf were multiplied out; the checker must widen instead of exploding.
    writer = {"allOf": [{"anyOf": [{"type": "object"}, {"type": "object", "title": str(i)}]} for i in range(12)]}
    assert check_json_schema({"type": "object"}, writer) == []


# --------------------------------------------------------------------------------------------------------------------
# Properties over generated schemas

NAMES = ("a", "b", "c", "d")
EXTRA_NAMES = ("x", "y")


def annotated(schema: Json) -> Json:
    """``schema`` with a description on every subschema: the same documents, but never textually equal."""

    def walk(node: Json, is_schema: bool) -> Json:
        if isinstance(node, list):
            return [walk(v, is_schema) for v in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
                out[key] = {k: walk(v, True) for k, v in value.items()}
            elif key in ("enum", "const", "required", "dependentRequired"):
                out[key] = value
            else:
                out[key] = walk(value, True)
        if is_schema:
            out["description"] = "copy"
        return out

    return walk(schema, True)


def leaf_schemas() -> st.SearchStrategy[Json]:
    small = st.integers(min_value=0, max_value=4)
    strings = st.builds(
        lambda lo, extra, enum: (
            {"type": "string", "minLength": lo, "maxLength": lo + extra}
            if enum is None
            else {"type": "string", "enum": enum}
        ),
        small,
        small,
        st.none() | st.lists(st.sampled_from(["p", "q", "r", "s"]), min_size=1, max_size=3, unique=True),
    )
    integers = st.builds(
        lambda k, width, step: {
            "type": "integer",
            "minimum": k * step,
            "maximum": (k + width) * step,
            "multipleOf": step,
        },
        st.integers(-3, 3),
        st.integers(0, 6),
        st.sampled_from([1, 2, 3]),
    )
    numbers = st.builds(
        lambda lo, width, exclusive: {
            "type": "number",
            "minimum" if not exclusive else "exclusiveMinimum": lo,
            "maximum": lo + width,
        },
        st.integers(-5, 5),
        st.integers(1, 20),
        st.booleans(),
    )
    others = st.sampled_from(
        [
            {"type": "boolean"},
            {"type": "null"},
            {"type": ["string", "null"]},
            {"enum": [1, "one", None]},
            {"const": True},
            {},
            {"type": "string", "not": {"enum": ["", "a"]}},
        ]
    )
    return st.one_of(strings, integers, numbers, others)


def composite(children: st.SearchStrategy[Json]) -> st.SearchStrategy[Json]:
    objects = st.builds(
        lambda props, required, additional, patterns: {
            "type": "object",
            "properties": props,
            "required": [n for n in required if n in props],
            **({} if additional == "missing" else {"additionalProperties": additional}),
            **({"patternProperties": {"^x": patterns}} if patterns is not None else {}),
        },
        st.dictionaries(st.sampled_from(NAMES), children, max_size=3),
        st.lists(st.sampled_from(NAMES), max_size=3, unique=True),
        st.sampled_from(["missing", False, True]) | children,
        st.none() | children,
    )
    arrays = st.builds(
        lambda items, lo, extra, unique: {
            "type": "array",
            "items": items,
            "minItems": lo,
            "maxItems": lo + extra,
            "uniqueItems": unique,
        },
        children,
        st.integers(0, 1),  # at most one required item: every generated array schema stays satisfiable
        st.integers(0, 2),
        st.booleans(),
    )
    tuples = st.builds(
        lambda prefix, rest: {"type": "array", "prefixItems": prefix, "items": rest},
        st.lists(children, min_size=1, max_size=2),
        st.just(False) | children,
    )
    nullable = st.builds(lambda c: {"anyOf": [{"type": "null"}, c]}, children)
    one_of = st.builds(lambda a, b: {"oneOf": [a, b]}, children, children)
    # allOf with a light second conjunct, so that documents of the first one usually satisfy it
    all_of = st.builds(
        lambda a, b: {"allOf": [a, b]},
        children,
        st.sampled_from([{"not": {"type": "null"}}, {"maxLength": 3}, {"maxProperties": 3}, {"maximum": 8}]),
    )
    tagged = st.builds(
        lambda a, b: {
            "oneOf": [
                {"type": "object", "properties": {"k": {"const": "a"}, "v": a}, "required": ["k"]},
                {"type": "object", "properties": {"k": {"const": "b"}, "v": b}, "required": ["k"]},
            ]
        },
        children,
        children,
    )
    conditional = st.builds(
        lambda o, dependent: (
            {**o, "dependentRequired": {"a": ["b"]}}
            if dependent
            else {**o, "if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"maxProperties": 2}}
        ),
        objects,
        st.booleans(),
    )
    return st.one_of(objects, arrays, tuples, nullable, one_of, all_of, tagged, conditional)


SCHEMAS = st.recursive(leaf_schemas(), composite, max_leaves=6)


@st.composite
def documents(draw: st.DrawFn) -> Json:
    """A root schema, maybe with ``$defs`` that some of its property schemas refer to."""
    defs = draw(st.dictionaries(st.sampled_from(["d0", "d1"]), SCHEMAS, max_size=2))
    refs = [{"$ref": f"#/$defs/{name}"} for name in defs]
    props = draw(
        st.dictionaries(st.sampled_from(NAMES), SCHEMAS | st.sampled_from(refs) if refs else SCHEMAS, max_size=3)
    )
    root: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "required": draw(st.lists(st.sampled_from(sorted(props)), max_size=2, unique=True)) if props else [],
        "additionalProperties": draw(st.sampled_from([False, True, {"type": "integer"}])),
    }
    if defs:
        root["$defs"] = defs
    return root


def instances(schema: Json, root: Json) -> st.SearchStrategy[Json]:
    """Documents valid under ``schema``, for the subset of JSON Schema the generators above produce."""
    if schema is True or schema == {}:
        return st.none() | st.booleans() | st.integers(-3, 3) | st.text("ab", max_size=2)
    if schema is False:
        return st.nothing()
    if "$ref" in schema:
        return instances(root["$defs"][schema["$ref"].rsplit("/", 1)[1]], root)
    filters = ("not", "if", "then", "else", "dependentRequired")
    if any(k in schema for k in filters):
        # Generated with these keywords only where no $ref is around: the node validates on its own.
        whole = jsonschema.Draft202012Validator(schema)
        return instances({k: v for k, v in schema.items() if k not in filters}, root).filter(whole.is_valid)
    if "anyOf" in schema:
        return st.one_of([instances(s, root) for s in schema["anyOf"]])
    if "oneOf" in schema or "allOf" in schema:
        # Generated combinator branches hold no $ref: each can be validated on its own.
        candidates = schema["oneOf"] if "oneOf" in schema else schema["allOf"][:1]
        whole = jsonschema.Draft202012Validator(schema)
        return st.one_of([instances(s, root) for s in candidates]).filter(whole.is_valid)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([instances({**schema, "type": k}, root) for k in kind])
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        return st.text("ab", min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 4))
    if kind == "integer":
        step = schema.get("multipleOf", 1)
        lo = math.ceil(schema.get("minimum", -10) / step)
        hi = math.floor(schema.get("maximum", 10) / step)
        return st.integers(lo, hi).map(lambda k: k * step)
    if kind == "number":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -10))
        exclude = "exclusiveMinimum" in schema
        return st.floats(low, schema.get("maximum", 10), exclude_min=exclude, allow_nan=False) | st.just(
            schema["maximum"]
        )
    if kind == "array" and "prefixItems" in schema:
        head = st.tuples(*(instances(s, root) for s in schema["prefixItems"])).map(list)
        tail = (
            st.lists(instances(schema["items"], root), max_size=2)
            if schema.get("items", True) is not False
            else st.just([])
        )
        # any prefix of the tuple is valid too
        return st.builds(lambda h, t, cut: h[:cut] if cut < len(h) else h + t, head, tail, st.integers(0, 3))
    if kind == "array":
        items = instances(schema.get("items", True), root)
        size = {"min_size": schema.get("minItems", 0), "max_size": schema.get("maxItems", 3)}
        if schema.get("uniqueItems"):
            return st.lists(items, unique_by=lambda v: json.dumps(v, sort_keys=True), **size).filter(
                lambda v: len(v) >= size["min_size"] and unique_json(v)
            )
        return st.lists(items, **size)
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        extra_schema = schema.get("additionalProperties", True)
        extra = {} if extra_schema is False else {n: instances(extra_schema, root) for n in EXTRA_NAMES}
        for pattern, pattern_schema in schema.get("patternProperties", {}).items():
            # the only generated pattern is "^x": it takes "x" away from additionalProperties
            assert pattern == "^x"
            extra["x"] = instances(pattern_schema, root)
        return st.fixed_dictionaries(
            {n: instances(s, root) for n, s in props.items() if n in required},
            optional={**{n: instances(s, root) for n, s in props.items() if n not in required}, **extra},
        )
    raise AssertionError(f"the instance generator does not cover {schema}")


def unique_json(values: list[Json]) -> bool:
    """Uniqueness as JSON Schema sees it (``1`` and ``1.0`` are equal, ``true`` and ``1`` are not)."""
    seen = [jsonschema.Draft202012Validator({"const": v}) for v in values]
    return not any(seen[i].is_valid(values[j]) for i in range(len(values)) for j in range(i))


def mutate(schema: Json) -> st.SearchStrategy[Json]:
    """A schema close to ``schema``: loosened, tightened or changed somewhere, or left alone."""
    if not isinstance(schema, dict) or not schema:
        return st.just(schema)
    return st.one_of(st.just(schema), st.sampled_from(sorted(schema)).flatmap(lambda key: mutate_keyword(schema, key)))


def mutate_keyword(schema: dict[str, Json], key: str) -> st.SearchStrategy[Json]:
    """``schema`` without keyword ``key``, or with another value for it."""
    rest = {k: v for k, v in schema.items() if k != key}
    return st.one_of(st.just(rest), *(s.map(lambda v: {**rest, key: v}) for s in changed_values(key, schema[key])))


def changed_values(key: str, value: Json) -> list[st.SearchStrategy[Json]]:
    """Strategies for another value of keyword ``key`` (whose value is ``value``)."""
    if isinstance(value, bool):
        return [st.just(not value)]
    if isinstance(value, (int, float)):
        return [st.integers(-2, 2).map(lambda d: value + d)]
    if key == "type" and isinstance(value, str):
        return [st.sampled_from(["string", "integer", "number", "null"]), st.just([value, "null"])]
    if key == "enum":
        return [st.just(value[:-1]), st.just([*value, "zz"])]
    if key == "required":
        return [st.sampled_from(NAMES).map(lambda n: sorted({*value, n}))]
    if key in ("properties", "$defs", "patternProperties") and value:
        return [
            st.sampled_from(sorted(value)).flatmap(lambda name: mutate(value[name]).map(lambda s: {**value, name: s})),
            st.sampled_from(sorted(value)).map(lambda name: {**value, name: {}}),
            st.just({**value, "zz": {"type": "string"}}),
        ]
    if key in ("items", "additionalProperties", "not", "if", "then", "else") and isinstance(value, dict):
        return [mutate(value)]
    if key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        return [mutate(value[0]).map(lambda s: [s, *value[1:]]), st.just([*value, {"type": "boolean"}])]
    return []


PROPERTY_SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


@PROPERTY_SETTINGS
@given(documents())
def test_every_generated_schema_is_compatible_with_itself_both_ways(schema: Json) -> None:
    copy_ = annotated(schema)
    assert check_json_schema(schema, copy_) == []
    assert check_json_schema(copy_, schema) == []


@PROPERTY_SETTINGS
@given(st.data())
def test_compatible_verdicts_are_sound(data: st.DataObject) -> None:
    reader, writer = data.draw(pairs(), label="reader, writer")
    reasons = check_json_schema(reader, writer)
    for reason in reasons:
        assert reason.path.startswith("$")
        assert reason.message
    writer_validator = jsonschema.Draft202012Validator(writer)
    reader_validator = jsonschema.Draft202012Validator(reader)
    for _ in range(5):
        document = data.draw(instances(writer, writer), label="document")
        assert writer_validator.is_valid(document), "the instance generator made an invalid document"
        if not reasons:
            errors = [e.message for e in reader_validator.iter_errors(document)]
            assert errors == [], f"judged compatible, yet the reader rejects {document!r}"


@st.composite
def loosened(draw: st.DrawFn, schema: Json) -> Json:
    """``schema`` with some constraints removed or widened: it accepts at least as much."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        limits = ("minLength", "maxLength", "minimum", "maximum", "multipleOf", "minItems", "maxItems", "uniqueItems")
        if key in limits and draw(st.booleans()):
            continue
        if key == "required":
            value = [n for n in value if draw(st.booleans())]
        elif key == "type" and isinstance(value, str) and draw(st.booleans()):
            value = [value, "null"]
        elif key == "additionalProperties" and value is False and draw(st.booleans()):
            value = True
        elif key in ("properties", "$defs"):
            value = {k: draw(loosened(v)) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            value = draw(loosened(value))
        elif key in ("anyOf", "prefixItems"):
            value = [draw(loosened(v)) for v in value]
        elif key == "patternProperties":
            value = {k: draw(loosened(v)) for k, v in value.items()}
        out[key] = value
    return out


@PROPERTY_SETTINGS
@given(st.data())
def test_loosening_a_schema_keeps_backward_compatibility(data: st.DataObject) -> None:
    old = data.draw(documents(), label="old")
    new = data.draw(loosened(old), label="new")
    assert check_json_schema(new, old) == [], "a reader that only dropped constraints must read the old data"


def pairs() -> st.SearchStrategy[tuple[Json, Json]]:
    """(reader, writer) pairs as the soundness property draws them."""
    return documents().flatmap(lambda w: changed(w).flatmap(mutate).filter(is_schema).map(lambda r: (r, w)))


def changed(schema: dict[str, Json]) -> st.SearchStrategy[Json]:
    """``schema`` with one of its keywords dropped or changed."""
    return st.sampled_from(sorted(schema)).flatmap(lambda key: mutate_keyword(schema, key))


COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")


def is_schema(schema: Json) -> bool:
    """Whether the registry would accept ``schema``: mutations may make counts negative or multipleOf zero."""
    if isinstance(schema, list):
        return all(is_schema(v) for v in schema)
    if not isinstance(schema, dict):
        return True
    for key, value in schema.items():
        if (key in COUNTS and value < 0) or (key == "multipleOf" and value <= 0):
            return False
        if key not in ("enum", "const") and not is_schema(value):
            return False
    return True


@pytest.mark.parametrize("compatible", [True, False])
def test_the_soundness_property_sees_both_verdicts(compatible: bool) -> None:
    # Guards the soundness property against vacuity: its pairs must include differing schemas judged compatible.
    def wanted(pair: tuple[Json, Json]) -> bool:
        reader, writer = pair
        return reader != writer and (check_json_schema(reader, writer) == []) == compatible

    no_shrinking = settings(max_examples=500, database=None, phases=[Phase.generate])
    reader, writer = find(pairs(), wanted, settings=no_shrinking)
    assert (check_json_schema(reader, writer) == []) == compatible
