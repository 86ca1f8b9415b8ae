"""``/v1/schemas``: questions about a schema across groups (Pravega's SchemaResource)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from registry.api import registry_service
from registry.api.requests import json_body, namespace_of
from registry.model import SchemaInfo

bp = Blueprint("schemas", __name__)


@bp.post("/addedTo")
def added_to(namespace: str | None = None) -> Any:
    info = SchemaInfo.from_json(json_body("SchemaInfo"))
    groups = registry_service().added_to(namespace_of({"namespace": namespace} if namespace else None), info)
    return {"groups": {name: version.to_json() for name, version in groups.items()}}
