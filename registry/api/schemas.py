"""``/v1/schemas``: questions about a schema across groups (Pravega's SchemaResource)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, g

from registry.api import models as m
from registry.api.context import access, registry_service
from registry.api.operations import operation
from registry.api.requests import namespace_of
from registry.errors import SchemaNotFound
from registry.permissions import Need, Permission, Resource

bp = Blueprint("schemas", __name__)


@bp.url_value_preprocessor
def _pull_namespace(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    g.namespace = namespace_of(values)
    if values is not None:
        values.pop("namespace", None)


@operation(
    bp,
    "POST",
    "/addedTo",
    "getSchemaReferences",
    "Groups that hold a schema",
    query=m.NamespaceQuery,
    body=m.SchemaInfo,
    response=m.AddedTo,
    permission=Need("read", "namespace", listing=True),
)
def added_to(body: m.SchemaInfo) -> m.AddedTo:
    groups = registry_service().added_to(g.namespace, body.to_domain())
    readable = access()
    visible = {
        str(name): m.VersionInfo.of(version)
        for name, version in groups.items()
        if readable.allows(Permission.READ, Resource.of_group(g.namespace, name))
    }
    if not visible:
        # As if nowhere: that the schema is in groups the caller cannot see is not the caller's to know.
        raise SchemaNotFound(f"schema of type {body.type!r} is not registered in any group")
    return m.AddedTo(groups=visible)
