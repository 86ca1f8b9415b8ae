"""The OpenAPI 3.1 document of the REST API. Its component schemas are also what
request bodies are validated against, so the document cannot drift from the checks."""

from __future__ import annotations

from typing import Any

from registry.formats import FORMAT_NAMES
from registry.model import POLICIES

#: Names of groups and namespaces: letters, digits, ``_``, ``-`` and ``.`` (not first).
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,254}$"

_components: dict[str, dict[str, Any]] = {}


def ref(name: str) -> dict[str, Any]:
    """A reference to a component schema."""
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null."""
    # Java clients send absent optional fields as null, so null means absent.
    return {"anyOf": [schema, {"type": "null"}]}


def obj(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    """A closed object schema (unknown properties are errors)."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def component(name: str, schema: dict[str, Any]) -> None:
    """Add (or replace) a component schema; catalog_api adds its own through this."""
    _components[name] = schema


_string_map = {"type": "object", "additionalProperties": {"type": "string"}}
component("Name", {"type": "string", "pattern": NAME_PATTERN})
component("StringMap", _string_map)
component(
    "SerializationFormat",
    obj(
        ["serializationFormat"],
        serializationFormat={"type": "string", "enum": list(FORMAT_NAMES)},
        fullTypeName=nullable({"type": "string", "maxLength": 255}),
    ),
)
component(
    "VersionInfo",
    obj(
        ["type", "version", "id"],
        type={"type": "string", "maxLength": 1024},
        version={"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
        id={"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
    ),
)
_rule = obj(["name"], name={"type": "string"}, versionInfo=nullable(ref("VersionInfo")))
component(
    "BackwardAndForward",
    obj(
        [],
        backwardPolicy=nullable(obj(["backwardPolicy"], backwardPolicy=_rule)),
        forwardPolicy=nullable(obj(["forwardPolicy"], forwardPolicy=_rule)),
    ),
)
component(
    "Compatibility",
    obj(
        ["policy"],
        policy={"type": "string", "enum": list(POLICIES)},
        advanced=nullable(ref("BackwardAndForward")),
    ),
)
component(
    "GroupProperties",
    obj(
        ["serializationFormat", "compatibility"],
        serializationFormat=ref("SerializationFormat"),
        compatibility=ref("Compatibility"),
        allowMultipleTypes=nullable({"type": "boolean"}),
        properties=nullable(ref("StringMap")),
    ),
)
component(
    "CreateGroupRequest",
    obj(["groupName", "groupProperties"], groupName=ref("Name"), groupProperties=ref("GroupProperties")),
)
component(
    "SchemaInfo",
    obj(
        ["type", "serializationFormat", "schemaData"],
        type={"type": "string", "maxLength": 1024},
        serializationFormat=ref("SerializationFormat"),
        schemaData={"type": "string", "description": "base64 of the schema bytes"},
        properties=nullable(ref("StringMap")),
    ),
)
component(
    "UpdateCompatibilityRequest",
    obj(
        ["compatibility"],
        compatibility=ref("Compatibility"),
        previousCompatibility=nullable(ref("Compatibility")),
    ),
)
component(
    "ValidateRequest",
    obj(["schemaInfo"], schemaInfo=ref("SchemaInfo"), compatibility=nullable(ref("Compatibility"))),
)
component(
    "GetEncodingIdRequest",
    obj(["versionInfo", "codecType"], versionInfo=ref("VersionInfo"), codecType={"type": "string"}),
)
component(
    "CodecType",
    obj(["name"], name={"type": "string", "maxLength": 255}, properties=nullable(ref("StringMap"))),
)
component("EncodingId", obj(["encodingId"], encodingId={"type": "integer"}))
component(
    "EncodingInfo",
    obj(
        ["schemaInfo", "versionInfo", "codecType"],
        schemaInfo=ref("SchemaInfo"),
        versionInfo=ref("VersionInfo"),
        codecType=ref("CodecType"),
    ),
)
component(
    "ListGroupsResponse",
    obj(
        ["groups", "continuationToken"],
        groups={"type": "object", "additionalProperties": ref("GroupProperties")},
        continuationToken={"type": "string"},
    ),
)
component(
    "SchemaWithVersion",
    obj(["schemaInfo", "versionInfo"], schemaInfo=ref("SchemaInfo"), versionInfo=ref("VersionInfo")),
)
component("SchemaVersionsList", obj(["schemas"], schemas={"type": "array", "items": ref("SchemaWithVersion")}))
component("CodecTypes", obj(["codecTypes"], codecTypes={"type": "array", "items": ref("CodecType")}))
component("Reason", obj(["path", "message"], path={"type": "string"}, message={"type": "string"}))
_reasons = {"type": "array", "items": ref("Reason")}
component("Valid", obj(["valid"], valid={"type": "boolean"}, reasons=_reasons))
component("CanRead", obj(["compatible"], compatible={"type": "boolean"}, reasons=_reasons))
component(
    "GroupHistoryRecord",
    obj(
        ["schemaInfo", "versionInfo", "compatibility", "timestamp"],
        schemaInfo=ref("SchemaInfo"),
        versionInfo=ref("VersionInfo"),
        compatibility=ref("Compatibility"),
        timestamp={"type": "integer"},
        schemaString={"type": "string"},
        deleted={"type": "boolean"},
    ),
)
component("GroupHistory", obj(["history"], history={"type": "array", "items": ref("GroupHistoryRecord")}))
component("AddedTo", obj(["groups"], groups={"type": "object", "additionalProperties": ref("VersionInfo")}))
component(
    "Error",
    obj(
        ["error"],
        error=obj(["code", "message"], code={"type": "string"}, message={"type": "string"}, reasons=_reasons),
    ),
)

_paths: dict[str, dict[str, Any]] = {}


def param(name: str, where: str, schema: dict[str, Any], required: bool | None = None) -> dict[str, Any]:
    """An operation parameter."""
    return {"name": name, "in": where, "required": where == "path" if required is None else required, "schema": schema}


_NS = param("namespace", "query", {"type": "string"})
_GROUP = param("groupName", "path", ref("Name"))


def operation(
    path: str,
    method: str,
    op_id: str,
    summary: str,
    *,
    params: list[dict[str, Any]] | None = None,
    body: str | None = None,
    ok: tuple[int, str | None] = (200, None),
    errors: tuple[int, ...] = (400, 404),
) -> None:
    """Describe one route; catalog_api adds its routes through this too."""
    code, schema = ok
    responses: dict[str, Any] = {str(code): {"description": "success"}}
    if schema:
        responses[str(code)]["content"] = {"application/json": {"schema": ref(schema)}}
    for err in errors:
        responses[str(err)] = {"description": "error", "content": {"application/json": {"schema": ref("Error")}}}
    op: dict[str, Any] = {"operationId": op_id, "summary": summary, "parameters": params or [], "responses": responses}
    if body:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": ref(body)}}}
    _paths.setdefault(path, {})[method] = op


def _group_operation(suffix: str, method: str, op_id: str, summary: str, **kwargs: Any) -> None:
    extra = kwargs.pop("params", [])
    operation(f"/v1/groups/{{groupName}}{suffix}", method, op_id, summary, params=[_GROUP, _NS, *extra], **kwargs)
    ns_path = param("namespace", "path", ref("Name"))
    operation(
        f"/v1/namespace/{{namespace}}/groups/{{groupName}}{suffix}",
        method,
        f"{op_id}InNamespace",
        summary,
        params=[ns_path, _GROUP, *extra],
        **kwargs,
    )


def _describe_registry() -> None:
    operation("/ping", "get", "ping", "Liveness check", errors=())
    operation("/v1/openapi.json", "get", "openapi", "This document", errors=())
    operation("/health/live", "get", "live", "The process answers", errors=())
    operation("/health/ready", "get", "ready", "Database reachable and migrated (503 if not)", errors=())
    operation("/metrics", "get", "metrics", "Prometheus metrics", errors=())
    list_params = [
        param("continuationToken", "query", {"type": "string"}),
        param("limit", "query", {"type": "integer", "minimum": 1}),
    ]
    for prefix, params in (
        ("/v1/groups", [_NS]),
        ("/v1/namespace/{namespace}/groups", [param("namespace", "path", ref("Name"))]),
    ):
        suffix = "InNamespace" if "namespace}" in prefix else ""
        operation(
            prefix,
            "get",
            f"listGroups{suffix}",
            "List groups",
            params=[*params, *list_params],
            ok=(200, "ListGroupsResponse"),
            errors=(400,),
        )
        operation(
            prefix,
            "post",
            f"createGroup{suffix}",
            "Create a group",
            params=params,
            body="CreateGroupRequest",
            ok=(201, None),
            errors=(400, 409),
        )
    _group_operation("", "get", "getGroupProperties", "Group properties", ok=(200, "GroupProperties"))
    _group_operation("", "delete", "deleteGroup", "Delete a group", ok=(204, None))
    _group_operation("/history", "get", "getGroupHistory", "Schemas added, in order", ok=(200, "GroupHistory"))
    _group_operation(
        "/compatibility",
        "put",
        "updateCompatibility",
        "Change the policy (compare-and-set)",
        body="UpdateCompatibilityRequest",
        ok=(200, "GroupProperties"),
        errors=(400, 404, 409),
    )
    type_param = param("type", "query", {"type": "string"}, required=False)
    _group_operation(
        "/schemas", "get", "getSchemas", "Latest schema per type", params=[type_param], ok=(200, "SchemaVersionsList")
    )
    _group_operation(
        "/schemas",
        "post",
        "addSchema",
        "Add a schema",
        body="SchemaInfo",
        ok=(201, "VersionInfo"),
        errors=(400, 404, 409, 417),
    )
    _group_operation(
        "/schemas/versions",
        "get",
        "getSchemaVersions",
        "All live versions",
        params=[type_param],
        ok=(200, "SchemaVersionsList"),
    )
    _group_operation(
        "/schemas/versions/find",
        "post",
        "getSchemaVersion",
        "Version of a schema",
        body="SchemaInfo",
        ok=(200, "VersionInfo"),
        errors=(400, 404, 417),
    )
    _group_operation(
        "/schemas/versions/validate",
        "post",
        "validate",
        "Would the schema be accepted",
        body="ValidateRequest",
        ok=(200, "Valid"),
        errors=(400, 404, 417),
    )
    _group_operation(
        "/schemas/versions/canRead",
        "post",
        "canRead",
        "Can the schema read all data",
        body="SchemaInfo",
        ok=(200, "CanRead"),
        errors=(400, 404, 417),
    )
    id_param = param("schemaId", "path", {"type": "integer"})
    _group_operation(
        "/schemas/schema/{schemaId}", "get", "getSchemaForId", "Schema by id", params=[id_param], ok=(200, "SchemaInfo")
    )
    _group_operation(
        "/schemas/schema/{schemaId}",
        "delete",
        "deleteSchemaForId",
        "Soft-delete by id",
        params=[id_param],
        ok=(204, None),
    )
    version_params = [
        param("serializationFormat", "path", {"type": "string", "enum": list(FORMAT_NAMES)}),
        param("type", "path", {"type": "string"}),
        param("version", "path", {"type": "integer"}),
    ]
    by_version = "/schemas/format/{serializationFormat}/type/{type}/versions/{version}"
    _group_operation(
        by_version, "get", "getSchemaFromVersion", "Schema by version", params=version_params, ok=(200, "SchemaInfo")
    )
    _group_operation(
        by_version, "delete", "deleteSchemaVersion", "Soft-delete by version", params=version_params, ok=(204, None)
    )
    _group_operation(
        "/encodings",
        "put",
        "getEncodingId",
        "Get or create an encoding id",
        body="GetEncodingIdRequest",
        ok=(200, "EncodingId"),
        errors=(400, 404, 412),
    )
    _group_operation(
        "/encodings/{encodingId}",
        "get",
        "getEncodingInfo",
        "What an encoding id stands for",
        params=[param("encodingId", "path", {"type": "integer"})],
        ok=(200, "EncodingInfo"),
    )
    _group_operation("/codecTypes", "get", "getCodecTypesList", "Codec types", ok=(200, "CodecTypes"))
    _group_operation(
        "/codecTypes",
        "post",
        "addCodecType",
        "Register a codec type",
        body="CodecType",
        ok=(201, None),
        errors=(400, 404, 409),
    )
    for prefix, params in (
        ("/v1/schemas/addedTo", [_NS]),
        ("/v1/namespace/{namespace}/schemas/addedTo", [param("namespace", "path", ref("Name"))]),
    ):
        operation(
            prefix,
            "post",
            "getSchemaReferences" + ("InNamespace" if "namespace}" in prefix else ""),
            "Groups that hold a schema",
            params=params,
            body="SchemaInfo",
            ok=(200, "AddedTo"),
        )


_describe_registry()


def document() -> dict[str, Any]:
    """The whole OpenAPI document."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Streamcat",
            "version": "1",
            "description": "Schema registry (Pravega Schema Registry API) and stream catalog.",
        },
        "paths": _paths,
        "components": {"schemas": _components},
    }


def component_schemas() -> dict[str, dict[str, Any]]:
    """The component schemas, for validating request bodies."""
    return _components
