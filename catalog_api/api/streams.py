"""``/v1/scopes/{scope}/streams``: streams (Pravega controller shapes)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from catalog_api.api import models as m
from catalog_api.api.context import catalog_service
from catalog_api.api.params import pull_names
from registry.api.context import access, list_limit
from registry.api.models import PageQuery
from registry.api.operations import operation
from registry.permissions import Need, Permission, Resource

bp = Blueprint("streams", __name__)


@bp.url_value_preprocessor
def _names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    pull_names(values)


@operation(bp, "GET", "", "listStreams", "List streams", query=PageQuery, response=m.StreamList,
           permission=Need("read", "scope", listing=True))
def list_streams(scope: str, query: PageQuery) -> m.StreamList:
    page = catalog_service().list_streams(scope, query.continuation_token, query.limit or list_limit())
    # Only the streams the caller may read (a page may hold fewer than ``limit``).
    readable = access()
    streams = [m.Stream.of(s) for s in page.items if readable.allows(Permission.READ, Resource.of_group(scope, s.name))]
    return m.StreamList(streams=streams, continuation_token=page.continuation_token)


@operation(
    bp,
    "POST",
    "",
    "createStream",
    "Create a stream",
    body=m.CreateStreamRequest,
    response=m.Stream,
    status=201,
    errors=(400, 404, 409),
    permission=Need("write", "scope"),
)
def create_stream(scope: str, body: m.CreateStreamRequest) -> m.Stream:
    created = catalog_service().create_stream(scope, body.stream_name, body.stream_config(), body.location)
    return m.Stream.of(created)


@operation(bp, "GET", "/<stream>", "getStream", "A stream", response=m.Stream, permission=Need("read", "stream"))
def get_stream(scope: str, stream: str) -> m.Stream:
    return m.Stream.of(catalog_service().get_stream(scope, stream))


@operation(
    bp,
    "DELETE",
    "/<stream>",
    "deleteStream",
    "Delete a stream",
    query=m.PurgeQuery,
    status=204,
    errors=(400, 404, 409),
    permission=Need("admin", "stream"),
)
def delete_stream(scope: str, stream: str, query: m.PurgeQuery) -> None:
    catalog_service().delete_stream(scope, stream, purge=query.purge)


@operation(
    bp, "PUT", "/<stream>/state", "updateStreamState", "Seal a stream", body=m.StreamStateRequest, response=m.Stream,
    permission=Need("write", "stream"),
)
def seal_stream(scope: str, stream: str, body: m.StreamStateRequest) -> m.Stream:
    return m.Stream.of(catalog_service().seal_stream(scope, stream))


@operation(
    bp,
    "POST",
    "/<stream>/truncate",
    "truncateStream",
    "Cut off commits up to a stream cut",
    body=m.TruncateRequest,
    response=m.Stream,
    permission=Need("admin", "stream"),
)
def truncate_stream(scope: str, stream: str, body: m.TruncateRequest) -> m.Stream:
    return m.Stream.of(catalog_service().truncate_stream(scope, stream, body.stream_cut))


@operation(
    bp,
    "POST",
    "/<stream>/expire",
    "expireStream",
    "Expire old cuts: move the oldest readable cut forward (never past a registered reader's offset)",
    body=m.ExpireRequest,
    response=m.Stream,
    permission=Need("write", "stream"),
)
def expire_stream(scope: str, stream: str, body: m.ExpireRequest) -> m.Stream:
    return m.Stream.of(catalog_service().expire(scope, stream, body.older_than, body.retain_last))
