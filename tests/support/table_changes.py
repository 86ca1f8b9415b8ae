"""Table changes in their JSON form, read by the wire models as the server reads them."""

from __future__ import annotations

from typing import Any

from catalog_api import changes
from catalog_api.api.models import AlterTableRequest
from registry.api.validation import parse_json


def apply_column_changes(schema: dict[str, Any], given: list[dict[str, Any]]) -> dict[str, Any]:
    """``catalog_api.changes.apply_column_changes`` of the changes ``given`` as JSON."""
    return changes.apply_column_changes(schema, parse_json(AlterTableRequest, {"changes": given}).to_domain())
