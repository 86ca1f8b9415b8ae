"""``/v1/groups``: groups, their schemas, codecs and encodings (Pravega's GroupResource).

The blueprint is mounted twice (see routes.py): at ``/v1/groups`` with ``?namespace=``, and at
``/v1/namespace/{namespace}/groups``.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, g

from registry.api import models as m
from registry.api.context import access, immutable_answer, list_limit, registry_service
from registry.api.operations import Serialized, operation
from registry.api.requests import check_name, namespace_of
from registry.api.wire import MAX_INT32
from registry.errors import BadRequest, EncodingNotFound, SchemaNotFound
from registry.formats import FORMAT_NAMES
from registry.ids import CodecName, EncodingId, GroupName, SchemaId, TypeName, Version
from registry.model import SerializationFormat
from registry.permissions import Need, Permission, Resource

bp = Blueprint("groups", __name__)

#: What the routes below need: on the group the path names, or on its namespace to list or create.
READ, WRITE, ADMIN = Need("read", "group"), Need("write", "group"), Need("admin", "group")
LIST_GROUPS, CREATE_GROUP = Need("read", "namespace", listing=True), Need("write", "namespace")


@bp.url_value_preprocessor
def _pull_names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    g.namespace = namespace_of(values)
    if values is not None:
        values.pop("namespace", None)
        if "group" in values:
            g.group = GroupName(check_name(values.pop("group"), "group name"))


def _schema_id(value: int) -> SchemaId:
    # Ids beyond 32 bits name nothing: 404, as for any unknown id.
    if value > MAX_INT32:
        raise SchemaNotFound(f"schema id {value} not found (ids are 32-bit)")
    return SchemaId(value)


def _version(value: int) -> Version:
    if value > MAX_INT32:
        raise SchemaNotFound(f"version {value} not found (versions are 32-bit)")
    return Version(value)


def _format(name: str, query: m.FullTypeNameQuery) -> SerializationFormat:
    # The path's format is checked here rather than by a converter: an unknown one is a 400, not a 404.
    if name not in FORMAT_NAMES:
        raise BadRequest(f"unknown serialization format {name!r}; expected one of {', '.join(FORMAT_NAMES)}")
    if name == "Custom":
        if not query.full_type_name:
            raise BadRequest("format Custom needs the query argument fullTypeName")
        return SerializationFormat(name, query.full_type_name)
    return SerializationFormat(name)


def _type(query: m.TypeQuery) -> TypeName | None:
    return TypeName(query.type) if query.type else None


@operation(
    bp, "GET", "", "listGroups", "List groups", query=m.ListGroupsQuery, response=m.ListGroupsResponse, errors=(400,),
    permission=LIST_GROUPS,
)
def list_groups(query: m.ListGroupsQuery) -> m.ListGroupsResponse:
    limit = query.limit or list_limit()
    page = registry_service().list_groups(g.namespace, query.continuation_token, limit)
    # Only the groups the caller may read (a page may hold fewer than ``limit``).
    readable = access()
    groups = {
        str(name): m.GroupProperties.of(props)
        for name, props in page.groups
        if readable.allows(Permission.READ, Resource.of_group(g.namespace, name))
    }
    return m.ListGroupsResponse(groups=groups, continuation_token=page.continuation_token)


@operation(
    bp,
    "POST",
    "",
    "createGroup",
    "Create a group",
    query=m.NamespaceQuery,
    body=m.CreateGroupRequest,
    status=201,
    errors=(400, 409),
    permission=CREATE_GROUP,
)
def create_group(body: m.CreateGroupRequest) -> None:
    name = GroupName(body.group_name)
    registry_service().create_group(g.namespace, name, body.group_properties.to_domain())


@operation(
    bp, "GET", "/<group>", "getGroupProperties", "Group properties", query=m.NamespaceQuery, response=m.GroupProperties,
    permission=READ,
)
def get_group() -> m.GroupProperties:
    return m.GroupProperties.of(registry_service().get_group(g.namespace, g.group))


@operation(bp, "DELETE", "/<group>", "deleteGroup", "Delete a group", query=m.NamespaceQuery, status=204,
           permission=ADMIN)
def delete_group() -> None:
    registry_service().delete_group(g.namespace, g.group)


@operation(
    bp,
    "GET",
    "/<group>/history",
    "getGroupHistory",
    "Schemas added, in order",
    query=m.NamespaceQuery,
    response=m.GroupHistory,
    permission=READ,
)
def history() -> m.GroupHistory:
    records = registry_service().history(g.namespace, g.group)
    return m.GroupHistory(history=[m.GroupHistoryRecord.of(r) for r in records])


@operation(
    bp,
    "PUT",
    "/<group>/compatibility",
    "updateCompatibility",
    "Change the policy (compare-and-set)",
    query=m.NamespaceQuery,
    body=m.UpdateCompatibilityRequest,
    response=m.GroupProperties,
    errors=(400, 404, 409),
    permission=ADMIN,
)
def update_compatibility(body: m.UpdateCompatibilityRequest) -> m.GroupProperties:
    previous = body.previous_compatibility.to_domain() if body.previous_compatibility else None
    updated = registry_service().update_compatibility(g.namespace, g.group, body.compatibility.to_domain(), previous)
    return m.GroupProperties.of(updated)


@operation(
    bp,
    "GET",
    "/<group>/schemas",
    "getSchemas",
    "Latest schema per type",
    query=m.TypeQuery,
    response=m.SchemaVersionsList,
    permission=READ,
)
def latest_schemas(query: m.TypeQuery) -> m.SchemaVersionsList:
    found = registry_service().latest(g.namespace, g.group, _type(query))
    return m.SchemaVersionsList(schemas=[m.SchemaWithVersion.of(s) for s in found])


#: Where an added schema's version leads: the schema by id and by version, an encoding id of it.
_SAME_GROUP = {"path.groupName": "$request.path.groupName", "query.namespace": "$request.query.namespace"}
_ADDED_LINKS = {
    "SchemaById": {
        "operationId": "getSchemaForId",
        "parameters": {**_SAME_GROUP, "path.schemaId": "$response.body#/id"},
    },
    "SchemaByVersion": {
        "operationId": "getSchemaFromVersion",
        "parameters": {
            **_SAME_GROUP,
            "path.serializationFormat": "$request.body#/serializationFormat/serializationFormat",
            "path.type": "$response.body#/type",
            "path.version": "$response.body#/version",
        },
    },
    "EncodingId": {
        "operationId": "getEncodingId",
        "parameters": _SAME_GROUP,
        "requestBody": {"versionInfo": "$response.body#", "codecType": ""},
    },
}


@operation(
    bp,
    "POST",
    "/<group>/schemas",
    "addSchema",
    "Add a schema",
    query=m.NamespaceQuery,
    body=m.SchemaInfo,
    response=m.VersionInfo,
    status=201,
    errors=(400, 404, 409, 417),
    permission=WRITE,
    links=_ADDED_LINKS,
)
def add_schema(body: m.SchemaInfo) -> m.VersionInfo:
    return m.VersionInfo.of(registry_service().add_schema(g.namespace, g.group, body.to_domain()))


@operation(
    bp,
    "GET",
    "/<group>/schemas/versions",
    "getSchemaVersions",
    "All live versions",
    query=m.TypeQuery,
    response=m.SchemaVersionsList,
    permission=READ,
)
def versions(query: m.TypeQuery) -> m.SchemaVersionsList:
    found = registry_service().versions(g.namespace, g.group, _type(query))
    return m.SchemaVersionsList(schemas=[m.SchemaWithVersion.of(s) for s in found])


@operation(
    bp,
    "POST",
    "/<group>/schemas/versions/find",
    "getSchemaVersion",
    "Version of a schema",
    query=m.NamespaceQuery,
    body=m.SchemaInfo,
    response=m.VersionInfo,
    errors=(400, 404, 417),
    permission=READ,
)
def find_version(body: m.SchemaInfo) -> m.VersionInfo:
    return m.VersionInfo.of(registry_service().find(g.namespace, g.group, body.to_domain()))


@operation(
    bp,
    "POST",
    "/<group>/schemas/versions/validate",
    "validate",
    "Would the schema be accepted",
    query=m.NamespaceQuery,
    body=m.ValidateRequest,
    response=m.Valid,
    errors=(400, 404, 417),
    permission=READ,
)
def validate(body: m.ValidateRequest) -> m.Valid:
    policy = body.compatibility.to_domain() if body.compatibility else None
    reasons = registry_service().validate(g.namespace, g.group, body.schema_info.to_domain(), policy)
    return m.Valid(valid=not reasons, reasons=[m.Reason.of(r) for r in reasons])


@operation(
    bp,
    "POST",
    "/<group>/schemas/versions/canRead",
    "canRead",
    "Can the schema read all data",
    query=m.NamespaceQuery,
    body=m.SchemaInfo,
    response=m.CanRead,
    errors=(400, 404, 417),
    permission=READ,
)
def can_read(body: m.SchemaInfo) -> m.CanRead:
    reasons = registry_service().can_read(g.namespace, g.group, body.to_domain())
    return m.CanRead(compatible=not reasons, reasons=[m.Reason.of(r) for r in reasons])


@operation(
    bp,
    "GET",
    "/<group>/schemas/schema/<int:schema_id>",
    "getSchemaForId",
    "Schema by id",
    query=m.NamespaceQuery,
    response=m.SchemaInfo,
    permission=READ,
)
def schema_by_id(schema_id: int) -> Serialized:
    namespace, group, found = g.namespace, g.group, _schema_id(schema_id)
    return immutable_answer(
        (namespace, group, "schema.json", found),
        lambda: m.SchemaInfo.of(registry_service().schema_by_id(namespace, group, found)),
    )


@operation(
    bp,
    "DELETE",
    "/<group>/schemas/schema/<int:schema_id>",
    "deleteSchemaForId",
    "Soft-delete by id",
    query=m.NamespaceQuery,
    status=204,
    permission=ADMIN,
)
def delete_schema_by_id(schema_id: int) -> None:
    registry_service().delete_by_id(g.namespace, g.group, _schema_id(schema_id))


_BY_VERSION = "/<group>/schemas/format/<fmt>/type/<path:type_name>/versions/<int:version>"


@operation(
    bp,
    "GET",
    _BY_VERSION,
    "getSchemaFromVersion",
    "Schema by version",
    query=m.FullTypeNameQuery,
    response=m.SchemaInfo,
    permission=READ,
)
def schema_by_version(fmt: str, type_name: str, version: int, query: m.FullTypeNameQuery) -> m.SchemaInfo:
    found = registry_service().schema_by_version(
        g.namespace, g.group, _format(fmt, query), TypeName(type_name), _version(version)
    )
    return m.SchemaInfo.of(found)


@operation(
    bp, "DELETE", _BY_VERSION, "deleteSchemaVersion", "Soft-delete by version", query=m.FullTypeNameQuery, status=204,
    permission=ADMIN,
)
def delete_schema_by_version(fmt: str, type_name: str, version: int, query: m.FullTypeNameQuery) -> None:
    registry_service().delete_by_version(
        g.namespace, g.group, _format(fmt, query), TypeName(type_name), _version(version)
    )


@operation(
    bp,
    "PUT",
    "/<group>/encodings",
    "getEncodingId",
    "Get or create an encoding id",
    query=m.NamespaceQuery,
    body=m.GetEncodingIdRequest,
    response=m.EncodingId,
    errors=(400, 404, 412),
    permission=WRITE,
)
def encoding_id(body: m.GetEncodingIdRequest) -> m.EncodingId:
    found = registry_service().encoding_id(
        g.namespace, g.group, body.version_info.to_domain(), CodecName(body.codec_type)
    )
    return m.EncodingId(encoding_id=found)


@operation(
    bp,
    "GET",
    "/<group>/encodings/<int:encoding_id>",
    "getEncodingInfo",
    "What an encoding id stands for",
    query=m.NamespaceQuery,
    response=m.EncodingInfo,
    permission=READ,
)
def encoding_info(encoding_id: int) -> Serialized:
    if encoding_id > MAX_INT32:
        raise EncodingNotFound(f"encoding id {encoding_id} not found (ids are 32-bit)")
    namespace, group, found = g.namespace, g.group, EncodingId(encoding_id)
    return immutable_answer(
        (namespace, group, "encoding.json", found),
        lambda: m.EncodingInfo.of(registry_service().encoding_info(namespace, group, found)),
    )


@operation(
    bp, "GET", "/<group>/codecTypes", "getCodecTypesList", "Codec types", query=m.NamespaceQuery, response=m.CodecTypes,
    permission=READ,
)
def codec_types() -> m.CodecTypes:
    return m.CodecTypes(codec_types=[m.CodecType.of(c) for c in registry_service().codec_types(g.namespace, g.group)])


@operation(
    bp,
    "POST",
    "/<group>/codecTypes",
    "addCodecType",
    "Register a codec type",
    query=m.NamespaceQuery,
    body=m.CodecType,
    status=201,
    errors=(400, 404, 409),
    permission=WRITE,
)
def add_codec_type(body: m.CodecType) -> None:
    registry_service().add_codec_type(g.namespace, g.group, body.to_domain())
