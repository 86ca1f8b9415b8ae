"""Principals and grants in the database (the ``principals`` and ``grants`` tables)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import Engine, delete, select
from sqlalchemy.exc import IntegrityError

from catalog_api.orm import GrantRow, PrincipalRow
from catalog_api.server.auth.errors import GrantNotFound, PrincipalExists, PrincipalNotFound
from catalog_api.server.auth.principals import EXTERNAL_PREFIXES, Grant, Principal
from registry.api.wire import NAME_PATTERN
from registry.db import Transactions, now_ms, retried
from registry.errors import BadRequest
from registry.permissions import Permission, Resource

_NAME = re.compile(NAME_PATTERN)


def check_principal_name(name: str) -> str:
    """``name`` if it can name a user or token: the names of groups and tables (no colon, which
    marks an identity provider's subjects); BadRequest otherwise."""
    if not _NAME.fullmatch(name):
        raise BadRequest(f"invalid principal name {name!r}: use letters, digits, '_', '-' and '.', at most 255")
    return name


def _grantee(name: str) -> str:
    # Grants name a user or token by its name, or an identity provider's subject (oidc:<sub>).
    if name.startswith(EXTERNAL_PREFIXES):
        if len(name) > 255 or name in EXTERNAL_PREFIXES:
            raise BadRequest(f"invalid principal {name!r}")
        return name
    return check_principal_name(name)


@dataclass(frozen=True)
class StoredPrincipal:
    """A user or token as listed: never its secret."""

    name: str
    kind: str
    role: str | None
    created_at: int
    expires_at: int | None


@dataclass(frozen=True)
class Credentials:
    """What authenticating a user needs: the stored hash and who it is."""

    name: str
    role: str | None
    password_hash: str


def _listed(row: PrincipalRow) -> StoredPrincipal:
    return StoredPrincipal(row.name, row.kind, row.role, row.created_at, row.expires_at)


def _grant(row: GrantRow) -> Grant:
    return Grant(row.principal, Permission.parse(row.permission), Resource.parse(row.resource), row.id, row.created_at)


class PrincipalStore:
    """Users, API tokens and grants, kept in the application's database."""

    def __init__(self, engine: Engine) -> None:
        self._tx = Transactions(engine)

    # -- users and tokens -------------------------------------------------------------------------

    @retried
    def _add(self, row: PrincipalRow) -> StoredPrincipal:
        try:
            with self._tx.write() as session:
                if session.scalar(select(PrincipalRow.id).where(PrincipalRow.name == row.name)) is not None:
                    raise PrincipalExists(f"a user or token named {row.name!r} exists already")
                session.add(row)
                session.flush()
                return _listed(row)
        except IntegrityError:
            # Another process added the same name between the check and the insert.
            raise PrincipalExists(f"a user or token named {row.name!r} exists already") from None

    def add_user(self, name: str, password_hash: str, role: str | None) -> StoredPrincipal:
        """Store a user; PrincipalExists if the name is taken (by a user or a token)."""
        row = PrincipalRow(
            name=check_principal_name(name), kind="user", role=role, secret_hash=password_hash, created_at=now_ms()
        )
        return self._add(row)

    def add_token(self, name: str, digest: str, role: str | None, expires_at: int | None) -> StoredPrincipal:
        """Store an API token by the SHA-256 of its value; PrincipalExists if the name is taken."""
        row = PrincipalRow(
            name=check_principal_name(name),
            kind="token",
            role=role,
            secret_hash=digest,
            expires_at=expires_at,
            created_at=now_ms(),
        )
        return self._add(row)

    @retried
    def remove(self, name: str, kind: str | None = None) -> None:
        """Remove a user or token (of ``kind``, when given) and every grant naming it, at once, so that
        a later principal of the same name does not inherit them; PrincipalNotFound if there is none."""
        with self._tx.write() as session:
            query = delete(PrincipalRow).where(PrincipalRow.name == name)
            if kind is not None:
                query = query.where(PrincipalRow.kind == kind)
            if session.execute(query).rowcount == 0:
                raise PrincipalNotFound(f"no {kind or 'user or token'} named {name!r}")
            session.execute(delete(GrantRow).where(GrantRow.principal == name))

    def principals(self, kind: str | None = None) -> list[StoredPrincipal]:
        """Users and tokens (of ``kind``, when given), by name."""
        with self._tx.read() as session:
            query = select(PrincipalRow).order_by(PrincipalRow.name)
            if kind is not None:
                query = query.where(PrincipalRow.kind == kind)
            return [_listed(row) for row in session.scalars(query)]

    # -- authentication -----------------------------------------------------------------------------

    def user(self, name: str) -> Credentials | None:
        """The stored password hash and role of user ``name``, or None."""
        with self._tx.read() as session:
            row = session.scalars(
                select(PrincipalRow).where(PrincipalRow.name == name, PrincipalRow.kind == "user")
            ).first()
            return None if row is None else Credentials(row.name, row.role, row.secret_hash)

    def token(self, digest: str, now: int) -> Principal | None:
        """The principal of the token whose SHA-256 is ``digest``, with its grants; None if there is
        no such token or it has expired."""
        with self._tx.read() as session:
            row = session.scalars(
                select(PrincipalRow).where(PrincipalRow.secret_hash == digest, PrincipalRow.kind == "token")
            ).first()
            if row is None or (row.expires_at is not None and row.expires_at <= now):
                return None
            grants = session.scalars(select(GrantRow).where(GrantRow.principal == row.name).order_by(GrantRow.id))
            return Principal(row.name, "token", row.role, tuple(_grant(g) for g in grants))

    def grants_of(self, principal: str) -> tuple[Grant, ...]:
        """The stored grants naming ``principal``."""
        with self._tx.read() as session:
            rows = session.scalars(select(GrantRow).where(GrantRow.principal == principal).order_by(GrantRow.id))
            return tuple(_grant(row) for row in rows)

    # -- grants -------------------------------------------------------------------------------------

    def add_grant(self, principal: str, permission: Permission, resource: Resource) -> Grant:
        """Give ``principal`` ``permission`` on ``resource`` (once: the same grant again is returned as
        it is). The principal must be a user or token, or an identity provider's subject."""
        principal = _grantee(principal)
        try:
            return self._add_grant(principal, permission, resource)
        except IntegrityError:
            # The same grant was added by another request between the check and the insert.
            return self._add_grant(principal, permission, resource)

    @retried
    def _add_grant(self, principal: str, permission: Permission, resource: Resource) -> Grant:
        with self._tx.write() as session:
            if not principal.startswith(EXTERNAL_PREFIXES) and (
                session.scalar(select(PrincipalRow.id).where(PrincipalRow.name == principal)) is None
            ):
                raise PrincipalNotFound(
                    f"no user or token named {principal!r}; OIDC subjects are named oidc:<sub>"
                )
            existing = session.scalars(
                select(GrantRow).where(
                    GrantRow.principal == principal,
                    GrantRow.permission == str(permission),
                    GrantRow.resource == str(resource),
                )
            ).first()
            if existing is not None:
                return _grant(existing)
            row = GrantRow(principal=principal, permission=str(permission), resource=str(resource), created_at=now_ms())
            session.add(row)
            session.flush()
            return _grant(row)

    def grants(self, principal: str | None = None) -> list[Grant]:
        """Every grant (naming ``principal``, when given), by principal and resource."""
        with self._tx.read() as session:
            query = select(GrantRow).order_by(GrantRow.principal, GrantRow.resource, GrantRow.permission)
            if principal is not None:
                query = query.where(GrantRow.principal == principal)
            return [_grant(row) for row in session.scalars(query)]

    @retried
    def remove_grant(self, principal: str, permission: Permission, resource: Resource) -> None:
        """Take a grant back; GrantNotFound if there is no such grant."""
        with self._tx.write() as session:
            removed = session.execute(
                delete(GrantRow).where(
                    GrantRow.principal == principal,
                    GrantRow.permission == str(permission),
                    GrantRow.resource == str(resource),
                )
            ).rowcount
            if removed == 0:
                raise GrantNotFound(f"{principal} has no grant of {permission} on {resource}")

    @retried
    def remove_grant_by_id(self, grant_id: int) -> None:
        """Take back the grant with id ``grant_id``; GrantNotFound if there is none."""
        with self._tx.write() as session:
            if session.execute(delete(GrantRow).where(GrantRow.id == grant_id)).rowcount == 0:
                raise GrantNotFound(f"no grant with id {grant_id}")
