"""A Python client for the catalog API: scopes, streams, tables, commits and snapshots."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import quote

import requests

from catalog_api.model import Chunk
from registry.client import raise_for


def _q(name: str) -> str:
    return quote(name, safe="")


class CatalogClient:
    """Talks to the catalog REST API. Answers are plain JSON dicts (the REST shapes)."""

    def __init__(self, url: str, *, timeout: float = 60.0, session: requests.Session | None = None) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.http = session or requests.Session()

    def _call(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        response = self.http.request(method, f"{self.url}{path}", json=body, params=params, timeout=self.timeout)
        raise_for(response)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def _pages(self, path: str, key: str) -> Iterator[dict[str, Any]]:
        token = None
        while True:
            params: dict[str, Any] = {"limit": 500}
            if token:
                params["continuationToken"] = token
            body = self._call("GET", path, params=params)
            yield from body[key]
            if len(body[key]) < 500:
                return
            token = body["continuationToken"]

    # -- scopes -----------------------------------------------------------------------------------

    def create_scope(self, name: str, comment: str = "", properties: dict[str, str] | None = None) -> dict[str, Any]:
        """Create a scope."""
        return dict(
            self._call("POST", "/v1/scopes", {"scopeName": name, "comment": comment, "properties": properties or {}})
        )

    def get_scope(self, name: str) -> dict[str, Any]:
        """A scope."""
        return dict(self._call("GET", f"/v1/scopes/{_q(name)}"))

    def list_scopes(self) -> list[dict[str, Any]]:
        """Every scope."""
        return list(self._pages("/v1/scopes", "scopes"))

    def update_scope(
        self,
        name: str,
        properties: dict[str, str] | None = None,
        remove: Sequence[str] = (),
        comment: str | None = None,
    ) -> dict[str, Any]:
        """Set or remove properties, change the comment."""
        body = {"properties": properties or {}, "removeProperties": list(remove), "comment": comment}
        return dict(self._call("PUT", f"/v1/scopes/{_q(name)}", body))

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
        body = {
            "streamName": name,
            "scalingPolicy": {"type": "FIXED_NUM_SEGMENTS", "minSegments": segments},
            "retentionPolicy": {"retentionTimeMillis": retention_ms, "retentionSizeBytes": retention_bytes},
            "location": location,
        }
        return dict(self._call("POST", f"/v1/scopes/{_q(scope)}/streams", body))

    def get_stream(self, scope: str, name: str) -> dict[str, Any]:
        """A stream."""
        return dict(self._call("GET", f"/v1/scopes/{_q(scope)}/streams/{_q(name)}"))

    def list_streams(self, scope: str) -> list[dict[str, Any]]:
        """Every stream of a scope."""
        return list(self._pages(f"/v1/scopes/{_q(scope)}/streams", "streams"))

    def seal_stream(self, scope: str, name: str) -> dict[str, Any]:
        """Refuse further commits."""
        return dict(self._call("PUT", f"/v1/scopes/{_q(scope)}/streams/{_q(name)}/state", {"streamState": "SEALED"}))

    def truncate_stream(self, scope: str, name: str, cut: int) -> dict[str, Any]:
        """Hide commits up to ``cut``."""
        return dict(self._call("POST", f"/v1/scopes/{_q(scope)}/streams/{_q(name)}/truncate", {"streamCut": cut}))

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
    ) -> dict[str, Any]:
        """Create a table: stream, group and first schema version, atomically."""
        body = {
            "tableName": name,
            "schema": schema,
            "format": fmt,
            "properties": properties or {},
            "comment": comment,
            "scalingPolicy": {"minSegments": segments},
            "location": location,
            "compatibility": compatibility,
        }
        return dict(self._call("POST", f"/v1/scopes/{_q(scope)}/tables", body))

    def get_table(self, scope: str, name: str) -> dict[str, Any]:
        """A table."""
        return dict(self._call("GET", f"/v1/scopes/{_q(scope)}/tables/{_q(name)}"))

    def list_tables(self, scope: str) -> list[dict[str, Any]]:
        """Every table of a scope."""
        return list(self._pages(f"/v1/scopes/{_q(scope)}/tables", "tables"))

    def alter_table(
        self, scope: str, name: str, changes: Sequence[dict[str, Any]], expected_version: int | None = None
    ) -> dict[str, Any]:
        """Apply table changes (see catalog_api.changes)."""
        body = {"changes": list(changes), "expectedVersion": expected_version}
        return dict(self._call("PATCH", f"/v1/scopes/{_q(scope)}/tables/{_q(name)}", body))

    def drop_table(self, scope: str, name: str, purge: bool = False) -> None:
        """Drop a table (with purge: and its files)."""
        self._call("DELETE", f"/v1/scopes/{_q(scope)}/tables/{_q(name)}", params={"purge": purge})

    # -- commits ----------------------------------------------------------------------------------

    def commit(
        self,
        scope: str,
        stream: str,
        chunks: Sequence[Chunk],
        *,
        overwrite: bool = False,
        writer_id: str | None = None,
        writer_sequence: int | None = None,
        properties: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Append chunks as one commit; ``duplicate`` in the answer tells a repeated (writer, sequence)."""
        body = {
            "chunks": [_chunk_body(c) for c in chunks],
            "overwrite": overwrite,
            "writerId": writer_id,
            "writerSequence": writer_sequence,
            "properties": properties or {},
        }
        return dict(self._call("POST", f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/commits", body))

    def commits(self, scope: str, stream: str, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        """Commit history after a commit number."""
        body = self._call(
            "GET", f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/commits", params={"after": after, "limit": limit}
        )
        return list(body["commits"])

    def snapshot(
        self, scope: str, stream: str, cut: int | None = None, as_of_time: int | None = None, after: int | None = None
    ) -> tuple[int, list[Chunk]]:
        """(stream cut, chunks) visible at a cut / time, or appended after ``after``."""
        params = {k: v for k, v in {"streamCut": cut, "asOfTime": as_of_time, "after": after}.items() if v is not None}
        body = self._call("GET", f"/v1/scopes/{_q(scope)}/streams/{_q(stream)}/chunks", params=params)
        return int(body["streamCut"]), [Chunk.from_json(c) for c in body["chunks"]]


def _chunk_body(chunk: Chunk) -> dict[str, Any]:
    body = chunk.to_json()
    body.pop("commit")
    return body
