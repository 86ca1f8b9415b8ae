"""The base types values fall into, the set a node's ``type`` keyword declares, and how to show a set.

Below :mod:`.branches` (a branch's types are the intersection of its conjuncts'); the ``type`` rule
itself, which needs branches, is in :mod:`.type_rule`.
"""

from __future__ import annotations

from registry.formats.jsonschema_rules.nodes import Node

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
