"""The rule set of a catalog table's schema version, set through the Confluent API's service: how
the catalog mirrors a table's CHECK constraints as CEL rules (catalog_api/constraints.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from registry.confluent.contracts import Contract, Metadata, RuleSet, merge_metadata
from registry.confluent.model import Subject
from registry.confluent.service import ConfluentService, SchemaRequest
from registry.ids import GroupName, Namespace


class ConfluentTableRules:
    """catalog_api.groups.TableRules over the Confluent service: a registration of the latest
    version's schema with the new rule set (and the version's metadata, so that no tag is added)."""

    def __init__(self, service: ConfluentService) -> None:
        self.service = service

    def set_rule_set(self, namespace: Namespace, name: GroupName, rule_set: Mapping[str, Any],
                     properties: Mapping[str, str]) -> None:
        """A new version of the group's latest schema under ``rule_set``, its metadata with ``properties``."""
        subject = Subject(namespace, name)
        latest = self.service.version(subject, "latest", deleted=False)
        schema = latest.schema
        metadata = merge_metadata(schema.contract.metadata, Metadata(properties=dict(properties)))
        contract = Contract(metadata, RuleSet.of_json(rule_set))
        request = SchemaRequest(self.service.text(schema), schema.schema_type, tuple(schema.references),
                                contract=contract)
        self.service.register(subject, request, None)
