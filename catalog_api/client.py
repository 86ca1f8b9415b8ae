"""A Python client for the catalog API: scopes, streams, tables, commits, snapshots, scan plans,
partitions, change descriptions, registered readers and expiry.

Requests are built from the wire models (``catalog_api.api.models``) and checked as the server
will check them; answers are checked against them too, and handed back as plain JSON dicts
(the REST shapes), except snapshots and scan plans, which come back as domain chunks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import requests
from pydantic import BaseModel

from catalog_api.api import models as wire
from catalog_api.errors import CommitConflict, CommitNotFound
from catalog_api.model import Chunk, CommitOptions, Plan, TableCommit
from registry.api.models import Compatibility
from registry.api.validation import parse_json
from registry.client import raise_for, read, write
from registry.credentials import ClientCert, Credentials

if TYPE_CHECKING:
    from catalog_api.materialized.wire import MaterializedTableList

#: Page size of the listings the client walks through.
_PAGE = 500
#: Errors a caller of :meth:`CatalogClient.commit` may catch by name (409 CommitConflict is raised as it).
__all__ = ["CatalogClient", "CommitConflict"]


def _q(name: str) -> str:
    return quote(name, safe="")


def _checked(model: type[BaseModel], answer: Any) -> dict[str, Any]:
    read(model, answer)
    return dict(answer)


class CatalogClient:
    """Talks to the catalog REST API. Answers are plain JSON dicts (the REST shapes).

    Credentials and TLS as for ``registry.client.RegistryClient``: ``token=`` or ``auth=(user,
    password)``, ``verify=`` (a PEM CA bundle), ``cert=`` (a client certificate).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 60.0,
        session: requests.Session | None = None,
        token: str | None = None,
        auth: tuple[str, str] | None = None,
        verify: bool | str | None = None,
        cert: ClientCert | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.http = Credentials.of(token=token, auth=auth, verify=verify, cert=cert).session(session)

    def _call(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        response = self.http.request(method, f"{self.url}{path}", json=body, params=params, timeout=self.timeout)
        raise_for(response)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def _pages(
        self, path: str,
        model: type[wire.ScopeList | wire.StreamList | wire.TableList | MaterializedTableList], key: str,
    ) -> Iterator[dict[str, Any]]:
        token = None
        while True:
            params: dict[str, Any] = {"limit": _PAGE}
            if token:
                params["continuationToken"] = token
            body = self._call("GET", path, params=params)
            read(model, body)
            yield from body[key]
            if len(body[key]) < _PAGE:
                return
            token = body["continuationToken"]

    # -- scopes -----------------------------------------------------------------------------------

    def create_scope(self, name: str, comment: str = "", properties: dict[str, str] | None = None) -> dict[str, Any]:
        """Create a scope."""
        body = wire.CreateScopeRequest.model_construct(scope_name=name, comment=comment, properties=properties or {})
        return _checked(wire.Scope, self._call("POST", "/v1/scopes", write(body)))

    def get_scope(self, name: str) -> dict[str, Any]:
        """A scope."""
        return _checked(wire.Scope, self._call("GET", f"/v1/scopes/{_q(name)}"))

    def list_scopes(self) -> list[dict[str, Any]]:
        """Every scope."""
        return list(self._pages("/v1/scopes", wire.ScopeList, "scopes"))

    def update_scope(
        self,
        name: str,
        properties: dict[str, str] | None = None,
        remove: Sequence[str] = (),
        comment: str | None = None,
    ) -> dict[str, Any]:
        """Set or remove properties, change the comment."""
        body = wire.UpdateScopeRequest.model_construct(
            properties=properties or {}, remove_properties=list(remove), comment=comment
        )
        return _checked(wire.Scope, self._call("PUT", f"/v1/scopes/{_q(name)}", write(body)))

    def delete_scope(self, name: str, cascade: bool = False, purge: bool = False) -> None:
        """Delete a scope (ScopeNotEmpty unless cascade)."""
        self._call("DELETE", f"/v1/scopes/{_q(name)}", params={"cascade": cascade, "purge": purge})

    # -- streams ----------------------------------------------------------------------------------

    def create_stream(
        self,
        scope: str,
        name: str,
        segments: int = 1,
        location: str | None = None,
        retention_ms: int | None = None,
        retention_bytes: int | None = None,
    ) -> dict[str, Any]:
        """Create a stream."""
        body = wire.CreateStreamRequest.model_construct(
            stream_name=name,
            scaling_policy=wire.ScalingPolicy.model_construct(type="FIXED_NUM_SEGMENTS", min_segments=segments),
            retention_policy=wire.RetentionPolicy.model_construct(
                retention_time_millis=retention_ms, retention_size_bytes=retention_bytes
            ),
            location=location,
        )
        return _checked(wire.Stream, self._call("POST", f"/v1/scopes/{_q(scope)}/streams", write(body)))

    def get_stream(self, scope: str, name: str) -> dict[str, Any]:
        """A stream."""
        return _checked(wire.Stream, self._call("GET", f"/v1/scopes/{_q(scope)}/streams/{_q(name)}"))

    def list_streams(self, scope: str) -> list[dict[str, Any]]:
        """Every stream of a scope."""
        return list(self._pages(f"/v1/scopes/{_q(scope)}/streams", wire.StreamList, "streams"))

    def seal_stream(self, scope: str, name: str) -> dict[str, Any]:
        """Refuse further commits."""
        body = write(wire.StreamStateRequest.model_construct(stream_state="SEALED"))
        return _checked(wire.Stream, self._call("PUT", f"/v1/scopes/{_q(scope)}/streams/{_q(name)}/state", body))

    def truncate_stream(self, scope: str, name: str, cut: int) -> dict[str, Any]:
        """Hide commits up to ``cut``."""
        body = write(wire.TruncateRequest.model_construct(stream_cut=cut))
        path = f"/v1/scopes/{_q(scope)}/streams/{_q(name)}/truncate"
        return _checked(wire.Stream, self._call("POST", path, body))

    def delete_stream(self, scope: str, name: str, purge: bool = False) -> None:
        """Delete a stream (not a table's)."""
        self._call("DELETE", f"/v1/scopes/{_q(scope)}/streams/{_q(name)}", params={"purge": purge})

    # -- tables -----------------------------------------------------------------------------------

    def create_table(
        self,
        scope: str,
        name: str,
        schema: dict[str, Any],
        fmt: str = "avro",
        properties: dict[str, str] | None = None,
        comment: str = "",
        segments: int = 1,
        location: str | None = None,
        compatibility: dict[str, Any] | None = None,
        partitioning: str | None = None,
    ) -> dict[str, Any]:
        """Create a table: stream, group and first schema version, atomically; ``partitioning`` is
        PARTITIONED BY in its text form (``days(ts), bucket(8, id)``; docs/partitioning.md)."""
        optional: dict[str, Any] = {"partitioning": partitioning} if partitioning is not None else {}
        body = wire.CreateTableRequest.model_construct(
            **optional,
            table_name=name,
            schema_=parse_json(wire.StructType, schema),
            format=fmt,
            properties=properties or {},
            comment=comment,
            scaling_policy=wire.ScalingPolicy.model_construct(min_segments=segments),
            location=location,
            compatibility=parse_json(Compatibility, compatibility) if compatibility is not None else None,
        )
        return _checked(wire.Table, self._call("POST", f"/v1/scopes/{_q(scope)}/tables", write(body)))

    def get_table(self, scope: str, name: str) -> dict[str, Any]:
        """A table."""
        return _checked(wire.Table, self._call("GET", f"/v1/scopes/{_q(scope)}/tables/{_q(name)}"))

    def list_tables(self, scope: str) -> list[dict[str, Any]]:
        """Every table of a scope."""
        return list(self._pages(f"/v1/scopes/{_q(scope)}/tables", wire.TableList, "tables"))

    def list_materialized_tables(self, scope: str) -> list[dict[str, Any]]:
        """Every materialized table of a scope, each with its refresh state and lag."""
        # imported here: the other calls (a CDC ingest's, say) need none of the materialized tables' models
        from catalog_api.materialized.wire import MaterializedTableList

        return list(self._pages(f"/v1/scopes/{_q(scope)}/materializedTables", MaterializedTableList,
                                "materializedTables"))

    def alter_table(
        self,
        scope: str,
        name: str,
        changes: Sequence[wire.TableChange | dict[str, Any]],
        expected_version: int | None = None,
    ) -> dict[str, Any]:
        """Apply table changes: the wire models of ``wire.TableChange`` (``wire.AddColumn(...)``), or their
        JSON form, checked by the same models before they are sent."""
        given = [c.model_dump(mode="json", exclude_unset=True) if isinstance(c, BaseModel) else c for c in changes]
        body = parse_json(wire.AlterTableRequest, {"changes": given, "expectedVersion": expected_version})
        return _checked(wire.Table, self._call("PATCH", f"/v1/scopes/{_q(scope)}/tables/{_q(name)}", write(body)))

    def set_partitioning(
        self, scope: str, name: str, partitioning: str, expected_version: int | None = None
    ) -> dict[str, Any]:
        """Make ``partitioning`` (text form; empty: unpartitioned) the table's current partition spec."""
        change = wire.SetPartitioning(op="setPartitioning", partitioning=partitioning)
        return self.alter_table(scope, name, [change], expected_version=expected_version)

    def list_partitions(self, scope: str, name: str) -> dict[str, Any]:
        """The partitions of the table's current spec: ``specId``, ``fields`` and ``partitions`` (each with
        ``values``, ``chunkCount``, ``eventCount``, ``bytes``), sorted by values (nulls first)."""
        path = f"/v1/scopes/{_q(scope)}/tables/{_q(name)}/partitions"
        return _checked(wire.PartitionList, self._call("GET", path))

    def drop_table(self, scope: str, name: str, purge: bool = False) -> None:
        """Drop a table (with purge: and its files)."""
        self._call("DELETE", f"/v1/scopes/{_q(scope)}/tables/{_q(name)}", params={"purge": purge})

    # -- commits ----------------------------------------------------------------------------------

    def commit(
        self, scope: str, stream: str, chunks: Sequence[Chunk], options: CommitOptions | None = None, **fields: Any
    ) -> dict[str, Any]:
        """Add chunks as one commit; ``duplicate`` in the answer tells a repeated (writer, sequence).

        ``options`` (or, for short, its ``fields`` as keywords) are ``catalog_api.model.CommitOptions``,
        as ``CatalogService.commit`` takes them (docs/changelog-tables.md, "Commits"). A lost race (an
        ``expected_last_commit`` that is not the newest, or a removed chunk no longer live) raises
        CommitConflict.
        """
        body = wire.CommitRequest.of(chunks, options if options is not None else CommitOptions(**fields))
        path = f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/commits"
        return _checked(wire.Commit, self._call("POST", path, write(body)))

    def commit_tables(self, parts: Sequence[TableCommit]) -> list[dict[str, Any]]:
        """Commit to several tables in one transaction (``POST /v1/commits``): all of the commits, at one time,
        or none; the Commit answers in the parts' order (each ``duplicate`` when the request repeated one made)."""
        body = wire.CommitTablesRequest.model_construct(commits=[wire.TableCommitRequest.of_part(p) for p in parts])
        answer = _checked(wire.CommitTablesAnswer, self._call("POST", "/v1/commits", write(body)))
        return list(answer["commits"])

    def find_commit(self, scope: str, stream: str, writer_id: str, writer_sequence: int) -> dict[str, Any] | None:
        """The commit ``writer_id`` made with ``writer_sequence`` (``{"commit": ..., "paths": [...]}``: the
        commit and the paths of the chunks it added), or None when it was not made."""
        path = f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/commits/find"
        try:
            answer = self._call("GET", path, params={"writerId": writer_id, "writerSequence": writer_sequence})
        except CommitNotFound:
            return None
        return _checked(wire.WriterCommit, answer)

    def commits(self, scope: str, stream: str, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        """Commit history after a commit number."""
        body = self._call(
            "GET", f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/commits", params={"after": after, "limit": limit}
        )
        read(wire.CommitList, body)
        return list(body["commits"])

    def snapshot(
        self, scope: str, stream: str, cut: int | None = None, as_of_time: int | None = None, after: int | None = None
    ) -> tuple[int, list[Chunk]]:
        """(stream cut, chunks) visible at a cut / time, or appended after ``after``."""
        params = {k: v for k, v in {"streamCut": cut, "asOfTime": as_of_time, "after": after}.items() if v is not None}
        body = self._call("GET", f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/chunks", params=params)
        snapshot = read(wire.Snapshot, body).to_domain()
        return snapshot.cut, snapshot.chunks

    def plan_chunks(
        self,
        scope: str,
        stream: str,
        filters: Sequence[dict[str, Any]] = (),
        cut: int | None = None,
        as_of_time: int | None = None,
    ) -> Plan:
        """The chunks visible at a cut (latest by default) or as of a time that may hold a row passing
        every filter (filter JSON: docs/partitioning.md), with counts of the chunks and bytes skipped."""
        fields = {"cut": cut, "asOfTime": as_of_time, "filters": list(filters)}
        body = parse_json(wire.PlanChunksRequest, {k: v for k, v in fields.items() if v is not None})
        path = f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/chunks/plan"
        return read(wire.ChunkPlan, self._call("POST", path, write(body))).to_domain()

    def changes(self, scope: str, stream: str, after: int = 0, to: int | None = None) -> list[dict[str, Any]]:
        """The non-compaction commits in (``after``, ``to``] (``to``: the latest), oldest first, each
        with ``number``, ``kind``, ``createdAt``, ``readCut``, ``chunks`` (the chunks it added, as
        wire dicts) and ``removed`` (the chunks it removed)."""
        params = {k: v for k, v in {"after": after, "to": to}.items() if v is not None}
        body = self._call("GET", f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/changes", params=params)
        read(wire.ChangeList, body)
        return list(body["changes"])

    # -- readers and expiry -----------------------------------------------------------------------

    def set_reader(self, scope: str, stream: str, reader: str, offset: int) -> dict[str, Any]:
        """Register ``reader`` at ``offset``, the cut it has read up to (or move it there): expiry
        keeps that cut and every later one."""
        body = write(wire.SetReaderRequest.model_construct(offset=offset))
        path = f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/readers/{_q(reader)}"
        return _checked(wire.Reader, self._call("PUT", path, body))

    def get_reader(self, scope: str, stream: str, reader: str) -> dict[str, Any]:
        """A registered reader (ReaderNotFound if none)."""
        path = f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/readers/{_q(reader)}"
        return _checked(wire.Reader, self._call("GET", path))

    def readers(self, scope: str, stream: str) -> list[dict[str, Any]]:
        """The stream's registered readers, by name."""
        body = self._call("GET", f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/readers")
        read(wire.ReaderList, body)
        return list(body["readers"])

    def delete_reader(self, scope: str, stream: str, reader: str) -> None:
        """Forget a registered reader (an admin's: it lets expiry drop the cuts it kept)."""
        self._call("DELETE", f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/readers/{_q(reader)}")

    def expire(
        self, scope: str, stream: str, older_than_ms: int | None = None, retain_last: int | None = None
    ) -> dict[str, Any]:
        """Expire old cuts (the stream's ``retainedFrom`` moves forward): those whose commit is older
        than ``older_than_ms``, keeping the newest ``retain_last`` and every cut a registered reader
        needs. Returns the stream."""
        fields: dict[str, Any] = {"older_than": older_than_ms, "retain_last": retain_last}
        body = write(wire.ExpireRequest.model_construct(**{k: v for k, v in fields.items() if v is not None}))
        return _checked(wire.Stream, self._call("POST", f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/expire", body))
