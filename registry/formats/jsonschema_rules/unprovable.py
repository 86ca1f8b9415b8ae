"""The keywords the rules prove, and the report for any other keyword a reader uses (``unevaluatedProperties``...)."""

from __future__ import annotations

from registry.formats.base import Incompatibility
from registry.formats.jsonschema_rules.nodes import Node

#: Keywords whose constraints this package proves (or that only annotate); any other keyword the
#: document's draft validates is reported as not provable when a reader uses it.
HANDLED_KEYWORDS = frozenset(
    {
        "$ref", "allOf", "anyOf", "oneOf", "not", "if", "type", "enum", "const",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minLength", "maxLength", "pattern", "format",
        "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains",
        "properties", "patternProperties", "additionalProperties", "required", "minProperties",
        "maxProperties", "propertyNames", "dependencies", "dependentRequired", "dependentSchemas",
        "then", "else", "minContains", "maxContains",
    }
)  # fmt: skip


def check_unprovable(reader: Node, path: str) -> list[Incompatibility]:
    """Reader keywords this checker cannot reason about (``unevaluatedProperties`` and the like)."""
    reasons: list[Incompatibility] = []
    for keyword, value in reader.keywords.items():
        if keyword not in HANDLED_KEYWORDS and value not in (True, {}):
            reasons.append(
                Incompatibility(path, f"the reader's {keyword} cannot be proven to accept the writer's values")
            )
    return reasons
