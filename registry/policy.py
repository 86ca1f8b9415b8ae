"""The compatibility policy engine: which earlier versions a new schema is checked
against, in which direction; the per-format checkers say what breaks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from registry.formats import get_format
from registry.formats.base import Incompatibility, ParsedSchema
from registry.model import Compatibility, Rule, VersionInfo


@dataclass(frozen=True)
class Existing:
    """A live (not deleted) version of the new schema's type, with its parsed schema."""

    version: VersionInfo
    schema: ParsedSchema


def _targets(rule: Rule, history: Sequence[Existing]) -> Sequence[Existing]:
    if not history:
        return ()
    if rule.scope == "latest":
        return history[-1:]
    if rule.scope == "till" and rule.till is not None:
        floor = rule.till.version
        return [e for e in history if e.version.version >= floor]
    return history


def _check(direction: str, new: ParsedSchema, targets: Sequence[Existing]) -> list[Incompatibility]:
    fmt = get_format(new.format)
    reasons: list[Incompatibility] = []
    for old in targets:
        if old.schema.canonical == new.canonical:
            continue
        if direction == "backward":
            found = fmt.check(reader=new, writer=old.schema)
            what = "cannot read data written with"
        else:
            found = fmt.check(reader=old.schema, writer=new)
            what = "writes data that cannot be read by"
        label = f"{direction}: new schema {what} version {old.version.version} (id {old.version.id})"
        reasons.extend(Incompatibility(r.path, f"{label}: {r.message}") for r in found)
    return reasons


def evaluate(compatibility: Compatibility, new: ParsedSchema, history: Sequence[Existing]) -> list[Incompatibility]:
    """Reasons why ``new`` breaks ``compatibility`` given the live ``history`` of its type.

    ``history`` is ordered by version, oldest first. An empty list means accepted.
    """
    if compatibility.deny_all and history:
        return [Incompatibility("$", f"policy DenyAll accepts no new versions of type {new.type_name}")]
    reasons: list[Incompatibility] = []
    if compatibility.backward is not None:
        reasons += _check("backward", new, _targets(compatibility.backward, history))
    if compatibility.forward is not None:
        reasons += _check("forward", new, _targets(compatibility.forward, history))
    return reasons


def can_read(reader: ParsedSchema, history: Sequence[Existing]) -> list[Incompatibility]:
    """Reasons why ``reader`` cannot read data written with every live version in ``history``."""
    return _check("backward", reader, history)
