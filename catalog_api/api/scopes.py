"""``/v1/scopes``: scopes (Spark databases, registry namespaces)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from catalog_api.api import catalog_service
from catalog_api.api.params import flag, page_limit, pull_names
from catalog_api.model import Scope
from registry.api.requests import check_name, json_body

bp = Blueprint("scopes", __name__)


@bp.url_value_preprocessor
def _names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    pull_names(values)


@bp.get("")
def list_scopes() -> Any:
    page = catalog_service().list_scopes(request.args.get("continuationToken"), page_limit())
    return {"scopes": [s.to_json() for s in page.items], "continuationToken": page.continuation_token}


@bp.post("")
def create_scope() -> Any:
    body = json_body("CreateScopeRequest")
    scope = Scope(
        check_name(body["scopeName"], "scope name"), body.get("comment") or "", dict(body.get("properties") or {})
    )
    return catalog_service().create_scope(scope).to_json(), 201


@bp.get("/<scope>")
def get_scope(scope: str) -> Any:
    return catalog_service().store.get_scope(scope).to_json()


@bp.put("/<scope>")
def update_scope(scope: str) -> Any:
    body = json_body("UpdateScopeRequest")
    updated = catalog_service().store.alter_scope(
        scope, dict(body.get("properties") or {}), list(body.get("removeProperties") or []), body.get("comment")
    )
    return updated.to_json()


@bp.delete("/<scope>")
def delete_scope(scope: str) -> Any:
    catalog_service().delete_scope(scope, cascade=flag("cascade"), purge=flag("purge"))
    return Response(status=204)
