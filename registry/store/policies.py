"""How stores keep a compatibility policy: as Pravega's Compatibility JSON, the wire model's
form, so that a stored policy reads back exactly as the API wrote it."""

from __future__ import annotations

from typing import Any

from registry.api.models import Compatibility as CompatibilityDocument
from registry.model import Compatibility


def policy_to_json(policy: Compatibility) -> dict[str, Any]:
    """The JSON document a policy is stored as."""
    return CompatibilityDocument.of(policy).model_dump(mode="json")


def policy_from_json(document: dict[str, Any]) -> Compatibility:
    """The policy a stored JSON document holds."""
    return CompatibilityDocument.model_validate(document, by_name=False).to_domain()
