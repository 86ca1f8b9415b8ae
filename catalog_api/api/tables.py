"""``/v1/scopes/{scope}/tables``: tables, the Spark view of a stream and its schema group."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from catalog_api.api import models as m
from catalog_api.api.context import catalog_service
from catalog_api.api.params import pull_names
from catalog_api.changes import sets_policy
from catalog_api.service import TableRequest
from registry.api.context import access, list_limit, require
from registry.api.models import PageQuery
from registry.api.operations import operation
from registry.permissions import Need, Permission, Resource

bp = Blueprint("tables", __name__)


@bp.url_value_preprocessor
def _names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    pull_names(values)


def _table_request(body: m.CreateTableRequest) -> TableRequest:
    # Here rather than on the model: TableRequest belongs to the service, which clients do not import.
    return TableRequest(
        name=body.table_name,
        schema=body.schema_.model_dump(mode="json"),
        format=body.format or "avro",
        compatibility=body.compatibility.to_domain() if body.compatibility else None,
        comment=body.comment,
        properties=dict(body.properties),
        config=body.stream_config(),
        location=body.location,
        partitioning=body.partitioning,
    )


@operation(bp, "GET", "", "listTables", "List tables", query=PageQuery, response=m.TableList, errors=(400, 404, 409),
           permission=Need("read", "scope", listing=True))
def list_tables(scope: str, query: PageQuery) -> m.TableList:
    page = catalog_service().list_tables(scope, query.continuation_token, query.limit or list_limit())
    # Only the tables the caller may read (a page may hold fewer than ``limit``).
    readable = access()
    tables = [m.Table.of(t) for t in page.items if readable.allows(Permission.READ, Resource.of_group(scope, t.name))]
    return m.TableList(tables=tables, continuation_token=page.continuation_token)


@operation(
    bp,
    "POST",
    "",
    "createTable",
    "Create a table (stream + group + schema)",
    body=m.CreateTableRequest,
    response=m.Table,
    status=201,
    errors=(400, 404, 409),
    permission=Need("write", "scope"),
)
def create_table(scope: str, body: m.CreateTableRequest) -> m.Table:
    return m.Table.of(catalog_service().create_table(scope, _table_request(body)))


@operation(bp, "GET", "/<table>", "getTable", "A table", response=m.Table, errors=(400, 404, 409),
           permission=Need("read", "table"))
def get_table(scope: str, table: str) -> m.Table:
    return m.Table.of(catalog_service().get_table(scope, table))


@operation(
    bp,
    "PATCH",
    "/<table>",
    "alterTable",
    "Apply table changes",
    body=m.AlterTableRequest,
    response=m.Table,
    errors=(400, 404, 409),
    permission=Need("write", "table"),
)
def alter_table(scope: str, table: str, body: m.AlterTableRequest) -> m.Table:
    changes = body.to_domain()
    if sets_policy(changes):
        # Writers alter tables; changing the group's policy is an admin's.
        require(Permission.ADMIN, Resource.of_group(scope, table))
    altered = catalog_service().alter_table(scope, table, body.expected_version, changes)
    return m.Table.of(altered)


@operation(bp, "GET", "/<table>/partitions", "listPartitions",
           "Partitions of the table's current spec, with what their live chunks hold", response=m.PartitionList,
           errors=(400, 404, 409), permission=Need("read", "table"))
def list_partitions(scope: str, table: str) -> m.PartitionList:
    return m.PartitionList.of(catalog_service().partitions(scope, table))


@operation(bp, "DELETE", "/<table>", "dropTable", "Drop a table", query=m.PurgeQuery, status=204,
           permission=Need("admin", "table"))
def drop_table(scope: str, table: str, query: m.PurgeQuery) -> None:
    catalog_service().drop_table(scope, table, purge=query.purge)
