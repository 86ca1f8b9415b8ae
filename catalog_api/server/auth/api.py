"""``/v1/admin``: users, API tokens and grants over REST, for admins only (the CLI has the same)."""

from __future__ import annotations

from flask import Blueprint, current_app

from catalog_api.server.auth import models as m
from catalog_api.server.auth.credentials import hash_password, new_token, token_hash
from catalog_api.server.auth.errors import GrantNotFound
from catalog_api.server.auth.store import PrincipalStore
from registry.api.operations import operation
from registry.api.wire import Int32, Name
from registry.db import now_ms
from registry.permissions import Need, Permission, Resource

bp = Blueprint("admin", __name__)

ADMIN = Need("admin")


def _store() -> PrincipalStore:
    store: PrincipalStore = current_app.extensions["streamcat"].principals
    return store


@operation(bp, "GET", "/principals", "listPrincipals", "Users and API tokens",
           query=m.PrincipalsQuery, response=m.PrincipalList, errors=(400,), permission=ADMIN)
def list_principals(query: m.PrincipalsQuery) -> m.PrincipalList:
    return m.PrincipalList(principals=[m.Principal.of(p) for p in _store().principals(query.kind)])


@operation(bp, "POST", "/principals/users", "createUser", "Add a user (HTTP Basic)",
           body=m.CreateUserRequest, response=m.Principal, status=201, errors=(400, 409), permission=ADMIN)
def create_user(body: m.CreateUserRequest) -> m.Principal:
    return m.Principal.of(_store().add_user(body.name, hash_password(body.password), body.role))


@operation(bp, "POST", "/principals/tokens", "createToken", "Create an API token (shown once)",
           body=m.CreateTokenRequest, response=m.CreatedToken, status=201, errors=(400, 409), permission=ADMIN)
def create_token(body: m.CreateTokenRequest) -> m.CreatedToken:
    token = new_token()
    expires_at = now_ms() + body.expires_in * 1000 if body.expires_in else None
    stored = _store().add_token(body.name, token_hash(token), body.role, expires_at)
    return m.CreatedToken(principal=m.Principal.of(stored), token=token)


@operation(bp, "DELETE", "/principals/<principal>", "deletePrincipal",
           "Remove a user or revoke a token, with its grants", status=204, permission=ADMIN,
           path={"principal": ("principalName", Name)})
def delete_principal(principal: str) -> None:
    _store().remove(principal)


@operation(bp, "GET", "/grants", "listGrants", "Grants", query=m.GrantsQuery, response=m.GrantList, errors=(400,),
           permission=ADMIN)
def list_grants(query: m.GrantsQuery) -> m.GrantList:
    return m.GrantList(grants=[m.Grant.of(grant) for grant in _store().grants(query.principal)])


@operation(bp, "POST", "/grants", "createGrant", "Give a principal a permission on a resource",
           body=m.GrantRequest, response=m.Grant, status=201, errors=(400, 404), permission=ADMIN)
def create_grant(body: m.GrantRequest) -> m.Grant:
    grant = _store().add_grant(body.principal, Permission.parse(body.permission), Resource.parse(body.resource))
    return m.Grant.of(grant)


@operation(bp, "DELETE", "/grants/<int:grant_id>", "deleteGrant", "Take a grant back", status=204, permission=ADMIN,
           path={"grant_id": ("grantId", Int32)})
def delete_grant(grant_id: int) -> None:
    if grant_id > m.GRANT_ID_MAX:
        raise GrantNotFound(f"no grant with id {grant_id}")
    _store().remove_grant_by_id(grant_id)
