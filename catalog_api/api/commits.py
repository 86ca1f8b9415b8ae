"""``/v1/scopes/{scope}/streams/{stream}/commits``, ``/chunks``, ``/changes`` and ``/readers``: the data
path's metadata."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from catalog_api.api import models as m
from catalog_api.api.context import catalog_service
from catalog_api.api.params import pull_names
from registry.api.context import list_limit
from registry.api.operations import operation
from registry.api.requests import check_name
from registry.api.wire import Name
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
    chunks, options = body.to_domain()
    result = catalog_service().commit(scope, stream, chunks, options)
    return m.Commit.of(result), 200 if result.duplicate else 201


@operation(
    bp,
    "GET",
    "/commits/find",
    "findCommit",
    "The commit a writer made with one sequence and the chunk paths it added (404: not made); how a writer "
    "whose answer was lost learns whether its commit was made",
    query=m.FindCommitQuery,
    response=m.WriterCommit,
    errors=(400, 404),
    permission=Need("read", "stream"),
)
def find_commit(scope: str, stream: str, query: m.FindCommitQuery) -> m.WriterCommit:
    return m.WriterCommit.of(catalog_service().find_commit(scope, stream, query.writer_id, query.writer_sequence))


@operation(
    bp, "GET", "/chunks", "listChunks", "Chunks visible at a stream cut", query=m.ChunksQuery, response=m.Snapshot,
    permission=Need("read", "stream"),
)
def chunks(scope: str, stream: str, query: m.ChunksQuery) -> m.Snapshot:
    snapshot = catalog_service().snapshot(
        scope, stream, cut=query.stream_cut, as_of_time=query.as_of_time, after=query.after
    )
    return m.Snapshot.of(snapshot)


@operation(
    bp,
    "POST",
    "/chunks/plan",
    "planChunks",
    "Chunks visible at a stream cut that may hold a row passing the filters (pruned by partition and statistics)",
    body=m.PlanChunksRequest,
    response=m.ChunkPlan,
    errors=(400, 404, 409),
    permission=Need("read", "stream"),
)
def plan_chunks(scope: str, stream: str, body: m.PlanChunksRequest) -> m.ChunkPlan:
    plan = catalog_service().plan_chunks(scope, stream, body.filter_json(), cut=body.cut, as_of_time=body.as_of_time)
    return m.ChunkPlan.of(plan)


@operation(
    bp,
    "GET",
    "/changes",
    "listChanges",
    "Commits between two cuts (no compactions), with the chunks they added and removed",
    query=m.ChangesQuery,
    response=m.ChangeList,
    permission=Need("read", "stream"),
)
def changes(scope: str, stream: str, query: m.ChangesQuery) -> m.ChangeList:
    found = catalog_service().changes(scope, stream, query.after or 0, query.to)
    return m.ChangeList(changes=[m.Change.of(c) for c in found])


#: The reader's name in the document.
_READER = {"reader": ("readerName", Name)}


@operation(bp, "GET", "/readers", "listReaders", "Registered readers of a stream", response=m.ReaderList,
           permission=Need("read", "stream"))
def list_readers(scope: str, stream: str) -> m.ReaderList:
    return m.ReaderList(readers=[m.Reader.of(r) for r in catalog_service().readers(scope, stream)])


@operation(bp, "GET", "/readers/<reader>", "getReader", "A registered reader of a stream", response=m.Reader,
           path=_READER, permission=Need("read", "stream"))
def get_reader(scope: str, stream: str, reader: str) -> m.Reader:
    return m.Reader.of(catalog_service().get_reader(scope, stream, check_name(reader, "reader name")))


@operation(
    bp, "PUT", "/readers/<reader>", "setReader", "Register a reader at the cut it has read up to (or move it)",
    body=m.SetReaderRequest, response=m.Reader, path=_READER, permission=Need("write", "stream"),
)
def set_reader(scope: str, stream: str, reader: str, body: m.SetReaderRequest) -> m.Reader:
    name = check_name(reader, "reader name")
    return m.Reader.of(catalog_service().set_reader(scope, stream, name, body.offset))


@operation(bp, "DELETE", "/readers/<reader>", "deleteReader", "Forget a registered reader", status=204,
           path=_READER, permission=Need("admin", "stream"))
def delete_reader(scope: str, stream: str, reader: str) -> None:
    catalog_service().delete_reader(scope, stream, check_name(reader, "reader name"))
