"""``/v1/groups``: groups, their schemas, codecs and encodings (Pravega's GroupResource)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, g, request

from registry.api import registry_service
from registry.api.requests import check_name, int_arg, json_body, namespace_of
from registry.errors import BadRequest, EncodingNotFound, SchemaNotFound
from registry.formats import FORMAT_NAMES
from registry.ids import CodecName, EncodingId, GroupName, SchemaId, TypeName, Version
from registry.model import CodecType, Compatibility, GroupProperties, SchemaInfo, SerializationFormat, VersionInfo

bp = Blueprint("groups", __name__)


@bp.url_value_preprocessor
def _pull_names(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    g.namespace = namespace_of(values)
    if values is not None:
        values.pop("namespace", None)
        if "group" in values:
            g.group = GroupName(check_name(values.pop("group"), "group name"))


#: Ids and versions are 32-bit, as in Pravega; larger ones name nothing.
_MAX_ID = 2**31 - 1


def _schema_id(value: int) -> SchemaId:
    if value > _MAX_ID:
        raise SchemaNotFound(f"schema id {value} not found (ids are 32-bit)")
    return SchemaId(value)


def _version(value: int) -> Version:
    if value > _MAX_ID:
        raise SchemaNotFound(f"version {value} not found (versions are 32-bit)")
    return Version(value)


def _reasons(reasons: list[Any]) -> list[dict[str, str]]:
    return [r.to_json() for r in reasons]


@bp.get("")
def list_groups() -> Any:
    settings = current_app.extensions["streamcat"].settings
    limit = int_arg("limit", settings.list_limit, 1, 10_000)
    page = registry_service().list_groups(g.namespace, request.args.get("continuationToken"), limit)
    return {
        "groups": {name: props.to_json() for name, props in page.groups},
        "continuationToken": page.continuation_token,
    }


@bp.post("")
def create_group() -> Any:
    body = json_body("CreateGroupRequest")
    properties = GroupProperties.from_json(body["groupProperties"])
    name = GroupName(check_name(body["groupName"], "groupName"))
    registry_service().create_group(g.namespace, name, properties)
    return Response(status=201)


@bp.get("/<group>")
def get_group() -> Any:
    return registry_service().store.get_group(g.namespace, g.group).to_json()


@bp.delete("/<group>")
def delete_group() -> Any:
    registry_service().delete_group(g.namespace, g.group)
    return Response(status=204)


@bp.get("/<group>/history")
def history() -> Any:
    return {"history": [r.to_json() for r in registry_service().history(g.namespace, g.group)]}


@bp.put("/<group>/compatibility")
def update_compatibility() -> Any:
    body = json_body("UpdateCompatibilityRequest")
    previous = body.get("previousCompatibility")
    updated = registry_service().update_compatibility(
        g.namespace,
        g.group,
        Compatibility.from_json(body["compatibility"]),
        Compatibility.from_json(previous) if previous else None,
    )
    return updated.to_json()


def _type_arg() -> TypeName | None:
    value = request.args.get("type")
    return TypeName(value) if value else None


@bp.get("/<group>/schemas")
def latest_schemas() -> Any:
    found = registry_service().latest(g.namespace, g.group, _type_arg())
    return {"schemas": [s.to_json() for s in found]}


@bp.post("/<group>/schemas")
def add_schema() -> Any:
    info = SchemaInfo.from_json(json_body("SchemaInfo"))
    return registry_service().add_schema(g.namespace, g.group, info).to_json(), 201


@bp.get("/<group>/schemas/versions")
def versions() -> Any:
    found = registry_service().versions(g.namespace, g.group, _type_arg())
    return {"schemas": [s.to_json() for s in found]}


@bp.post("/<group>/schemas/versions/find")
def find_version() -> Any:
    info = SchemaInfo.from_json(json_body("SchemaInfo"))
    return registry_service().find(g.namespace, g.group, info).to_json()


@bp.post("/<group>/schemas/versions/validate")
def validate() -> Any:
    body = json_body("ValidateRequest")
    policy = Compatibility.from_json(body["compatibility"]) if body.get("compatibility") else None
    reasons = registry_service().validate(g.namespace, g.group, SchemaInfo.from_json(body["schemaInfo"]), policy)
    return {"valid": not reasons, "reasons": _reasons(reasons)}


@bp.post("/<group>/schemas/versions/canRead")
def can_read() -> Any:
    info = SchemaInfo.from_json(json_body("SchemaInfo"))
    reasons = registry_service().can_read(g.namespace, g.group, info)
    return {"compatible": not reasons, "reasons": _reasons(reasons)}


@bp.get("/<group>/schemas/schema/<int:schema_id>")
def schema_by_id(schema_id: int) -> Any:
    return registry_service().schema_by_id(g.namespace, g.group, _schema_id(schema_id)).to_json()


@bp.delete("/<group>/schemas/schema/<int:schema_id>")
def delete_schema_by_id(schema_id: int) -> Any:
    registry_service().delete_by_id(g.namespace, g.group, _schema_id(schema_id))
    return Response(status=204)


def _format_arg(name: str) -> SerializationFormat:
    if name not in FORMAT_NAMES:
        raise BadRequest(f"unknown serialization format {name!r}; expected one of {', '.join(FORMAT_NAMES)}")
    if name == "Custom":
        full = request.args.get("fullTypeName", "")
        if not full:
            raise BadRequest("format Custom needs the query argument fullTypeName")
        return SerializationFormat(name, full)
    return SerializationFormat(name)


_BY_VERSION = "/<group>/schemas/format/<fmt>/type/<path:type_name>/versions/<int:version>"


@bp.get(_BY_VERSION)
def schema_by_version(fmt: str, type_name: str, version: int) -> Any:
    service = registry_service()
    found = service.schema_by_version(g.namespace, g.group, _format_arg(fmt), TypeName(type_name), _version(version))
    return found.to_json()


@bp.delete(_BY_VERSION)
def delete_schema_by_version(fmt: str, type_name: str, version: int) -> Any:
    registry_service().delete_by_version(g.namespace, g.group, _format_arg(fmt), TypeName(type_name), _version(version))
    return Response(status=204)


@bp.put("/<group>/encodings")
def encoding_id() -> Any:
    body = json_body("GetEncodingIdRequest")
    version = VersionInfo.from_json(body["versionInfo"])
    found = registry_service().encoding_id(g.namespace, g.group, version, CodecName(body["codecType"]))
    return {"encodingId": found}


@bp.get("/<group>/encodings/<int:encoding_id>")
def encoding_info(encoding_id: int) -> Any:
    if encoding_id > _MAX_ID:
        raise EncodingNotFound(f"encoding id {encoding_id} not found (ids are 32-bit)")
    return registry_service().encoding_info(g.namespace, g.group, EncodingId(encoding_id)).to_json()


@bp.get("/<group>/codecTypes")
def codec_types() -> Any:
    return {"codecTypes": [c.to_json() for c in registry_service().codec_types(g.namespace, g.group)]}


@bp.post("/<group>/codecTypes")
def add_codec_type() -> Any:
    codec = CodecType.from_json(json_body("CodecType"))
    registry_service().add_codec_type(g.namespace, g.group, codec)
    return Response(status=201)
