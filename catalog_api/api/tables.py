"""``/v1/scopes/{scope}/tables``: tables, the Spark view of a stream and its schema group."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from catalog_api.api import catalog_service
from catalog_api.api.params import flag, page_limit, pull_names
from catalog_api.model import StreamConfig
from catalog_api.service import TableRequest
from registry.api.requests import check_name, json_body
from registry.model import Compatibility

bp = Blueprint("tables", __name__)


@bp.url_value_preprocessor
def _names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    pull_names(values)


@bp.get("")
def list_tables(scope: str) -> Any:
    page = catalog_service().store.list_tables(scope, request.args.get("continuationToken"), page_limit())
    return {"tables": [t.to_json() for t in page.items], "continuationToken": page.continuation_token}


@bp.post("")
def create_table(scope: str) -> Any:
    body = json_body("CreateTableRequest")
    table = TableRequest(
        name=check_name(body["tableName"], "table name"),
        schema=body["schema"],
        format=body.get("format") or "avro",
        compatibility=Compatibility.from_json(body["compatibility"]) if body.get("compatibility") else None,
        comment=body.get("comment") or "",
        properties=dict(body.get("properties") or {}),
        config=StreamConfig.from_json(body),
        location=body.get("location"),
    )
    return catalog_service().create_table(scope, table).to_json(), 201


@bp.get("/<table>")
def get_table(scope: str, table: str) -> Any:
    return catalog_service().store.get_table(scope, table).to_json()


@bp.patch("/<table>")
def alter_table(scope: str, table: str) -> Any:
    body = json_body("AlterTableRequest")
    return catalog_service().alter_table(scope, table, body.get("expectedVersion"), body["changes"]).to_json()


@bp.delete("/<table>")
def drop_table(scope: str, table: str) -> Any:
    catalog_service().drop_table(scope, table, purge=flag("purge"))
    return Response(status=204)
