"""``/iceberg/v1``: the Iceberg REST catalog (apache/iceberg's ``open-api/rest-catalog-open-api.yaml``).

The same application, authentication and grants as the rest of the API: a namespace is a scope, a
table the table of that name in it, and each route declares its need as Streamcat's own routes do
(listing namespaces or tables shows what the caller may read; dropping a table needs admin on it, as
DROP TABLE does). Errors answer in Iceberg's shape, ``{"error": {"message", "type", "code"}}``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from flask import Blueprint, Flask, Response, current_app, jsonify
from werkzeug.exceptions import HTTPException

from catalog_api.api.params import pull_names
from catalog_api.errors import ScopeNotEmpty, ScopeNotFound
from catalog_api.iceberg import wire as w
from catalog_api.iceberg.errors import NotSupported
from catalog_api.iceberg.model import LoadedTable
from catalog_api.iceberg.service import ENDPOINTS, IcebergService
from catalog_api.iceberg.store import SqlIcebergStore
from catalog_api.iceberg.writer import MetadataWriter
from catalog_api.materialized.errors import MaterializedTableNotFound
from catalog_api.store import Page
from registry.api.context import access, list_limit
from registry.api.operations import Serialized, View, operation
from registry.api.requests import check_name
from registry.errors import AlreadyExists, NotFound, StreamcatError
from registry.permissions import Need, Permission, Resource

bp = Blueprint("iceberg", __name__)
#: The serialized answer of each loaded table the service still holds.
_answers: WeakKeyDictionary[LoadedTable, Serialized] = WeakKeyDictionary()
#: Where the application keeps the IcebergService.
SERVICE_KEY = "streamcat.iceberg"
_ERRORS = (400, 404)


def service() -> IcebergService:
    """The IcebergService of the running application."""
    found: IcebergService = current_app.extensions[SERVICE_KEY]
    return found


def _op(method: str, rule: str, operation_id: str, summary: str, **declaration: Any) -> Callable[[View], View]:
    declaration.setdefault("errors", _ERRORS)
    return operation(bp, method, rule, operation_id, summary, error_model=w.IcebergError, **declaration)


@bp.url_value_preprocessor
def _names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    pull_names(values)


# -- errors --------------------------------------------------------------------------------------------

_TYPES = {400: "BadRequestException", 401: "NotAuthorizedException", 403: "ForbiddenException",
          404: "NotFoundException", 406: "UnsupportedOperationException", 409: "CommitFailedException",
          413: "BadRequestException", 503: "ServiceUnavailableException"}


def _type(error: StreamcatError) -> str:
    if isinstance(error, ScopeNotFound):
        return "NoSuchNamespaceException"
    if isinstance(error, NotFound):
        return "NoSuchTableException"
    if isinstance(error, ScopeNotEmpty):
        return "NamespaceNotEmptyException"
    if isinstance(error, AlreadyExists):
        return "AlreadyExistsException"
    return _TYPES.get(error.status, "InternalServerError")


def _error(status: int, kind: str, message: str) -> Response:
    response = jsonify(w.IcebergError(error=w.ErrorModel(message=message, type=kind, code=status))
                       .model_dump(by_alias=True))
    response.status_code = status
    return response


@bp.errorhandler(StreamcatError)
def _domain_error(error: StreamcatError) -> Response:
    response = _error(error.status, _type(error), error.message)
    response.headers.extend(getattr(error, "headers", ()))  # a 401's WWW-Authenticate challenges
    return response


@bp.errorhandler(HTTPException)
def _http_error(error: HTTPException) -> Response:
    status = error.code or 500
    return _error(status, _TYPES.get(status, "RESTException"), error.description or error.name)


@bp.after_request
def _iceberg_shape(response: Response) -> Response:
    # Errors the application's own handlers answered (an unexpected one, a busy database) get Iceberg's shape.
    if response.status_code >= 400 and response.is_json:
        body = response.get_json(silent=True)
        if isinstance(body, dict) and isinstance(body.get("error"), dict) and "type" not in body["error"]:
            status = response.status_code
            kind = _TYPES.get(status, "InternalServerError")
            message = str(body["error"].get("message", ""))
            response.set_data(w.IcebergError(error=w.ErrorModel(message=message, type=kind, code=status))
                              .model_dump_json())
    return response


def _all(pages: Any, token: str | None, size: int | None) -> tuple[list[Any], str | None]:
    """One page of ``size`` (from ``token``), or, without a size, every page: Iceberg clients that
    send no ``pageSize`` expect the whole listing."""
    limit = size or list_limit()
    items: list[Any] = []
    while True:
        page: Page = pages(token, limit)
        items.extend(page.items)
        token = page.continuation_token if len(page.items) >= limit else None
        if size is not None or token is None:
            return items, token


# -- config and namespaces -------------------------------------------------------------------------------


@_op("GET", "/config", "icebergGetConfig", "Iceberg catalog configuration and the endpoints served",
     query=w.ConfigQuery, response=w.CatalogConfig, errors=(400,), permission=Need("read", listing=True))
def get_config() -> w.CatalogConfig:
    return w.CatalogConfig(defaults={}, overrides={}, endpoints=list(ENDPOINTS))


@_op("GET", "/namespaces", "icebergListNamespaces", "Namespaces (scopes) the caller may read in",
     query=w.ListNamespacesQuery, response=w.NamespaceList, errors=(400,), permission=Need("read", listing=True))
def list_namespaces(query: w.ListNamespacesQuery) -> w.NamespaceList:
    if query.parent:
        return w.NamespaceList(namespaces=[])  # scopes are one level: no namespace has children
    scopes, token = _all(service().list_namespaces, query.page_token, query.page_size)
    readable = access()
    names = [[s.name] for s in scopes if readable.allows_within(Permission.READ, Resource.of_namespace(s.name))]
    return w.NamespaceList(namespaces=names, next_page_token=token)


@_op("POST", "/namespaces", "icebergCreateNamespace", "Create a namespace (a scope)",
     body=w.CreateNamespaceRequest, response=w.Namespace, errors=(400, 409), permission=Need("write"))
def create_namespace(body: w.CreateNamespaceRequest) -> w.Namespace:
    name = check_name(body.namespace[0], "namespace")
    return w.Namespace.of(service().create_namespace(name, dict(body.properties)))


@_op("GET", "/namespaces/<scope>", "icebergLoadNamespace", "A namespace and its properties",
     response=w.Namespace, permission=Need("read", "scope"))
def load_namespace(scope: str) -> w.Namespace:
    return w.Namespace.of(service().get_namespace(scope))


@_op("DELETE", "/namespaces/<scope>", "icebergDropNamespace", "Drop an empty namespace", status=204,
     errors=(400, 404, 409), permission=Need("admin", "scope"))
def drop_namespace(scope: str) -> None:
    service().drop_namespace(scope)


@_op("POST", "/namespaces/<scope>/properties", "icebergUpdateNamespaceProperties",
     "Set and remove namespace properties", body=w.UpdateNamespaceRequest, response=w.UpdateNamespaceResult,
     errors=(400, 404), permission=Need("write", "scope"))
def update_namespace(scope: str, body: w.UpdateNamespaceRequest) -> w.UpdateNamespaceResult:
    removed, missing = service().update_namespace(scope, dict(body.updates), list(body.removals))
    return w.UpdateNamespaceResult(updated=sorted(body.updates), removed=removed, missing=missing)


# -- tables -----------------------------------------------------------------------------------------------


@_op("GET", "/namespaces/<scope>/tables", "icebergListTables", "Tables of a namespace the caller may read",
     query=w.PageQuery, response=w.TableList, permission=Need("read", "scope", listing=True))
def list_tables(scope: str, query: w.PageQuery) -> w.TableList:
    tables, token = _all(lambda t, n: service().list_tables(scope, t, n), query.page_token, query.page_size)
    readable = access()
    shown = [t for t in tables if readable.allows(Permission.READ, Resource.of_group(scope, t.name))]
    return w.TableList.of(scope, shown, token)


@_op("POST", "/namespaces/<scope>/tables", "icebergCreateTable",
     "Create a table of an Iceberg schema and partition spec", body=w.CreateTableRequest,
     response=w.LoadTableResult, errors=(400, 404, 406, 409), permission=Need("write", "scope"))
def create_table(scope: str, body: w.CreateTableRequest) -> w.LoadTableResult:
    if body.stage_create:
        raise NotSupported("staged creation is not supported: create the table, then write to it")
    if body.write_order and body.write_order.get("fields"):
        raise NotSupported("Streamcat tables are unsorted: create the table without a write order")
    name = check_name(body.name, "table name")
    loaded = service().create_table(scope, name, body.schema_, body.partition_spec, dict(body.properties),
                                    body.location)
    return w.LoadTableResult.of(loaded)


# HEAD is mounted before GET on the same path, so that it answers without deriving the metadata.
@_op("HEAD", "/namespaces/<scope>/tables/<table>", "icebergTableExists", "Whether a table exists", status=204,
     permission=Need("read", "table"))
def table_exists(scope: str, table: str) -> None:
    service().table_exists(scope, table)


@_op("GET", "/namespaces/<scope>/tables/<table>", "icebergLoadTable",
     "A table's Iceberg metadata (format v2), derived from its commits", query=w.LoadTableQuery,
     response=w.LoadTableResult, errors=(400, 404, 409), permission=Need("read", "table"))
def load_table(scope: str, table: str, query: w.LoadTableQuery) -> Serialized:
    loaded = service().load_table(scope, table, refs_only=query.snapshots == "refs")
    found = _answers.get(loaded)
    if found is None:
        # The service hands out the same LoadedTable while the table does not change: its answer is
        # serialized once (a long history is megabytes of JSON).
        found = _answers[loaded] = Serialized(w.LoadTableResult.of(loaded).model_dump_json().encode())
    return found


@_op("POST", "/namespaces/<scope>/tables/<table>", "icebergCommitTable",
     "Commit changes to a table: appended Parquet data files, its schema (checked by the group's policy), properties",
     body=w.CommitTableRequest, response=w.CommitTableResponse, errors=(400, 404, 406, 409),
     permission=Need("write", "table"))
def commit_table(scope: str, table: str, body: w.CommitTableRequest) -> w.CommitTableResponse:
    requirements = [r.to_domain() for r in body.requirements]
    updates = [u.to_domain() for u in body.updates]
    return w.CommitTableResponse.of(service().commit_table(scope, table, requirements, updates))


@_op("DELETE", "/namespaces/<scope>/tables/<table>", "icebergDropTable",
     "Drop a table (purgeRequested: its files too, when the server manages its location)", query=w.DropTableQuery,
     status=204, errors=(400, 404, 406), permission=Need("admin", "table"))
def drop_table(scope: str, table: str, query: w.DropTableQuery) -> None:
    service().drop_table(scope, table, purge=query.purge_requested)


@_op("POST", "/tables/rename", "icebergRenameTable", "Rename a table: refused (406), with the reason",
     body=w.RenameTableRequest, status=204, errors=(400, 406), permission=Need("read", listing=True))
def rename_table(body: w.RenameTableRequest) -> None:
    service().rename_table()


def register(app: Flask) -> None:
    """Serve the Iceberg REST catalog at ``/iceberg/v1`` over the application's catalog."""
    streamcat = app.extensions["streamcat"]

    def is_materialized(scope: str, name: str) -> bool:
        try:
            streamcat.materialized.get(scope, name)
        except (MaterializedTableNotFound, NotFound):
            return False
        return True

    app.extensions[SERVICE_KEY] = IcebergService(
        streamcat.catalog, SqlIcebergStore(streamcat.engine), streamcat.registry, MetadataWriter(), is_materialized
    )
    app.register_blueprint(bp, url_prefix="/iceberg/v1")

