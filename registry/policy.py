"""The compatibility policy engine: which earlier versions a new schema is checked
against, in which direction; the per-format checkers say what breaks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from registry.formats import get_format
from registry.formats.base import Incompatibility, ParsedSchema
from registry.model import Compatibility, Rule, VersionInfo

_V = TypeVar("_V")


@dataclass(frozen=True)
class Existing:
    """A live (not deleted) version of the new schema's type, with its parsed schema."""

    version: VersionInfo
    schema: ParsedSchema


@dataclass(frozen=True)
class Needed:
    """Which live versions of the new schema's type a policy's verdict depends on: the newest one
    (``newest``) and every one numbered ``floor`` or later (``floor`` None: none by number; 0: all).

    Evaluating a policy over just these versions gives the very reasons (same order, same words)
    as evaluating it over the whole live history, which is what lets a store load only them.
    """

    newest: bool = False
    floor: int | None = None

    def select(self, history: Sequence[_V], number: Callable[[_V], int]) -> list[_V]:
        """The needed ones of ``history`` (live versions of one type, oldest first; ``number`` gives a
        version's number), in order: what a store's query of them answers."""
        floor = self.floor
        chosen = [] if floor is None else [v for v in history if number(v) >= floor]
        # When some version is numbered floor or later, the newest is among them.
        if self.newest and not chosen and history:
            chosen = [history[-1]]
        return chosen


def needed(compatibility: Compatibility) -> Needed:
    """The live versions :func:`evaluate` looks at under ``compatibility``: the newest for Backward,
    Forward and Full (and DenyAll, which asks only whether there is one), all for the Transitive
    policies, those from the floor for Till, none for AllowAny."""
    newest = compatibility.deny_all
    floors: list[int] = []
    for rule in (compatibility.backward, compatibility.forward):
        if rule is None:
            continue
        if rule.scope == "latest":
            newest = True
        elif rule.scope == "till" and rule.till is not None:
            floors.append(rule.till.version)
        else:
            floors.append(0)
    return Needed(newest, min(floors) if floors else None)


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
