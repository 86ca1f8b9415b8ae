"""The versions a policy needs: judging a schema against only them gives the verdict (refusal,
message and reasons) that judging it against every live version gives; and the store's
queries load exactly them, and the newest version of each type, over generated histories."""

from __future__ import annotations

import contextlib
import json
import uuid
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.db import make_engine
from registry.errors import IncompatibleSchema
from registry.formats import get_format
from registry.formats.base import ParsedSchema
from registry.ids import GroupName, Namespace, SchemaId, TypeName, Version
from registry.model import (
    POLICIES,
    SIMPLE_POLICIES,
    Compatibility,
    GroupProperties,
    Rule,
    SchemaInfo,
    SerializationFormat,
    VersionInfo,
)
from registry.policy import Existing, evaluate, needed
from registry.service import RegistryService, refusal
from registry.store.base import StoredVersion
from registry.store.sql import SqlRegistryStore

TYPES = ["int", "long", "string", "boolean"]
DEFAULTS = {"int": 0, "long": 0, "string": "", "boolean": False}


def document(name: str, fields: list[tuple[str, str, bool]]) -> bytes:
    """An Avro record ``p.<name>`` with (field, type, has a default) fields."""
    body = [{"name": f, "type": t, **({"default": DEFAULTS[t]} if d else {})} for f, t, d in fields]
    return json.dumps({"type": "record", "name": name, "namespace": "p", "fields": body}).encode()


@st.composite
def documents(draw: st.DrawFn, names: tuple[str, ...] = ("A",)) -> bytes:
    """A record over a few field names whose types and defaults vary, so that evolutions collide often."""
    fields = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True))
    typed = [(f, draw(st.sampled_from(TYPES)), draw(st.booleans())) for f in fields]
    return document(draw(st.sampled_from(names)), typed)


def parse(data: bytes) -> ParsedSchema:
    return get_format("Avro").parse(data, "")


@st.composite
def rules(draw: st.DrawFn, top: int) -> Rule | None:
    scope = draw(st.sampled_from([None, "latest", "all", "till"]))
    if scope is None:
        return None
    if scope != "till":
        return Rule(scope)
    return Rule("till", VersionInfo(TypeName("p.A"), Version(draw(st.integers(0, top + 1))), SchemaId(1)))


@st.composite
def policies(draw: st.DrawFn, top: int = 8) -> Compatibility:
    """Any simple policy, or an Advanced one of two arbitrary rules (Till floors anywhere, even past the end)."""
    name = draw(st.sampled_from(POLICIES))
    if name in SIMPLE_POLICIES:
        return Compatibility.of(name)
    # Advanced names at least one rule (the wire model refuses one without).
    backward, forward = draw(st.tuples(rules(top), rules(top)).filter(lambda pair: any(r is not None for r in pair)))
    return Compatibility("Advanced", backward, forward)


@st.composite
def histories(draw: st.DrawFn) -> list[Existing]:
    """Live versions, oldest first, numbered with gaps (deleted versions keep their numbers)."""
    schemas = draw(st.lists(documents(), max_size=6))
    numbers = sorted(draw(st.sets(st.integers(0, 8), min_size=len(schemas), max_size=len(schemas))))
    return [
        Existing(VersionInfo(TypeName("p.A"), Version(n), SchemaId(100 + n)), parse(d))
        for n, d in zip(numbers, schemas, strict=True)
    ]


@settings(max_examples=400, deadline=None)
@given(histories(), documents(), policies())
def test_the_needed_versions_give_the_verdict_of_all_live_versions(
    history: list[Existing], new: bytes, policy: Compatibility
) -> None:
    schema = parse(new)
    chosen = needed(policy).select(history, lambda e: e.version.version)
    assert evaluate(policy, schema, chosen) == evaluate(policy, schema, history)


@pytest.mark.parametrize(
    ("policy", "newest", "floor"),
    [
        ("AllowAny", False, None),
        ("DenyAll", True, None),
        ("Backward", True, None),
        ("Forward", True, None),
        ("Full", True, None),
        ("BackwardTransitive", False, 0),
        ("ForwardTransitive", False, 0),
        ("FullTransitive", False, 0),
    ],
)
def test_what_each_simple_policy_needs(policy: str, newest: bool, floor: int | None) -> None:
    found = needed(Compatibility.of(policy))
    assert (found.newest, found.floor) == (newest, floor)


def test_till_needs_its_floor_and_a_latest_rule_the_newest() -> None:
    till = Rule("till", VersionInfo(TypeName("p.A"), Version(3), SchemaId(1)))
    found = needed(Compatibility("Advanced", till, Rule("latest")))
    assert (found.newest, found.floor) == (True, 3)
    found = needed(Compatibility("Advanced", till, Rule("till", VersionInfo(TypeName("p.A"), Version(5), SchemaId(2)))))
    assert (found.newest, found.floor) == (False, 3)


# -- the store's queries, on every backend ------------------------------------------------------------

ALLOW_ANY = Compatibility.of("AllowAny")


@cache
def service_on(url: str) -> RegistryService:
    return RegistryService(SqlRegistryStore(make_engine(url)), cache_ttl=0.001)


def info(data: bytes) -> SchemaInfo:
    return SchemaInfo(TypeName(""), SerializationFormat("Avro"), data)


#: One step of a history: add a schema (of type A or B), or delete the n-th added one by id.
steps = st.lists(
    st.one_of(st.tuples(st.just("add"), documents(("A", "B"))), st.tuples(st.just("delete"), st.integers(0, 7))),
    min_size=1,
    max_size=7,
)


def build(service: RegistryService, multiple: bool, history: list[tuple[str, Any]]) -> tuple[Namespace, GroupName]:
    """A new group with ``history`` played under AllowAny."""
    namespace, name = Namespace(f"ns{uuid.uuid4().hex[:12]}"), GroupName("g")
    service.create_group(namespace, name, GroupProperties(SerializationFormat("Avro"), ALLOW_ANY, multiple))
    added: list[SchemaId] = []
    for action, value in history:
        if action == "add":
            with contextlib.suppress(IncompatibleSchema):  # another type, where the group holds one
                added.append(service.add_schema(namespace, name, info(value)).id)
        elif added:
            service.delete_by_id(namespace, name, added[value % len(added)])
    return namespace, name


def expected_refusal(
    service: RegistryService, namespace: Namespace, name: GroupName, policy: Compatibility, new: ParsedSchema
) -> IncompatibleSchema | None:
    """What adding ``new`` decided before policies named their versions: every live version loaded."""
    every = service.store.live_versions(namespace, name, TypeName(""))
    live = [Existing(v.version, parse(v.schema.data)) for v in every if v.version.type == new.type_name]
    group = service.get_group(namespace, name)
    return refusal(name, group, policy, new, live, frozenset(v.version.type for v in every))


def keys(versions: list[StoredVersion]) -> list[VersionInfo]:
    return [v.version for v in versions]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps, st.booleans(), documents(("A", "B")), policies())
def test_adding_and_validating_decide_as_over_every_live_version(
    database_url: str, history: list[tuple[str, Any]], multiple: bool, new: bytes, policy: Compatibility
) -> None:
    service = service_on(database_url)
    namespace, name = build(service, multiple, history)
    schema = parse(new)
    every = service.store.live_versions(namespace, name, TypeName(schema.type_name))

    context = service.store.add_context(namespace, name, TypeName(schema.type_name), needed(policy))
    assert keys(list(context.live)) == needed(policy).select(keys(every), lambda v: v.version)
    all_live = service.store.live_versions(namespace, name, TypeName(""))
    assert context.live_types == frozenset(v.version.type for v in all_live)

    expected = expected_refusal(service, namespace, name, policy, schema)
    reasons = [] if expected is None else expected.reasons
    assert service.validate(namespace, name, info(new), policy) == reasons

    already = service.store.find_version(namespace, name, schema)
    service.update_compatibility(namespace, name, policy, None)
    if already is not None:  # re-adding live content answers its version, whatever the policy
        assert service.add_schema(namespace, name, info(new)) == already
        return
    assert service.validate(namespace, name, info(new), None) == reasons
    if expected is None:
        added = service.add_schema(namespace, name, info(new))
        assert added.type == schema.type_name
    else:
        with pytest.raises(IncompatibleSchema) as refused:
            service.add_schema(namespace, name, info(new))
        assert str(refused.value) == str(expected)
        assert refused.value.reasons == expected.reasons


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_latest_is_the_newest_live_version_of_each_type_in_order_of_first_addition(
    database_url: str, history: list[tuple[str, Any]]
) -> None:
    service = service_on(database_url)
    namespace, name = build(service, True, history)
    live = service.store.live_versions(namespace, name, TypeName(""))
    newest: dict[str, VersionInfo] = {}  # what latest answered when it loaded every live version
    for stored in live:
        known = newest.get(stored.version.type)
        if known is None or known.version < stored.version.version:
            newest[stored.version.type] = stored.version
    assert [s.version for s in service.latest(namespace, name, None)] == list(newest.values())
    for type_name in ("p.A", "p.B", "p.C"):
        found = [s.version for s in service.latest(namespace, name, TypeName(type_name))]
        assert found == ([newest[type_name]] if type_name in newest else [])
    last = service.latest_version(namespace, name)
    assert (last.version if last else None) == (live[-1].version if live else None)
