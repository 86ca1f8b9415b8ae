"""``enum`` and ``const``: JSON equality, the values a node declares, and the finite value set of a branch."""

from __future__ import annotations

from typing import Any

from registry.formats.jsonschema_rules._helpers import _is_number
from registry.formats.jsonschema_rules.branches import Branch
from registry.formats.jsonschema_rules.nodes import Node


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
