"""JSON Schema compatibility by content model: does the reader accept every document the writer does?

``check_json_schema(reader, writer)`` proves that the set of JSON documents valid under ``writer`` is a
subset of those valid under ``reader`` (the "content model" view of Confluent's JSON Schema rules and
of json-schema-diff), and lists the reasons it cannot, each at the JSON path of the value concerned.

How it reasons:

- The writer is expanded into *branches* (``$ref`` and ``allOf`` inlined, ``anyOf``/``oneOf``/
  ``if`` split); every branch must be accepted by the reader.
- A branch with few values (``enum``, ``const``, ``null``/``boolean`` types) is decided exactly by
  validating each value against the reader with ``jsonschema`` (formats asserted, to stay safe for
  format-checking consumers).
- Otherwise the reader's ``$ref``/``allOf`` conjuncts are each checked keyword by keyword against
  the branch (:mod:`registry.formats.jsonschema_rules`), recursing into properties and items.
- Reader ``anyOf``: one reader branch must accept the writer branch (the writer is split by type
  first when that helps, for nullable unions). Reader ``oneOf``: the same, and the other reader
  branches must be provably disjoint from it, unless the writer has an equivalent ``oneOf``
  (pairwise mutually included branches). Writer ``oneOf`` is read as ``anyOf`` (a widening).
- Reader ``not``: the writer branch must be provably disjoint from the negated schema (by types,
  by enumerated values, by a required property with distinct constant values, or by an
  equivalent writer ``not``). Reader ``if``: decided when the writer is inside or disjoint from
  the condition, else both ``then`` and ``else`` must accept.
- Recursive schemas: a (reader, writer) pair met again deeper in the document is assumed to hold
  (co-inductive; sound because documents are finite); met again at the same path it is reported.

Whatever cannot be proved is reported, never accepted: ``unevaluatedProperties`` (unless the two
subschemas are identical), unresolvable ``$ref``, changed ``pattern`` or ``format``, draft-03.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from registry.formats.base import Incompatibility
from registry.formats.jsonschema_rules import (
    ALL_TYPES,
    Branch,
    Node,
    check_arrays,
    check_numbers,
    check_objects,
    check_strings,
    check_types,
    check_unprovable,
    declared_types,
    declared_values,
    describe_types,
    expand,
    finite_values,
    json_equal,
    load,
    reader_parts,
    schemas_for_name,
)

#: How many (reader, writer branch) comparisons one check may make before giving up.
STEP_BUDGET = 50_000
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


class _TooComplex(Exception):
    """The comparison exceeded :data:`STEP_BUDGET`."""


def check_json_schema(reader: Any, writer: Any) -> list[Incompatibility]:
    """Reasons why a ``reader`` schema rejects some document valid under ``writer`` (empty: it accepts all)."""
    if _canonical(reader) == _canonical(writer):
        return []
    reader_root, writer_root = load(reader), load(writer)
    if "draft-03" in (reader_root.doc.spec.name, writer_root.doc.spec.name):
        return [Incompatibility("$", "draft-03 schemas are compatible only when identical")]
    checker = _Checker()
    try:
        return checker.includes(reader_root, [writer_root], "$")
    except _TooComplex:
        return [Incompatibility("$", f"the schemas are too complex to compare (over {STEP_BUDGET} steps)")]
    except RecursionError:
        return [Incompatibility("$", "the schemas nest too deeply to compare")]


def _canonical(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


def _dedupe(reasons: list[Incompatibility]) -> list[Incompatibility]:
    return list(dict.fromkeys(reasons))


class _Checker:
    """One compatibility check: the recursion, its cycle guard and its step budget."""

    def __init__(self) -> None:
        self._active: dict[tuple[int, frozenset[int], frozenset[int]], str] = {}
        self._steps = 0
        self._ref_free: dict[int, tuple[Any, str, bool]] = {}

    def includes(self, reader: Node, writer: Sequence[Node], path: str) -> list[Incompatibility]:
        """Reasons why ``reader`` rejects some value satisfying every node of ``writer``."""
        if len(writer) == 1 and self._identical(reader, writer[0]):
            return []
        reasons: list[Incompatibility] = []
        for branch in expand(writer):
            reasons.extend(self.branch(reader, branch, path))
        return _dedupe(reasons)

    def branch(self, reader: Node, branch: Branch, path: str) -> list[Incompatibility]:
        """Reasons why ``reader`` rejects some value of one writer branch."""
        key = (
            id(reader.schema),
            frozenset(id(n.schema) for n in branch.conjuncts),
            frozenset(id(n.schema) for n in branch.nots),
        )
        entered = self._active.get(key)
        if entered is not None:
            if entered != path:
                return []  # met again deeper in the document: assumed, co-inductively
            return [Incompatibility(path, "a $ref cycle that does not descend into the value cannot be checked")]
        self._steps += 1
        if self._steps > STEP_BUDGET:
            raise _TooComplex
        self._active[key] = path
        try:
            return _dedupe(self._branch(reader, branch, path))
        finally:
            del self._active[key]

    def _branch(self, reader: Node, branch: Branch, path: str) -> list[Incompatibility]:
        if not branch.types() or self._empty(branch, path):
            return []
        values = finite_values(branch)
        if values is not None:
            return self._values(reader, values, path)
        parts, problems = reader_parts(reader)
        reasons = [Incompatibility(path, problem) for problem in problems]
        for part in parts:
            if part.schema is False:
                reasons.append(Incompatibility(path, "the reader accepts no value here, the writer does"))
                continue
            reasons.extend(self._keywords(part, branch, path))
            reasons.extend(self._combinators(part, branch, path))
        return reasons

    def _empty(self, branch: Branch, path: str) -> bool:
        """Whether the branch excludes values that all its other constraints require (``else`` of a met ``if``)."""
        for excluded in branch.nots:
            rest = Branch(branch.conjuncts, tuple(n for n in branch.nots if n is not excluded), branch.one_ofs)
            if not self.branch(excluded, rest, path):
                return True
        return False

    def _values(self, reader: Node, values: list[Any], path: str) -> list[Incompatibility]:
        reasons: list[Incompatibility] = []
        for value in values:
            if reader.accepts(value, strict=True):
                continue
            text = json.dumps(value)
            message = f"value {text} allowed by the writer is rejected by the reader: {reader.first_error(value)}"
            parts = reader_parts(reader)[0]
            reader_types = _possible_types(reader)
            kind = _type_of(value)
            if kind not in reader_types:
                shown = "null" if value is None else f"{kind} {text}"
                message = (
                    f"type narrowed: the writer allows {shown}, the reader's type is {describe_types(reader_types)}"
                )
            for part in parts:
                allowed = declared_values(part)
                if allowed is not None and not any(json_equal(value, a) for a in allowed):
                    keyword = "enum" if "enum" in part.keywords else "const"
                    message = f"value {text} allowed by the writer is missing from the reader's {keyword}"
                    break
            reasons.append(Incompatibility(path, message))
        return reasons

    def _keywords(self, reader: Node, branch: Branch, path: str) -> list[Incompatibility]:
        reasons, common = check_types(reader, branch, path)
        if common & {"integer", "fraction"}:
            reasons += check_numbers(reader, branch, "fraction" not in common, path)
        if "string" in common:
            reasons += check_strings(reader, branch, path)
        if "array" in common:
            reasons += check_arrays(reader, branch, path, self.includes)
        if "object" in common:
            reasons += check_objects(reader, branch, path, self.includes)
        allowed = declared_values(reader)
        if allowed is not None:
            keyword = "enum" if "enum" in reader.keywords else "const"
            shown = ", ".join(json.dumps(v) for v in allowed[:5]) + (", ..." if len(allowed) > 5 else "")
            reasons.append(
                Incompatibility(
                    path, f"{keyword} added: the reader accepts only {shown}, the writer allows other values"
                )
            )
        return reasons + check_unprovable(reader, path)

    # ------------------------------------------------------------------------------ combinators

    def _combinators(self, reader: Node, branch: Branch, path: str) -> list[Incompatibility]:
        words = reader.keywords
        reasons: list[Incompatibility] = []
        if isinstance(words.get("anyOf"), list):
            options = [reader.child(s) for s in words["anyOf"]]
            if self._no_fit(options, branch, path, exclusive=False):
                closest = self._closest(options, branch, path)
                message = f"no branch of the reader's anyOf accepts every writer value ({closest})"
                reasons.append(Incompatibility(path, message))
        if isinstance(words.get("oneOf"), list):
            options = [reader.child(s) for s in words["oneOf"]]
            if not self._equivalent_one_of(options, branch, path) and self._no_fit(
                options, branch, path, exclusive=True
            ):
                message = "no single branch of the reader's oneOf provably accepts the writer's values"
                reasons.append(Incompatibility(path, f"{message} (the branches may overlap)"))
        if "not" in words and not self._disjoint(branch, reader.child(words["not"]), path):
            reasons.append(Incompatibility(path, "the reader's not-schema may match values the writer allows"))
        if "if" in words:
            reasons.extend(self._conditional(reader, branch, path))
        return reasons

    def _no_fit(self, options: list[Node], branch: Branch, path: str, *, exclusive: bool) -> bool:
        """Whether no option provably accepts the branch (``exclusive``: with every other option disjoint).

        A branch allowing several types may also be accepted type by type (nullable unions).
        """
        if self._fits_one(options, branch, path, exclusive):
            return False
        splits = _split_by_type(branch)
        return not (len(splits) > 1 and all(self._fits_one(options, piece, path, exclusive) for piece in splits))

    def _fits_one(self, options: list[Node], branch: Branch, path: str, exclusive: bool) -> bool:
        for option in options:
            if self.branch(option, branch, path):
                continue
            if not exclusive or all(self._disjoint(branch, other, path) for other in options if other is not option):
                return True
        return False

    def _closest(self, options: list[Node], branch: Branch, path: str) -> str:
        attempts = [self.branch(option, branch, path) for option in options]
        best = min(attempts, key=len, default=[])
        if not best:
            return "no branch"
        first = best[0]
        return first.message if first.path == path else str(first)

    def _equivalent_one_of(self, options: list[Node], branch: Branch, path: str) -> bool:
        for group in branch.one_ofs:
            if len(group) == len(options) and all(
                self._equivalent(a, b, path) for a, b in zip(options, group, strict=True)
            ):
                return True
        return False

    def _equivalent(self, a: Node, b: Node, path: str) -> bool:
        return not self.includes(a, [b], path) and not self.includes(b, [a], path)

    def _conditional(self, reader: Node, branch: Branch, path: str) -> list[Incompatibility]:
        words = reader.keywords
        condition = reader.child(words["if"])
        then = reader.child(words["then"]) if "then" in words else None
        otherwise = reader.child(words["else"]) if "else" in words else None
        if then is None and otherwise is None:
            return []
        if not self.branch(condition, branch, path):
            return self.branch(then, branch, path) if then is not None else []
        if self._disjoint(branch, condition, path):
            return self.branch(otherwise, branch, path) if otherwise is not None else []
        reasons: list[Incompatibility] = []
        for target in (then, otherwise):
            if target is not None:
                reasons.extend(self.branch(target, branch, path))
        return reasons

    # ------------------------------------------------------------------------------ disjointness

    def _disjoint(self, branch: Branch, other: Node, path: str) -> bool:
        """Whether no value of the writer branch is valid under ``other`` (proved, or False)."""
        values = finite_values(branch)
        if values is not None:
            return not any(other.accepts(v, strict=False, undecided=True) for v in values)
        if any(not self.includes(excluded, [other], path) for excluded in branch.nots):
            return True  # other is inside a schema the writer excludes
        return all(self._branches_disjoint(branch, piece) for piece in expand([other]))

    def _branches_disjoint(self, a: Branch, b: Branch) -> bool:
        common = a.types() & b.types()
        if not common:
            return True
        values = finite_values(b)
        if values is not None:
            return not any(
                all(n.accepts(v, strict=False, undecided=True) for n in a.conjuncts)
                and not any(n.accepts(v, strict=False) for n in a.nots)
                for v in values
            )
        if not common <= {"object"}:
            return False
        # A value in both has every property either side requires, valid under both sides' schemas for it.
        for name in _required(a) | _required(b):
            nodes_a = [s for n in a.conjuncts for s in schemas_for_name(n, name, writer=True)]
            nodes_b = [s for n in b.conjuncts for s in schemas_for_name(n, name, writer=True)]
            if any(s.schema is False for s in (*nodes_a, *nodes_b)):
                return True
            values_a, values_b = _values_of(nodes_a), _values_of(nodes_b)
            if (
                values_a is not None
                and values_b is not None
                and not any(json_equal(x, y) for x in values_a for y in values_b)
            ):
                return True
        return False

    # ------------------------------------------------------------------------------ identity

    def _identical(self, reader: Node, writer: Node) -> bool:
        """Same draft and same ref-free subschema: the same set of documents, no work needed."""
        if reader.doc.spec.name != writer.doc.spec.name:
            return False
        r_text, r_free = self._describe(reader.schema)
        w_text, w_free = self._describe(writer.schema)
        return r_free and w_free and r_text == w_text

    def _describe(self, schema: Any) -> tuple[str, bool]:
        known = self._ref_free.get(id(schema))
        if known is None:
            text = _canonical(schema)
            # The schema is kept in the entry so that its id cannot be reused by another object.
            known = (schema, text, not any(f'"{k}":' in text for k in _REF_KEYWORDS))
            self._ref_free[id(schema)] = known
        return known[1], known[2]


def _possible_types(node: Node, depth: int = 0) -> frozenset[str]:
    """The types some value valid under ``node`` may have (a superset; for messages)."""
    result = ALL_TYPES
    if depth > 8:
        return result
    for part in reader_parts(node)[0]:
        result &= declared_types(part)
        for keyword in ("anyOf", "oneOf"):
            options = part.keywords.get(keyword)
            if isinstance(options, list):
                result &= frozenset().union(*(_possible_types(part.child(o), depth + 1) for o in options))
    return result


def _type_of(value: Any) -> str:
    """The base type of a JSON value, as :data:`ALL_TYPES` names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "fraction"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _required(branch: Branch) -> set[str]:
    return {r for n in branch.conjuncts for r in n.keywords.get("required", []) if isinstance(r, str)}


def _values_of(nodes: list[Node]) -> list[Any] | None:
    """Every value the conjunction ``nodes`` allows when they are few, else None."""
    values: list[Any] = []
    for branch in expand(nodes):
        found = finite_values(branch)
        if found is None:
            return None
        values.extend(found)
    return values


def _split_by_type(branch: Branch) -> list[Branch]:
    """The branch cut into one branch per JSON type it allows (nullable unions become two)."""
    types = branch.types()
    names: list[str] = [t for t in ("null", "boolean", "string", "array", "object") if t in types]
    if "fraction" in types:
        names.append("number")
    elif "integer" in types:
        names.append("integer")
    if len(names) < 2 or not branch.conjuncts:
        return [branch]
    anchor = branch.conjuncts[0]
    return [branch.with_conjunct(anchor.synthetic({"type": name})) for name in names]
