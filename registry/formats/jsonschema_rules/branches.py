"""Writer branches and reader conjunctions: ``$ref`` and the combinators (``allOf``/``anyOf``/``oneOf``/``not``/``if``).

:func:`expand` turns a writer conjunction into a disjunction of :class:`Branch` (``$ref`` and ``allOf``
inlined, ``anyOf``/``oneOf``/``if``-``then``-``else`` split, ``not`` kept aside);
:func:`reader_parts` inlines a reader's ``$ref`` and ``allOf`` and leaves its other combinators to
the checker in :mod:`registry.formats.jsonschema_compat`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from registry.formats.jsonschema_rules._helpers import _list
from registry.formats.jsonschema_rules.nodes import Node
from registry.formats.jsonschema_rules.type_sets import ALL_TYPES, declared_types


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


def _opt(node: Node | None) -> tuple[Node, ...]:
    return () if node is None else (node,)
