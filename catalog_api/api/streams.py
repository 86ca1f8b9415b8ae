"""``/v1/scopes/{scope}/streams``: streams (Pravega controller shapes)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from catalog_api.api import catalog_service
from catalog_api.api.params import flag, page_limit, pull_names
from catalog_api.model import StreamConfig
from registry.api.requests import check_name, json_body

bp = Blueprint("streams", __name__)


@bp.url_value_preprocessor
def _names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    pull_names(values)


@bp.get("")
def list_streams(scope: str) -> Any:
    page = catalog_service().store.list_streams(scope, request.args.get("continuationToken"), page_limit())
    return {"streams": [s.to_json() for s in page.items], "continuationToken": page.continuation_token}


@bp.post("")
def create_stream(scope: str) -> Any:
    body = json_body("CreateStreamRequest")
    stream = catalog_service().create_stream(
        scope, check_name(body["streamName"], "stream name"), StreamConfig.from_json(body), body.get("location")
    )
    return stream.to_json(), 201


@bp.get("/<stream>")
def get_stream(scope: str, stream: str) -> Any:
    return catalog_service().store.get_stream(scope, stream).to_json()


@bp.delete("/<stream>")
def delete_stream(scope: str, stream: str) -> Any:
    catalog_service().delete_stream(scope, stream, purge=flag("purge"))
    return Response(status=204)


@bp.put("/<stream>/state")
def seal_stream(scope: str, stream: str) -> Any:
    json_body("StreamStateRequest")
    return catalog_service().store.seal_stream(scope, stream).to_json()


@bp.post("/<stream>/truncate")
def truncate_stream(scope: str, stream: str) -> Any:
    body = json_body("TruncateRequest")
    return catalog_service().store.truncate_stream(scope, stream, int(body["streamCut"])).to_json()
