"""The catalog's part of the OpenAPI document (request bodies are validated against it)."""

from __future__ import annotations

from functools import cache

from catalog_api.changes import COLUMN_OPS, TABLE_OPS
from catalog_api.model import CHUNK_KINDS, TABLE_FORMATS
from registry.api.openapi import component, nullable, obj, operation, param, ref

_INT = {"type": "integer", "minimum": 0}
_LIMIT = param("limit", "query", {"type": "integer", "minimum": 1})
_TOKEN = param("continuationToken", "query", {"type": "string"})


@cache
def describe() -> None:
    """Add the catalog's components and routes to the document (once)."""
    _components()
    _routes()


def _components() -> None:
    stream_config = {
        "scalingPolicy": nullable(
            obj(
                [],
                type={"type": "string", "enum": ["FIXED_NUM_SEGMENTS"]},
                minSegments={"type": "integer", "minimum": 1, "maximum": 1024},
            )
        ),
        "retentionPolicy": nullable(
            obj(
                [],
                retentionTimeMillis=nullable({"type": "integer", "minimum": 1}),
                retentionSizeBytes=nullable({"type": "integer", "minimum": 1}),
            )
        ),
        "location": nullable({"type": "string", "minLength": 1, "maxLength": 2048}),
    }
    component(
        "CreateScopeRequest",
        obj(
            ["scopeName"],
            scopeName=ref("Name"),
            comment=nullable({"type": "string"}),
            properties=nullable(ref("StringMap")),
        ),
    )
    component(
        "UpdateScopeRequest",
        obj(
            [],
            properties=nullable(ref("StringMap")),
            removeProperties=nullable({"type": "array", "items": {"type": "string"}}),
            comment=nullable({"type": "string"}),
        ),
    )
    component("CreateStreamRequest", obj(["streamName"], streamName=ref("Name"), **stream_config))
    component("StreamStateRequest", obj(["streamState"], streamState={"type": "string", "enum": ["SEALED"]}))
    component("TruncateRequest", obj(["streamCut"], streamCut=_INT))
    component(
        "StructType",
        {
            "type": "object",
            "required": ["type", "fields"],
            "properties": {"type": {"const": "struct"}, "fields": {"type": "array"}},
        },
    )
    component(
        "CreateTableRequest",
        obj(
            ["tableName", "schema"],
            tableName=ref("Name"),
            schema=ref("StructType"),
            format=nullable({"type": "string", "enum": [*TABLE_FORMATS, *[f.upper() for f in TABLE_FORMATS]]}),
            compatibility=nullable(ref("Compatibility")),
            comment=nullable({"type": "string"}),
            properties=nullable(ref("StringMap")),
            **stream_config,
        ),
    )
    component(
        "TableChange",
        obj(
            ["op"],
            op={"type": "string", "enum": [*COLUMN_OPS, *TABLE_OPS]},
            path={"type": "array", "items": {"type": "string"}, "minItems": 1},
            type={"type": ["string", "object"]},
            nullable={"type": "boolean"},
            comment=nullable({"type": "string"}),
            position=nullable(obj([], first={"type": "boolean"}, after={"type": "string"})),
            newName={"type": "string"},
            key={"type": "string"},
            value={"type": "string"},
            compatibility=ref("Compatibility"),
        ),
    )
    component(
        "AlterTableRequest",
        obj(
            ["changes"],
            expectedVersion=nullable({"type": "integer"}),
            changes={"type": "array", "items": ref("TableChange")},
        ),
    )
    component(
        "ChunkInfo",
        obj(
            ["path", "kind", "eventCount", "bytes"],
            path={"type": "string", "minLength": 1, "maxLength": 1024},
            kind={"type": "string", "enum": list(CHUNK_KINDS)},
            segment=nullable(_INT),
            eventCount=_INT,
            bytes=_INT,
            encodingIds=nullable({"type": "array", "items": _INT}),
            minEventTime=nullable({"type": "integer"}),
            maxEventTime=nullable({"type": "integer"}),
            stats=nullable({"type": "object"}),
            commit={"type": "integer"},
        ),
    )
    component(
        "CommitRequest",
        obj(
            ["chunks"],
            chunks={"type": "array", "items": ref("ChunkInfo"), "maxItems": 100_000},
            overwrite=nullable({"type": "boolean"}),
            writerId=nullable({"type": "string", "minLength": 1, "maxLength": 255}),
            writerSequence=nullable(_INT),
            properties=nullable(ref("StringMap")),
        ),
    )
    for name in ("Scope", "Stream", "Table", "Commit"):
        component(name, {"type": "object"})
    component(
        "ScopeList",
        obj(
            ["scopes", "continuationToken"],
            scopes={"type": "array", "items": ref("Scope")},
            continuationToken={"type": "string"},
        ),
    )
    component(
        "StreamList",
        obj(
            ["streams", "continuationToken"],
            streams={"type": "array", "items": ref("Stream")},
            continuationToken={"type": "string"},
        ),
    )
    component(
        "TableList",
        obj(
            ["tables", "continuationToken"],
            tables={"type": "array", "items": ref("Table")},
            continuationToken={"type": "string"},
        ),
    )
    component("CommitList", obj(["commits"], commits={"type": "array", "items": ref("Commit")}))
    component(
        "Snapshot",
        obj(
            ["streamCut", "chunks"], streamCut={"type": "integer"}, chunks={"type": "array", "items": ref("ChunkInfo")}
        ),
    )


def _routes() -> None:
    scope = param("scopeName", "path", ref("Name"))
    stream = param("streamName", "path", ref("Name"))
    table = param("tableName", "path", ref("Name"))
    flag = {"type": "boolean"}
    operation(
        "/v1/scopes", "get", "listScopes", "List scopes", params=[_TOKEN, _LIMIT], ok=(200, "ScopeList"), errors=(400,)
    )
    operation(
        "/v1/scopes",
        "post",
        "createScope",
        "Create a scope",
        body="CreateScopeRequest",
        ok=(201, "Scope"),
        errors=(400, 409),
    )
    base = "/v1/scopes/{scopeName}"
    operation(base, "get", "getScope", "A scope", params=[scope], ok=(200, "Scope"))
    operation(
        base,
        "put",
        "updateScope",
        "Set or remove scope properties",
        params=[scope],
        body="UpdateScopeRequest",
        ok=(200, "Scope"),
    )
    operation(
        base,
        "delete",
        "deleteScope",
        "Delete a scope",
        ok=(204, None),
        errors=(400, 404, 409),
        params=[scope, param("cascade", "query", flag), param("purge", "query", flag)],
    )
    operation(
        f"{base}/streams", "get", "listStreams", "List streams", params=[scope, _TOKEN, _LIMIT], ok=(200, "StreamList")
    )
    operation(
        f"{base}/streams",
        "post",
        "createStream",
        "Create a stream",
        params=[scope],
        body="CreateStreamRequest",
        ok=(201, "Stream"),
        errors=(400, 404, 409),
    )
    one = f"{base}/streams/{{streamName}}"
    operation(one, "get", "getStream", "A stream", params=[scope, stream], ok=(200, "Stream"))
    operation(
        one,
        "delete",
        "deleteStream",
        "Delete a stream",
        params=[scope, stream, param("purge", "query", flag)],
        ok=(204, None),
        errors=(400, 404, 409),
    )
    operation(
        f"{one}/state",
        "put",
        "updateStreamState",
        "Seal a stream",
        params=[scope, stream],
        body="StreamStateRequest",
        ok=(200, "Stream"),
    )
    operation(
        f"{one}/truncate",
        "post",
        "truncateStream",
        "Cut off commits up to a stream cut",
        params=[scope, stream],
        body="TruncateRequest",
        ok=(200, "Stream"),
    )
    operation(
        f"{one}/commits",
        "get",
        "listCommits",
        "Commit history",
        params=[scope, stream, param("after", "query", _INT), _LIMIT],
        ok=(200, "CommitList"),
    )
    operation(
        f"{one}/commits",
        "post",
        "commit",
        "Append chunks atomically",
        params=[scope, stream],
        body="CommitRequest",
        ok=(201, "Commit"),
        errors=(400, 404, 409),
    )
    operation(
        f"{one}/chunks",
        "get",
        "listChunks",
        "Chunks visible at a stream cut",
        params=[
            scope,
            stream,
            param("streamCut", "query", _INT),
            param("asOfTime", "query", _INT),
            param("after", "query", _INT),
        ],
        ok=(200, "Snapshot"),
    )
    operation(
        f"{base}/tables", "get", "listTables", "List tables", params=[scope, _TOKEN, _LIMIT], ok=(200, "TableList")
    )
    operation(
        f"{base}/tables",
        "post",
        "createTable",
        "Create a table (stream + group + schema)",
        params=[scope],
        body="CreateTableRequest",
        ok=(201, "Table"),
        errors=(400, 404, 409),
    )
    tbl = f"{base}/tables/{{tableName}}"
    operation(tbl, "get", "getTable", "A table", params=[scope, table], ok=(200, "Table"))
    operation(
        tbl,
        "patch",
        "alterTable",
        "Apply table changes",
        params=[scope, table],
        body="AlterTableRequest",
        ok=(200, "Table"),
        errors=(400, 404, 409),
    )
    operation(
        tbl, "delete", "dropTable", "Drop a table", params=[scope, table, param("purge", "query", flag)], ok=(204, None)
    )
