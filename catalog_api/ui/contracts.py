"""The data contract of a schema version (Confluent's ``metadata`` and ``ruleSet``), as the group page
shows it: read from the version's properties that RegistryService answers, where the Confluent layer
keeps them as JSON (``streamcat.metadata``, ``streamcat.ruleSet``: registry/confluent/store.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from registry.confluent.contracts import METADATA_PROPERTY, RULE_SET_PROPERTY, Metadata, Rule, RuleSet
from registry.errors import StreamcatError
from registry.model import SchemaWithVersion, VersionInfo


@dataclass(frozen=True)
class ContractRule:
    """A rule, with the list it is in (``migration``, ``domain`` or ``encoding``)."""

    list: str
    rule: Rule


@dataclass(frozen=True)
class VersionContract:
    """A version's data contract: its rules in the order clients run them, and its metadata."""

    version: VersionInfo
    rules: list[ContractRule]
    metadata: Metadata
    #: the properties that hold no readable contract (a client of the Pravega API may write any
    #: property), shown as they are
    unreadable: dict[str, str] = field(default_factory=dict)


def contract_of(version: SchemaWithVersion) -> VersionContract | None:
    """The version's data contract, or None when it has none."""
    properties = version.schema.properties
    if not (properties.get(METADATA_PROPERTY) or properties.get(RULE_SET_PROPERTY)):
        return None
    unreadable: dict[str, str] = {}
    rules: list[ContractRule] = []
    metadata = Metadata()
    if text := properties.get(RULE_SET_PROPERTY):
        try:
            rule_set = RuleSet.of_json(json.loads(text))
            rules = [ContractRule(name, r) for name, listed in (
                ("migration", rule_set.migration_rules), ("domain", rule_set.domain_rules),
                ("encoding", rule_set.encoding_rules)) for r in listed]
        except (ValueError, TypeError, AttributeError, StreamcatError):
            unreadable[RULE_SET_PROPERTY] = text
    if text := properties.get(METADATA_PROPERTY):
        try:
            metadata = Metadata.of_json(json.loads(text))
        except (ValueError, TypeError, AttributeError):
            unreadable[METADATA_PROPERTY] = text
    return VersionContract(version.version, rules, metadata, unreadable)
