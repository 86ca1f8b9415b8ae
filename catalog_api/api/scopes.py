"""``/v1/scopes``: scopes (Spark databases, registry namespaces)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from catalog_api.api import models as m
from catalog_api.api.context import catalog_service
from catalog_api.api.params import pull_names
from registry.api.context import access, list_limit
from registry.api.models import PageQuery
from registry.api.operations import operation
from registry.permissions import Need, Permission, Resource

bp = Blueprint("scopes", __name__)


@bp.url_value_preprocessor
def _names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    pull_names(values)


@operation(bp, "GET", "", "listScopes", "List scopes", query=PageQuery, response=m.ScopeList, errors=(400,),
           permission=Need("read", listing=True))
def list_scopes(query: PageQuery) -> m.ScopeList:
    page = catalog_service().list_scopes(query.continuation_token, query.limit or list_limit())
    # The scopes in which the caller may read something (a page may hold fewer than ``limit``).
    readable = access()
    scopes = [
        m.Scope.of(s) for s in page.items if readable.allows_within(Permission.READ, Resource.of_namespace(s.name))
    ]
    return m.ScopeList(scopes=scopes, continuation_token=page.continuation_token)


@operation(
    bp,
    "POST",
    "",
    "createScope",
    "Create a scope",
    body=m.CreateScopeRequest,
    response=m.Scope,
    status=201,
    errors=(400, 409),
    permission=Need("write"),
)
def create_scope(body: m.CreateScopeRequest) -> m.Scope:
    return m.Scope.of(catalog_service().create_scope(body.to_domain()))


@operation(bp, "GET", "/<scope>", "getScope", "A scope", response=m.Scope, permission=Need("read", "scope"))
def get_scope(scope: str) -> m.Scope:
    return m.Scope.of(catalog_service().get_scope(scope))


@operation(
    bp, "PUT", "/<scope>", "updateScope", "Set or remove scope properties", body=m.UpdateScopeRequest, response=m.Scope,
    permission=Need("write", "scope"),
)
def update_scope(scope: str, body: m.UpdateScopeRequest) -> m.Scope:
    updated = catalog_service().alter_scope(scope, dict(body.properties), list(body.remove_properties), body.comment)
    return m.Scope.of(updated)


@operation(
    bp,
    "DELETE",
    "/<scope>",
    "deleteScope",
    "Delete a scope",
    query=m.DeleteScopeQuery,
    status=204,
    errors=(400, 404, 409),
    permission=Need("admin", "scope"),
)
def delete_scope(scope: str, query: m.DeleteScopeQuery) -> None:
    catalog_service().delete_scope(scope, cascade=query.cascade, purge=query.purge)
