"""``/v1/scopes/{scope}/materializedTables``: materialized tables, their lifecycle and the refresher's calls.

A materialized table is a table: reading one needs read on it, changing its definition or status
write on it, as ALTER TABLE does; creating one needs write on the scope, as CREATE TABLE does. The
refresher's lease and its reports need write on the table too (a refresh commits to it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from flask import Blueprint, Flask, current_app

from catalog_api.api.params import pull_names
from catalog_api.materialized import wire as m
from catalog_api.materialized.model import parse_freshness
from catalog_api.materialized.service import MaterializedService
from registry.api.context import access, list_limit
from registry.api.models import PageQuery
from registry.api.operations import operation
from registry.errors import BadRequest
from registry.permissions import Need, Permission, Resource

bp = Blueprint("materialized", __name__)


def materialized_service() -> MaterializedService:
    """The MaterializedService of the running application."""
    service: MaterializedService = current_app.extensions["streamcat"].materialized
    return service


def _freshness(text: str) -> int:
    try:
        return parse_freshness(text)
    except ValueError as e:
        raise BadRequest(f"freshness: {e}") from None


@bp.url_value_preprocessor
def _names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    pull_names(values)


@operation(
    bp, "GET", "", "listMaterializedTables", "List materialized tables", query=PageQuery,
    response=m.MaterializedTableList, errors=(400, 404), permission=Need("read", "scope", listing=True),
)
def list_materialized(scope: str, query: PageQuery) -> m.MaterializedTableList:
    page = materialized_service().list_tables(scope, query.continuation_token, query.limit or list_limit())
    readable = access()
    tables = [
        m.MaterializedTable.of(t)
        for t in page.items
        if readable.allows(Permission.READ, Resource.of_group(scope, t.name))
    ]
    return m.MaterializedTableList(materialized_tables=tables, continuation_token=page.continuation_token)


@operation(
    bp, "POST", "", "createMaterializedTable", "Create a materialized table (table + definition)",
    body=m.CreateMaterializedTableRequest, response=m.MaterializedTable, status=201, errors=(400, 404, 409),
    permission=Need("write", "scope"),
)
def create_materialized(scope: str, body: m.CreateMaterializedTableRequest) -> m.MaterializedTable:
    definition = replace(body.definition(_freshness(body.freshness), body.refresh_mode), options=dict(body.options))
    created = materialized_service().create(
        scope, body.table_name, definition, body.schema_.model_dump(mode="json"), tuple(body.primary_key),
        body.format, body.comment, tuple(body.partitioned_by),
    )
    return m.MaterializedTable.of(created)


@operation(
    bp, "GET", "/<table>", "getMaterializedTable", "A materialized table", response=m.MaterializedTable,
    errors=(400, 404), permission=Need("read", "table"),
)
def get_materialized(scope: str, table: str) -> m.MaterializedTable:
    return m.MaterializedTable.of(materialized_service().get(scope, table))


@operation(
    bp, "PATCH", "/<table>", "alterMaterializedTable", "Change freshness, refresh mode or query; suspend or resume",
    body=m.AlterMaterializedTableRequest, response=m.MaterializedTable, errors=(400, 404, 409),
    permission=Need("write", "table"),
)
def alter_materialized(scope: str, table: str, body: m.AlterMaterializedTableRequest) -> m.MaterializedTable:
    service = materialized_service()
    altered = None
    if body.freshness is not None or body.refresh_mode is not None or body.query is not None:
        freshness = None if body.freshness is None else _freshness(body.freshness)
        current = service.get(scope, table).definition
        query = None
        if body.query is not None:
            new = body.query.definition(freshness or current.freshness_ms, body.refresh_mode or current.refresh_mode)
            query = (new, body.query.schema_.model_dump(mode="json"))
        altered = service.alter(scope, table, freshness_ms=freshness, refresh_mode=body.refresh_mode, query=query)
    if body.action == "suspend":
        altered = service.suspend(scope, table)
    elif body.action == "resume":
        altered = service.resume(scope, table)
    return m.MaterializedTable.of(altered or service.get(scope, table))


@operation(
    bp, "POST", "/<table>/lease", "acquireRefreshLease", "Hold or renew the refresh lease (409 while another holds it)",
    body=m.LeaseRequest, response=m.MaterializedTable, errors=(400, 404, 409), permission=Need("write", "table"),
)
def acquire_lease(scope: str, table: str, body: m.LeaseRequest) -> m.MaterializedTable:
    return m.MaterializedTable.of(materialized_service().acquire_lease(scope, table, body.holder, body.ttl_ms))


@operation(
    bp, "POST", "/<table>/refreshes", "recordRefresh", "Record what a refresh came to (the lease holder only)",
    body=m.RefreshReport, response=m.MaterializedTable, errors=(400, 404, 409), permission=Need("write", "table"),
)
def record_refresh(scope: str, table: str, body: m.RefreshReport) -> m.MaterializedTable:
    recorded = materialized_service().record_refresh(
        scope, table, body.holder, body.outcome, commit=body.commit, cuts=body.cuts, duration_ms=body.duration_ms,
        error=body.error, release=body.release, scheduled_at=body.scheduled_at,
    )
    return m.MaterializedTable.of(recorded)


def register(app: Flask) -> None:
    """Mount materialized tables at ``/v1/scopes/{scope}/materializedTables``."""
    app.register_blueprint(bp, url_prefix="/v1/scopes/<scope>/materializedTables")
