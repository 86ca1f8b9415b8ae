"""``/v1/scopes/{scope}/views``: views, the named queries of Spark's ViewCatalog.

Views hold no data, so whoever may write in a scope may create, replace, rename and drop its
views (replacing a view can change it beyond recognition anyway); reading them needs read on
the scope. docs/views.md.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, current_app

from catalog_api.api.params import pull_names
from catalog_api.views import wire as m
from catalog_api.views.service import ViewService
from registry.api.context import access, list_limit, require
from registry.api.models import PageQuery
from registry.api.operations import operation
from registry.api.requests import check_name
from registry.api.wire import Name
from registry.permissions import Need, Permission, Resource

bp = Blueprint("views", __name__)
#: How the OpenAPI document names the path variable ``view``.
_VIEW = {"view": ("viewName", Name)}


def view_service() -> ViewService:
    """The ViewService of the running application."""
    service: ViewService = current_app.extensions["streamcat"].views
    return service


@bp.url_value_preprocessor
def _names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    pull_names(values)
    if values and "view" in values:
        check_name(values["view"], "view name")


@operation(
    bp,
    "GET",
    "",
    "listViews",
    "List views",
    query=PageQuery,
    response=m.ViewList,
    errors=(400, 404),
    permission=Need("read", "scope", listing=True),
)
def list_views(scope: str, query: PageQuery) -> m.ViewList:
    page = view_service().list_views(scope, query.continuation_token, query.limit or list_limit())
    # A view may read any table of the scope: only those who may read the scope see views.
    readable = access().allows(Permission.READ, Resource.of_namespace(scope))
    views = [m.View.of(v) for v in page.items] if readable else []
    return m.ViewList(views=views, continuation_token=page.continuation_token)


@operation(
    bp,
    "GET",
    "/<view>",
    "getView",
    "A view",
    response=m.View,
    errors=(400, 404),
    permission=Need("read", "scope"),
    path=_VIEW,
)
def get_view(scope: str, view: str) -> m.View:
    return m.View.of(view_service().get_view(scope, view))


@operation(
    bp,
    "PUT",
    "/<view>",
    "putView",
    "Create or replace a view (mode says which)",
    body=m.PutViewRequest,
    response=m.View,
    status=201,
    also=(200,),
    errors=(400, 404, 409),
    permission=Need("write", "scope"),
    path=_VIEW,
)
def put_view(scope: str, view: str, body: m.PutViewRequest) -> tuple[m.View, int]:
    stored, created = view_service().put_view(scope, view, body.to_domain(), body.mode, body.expected_version)
    return m.View.of(stored), 201 if created else 200


@operation(
    bp,
    "DELETE",
    "/<view>",
    "dropView",
    "Drop a view",
    status=204,
    errors=(400, 404),
    permission=Need("write", "scope"),
    path=_VIEW,
)
def drop_view(scope: str, view: str) -> None:
    view_service().drop_view(scope, view)


@operation(
    bp,
    "POST",
    "/<view>/rename",
    "renameView",
    "Rename a view (into another scope too)",
    body=m.RenameViewRequest,
    response=m.View,
    errors=(400, 404, 409),
    permission=Need("write", "scope"),
    path=_VIEW,
)
def rename_view(scope: str, view: str, body: m.RenameViewRequest) -> m.View:
    target = body.scope_name or scope
    if target != scope:
        require(Permission.WRITE, Resource.of_namespace(target))
    return m.View.of(view_service().rename_view(scope, view, target, body.view_name))


def register(app: Flask) -> None:
    """Mount the views at ``/v1/scopes/{scope}/views``."""
    app.register_blueprint(bp, url_prefix="/v1/scopes/<scope>/views")
