"""Properties of the policy engine over generated Avro histories."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from registry.formats import get_format
from registry.formats.base import ParsedSchema
from registry.ids import SchemaId, TypeName, Version
from registry.model import Compatibility, Rule, VersionInfo
from registry.policy import Existing, can_read, evaluate

TYPES = ["int", "long", "float", "double", "string", "bytes", "boolean"]
DEFAULTS = {"int": 0, "long": 0, "float": 0.0, "double": 0.0, "string": "", "bytes": "", "boolean": False}


@st.composite
def records(draw: st.DrawFn) -> ParsedSchema:
    """A record over a few field names whose types and defaults vary: evolutions collide often."""
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=True))
    fields: list[dict[str, Any]] = []
    for name in names:
        kind = draw(st.sampled_from(TYPES))
        field: dict[str, Any] = {"name": name, "type": kind}
        if draw(st.booleans()):
            field["default"] = DEFAULTS[kind]
        fields.append(field)
    schema = {"type": "record", "name": "R", "namespace": "p", "fields": fields}
    return get_format("Avro").parse(json.dumps(schema).encode(), "")


def history_of(schemas: list[ParsedSchema]) -> list[Existing]:
    return [Existing(VersionInfo(TypeName("p.R"), Version(i), SchemaId(i + 1)), s) for i, s in enumerate(schemas)]


def ok(policy: str, new: ParsedSchema, history: list[Existing]) -> bool:
    return not evaluate(Compatibility.of(policy), new, history)


@settings(max_examples=150, deadline=None)
@given(records())
def test_every_schema_is_compatible_with_itself_under_every_policy(schema: ParsedSchema) -> None:
    history = history_of([schema])
    for policy in ("Backward", "Forward", "Full", "BackwardTransitive", "ForwardTransitive", "FullTransitive"):
        assert ok(policy, schema, history)
    assert can_read(schema, history) == []


@settings(max_examples=200, deadline=None)
@given(records(), records())
def test_full_is_backward_and_forward(old: ParsedSchema, new: ParsedSchema) -> None:
    history = history_of([old])
    assert ok("Full", new, history) == (ok("Backward", new, history) and ok("Forward", new, history))
    full_reasons = evaluate(Compatibility.of("Full"), new, history)
    halves = evaluate(Compatibility.of("Backward"), new, history) + evaluate(Compatibility.of("Forward"), new, history)
    assert full_reasons == halves


@settings(max_examples=150, deadline=None)
@given(st.lists(records(), min_size=1, max_size=5), records())
def test_transitive_is_the_conjunction_of_single_checks(olds: list[ParsedSchema], new: ParsedSchema) -> None:
    history = history_of(olds)
    for direction in ("Backward", "Forward", "Full"):
        singles = all(ok(direction, new, [e]) for e in history)
        assert ok(f"{direction}Transitive", new, history) == singles


@settings(max_examples=100, deadline=None)
@given(st.lists(records(), min_size=1, max_size=5), records(), st.data())
def test_till_checks_exactly_the_versions_from_its_floor(
    olds: list[ParsedSchema], new: ParsedSchema, data: st.DataObject
) -> None:
    history = history_of(olds)
    floor = data.draw(st.integers(0, len(history) - 1))
    till = Compatibility("Advanced", Rule("till", history[floor].version), Rule("till", history[floor].version))
    expected = all(ok("Full", new, [e]) for e in history[floor:])
    assert (not evaluate(till, new, history)) == expected


@settings(max_examples=300, deadline=None)
@given(records(), records())
def test_the_avro_record_fast_path_agrees_with_the_full_checker(reader: ParsedSchema, writer: ParsedSchema) -> None:
    from registry.formats.avro_compat import check_avro

    assert reader.summary is not None
    fast = get_format("Avro").check(reader, writer)
    full = check_avro(reader.parsed, writer.parsed)
    assert (fast == []) == (full == [])
