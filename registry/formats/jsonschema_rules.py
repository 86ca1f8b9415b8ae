"""The pieces of JSON Schema compatibility checking: schema nodes, writer branches, per-keyword rules.

Private to :mod:`registry.formats.jsonschema_compat`, which drives the recursion. Every rule here
answers one question for one reader node: does it accept every value of a writer *branch* (a
conjunction of writer nodes, see :func:`expand`)? Rules are conservative: when a rule cannot prove
acceptance it reports an incompatibility. Approximations are one-sided on purpose: the writer may be
widened (a constraint dropped), the reader may be narrowed (a constraint added), never the reverse.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeGuard

import jsonschema.validators
from jsonschema.protocols import Validator
from referencing import Registry, Specification
from referencing._core import Resolver
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012, UnknownDialect, specification_with

from registry.formats.base import Incompatibility

#: Checks that the reader node accepts every value of the writer nodes (a conjunction) at a path.
Recurse = Callable[["Node", Sequence["Node"], str], list[Incompatibility]]

#: The base types values fall into; ``fraction`` is a number that is not an integer.
ALL_TYPES = frozenset({"null", "boolean", "integer", "fraction", "string", "array", "object"})
_TYPE_NAMES: dict[str, frozenset[str]] = {
    "null": frozenset({"null"}),
    "boolean": frozenset({"boolean"}),
    "integer": frozenset({"integer"}),
    "number": frozenset({"integer", "fraction"}),
    "string": frozenset({"string"}),
    "array": frozenset({"array"}),
    "object": frozenset({"object"}),
}
_TYPE_ORDER = ("null", "boolean", "number", "integer", "string", "array", "object")

#: Keywords whose constraints this module proves (or that only annotate); any other keyword the
#: document's draft validates is reported as not provable when a reader uses it.
HANDLED_KEYWORDS = frozenset(
    {
        "$ref", "allOf", "anyOf", "oneOf", "not", "if", "type", "enum", "const",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minLength", "maxLength", "pattern", "format",
        "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains",
        "properties", "patternProperties", "additionalProperties", "required", "minProperties",
        "maxProperties", "propertyNames", "dependencies", "dependentRequired", "dependentSchemas",
        "then", "else", "minContains", "maxContains",
    }
)  # fmt: skip
_PRE_2019 = ("draft-03", "draft-04", "draft-06", "draft-07")
_COMPANIONS = {
    "if": {"then", "else"},
    "minimum": {"exclusiveMinimum"},
    "maximum": {"exclusiveMaximum"},
    "contains": {"minContains", "maxContains"},
}


@dataclass(frozen=True, eq=False)
class Document:
    """One schema document: its draft, the keywords that draft validates, and validators for values."""

    spec: Specification[Any]
    keywords: frozenset[str]
    #: Drafts before 2019-09 ignore every keyword beside a ``$ref``.
    ref_replaces_siblings: bool
    #: Whether ``1.0`` counts as an integer (draft 6 and later).
    integral_floats: bool
    #: Asserts ``format``: used where a stricter reader keeps the answer safe.
    strict: Validator
    #: Treats ``format`` as an annotation, as ``jsonschema`` does by default.
    lenient: Validator


@dataclass(frozen=True, eq=False)
class Node:
    """A (sub)schema together with the document and base URI its ``$ref`` resolve against."""

    schema: Any
    resolver: Resolver[Any]
    doc: Document

    @property
    def keywords(self) -> dict[str, Any]:
        """The keywords of this node that its draft validates (empty for boolean schemas)."""
        if not isinstance(self.schema, dict):
            return {}
        return {k: v for k, v in self.schema.items() if k in self.doc.keywords}

    def child(self, schema: Any) -> Node:
        """A subschema of this node, entering a new base URI if it declares an ``$id``."""
        resolver = self.resolver
        if isinstance(schema, dict) and ("$id" in schema or "id" in schema):
            resolver = resolver.in_subresource(self.doc.spec.create_resource(schema))
        return Node(schema, resolver, self.doc)

    def synthetic(self, schema: dict[str, Any]) -> Node:
        """A ref-free schema made up by the checker, read in this node's draft."""
        return Node(schema, self.resolver, self.doc)

    def deref(self, ref: str) -> Node | None:
        """The schema a ``$ref`` points to, or None when it cannot be resolved locally."""
        try:
            resolved = self.resolver.lookup(ref)
        except (Unresolvable, NoSuchResource):
            return None
        return Node(resolved.contents, resolved.resolver, self.doc)

    def accepts(self, value: Any, *, strict: bool, undecided: bool = False) -> bool:
        """Whether ``value`` is valid under this node, by ``jsonschema`` (``strict`` asserts formats).

        ``undecided`` is the answer when validation itself fails (an unresolvable ``$ref``, a
        pattern Python cannot compile, unbounded recursion): callers pick the safe side.
        """
        validator = self.doc.strict if strict else self.doc.lenient
        try:
            return bool(validator.evolve(schema=self.schema, _resolver=self.resolver).is_valid(value))
        except (Unresolvable, re.error, RecursionError):
            return undecided

    def first_error(self, value: Any) -> str:
        """The ``jsonschema`` message explaining why this node rejects ``value``."""
        validator = self.doc.strict.evolve(schema=self.schema, _resolver=self.resolver)
        try:
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        except (Unresolvable, re.error, RecursionError) as e:
            return f"cannot be validated ({type(e).__name__})"
        return error.message if error is not None else "rejected"


def load(root: Any) -> Node:
    """The root node of a parsed schema document (drafts by ``$schema``, 2020-12 when absent)."""
    dialect = root.get("$schema") if isinstance(root, dict) else None
    spec: Specification[Any] = DRAFT202012
    if isinstance(dialect, str):
        try:
            spec = specification_with(dialect)
        except UnknownDialect:
            spec = DRAFT202012
    resource = spec.create_resource(root)
    base = resource.id() or ""
    registry: Registry[Any] = Registry().with_resource(base, resource).crawl()
    cls = jsonschema.validators.validator_for(root, default=jsonschema.Draft202012Validator)
    keywords = set(cls.VALIDATORS)
    # Keywords read by another keyword's validator rather than validated on their own.
    for keyword, companions in _COMPANIONS.items():
        if keyword in keywords:
            keywords |= companions
    if spec.name in _PRE_2019:
        keywords -= {"minContains", "maxContains"}
    doc = Document(
        spec=spec,
        keywords=frozenset(keywords),
        ref_replaces_siblings=spec.name in _PRE_2019,
        integral_floats=bool(cls.TYPE_CHECKER.is_type(1.0, "integer")),
        strict=cls(root, registry=registry, format_checker=cls.FORMAT_CHECKER),
        lenient=cls(root, registry=registry),
    )
    return Node(root, registry.resolver(base_uri=base), doc)


@dataclass(frozen=True)
class Branch:
    """One alternative of a writer: every value of it satisfies all ``conjuncts`` and none of ``nots``.

    The conjuncts are original writer nodes (their combinator keywords were expanded into branches and
    are ignored by the keyword rules). ``one_ofs`` remembers the writer's ``oneOf`` lists so a reader
    ``oneOf`` with equivalent branches can be matched without proving the branches disjoint.
    """

    conjuncts: tuple[Node, ...]
    nots: tuple[Node, ...] = ()
    one_ofs: tuple[tuple[Node, ...], ...] = ()

    def types(self) -> frozenset[str]:
        """The base types a value of this branch can have."""
        result = ALL_TYPES
        for node in self.conjuncts:
            result &= declared_types(node)
        return result

    def with_conjunct(self, node: Node) -> Branch:
        """This branch narrowed by one more conjunct."""
        return Branch((*self.conjuncts, node), self.nots, self.one_ofs)


@dataclass
class _Pending:
    """A branch being built by :func:`expand`: what it holds so far and the nodes still to inline."""

    conjuncts: tuple[Node, ...]
    nots: tuple[Node, ...]
    one_ofs: tuple[tuple[Node, ...], ...]
    seen: frozenset[int]
    todo: tuple[Node, ...]


def expand(nodes: Iterable[Node], limit: int = 64) -> list[Branch]:
    """The writer conjunction ``nodes`` as a disjunction of branches (an empty list: no value at all).

    ``$ref`` and ``allOf`` are inlined, ``anyOf``/``oneOf`` and ``if``/``then``/``else`` split the
    branch. Past ``limit`` branches a disjunction is dropped instead of split, which only widens the
    writer. Unresolvable references are dropped for the same reason.
    """
    stack = [_Pending((), (), (), frozenset(), tuple(nodes))]
    done: list[Branch] = []
    while stack:
        state = stack.pop()
        if not state.todo:
            done.append(Branch(state.conjuncts, state.nots, state.one_ofs))
            continue
        node, rest = state.todo[0], state.todo[1:]
        schema = node.schema
        if schema is False:
            continue
        if not isinstance(schema, dict) or id(schema) in state.seen:
            # true, or a node already in this conjunction (A and A is A)
            stack.append(_Pending(state.conjuncts, state.nots, state.one_ofs, state.seen, rest))
            continue
        seen = state.seen | {id(schema)}
        words = node.keywords
        inlined: list[Node] = []
        ref = words.get("$ref")
        if isinstance(ref, str):
            target = node.deref(ref)
            if node.doc.ref_replaces_siblings:
                stack.append(_Pending(state.conjuncts, state.nots, state.one_ofs, seen, (*_opt(target), *rest)))
                continue
            inlined.extend(_opt(target))
        inlined.extend(node.child(s) for s in _list(words.get("allOf")))
        nots = state.nots + ((node.child(words["not"]),) if "not" in words else ())
        one_ofs = state.one_ofs
        options: list[tuple[tuple[Node, ...], tuple[Node, ...]]] = [((), ())]
        alternatives: list[list[tuple[tuple[Node, ...], tuple[Node, ...]]]] = []
        if _list(words.get("anyOf")):
            alternatives.append([((node.child(s),), ()) for s in words["anyOf"]])
        if _list(words.get("oneOf")):
            children = tuple(node.child(s) for s in words["oneOf"])
            one_ofs = (*one_ofs, children)
            alternatives.append([((c,), ()) for c in children])
        if "if" in words:
            condition = node.child(words["if"])
            then = (node.child(words["then"]),) if "then" in words else ()
            otherwise = (node.child(words["else"]),) if "else" in words else ()
            alternatives.append([((condition, *then), ()), (otherwise, (condition,))])
        for choices in alternatives:
            if (len(stack) + len(done) + len(options) * len(choices)) > limit:
                continue  # dropping a disjunction widens the writer
            options = [(a + c, an + cn) for a, an in options for c, cn in choices]
        for extra, extra_nots in options:
            todo = (*inlined, *extra, *rest)
            stack.append(_Pending((*state.conjuncts, node), nots + extra_nots, one_ofs, seen, todo))
    return done


def reader_parts(node: Node) -> tuple[list[Node], list[str]]:
    """The reader node as a conjunction of nodes (``$ref`` and ``allOf`` inlined), plus problems.

    A reference the reader cannot resolve is a problem: the reader's constraint is unknown.
    Combinators other than ``allOf`` stay on their node for the checker to handle.
    """
    parts: list[Node] = []
    problems: list[str] = []
    seen: set[int] = set()
    todo = [node]
    while todo:
        current = todo.pop(0)
        schema = current.schema
        if schema is True or id(schema) in seen:
            continue
        seen.add(id(schema))
        if not isinstance(schema, dict):
            parts.append(current)  # false
            continue
        words = current.keywords
        ref = words.get("$ref")
        if isinstance(ref, str):
            target = current.deref(ref)
            if target is None:
                problems.append(f"cannot resolve $ref {ref} in the reader")
            if current.doc.ref_replaces_siblings:
                todo.extend(_opt(target))
                continue
            todo.extend(_opt(target))
        parts.append(current)
        todo.extend(current.child(s) for s in _list(words.get("allOf")))
    return parts, problems


# ---------------------------------------------------------------------------------------- values


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0``, but ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def declared_values(node: Node) -> list[Any] | None:
    """The values ``const``/``enum`` allow on this node, or None when it has neither."""
    words = node.keywords
    values: list[Any] | None = None
    if "const" in words:
        values = [words["const"]]
    if isinstance(words.get("enum"), list):
        enum = words["enum"]
        values = list(enum) if values is None else [v for v in values if any(json_equal(v, e) for e in enum)]
    return values


def finite_values(branch: Branch) -> list[Any] | None:
    """Every value the branch allows, when they are few (enum, const, null/boolean), else None."""
    values: list[Any] | None = None
    for node in branch.conjuncts:
        allowed = declared_values(node)
        if allowed is None:
            continue
        values = allowed if values is None else [v for v in values if any(json_equal(v, a) for a in allowed)]
    if values is None:
        types = branch.types()
        if not types <= {"null", "boolean"}:
            return None
        values = ([None] if "null" in types else []) + ([False, True] if "boolean" in types else [])
    # Lenient validation keeps every value the writer may really produce (formats are not asserted).
    return [
        v
        for v in values
        if all(n.accepts(v, strict=False, undecided=True) for n in branch.conjuncts)
        and not any(n.accepts(v, strict=False) for n in branch.nots)
    ]


def declared_types(node: Node) -> frozenset[str]:
    """The base types a node's ``type`` keyword allows (all of them when it has none)."""
    if node.schema is False:
        return frozenset()
    declared = node.keywords.get("type")
    if declared is None:
        return ALL_TYPES
    names = declared if isinstance(declared, list) else [declared]
    result: frozenset[str] = frozenset()
    for name in names:
        if not isinstance(name, str):
            return ALL_TYPES  # draft-3 schema in a type list: no narrowing claimed
        result |= _TYPE_NAMES.get(name, frozenset())
    return result


def describe_types(types: frozenset[str]) -> str:
    """``string``, ``[null, string]``, ``any``: a type set as a schema author would write it."""
    if types == ALL_TYPES:
        return "any"
    names = set(types)
    if {"integer", "fraction"} <= names:
        names -= {"integer", "fraction"}
        names.add("number")
    names.discard("fraction")  # a lone "fraction" cannot be declared; show nothing for it
    ordered = [n for n in _TYPE_ORDER if n in names]
    if len(ordered) == 1:
        return ordered[0]
    return "[" + ", ".join(ordered) + "]" if ordered else "nothing"


# ----------------------------------------------------------------------------------------- paths


def property_path(path: str, name: str) -> str:
    """``$.address.zip``, or ``$["odd name"]`` for names that are not identifiers."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return f"{path}.{name}"
    return f"{path}[{json.dumps(name)}]"


def item_path(path: str, index: int | None) -> str:
    """``$.tags[0]`` for a tuple position, ``$.tags[]`` for every other item."""
    return f"{path}[{'' if index is None else index}]"


def additional_path(path: str) -> str:
    """The path of the values of undeclared properties."""
    return f"{path}.*"


def pattern_path(path: str, pattern: str) -> str:
    """The path of the values of properties whose name matches ``pattern``."""
    return f"{path}./{pattern}/"


# ----------------------------------------------------------------------------------------- types


def check_types(reader: Node, branch: Branch, path: str) -> tuple[list[Incompatibility], frozenset[str]]:
    """Writer types the reader drops, and the types both accept (the ones other rules look at)."""
    writer_types = branch.types()
    reader_types = declared_types(reader)
    reasons: list[Incompatibility] = []
    missing = writer_types - reader_types
    if missing:
        verb = "narrowed" if writer_types & reader_types else "changed"
        reasons.append(
            Incompatibility(path, f"type {verb} from {describe_types(writer_types)} to {describe_types(reader_types)}")
        )
    common = writer_types & reader_types
    floats_as_integers = any(n.doc.integral_floats for n in branch.conjuncts)
    if "integer" in common and "fraction" not in reader_types and floats_as_integers and not reader.doc.integral_floats:
        message = "the writer's integers may be written as 1.0, which a draft-4 reader rejects"
        reasons.append(Incompatibility(path, message))
    return reasons, common


# --------------------------------------------------------------------------------------- numbers

_Bound = tuple[Fraction, bool]  # value, exclusive


def _lower(words: dict[str, Any]) -> _Bound | None:
    bound: _Bound | None = None
    exclusive, value = words.get("exclusiveMinimum"), words.get("minimum")
    if _is_number(value):
        bound = (Fraction(value), exclusive is True)
    if _is_number(exclusive):
        bound = _tighter_lower(bound, (Fraction(exclusive), True))
    return bound


def _upper(words: dict[str, Any]) -> _Bound | None:
    bound: _Bound | None = None
    exclusive, value = words.get("exclusiveMaximum"), words.get("maximum")
    if _is_number(value):
        bound = (Fraction(value), exclusive is True)
    if _is_number(exclusive):
        bound = _tighter_upper(bound, (Fraction(exclusive), True))
    return bound


def _tighter_lower(a: _Bound | None, b: _Bound | None) -> _Bound | None:
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] > b[0] else b
    return (a[0], a[1] or b[1])


def _tighter_upper(a: _Bound | None, b: _Bound | None) -> _Bound | None:
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] < b[0] else b
    return (a[0], a[1] or b[1])


def _integer_lower(bound: _Bound | None) -> _Bound | None:
    if bound is None:
        return None
    value, exclusive = bound
    floor = value.numerator // value.denominator
    return (Fraction(floor + 1 if exclusive or floor < value else floor), False)


def _integer_upper(bound: _Bound | None) -> _Bound | None:
    if bound is None:
        return None
    value, exclusive = bound
    ceil = -((-value.numerator) // value.denominator)
    return (Fraction(ceil - 1 if exclusive or ceil > value else ceil), False)


def _show(bound: _Bound | None, inclusive: str, exclusive: str) -> str:
    if bound is None:
        return "none"
    value = bound[0]
    text = str(value.numerator) if value.denominator == 1 else str(float(value))
    return f"{exclusive if bound[1] else inclusive} {text}"


def check_numbers(reader: Node, branch: Branch, integers_only: bool, path: str) -> list[Incompatibility]:
    """Bounds and ``multipleOf``: the writer's must be at least as tight as the reader's."""
    words = reader.keywords
    writer_words = [n.keywords for n in branch.conjuncts]
    reasons: list[Incompatibility] = []
    r_low, r_high = _lower(words), _upper(words)
    w_low = w_high = None
    for w in writer_words:
        w_low, w_high = _tighter_lower(w_low, _lower(w)), _tighter_upper(w_high, _upper(w))
    if integers_only:
        r_low, r_high, w_low, w_high = (
            _integer_lower(r_low),
            _integer_upper(r_high),
            _integer_lower(w_low),
            _integer_upper(w_high),
        )
    if r_low is not None and not _at_least_as_tight(w_low, r_low, above=True):
        reasons.append(
            Incompatibility(path, f"minimum tightened from {_show(w_low, '>=', '>')} to {_show(r_low, '>=', '>')}")
        )
    if r_high is not None and not _at_least_as_tight(w_high, r_high, above=False):
        reasons.append(
            Incompatibility(path, f"maximum tightened from {_show(w_high, '<=', '<')} to {_show(r_high, '<=', '<')}")
        )
    step = words.get("multipleOf")
    if _is_number(step):
        steps = [w["multipleOf"] for w in writer_words if _is_number(w.get("multipleOf"))]
        if not any(_divides(step, s) for s in steps) and not (integers_only and step == 1):
            was = ", ".join(str(s) for s in steps) or "none"
            reasons.append(Incompatibility(path, f"multipleOf changed from {was} to {step}"))
    return reasons


def _at_least_as_tight(writer: _Bound | None, reader: _Bound, *, above: bool) -> bool:
    """Whether the writer's bound excludes everything the reader's bound excludes."""
    if writer is None:
        return False
    if writer[0] != reader[0]:
        return writer[0] > reader[0] if above else writer[0] < reader[0]
    return writer[1] or not reader[1]


def _divides(step: Any, writer_step: Any) -> bool:
    # jsonschema divides floats in floating point, so only exact integer arithmetic is trusted.
    if isinstance(step, int) and isinstance(writer_step, int) and step > 0:
        return writer_step % step == 0
    return bool(step == writer_step)


# --------------------------------------------------------------------------------------- strings


def check_strings(reader: Node, branch: Branch, path: str) -> list[Incompatibility]:
    """Length limits, ``pattern`` (identical only) and ``format`` (identical only)."""
    words = reader.keywords
    writer_words = [n.keywords for n in branch.conjuncts]
    reasons: list[Incompatibility] = []
    w_min = max([w["minLength"] for w in writer_words if _is_number(w.get("minLength"))], default=0)
    w_max = min([w["maxLength"] for w in writer_words if _is_number(w.get("maxLength"))], default=None)
    if _is_number(words.get("minLength")) and words["minLength"] > w_min:
        reasons.append(Incompatibility(path, f"minLength raised from {w_min} to {words['minLength']}"))
    if _is_number(words.get("maxLength")) and (w_max is None or words["maxLength"] < w_max):
        reasons.append(Incompatibility(path, f"maxLength lowered from {_none(w_max)} to {words['maxLength']}"))
    for keyword in ("pattern", "format"):
        if isinstance(words.get(keyword), str):
            have = [w[keyword] for w in writer_words if isinstance(w.get(keyword), str)]
            if words[keyword] not in have:
                was = ", ".join(have) or "none"
                reasons.append(Incompatibility(path, f"{keyword} changed from {was} to {words[keyword]}"))
    return reasons


# ---------------------------------------------------------------------------------------- arrays


def _tuple_form(node: Node) -> tuple[list[Node], Node | None]:
    """Positional item schemas and the schema of every later item (None: unconstrained)."""
    words = node.keywords
    if isinstance(words.get("prefixItems"), list):
        rest = words.get("items")
        return [node.child(s) for s in words["prefixItems"]], None if rest is None else node.child(rest)
    items = words.get("items")
    if isinstance(items, list):
        rest = words.get("additionalItems")
        return [node.child(s) for s in items], None if rest is None else node.child(rest)
    return [], None if items is None else node.child(items)


def _item_at(form: tuple[list[Node], Node | None], index: int) -> Node | None:
    prefix, rest = form
    return prefix[index] if index < len(prefix) else rest


def check_arrays(reader: Node, branch: Branch, path: str, recurse: Recurse) -> list[Incompatibility]:
    """Item schemas (list, tuple and prefixItems forms), item counts, ``uniqueItems``, ``contains``."""
    words = reader.keywords
    writer_words = [n.keywords for n in branch.conjuncts]
    reasons: list[Incompatibility] = []
    r_prefix, r_rest = _tuple_form(reader)
    w_forms = [_tuple_form(n) for n in branch.conjuncts]
    caps = [w["maxItems"] for w in writer_words if _is_number(w.get("maxItems"))]
    caps += [len(prefix) for prefix, rest in w_forms if rest is not None and rest.schema is False]
    w_max = min(caps, default=None)
    w_min = max([w["minItems"] for w in writer_words if _is_number(w.get("minItems"))], default=0)
    positions = max([len(r_prefix), *(len(p) for p, _ in w_forms)])
    for index in range(positions):
        if w_max is not None and index >= w_max:
            break
        r_item = r_prefix[index] if index < len(r_prefix) else r_rest
        w_items = [item for item in (_item_at(form, index) for form in w_forms) if item is not None]
        if any(n.schema is False for n in w_items):
            break  # the writer's arrays stop before this position
        if r_item is None:
            continue
        if r_item.schema is False:
            reasons.append(
                Incompatibility(
                    item_path(path, index), f"the writer allows item {index}, the reader's tuple ends before it"
                )
            )
            break
        reasons.extend(recurse(r_item, w_items, item_path(path, index)))
    w_rest = [rest for _, rest in w_forms if rest is not None]
    if r_rest is not None and (w_max is None or w_max > positions) and not any(n.schema is False for n in w_rest):
        if r_rest.schema is False:
            reasons.append(
                Incompatibility(
                    item_path(path, None), f"the writer allows more than {positions} items, the reader does not"
                )
            )
        else:
            reasons.extend(recurse(r_rest, w_rest, item_path(path, None)))
    if _is_number(words.get("minItems")) and words["minItems"] > w_min:
        reasons.append(Incompatibility(path, f"minItems raised from {w_min} to {words['minItems']}"))
    if _is_number(words.get("maxItems")) and (w_max is None or words["maxItems"] < w_max):
        reasons.append(Incompatibility(path, f"maxItems lowered from {_none(w_max)} to {words['maxItems']}"))
    unique = any(w.get("uniqueItems") is True for w in writer_words) or (w_max is not None and w_max <= 1)
    if words.get("uniqueItems") is True and not unique:
        reasons.append(Incompatibility(path, "uniqueItems added: the writer allows duplicate items"))
    if "contains" in words:
        reasons.extend(_check_contains(reader, branch, w_forms, (w_min, w_max), path, recurse))
    return reasons


def _check_contains(
    reader: Node,
    branch: Branch,
    w_forms: list[tuple[list[Node], Node | None]],
    counts: tuple[int, int | None],
    path: str,
    recurse: Recurse,
) -> list[Incompatibility]:
    words = reader.keywords
    wanted = reader.child(words["contains"])
    at_least = words.get("minContains", 1)
    at_most = words.get("maxContains")
    w_min, w_max = counts
    reasons: list[Incompatibility] = []
    writer_contains = [(n, n.keywords) for n in branch.conjuncts if "contains" in n.keywords]
    if _is_number(at_least) and at_least > 0:
        proven = any(
            w.get("minContains", 1) >= at_least and not recurse(wanted, [n.child(w["contains"])], item_path(path, None))
            for n, w in writer_contains
        )
        if not proven and w_min >= at_least and all(not prefix for prefix, _ in w_forms):
            every_item = [rest for _, rest in w_forms if rest is not None]
            proven = not recurse(wanted, every_item, item_path(path, None))
        if not proven:
            reasons.append(
                Incompatibility(
                    path, f"contains added or changed: the writer's arrays need not have {at_least} such item(s)"
                )
            )
    if _is_number(at_most):
        proven = w_max is not None and w_max <= at_most
        proven = proven or any(
            _is_number(w.get("maxContains"))
            and w["maxContains"] <= at_most
            and not recurse(n.child(w["contains"]), [wanted], item_path(path, None))
            for n, w in writer_contains
        )
        if not proven:
            reasons.append(
                Incompatibility(path, f"maxContains {at_most} added: the writer's arrays may have more such items")
            )
    return reasons


# --------------------------------------------------------------------------------------- objects


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _matches(pattern: str, name: str) -> bool | None:
    """Whether ``name`` matches ``pattern`` as jsonschema tests it (None: the pattern does not compile)."""
    compiled = _regex(pattern)
    return None if compiled is None else compiled.search(name) is not None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _opt(node: Node | None) -> tuple[Node, ...]:
    return () if node is None else (node,)


def _none(value: Any) -> str:
    return "none" if value is None else str(value)


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def schemas_for_name(node: Node, name: str, *, writer: bool) -> list[Node]:
    """The schemas a property ``name`` must satisfy under ``node`` (empty: anything).

    A pattern that does not compile in Python is read in the safe direction: ignored by a writer,
    applied (with ``additionalProperties`` too) by a reader.
    """
    words = node.keywords
    result: list[Node] = []
    declared = _dict(words.get("properties"))
    if name in declared:
        result.append(node.child(declared[name]))
    matched = unknown = False
    for pattern, schema in _dict(words.get("patternProperties")).items():
        hit = _matches(pattern, name)
        if hit or (hit is None and not writer):
            result.append(node.child(schema))
        matched = matched or bool(hit)
        unknown = unknown or hit is None
    if name not in declared and not matched and "additionalProperties" in words and not (unknown and writer):
        result.append(node.child(words["additionalProperties"]))
    return result


def _literal_prefix(pattern: str) -> str:
    if not pattern.startswith("^"):
        return ""
    prefix = ""
    for char in pattern[1:]:
        if char in ".^$*+?()[]{}|\\":
            if char in "*?{" and prefix:
                prefix = prefix[:-1]  # the last literal was made optional or repeated
            break
        prefix += char
    return prefix


def patterns_disjoint(a: str, b: str) -> bool:
    """Whether no name can match both patterns (proved only for distinct anchored literal prefixes)."""
    pa, pb = _literal_prefix(a), _literal_prefix(b)
    return bool(pa and pb and not pa.startswith(pb) and not pb.startswith(pa))


def _closed_message(name: str, declared_by_reader: bool) -> str:
    if declared_by_reader:
        return f"property {name} is forbidden by the reader but allowed by the writer"
    return f"property {name} allowed by the writer is rejected by the reader's closed content model"


def _summarize(nested: list[Incompatibility], where: str, lead: str) -> list[Incompatibility]:
    if not nested:
        return []
    first = nested[0]
    detail = first.message if first.path == where else str(first)
    return [Incompatibility(where, f"{lead}: {detail}")]


def check_objects(reader: Node, branch: Branch, path: str, recurse: Recurse) -> list[Incompatibility]:
    """Required names, declared/pattern/additional property schemas, counts, names, dependencies."""
    words = reader.keywords
    conjuncts = branch.conjuncts
    writer_words = [n.keywords for n in conjuncts]
    reasons: list[Incompatibility] = []
    w_required = {r for w in writer_words for r in _list(w.get("required")) if isinstance(r, str)}
    for name in _list(words.get("required")):
        if isinstance(name, str) and name not in w_required:
            reasons.append(
                Incompatibility(
                    property_path(path, name), f"property {name} is required by the reader but optional in the writer"
                )
            )
    r_declared = _dict(words.get("properties"))
    w_declared = {name for w in writer_words for name in _dict(w.get("properties"))}
    for name in dict.fromkeys([*r_declared, *(n for w in writer_words for n in _dict(w.get("properties")))]):
        w_nodes = [s for n in conjuncts for s in schemas_for_name(n, name, writer=True)]
        if any(s.schema is False for s in w_nodes):
            continue  # the writer never writes this property
        where = property_path(path, name)
        for r_node in schemas_for_name(reader, name, writer=False):
            if r_node.schema is False:
                reasons.append(Incompatibility(where, _closed_message(name, name in r_declared)))
                continue
            nested = recurse(r_node, w_nodes, where)
            if name in r_declared and name not in w_declared:
                lead = f"property {name} added to the reader is stricter than the writer's undeclared properties"
                reasons.extend(_summarize(nested, where, lead))
            elif name in w_declared and name not in r_declared:
                lead = f"property {name} removed from the reader falls under a schema that rejects some of its values"
                reasons.extend(_summarize(nested, where, lead))
            else:
                reasons.extend(nested)
    reasons.extend(_check_undeclared(reader, branch, path, recurse))
    reasons.extend(_check_counts(reader, branch, w_required, path))
    reasons.extend(_check_property_names(reader, branch, path, recurse))
    reasons.extend(_check_dependencies(reader, branch, w_required, path, recurse))
    return reasons


def _check_undeclared(reader: Node, branch: Branch, path: str, recurse: Recurse) -> list[Incompatibility]:
    """Properties no schema names: writer patterns and writer ``additionalProperties``."""
    words = reader.keywords
    reasons: list[Incompatibility] = []
    r_patterns = _dict(words.get("patternProperties"))
    w_patterns = list(dict.fromkeys(p for n in branch.conjuncts for p in _dict(n.keywords.get("patternProperties"))))
    r_extra = [q for q in r_patterns if q not in w_patterns]
    r_additional = reader.child(words["additionalProperties"]) if "additionalProperties" in words else None
    for pattern in w_patterns:
        w_nodes = [
            n.child(n.keywords["patternProperties"][pattern])
            for n in branch.conjuncts
            if pattern in _dict(n.keywords.get("patternProperties"))
        ]
        if any(s.schema is False for s in w_nodes):
            continue
        targets: list[Node] = []
        if pattern in r_patterns:
            targets.append(reader.child(r_patterns[pattern]))
        elif r_additional is not None:
            targets.append(r_additional)
        targets += [reader.child(r_patterns[q]) for q in r_extra if not patterns_disjoint(pattern, q)]
        where = pattern_path(path, pattern)
        for target in targets:
            if target.schema is False:
                reasons.append(
                    Incompatibility(
                        where, f"properties matching {pattern} are allowed by the writer but rejected by the reader"
                    )
                )
            else:
                reasons.extend(recurse(target, w_nodes, where))
    w_additional = [
        n.child(n.keywords["additionalProperties"]) for n in branch.conjuncts if "additionalProperties" in n.keywords
    ]
    if any(s.schema is False for s in w_additional):
        return reasons
    if r_additional is not None:
        where = additional_path(path)
        if r_additional.schema is False:
            reasons.append(
                Incompatibility(
                    where, "the writer allows undeclared properties but the reader's content model is closed"
                )
            )
        else:
            reasons.extend(recurse(r_additional, w_additional, where))
    for pattern in r_extra:
        target = reader.child(r_patterns[pattern])
        where = pattern_path(path, pattern)
        if target.schema is False:
            reasons.append(
                Incompatibility(
                    where, f"the writer allows undeclared properties matching {pattern}, the reader forbids them"
                )
            )
        else:
            nested = recurse(target, w_additional, where)
            reasons.extend(
                _summarize(
                    nested,
                    where,
                    f"patternProperties {pattern} added to the reader narrows the writer's undeclared properties",
                )
            )
    return reasons


def _writer_caps(branch: Branch) -> int | None:
    caps: list[int] = []
    for node in branch.conjuncts:
        words = node.keywords
        if _is_number(words.get("maxProperties")):
            caps.append(words["maxProperties"])
        if words.get("additionalProperties") is False and not _dict(words.get("patternProperties")):
            caps.append(sum(1 for s in _dict(words.get("properties")).values() if s is not False))
    return min(caps, default=None)


def _check_counts(reader: Node, branch: Branch, w_required: set[str], path: str) -> list[Incompatibility]:
    words = reader.keywords
    reasons: list[Incompatibility] = []
    w_min = max(
        [n.keywords["minProperties"] for n in branch.conjuncts if _is_number(n.keywords.get("minProperties"))]
        + [len(w_required)]
    )
    w_max = _writer_caps(branch)
    if _is_number(words.get("minProperties")) and words["minProperties"] > w_min:
        reasons.append(Incompatibility(path, f"minProperties raised from {w_min} to {words['minProperties']}"))
    if _is_number(words.get("maxProperties")) and (w_max is None or words["maxProperties"] < w_max):
        reasons.append(Incompatibility(path, f"maxProperties lowered from {_none(w_max)} to {words['maxProperties']}"))
    return reasons


def _check_property_names(reader: Node, branch: Branch, path: str, recurse: Recurse) -> list[Incompatibility]:
    words = reader.keywords
    if "propertyNames" not in words or words["propertyNames"] in (True, {}):
        return []
    names = reader.child(words["propertyNames"])
    w_names = [n.child(n.keywords["propertyNames"]) for n in branch.conjuncts if "propertyNames" in n.keywords]
    if w_names and not recurse(names, [*w_names, branch.conjuncts[0].synthetic({"type": "string"})], path):
        return []
    for node in branch.conjuncts:
        w = node.keywords
        if w.get("additionalProperties") is False and not _dict(w.get("patternProperties")):
            allowed = [k for k, s in _dict(w.get("properties")).items() if s is not False]
            if all(names.accepts(k, strict=True) for k in allowed):
                return []
    return [
        Incompatibility(path, "propertyNames added or changed: the writer allows property names the reader rejects")
    ]


def _dependencies(words: dict[str, Any]) -> Iterable[tuple[str, Any]]:
    for keyword in ("dependencies", "dependentRequired", "dependentSchemas"):
        yield from _dict(words.get(keyword)).items()


def _check_dependencies(
    reader: Node, branch: Branch, w_required: set[str], path: str, recurse: Recurse
) -> list[Incompatibility]:
    reasons: list[Incompatibility] = []
    for trigger, dependency in _dependencies(reader.keywords):
        w_nodes = [s for n in branch.conjuncts for s in schemas_for_name(n, trigger, writer=True)]
        if any(s.schema is False for s in w_nodes):
            continue  # the writer never writes the trigger property
        w_deps = [d for n in branch.conjuncts for t, d in _dependencies(n.keywords) if t == trigger]
        where = property_path(path, trigger)
        if isinstance(dependency, list):
            implied = w_required | {x for d in w_deps if isinstance(d, list) for x in d}
            for name in dependency:
                if name not in implied:
                    reasons.append(
                        Incompatibility(
                            where, f"the reader requires property {name} when {trigger} is present, the writer does not"
                        )
                    )
        else:
            # A writer value that has the trigger satisfies the whole branch and the writer's own dependency schemas.
            writer_side = [
                *branch.conjuncts,
                *(
                    n.child(d)
                    for n in branch.conjuncts
                    for t, d in _dependencies(n.keywords)
                    if t == trigger and not isinstance(d, list)
                ),
            ]
            nested = recurse(reader.child(dependency), writer_side, path)
            reasons.extend(
                _summarize(nested, where, f"the reader's dependent schema for {trigger} rejects some writer values")
            )
    return reasons


def check_unprovable(reader: Node, path: str) -> list[Incompatibility]:
    """Reader keywords this checker cannot reason about (``unevaluatedProperties`` and the like)."""
    reasons: list[Incompatibility] = []
    for keyword, value in reader.keywords.items():
        if keyword not in HANDLED_KEYWORDS and value not in (True, {}):
            reasons.append(
                Incompatibility(path, f"the reader's {keyword} cannot be proven to accept the writer's values")
            )
    return reasons
