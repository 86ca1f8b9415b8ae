"""The ``type`` rule: writer types (nullability included) the reader drops, and integral floats across drafts."""

from __future__ import annotations

from registry.formats.base import Incompatibility
from registry.formats.jsonschema_rules.branches import Branch
from registry.formats.jsonschema_rules.nodes import Node
from registry.formats.jsonschema_rules.type_sets import declared_types, describe_types


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
