"""Service endpoints: ping and the OpenAPI document."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app

from registry.api.openapi import document

bp = Blueprint("meta", __name__)


@bp.get("/ping")
def ping() -> Any:
    return {"status": "ok"}


@bp.get("/v1/openapi.json")
def openapi() -> Any:
    return document(current_app)
