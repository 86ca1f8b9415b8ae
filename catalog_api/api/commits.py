"""``/v1/scopes/{scope}/streams/{stream}/commits`` and ``/chunks``: the data path's metadata."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from catalog_api.api import catalog_service
from catalog_api.api.params import optional_int, page_limit, pull_names
from catalog_api.model import Chunk
from registry.api.requests import json_body

bp = Blueprint("commits", __name__)


@bp.url_value_preprocessor
def _names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    pull_names(values)


@bp.get("/commits")
def list_commits(scope: str, stream: str) -> Any:
    found = catalog_service().store.commits(scope, stream, optional_int("after") or 0, page_limit())
    return {"commits": [c.to_json() for c in found]}


@bp.post("/commits")
def commit(scope: str, stream: str) -> Any:
    body = json_body("CommitRequest")
    result = catalog_service().commit(
        scope,
        stream,
        [Chunk.from_json(c) for c in body["chunks"]],
        overwrite=bool(body.get("overwrite")),
        writer_id=body.get("writerId"),
        writer_sequence=body.get("writerSequence"),
        properties=dict(body.get("properties") or {}),
    )
    return result.to_json(), 200 if result.duplicate else 201


@bp.get("/chunks")
def chunks(scope: str, stream: str) -> Any:
    snapshot = catalog_service().snapshot(
        scope, stream, cut=optional_int("streamCut"), as_of_time=optional_int("asOfTime"), after=optional_int("after")
    )
    return snapshot.to_json()
