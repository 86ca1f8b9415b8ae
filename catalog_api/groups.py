"""What the catalog needs of the schema registry: a table's schema is its group's.

The catalog reaches the registry only through this interface, which
:class:`registry.service.RegistryService` provides; never through the registry's rows,
store or caches. A catalog store hands its callbacks an instance bound to the catalog's own
database transaction, so that stream, table and group change together or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from registry.ids import GroupName, Namespace, SchemaId
from registry.model import Compatibility, GroupProperties, SchemaInfo, SchemaWithVersion, VersionInfo


class SchemaGroups(Protocol):
    """Schema groups in namespaces, with their versions and policies."""

    def create_group(self, namespace: Namespace, name: GroupName, properties: GroupProperties) -> None:
        """Create a group; AlreadyExists if the name is taken."""

    def get_group(self, namespace: Namespace, name: GroupName) -> GroupProperties:
        """A group's properties; GroupNotFound if none."""

    def drop_group(self, namespace: Namespace, name: GroupName) -> None:
        """Delete a group with its versions and encodings, though it is owned (by the catalog's table)."""

    def count_groups(self, namespace: Namespace) -> int:
        """How many groups the namespace holds."""

    def delete_namespace(self, namespace: Namespace) -> None:
        """Delete every group of the namespace."""

    def update_compatibility(
        self, namespace: Namespace, name: GroupName, new: Compatibility, previous: Compatibility | None
    ) -> GroupProperties:
        """Change a group's policy."""

    def add_schema(self, namespace: Namespace, name: GroupName, info: SchemaInfo) -> VersionInfo:
        """Register a schema under the group's policy (IncompatibleSchema with reasons if refused)."""

    def delete_by_id(self, namespace: Namespace, name: GroupName, schema_id: SchemaId) -> None:
        """Soft-delete the group's version with that schema id (its id and number are never reused)."""

    def latest_version(self, namespace: Namespace, name: GroupName) -> SchemaWithVersion | None:
        """The group's most recently added live version."""

    def unknown_encodings(self, namespace: Namespace, name: GroupName, ids: frozenset[int]) -> frozenset[int]:
        """Those of ``ids`` that are not encoding ids of the group."""


class TableRules(Protocol):
    """The rule set of a table's schema version (docs/data-contracts.md), as the registry's data
    contracts keep it: the catalog mirrors a table's CHECK constraints there."""

    def set_rule_set(self, namespace: Namespace, name: GroupName, rule_set: Mapping[str, Any],
                     properties: Mapping[str, str]) -> None:
        """Make ``rule_set`` (Confluent's JSON) the rule set of the group's latest version: the same
        schema as a new version, its metadata with ``properties`` set (no tag added)."""
