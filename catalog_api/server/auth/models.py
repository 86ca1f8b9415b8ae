"""The wire models of ``/v1/admin``: users, API tokens and grants."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from catalog_api.server.auth.principals import Grant as GrantDomain
from catalog_api.server.auth.store import StoredPrincipal
from registry.api.wire import MAX_INT32, NAME_PATTERN, Name, Query, Wire, omitted

Role = Literal["reader", "writer", "admin"]
PermissionName = Literal["read", "write", "admin"]
#: What a grant names: a user or token (a registry-style name), or an identity provider's subject
#: (``oidc:<sub>``: any printable characters, as providers choose their subjects).
GrantPrincipal = Annotated[str, StringConstraints(
    pattern="^(?:" + NAME_PATTERN.strip("^$") + r"|oidc:[^\x00-\x1f\x7f]{1,250})$", max_length=255)]
#: Ten years: a token that should outlive that should not expire at all.
MAX_EXPIRY_SECONDS = 10 * 365 * 24 * 3600


class CreateUserRequest(Wire):
    """``POST /v1/admin/principals/users``: a user who signs in with HTTP Basic."""

    name: Name
    password: Annotated[str, Field(min_length=8, max_length=1024)]
    role: Role | None = None


class CreateTokenRequest(Wire):
    """``POST /v1/admin/principals/tokens``: an API token, valid until revoked or for ``expiresIn`` seconds."""

    name: Name
    role: Role | None = None
    expires_in: Annotated[int, Field(ge=1, le=MAX_EXPIRY_SECONDS)] | None = None


class Principal(Wire):
    """A user or API token (never its secret); ``role`` null: only what grants give."""

    name: str
    kind: Literal["user", "token"]
    role: Role | None
    created_at: int
    expires_at: int | None = omitted()

    @classmethod
    def of(cls, p: StoredPrincipal) -> Principal:
        """The wire form of ``p``."""
        return cls.model_construct(
            name=p.name, kind=p.kind, role=p.role, created_at=p.created_at, expires_at=p.expires_at
        )


class PrincipalList(Wire):
    """Users and tokens, by name."""

    principals: list[Principal]


class CreatedToken(Wire):
    """A new token: ``token`` is shown this once (only its SHA-256 is kept); send it as
    ``Authorization: Bearer <token>``."""

    principal: Principal
    token: str


class PrincipalsQuery(Query):
    """Only users or only tokens."""

    kind: Literal["user", "token"] | None = None


class GrantRequest(Wire):
    """``POST /v1/admin/grants``: ``permission`` on ``resource`` (``*``, ``namespace:NS``,
    ``group:NS/GROUP``, ``scope:S``, ``table:S.T``) for a user, token or ``oidc:<sub>``."""

    principal: GrantPrincipal
    permission: PermissionName
    resource: Annotated[str, Field(min_length=1, max_length=600)]


class Grant(Wire):
    """A grant as stored; scopes and tables are written as the namespaces and groups they are."""

    id: int
    principal: str
    permission: PermissionName
    resource: str
    created_at: int

    @classmethod
    def of(cls, grant: GrantDomain) -> Grant:
        """The wire form of ``grant``."""
        return cls.model_construct(
            id=grant.id,
            principal=grant.principal,
            permission=str(grant.permission),
            resource=str(grant.resource),
            created_at=grant.created_at,
        )


class GrantList(Wire):
    """Grants, by principal and resource."""

    grants: list[Grant]


class GrantsQuery(Query):
    """Only the grants naming one principal."""

    principal: GrantPrincipal | None = None


#: Grant ids in paths are 32-bit, like every other id.
GRANT_ID_MAX = MAX_INT32
