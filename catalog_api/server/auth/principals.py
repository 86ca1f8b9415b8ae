"""Principals and what they may do: a role everywhere, plus grants on single resources.

A principal is a user (``alice``), an API token (``ci-loader``) or an OIDC subject
(``oidc:<sub>``). Its rights are the role's permission on everything and, for each grant, the
grant's permission on the grant's resource and everything inside it (a namespace covers its
groups). Permissions are ordered: ``admin`` includes ``write``, which includes ``read``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from registry.errors import BadRequest
from registry.permissions import EVERYTHING, Permission, Resource

#: The roles and the permission each gives on everything.
ROLES: dict[str, Permission] = {"reader": Permission.READ, "writer": Permission.WRITE, "admin": Permission.ADMIN}
#: Principal names with a colon belong to an identity provider (``oidc:<sub>``); users and tokens have none.
EXTERNAL_PREFIXES = ("oidc:",)

Kind = Literal["user", "token", "oidc", "anonymous"]


def parse_role(text: str | None) -> str | None:
    """``reader``, ``writer``, ``admin`` or None (no role: only what grants give); BadRequest otherwise."""
    if text is None or text in ROLES:
        return text
    raise BadRequest(f"unknown role {text!r}; expected reader, writer or admin")


@dataclass(frozen=True)
class Grant:
    """A permission on a resource, given to one principal (``id`` 0: not stored, from a token's claim)."""

    principal: str
    permission: Permission
    resource: Resource
    id: int = 0
    created_at: int = 0


@dataclass(frozen=True)
class Principal:
    """Someone authenticated, with everything they may do. Implements registry.permissions.Access."""

    name: str
    kind: Kind
    role: str | None = None
    grants: tuple[Grant, ...] = field(default=())

    def _rights(self) -> Iterable[tuple[Permission, Resource]]:
        if self.role is not None:
            yield ROLES[self.role], EVERYTHING
        for grant in self.grants:
            yield grant.permission, grant.resource

    def allows(self, permission: Permission, resource: Resource) -> bool:
        """Whether a role or grant gives ``permission`` (or more) on ``resource`` or what contains it."""
        if self.role is not None and ROLES[self.role] >= permission:
            return True  # the role's permission is on everything (asked on every request: no generator)
        return any(level >= permission and held.covers(resource) for level, held in self._rights())

    def allows_within(self, permission: Permission, resource: Resource) -> bool:
        """Whether the principal has ``permission`` on ``resource`` or on anything inside it (who may
        list what is inside: the listing then shows only that)."""
        return any(
            level >= permission and (held.covers(resource) or resource.covers(held)) for level, held in self._rights()
        )


#: The caller when STREAMCAT_AUTH=none: nobody is asked who they are, and everyone may do everything.
ANONYMOUS = Principal("anonymous", "anonymous", role="admin")


def rights_from_claim(subject: str, values: object) -> tuple[str | None, tuple[Grant, ...], list[str]]:
    """The role and grants an OIDC token's claim gives ``subject``: a list of strings, each a role
    (``reader``, ``writer``, ``admin``) or a grant ``PERMISSION:RESOURCE`` (``write:scope:shop``).

    Returns the highest role, the grants, and the entries that were neither (ignored, so that an
    identity provider may put other values in the same claim; the caller logs them).
    """
    if not isinstance(values, list):
        return None, (), [] if values is None else [repr(values)[:100]]
    role: str | None = None
    grants: list[Grant] = []
    ignored: list[str] = []
    for value in values:
        if not isinstance(value, str):
            ignored.append(repr(value)[:100])
        elif value in ROLES:
            if role is None or ROLES[value] > ROLES[role]:
                role = value
        else:
            permission, sep, resource = value.partition(":")
            try:
                if not sep:
                    raise BadRequest(value)
                grants.append(Grant(subject, Permission.parse(permission), Resource.parse(resource)))
            except BadRequest:
                ignored.append(value[:100])
    return role, tuple(grants), ignored
