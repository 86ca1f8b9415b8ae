"""Who may do what, in the API's words: permissions, the resources they apply to, and what a
route needs.

A route declares a :class:`Need` (``Need("write", "group")``) whose resource is named by the
route's path values; roles and grants give a :class:`Permission` on a :class:`Resource`. The
catalog's names map onto the registry's: a scope is its namespace, a table (and its stream) is
the group of the same name in it. Deciding is the application shell's business; views only
declare, and ask the request's :class:`Access` which items of a listing to show. No Flask here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal, Protocol

from registry.api.wire import NAME_PATTERN
from registry.errors import BadRequest

_NAME = re.compile(NAME_PATTERN)


class Permission(IntEnum):
    """What a principal may do; each includes the ones below it."""

    READ = 1
    WRITE = 2
    ADMIN = 3

    @classmethod
    def parse(cls, text: str) -> Permission:
        """``read``, ``write`` or ``admin``; BadRequest otherwise."""
        try:
            return cls[text.upper()]
        except KeyError:
            raise BadRequest(f"unknown permission {text!r}; expected read, write or admin") from None

    def __str__(self) -> str:
        return self.name.lower()


def _name(value: str, what: str) -> str:
    if not _NAME.fullmatch(value):
        raise BadRequest(f"invalid {what} {value!r} in a resource")
    return value


@dataclass(frozen=True)
class Resource:
    """Everything (``*``), a namespace (``namespace:NS``, the scope of the same name), or one
    group of a namespace (``group:NS/GROUP``, the table and stream of the same name).

    The default namespace is the empty string: ``namespace:`` and ``group:/GROUP``.
    """

    kind: Literal["*", "namespace", "group"]
    namespace: str = ""
    group: str = ""

    @classmethod
    def of_namespace(cls, namespace: str) -> Resource:
        """The namespace (or scope) ``namespace``."""
        return cls("namespace", namespace)

    @classmethod
    def of_group(cls, namespace: str, group: str) -> Resource:
        """The group ``group`` of ``namespace`` (or the table of that name in that scope)."""
        return cls("group", namespace, group)

    @classmethod
    def parse(cls, text: str) -> Resource:
        """A resource as grants write it: ``*``, ``namespace:NS``, ``group:NS/GROUP``, ``scope:S``
        (= ``namespace:S``) or ``table:S.T`` (= ``group:S/T``); BadRequest otherwise."""
        if text == "*":
            return EVERYTHING
        kind, sep, rest = text.partition(":")
        if not sep:
            raise BadRequest(f"invalid resource {text!r}: use *, namespace:NS, group:NS/GROUP, scope:S or table:S.T")
        if kind == "namespace":
            return cls.of_namespace(_name(rest, "namespace") if rest else "")
        if kind == "scope":
            return cls.of_namespace(_name(rest, "scope"))
        if kind == "group":
            namespace, slash, group = rest.partition("/")
            if not slash:
                raise BadRequest(f"invalid resource {text!r}: a group is group:NAMESPACE/GROUP")
            return cls.of_group(_name(namespace, "namespace") if namespace else "", _name(group, "group"))
        if kind == "table":
            # Scope names may hold dots too: one dot is unambiguous, more are refused.
            if rest.count(".") != 1:
                raise BadRequest(
                    f"invalid resource {text!r}: a table is table:SCOPE.TABLE; when a name holds a dot, "
                    "write group:SCOPE/TABLE"
                )
            scope, _, table = rest.partition(".")
            return cls.of_group(_name(scope, "scope"), _name(table, "table"))
        raise BadRequest(f"invalid resource {text!r}: use *, namespace:NS, group:NS/GROUP, scope:S or table:S.T")

    def covers(self, other: Resource) -> bool:
        """Whether a permission on this resource applies to ``other`` (a namespace covers its groups)."""
        if self.kind == "*":
            return True
        if other.kind == "*" or other.namespace != self.namespace:
            return False
        return self.kind == "namespace" or (other.kind == "group" and other.group == self.group)

    def __str__(self) -> str:
        if self.kind == "*":
            return "*"
        if self.kind == "namespace":
            return f"namespace:{self.namespace}"
        return f"group:{self.namespace}/{self.group}"


EVERYTHING = Resource("*")

#: The path values a Need may name: the registry's, and the catalog's that stand for them.
PathResource = Literal["*", "namespace", "group", "scope", "table", "stream"]


@dataclass(frozen=True)
class Need:
    """What a route needs: ``permission`` on the resource its path names (``on``).

    ``on`` is ``*`` (the whole server), ``namespace`` or ``scope`` (the namespace the path
    names), or ``group``, ``table`` or ``stream`` (one group: ``table`` and ``stream`` are the
    group of that name in the path's scope). A ``listing`` route lists what is inside its
    resource: it is open to a principal who may ``permission`` on the resource or on anything
    in it, and the view shows only the items that principal may see.
    """

    permission: Permission
    on: PathResource = "*"
    listing: bool = False

    def __init__(self, permission: Permission | str, on: PathResource = "*", *, listing: bool = False) -> None:
        level = permission if isinstance(permission, Permission) else Permission.parse(permission)
        object.__setattr__(self, "permission", level)
        object.__setattr__(self, "on", on)
        object.__setattr__(self, "listing", listing)

    def resource(self, values: Mapping[str, str]) -> Resource:
        """The resource a request names, from its path values (``namespace``, ``group``, ``scope``,
        ``stream``, ``table``); KeyError when the route does not have the values ``on`` needs."""
        if self.on == "*":
            return EVERYTHING
        if self.on == "namespace":
            return Resource.of_namespace(values["namespace"])
        if self.on == "scope":
            return Resource.of_namespace(values["scope"])
        if self.on == "group":
            return Resource.of_group(values["namespace"], values["group"])
        return Resource.of_group(values["scope"], values[self.on])

    def __str__(self) -> str:
        return f"{self.permission} on {self.on}" + (" (listing)" if self.listing else "")


class Access(Protocol):
    """What the caller of the current request may do; the shell puts one in the request context."""

    def allows(self, permission: Permission, resource: Resource) -> bool:
        """Whether the caller has ``permission`` on ``resource`` (or on what contains it)."""
        ...

    def allows_within(self, permission: Permission, resource: Resource) -> bool:
        """Whether the caller has ``permission`` on ``resource`` or on anything inside it (a
        listing of scopes shows those in which the caller can read something)."""
        ...
