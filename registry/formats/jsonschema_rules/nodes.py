"""Schema documents and nodes: draft detection, the keywords each draft validates, ``$ref`` resolution.

:func:`load` reads a parsed schema into its root :class:`Node`; a node resolves its ``$ref`` against
its document's registry (:meth:`Node.deref`) and validates values with ``jsonschema``
(:meth:`Node.accepts`). :data:`Recurse` is the signature of the checker's recursion, which the
object and array rules call back into.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema.validators
from jsonschema.protocols import Validator
from referencing import Registry, Specification
from referencing._core import Resolver
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012, UnknownDialect, specification_with

from registry.formats.base import Incompatibility

#: Checks that the reader node accepts every value of the writer nodes (a conjunction) at a path.
Recurse = Callable[["Node", Sequence["Node"], str], list[Incompatibility]]


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
