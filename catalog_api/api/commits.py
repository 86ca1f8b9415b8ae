"""``/v1/scopes/{scope}/streams/{stream}/commits`` and ``/chunks``: the data path's metadata."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from catalog_api.api import models as m
from catalog_api.api.context import catalog_service
from catalog_api.api.params import pull_names
from registry.api.context import list_limit
from registry.api.operations import operation
from registry.permissions import Need

bp = Blueprint("commits", __name__)


@bp.url_value_preprocessor
def _names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    pull_names(values)


@operation(bp, "GET", "/commits", "listCommits", "Commit history", query=m.CommitsQuery, response=m.CommitList,
           permission=Need("read", "stream"))
def list_commits(scope: str, stream: str, query: m.CommitsQuery) -> m.CommitList:
    found = catalog_service().commits(scope, stream, query.after or 0, query.limit or list_limit())
    return m.CommitList(commits=[m.Commit.of(c) for c in found])


@operation(
    bp,
    "POST",
    "/commits",
    "commit",
    "Append chunks atomically (200: a repeated writer sequence, acknowledged)",
    body=m.CommitRequest,
    response=m.Commit,
    status=201,
    also=(200,),
    errors=(400, 404, 409),
    permission=Need("write", "stream"),
)
def commit(scope: str, stream: str, body: m.CommitRequest) -> tuple[m.Commit, int]:
    result = catalog_service().commit(
        scope,
        stream,
        [c.to_domain() for c in body.chunks],
        overwrite=body.overwrite,
        writer_id=body.writer_id,
        writer_sequence=body.writer_sequence,
        properties=dict(body.properties),
    )
    return m.Commit.of(result), 200 if result.duplicate else 201


@operation(
    bp, "GET", "/chunks", "listChunks", "Chunks visible at a stream cut", query=m.ChunksQuery, response=m.Snapshot,
    permission=Need("read", "stream"),
)
def chunks(scope: str, stream: str, query: m.ChunksQuery) -> m.Snapshot:
    snapshot = catalog_service().snapshot(
        scope, stream, cut=query.stream_cut, as_of_time=query.as_of_time, after=query.after
    )
    return m.Snapshot.of(snapshot)
