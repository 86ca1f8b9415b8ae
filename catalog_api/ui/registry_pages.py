"""The registry's pages, built from RegistryService: namespaces and a group search, and a group's page
(versions, their data contracts, history, codecs and encodings, a diff of two versions, a compatibility
check)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from catalog_api.ui.contracts import VersionContract, contract_of
from catalog_api.ui.diff import DiffRow, FieldChanges, field_changes, readable, side_by_side
from catalog_api.ui.services import Services, may_read
from registry.errors import NotFound, StreamcatError
from registry.formats.base import Incompatibility
from registry.ids import GroupName, Namespace, SchemaId, TypeName
from registry.model import (
    CodecType,
    Compatibility,
    GroupProperties,
    HistoryRecord,
    SchemaInfo,
    SchemaWithVersion,
    VersionInfo,
)
from registry.permissions import Access, Permission, Resource

#: Groups per page of the search.
PAGE_SIZE = 50
#: Names read at a time, and batches of them one page reads at most, for viewers with grants on single
#: groups (who may read few of them).
NAMES_BATCH = 1000
MAX_BATCHES = 10


def policy_text(policy: Compatibility) -> str:
    """A policy as the API names it, with the version an Advanced policy's rules name."""
    rules = [
        f"{direction}{type(rule).__name__}({getattr(rule, 'version', '')})"
        for direction, rule in (("backward: ", policy.backward), ("forward: ", policy.forward))
        if rule is not None and policy.policy == "Advanced"
    ]
    return policy.policy + (f" ({', '.join(rules)})" if rules else "")


@dataclass(frozen=True)
class NamespaceEntry:
    """A namespace the viewer may read in, with its number of groups."""

    name: str
    groups: int


@dataclass(frozen=True)
class GroupEntry:
    """A group as the search lists it."""

    name: str
    format: str
    policy: str


@dataclass(frozen=True)
class RegistryPage:
    """Namespaces, and one page of the groups of one of them whose names contain the search text."""

    namespaces: list[NamespaceEntry]
    namespace: str
    text: str
    groups: list[GroupEntry]
    #: the ``after`` of the next page ('' when this is the last)
    next_after: str


def registry_page(services: Services, viewer: Access, namespace: str | None, text: str, after: str) -> RegistryPage:
    """The registry's page for ``viewer``: only namespaces and groups it may read (without a
    namespace, the first of them)."""
    namespaces = [
        NamespaceEntry(name, count) for name, count in services.registry.namespaces() if may_read(viewer, name)
    ]
    if namespace is None:
        namespace = namespaces[0].name if namespaces else ""
    groups: list[GroupEntry] = []
    cursor, more = after, False
    if viewer.allows(Permission.READ, Resource.of_namespace(namespace)):
        found = services.registry.find_groups(Namespace(namespace), text, cursor, PAGE_SIZE)
        groups = [GroupEntry(name, p.format.name, policy_text(p.compatibility)) for name, p in found]
        cursor, more = (found[-1][0] if found else cursor), len(found) == PAGE_SIZE
    elif may_read(viewer, namespace):
        # Grants on single groups: read names only (not the properties of groups the viewer may not read)
        # until the page is full, then the properties of those it shows.
        names: list[GroupName] = []
        for _ in range(MAX_BATCHES):
            found_names = services.registry.group_names(Namespace(namespace), text, cursor, NAMES_BATCH)
            more = len(found_names) == NAMES_BATCH
            for i, name in enumerate(found_names):
                cursor = name
                if may_read(viewer, namespace, name):
                    names.append(name)
                if len(names) == PAGE_SIZE:
                    more = more or i < len(found_names) - 1
                    break
            if len(names) == PAGE_SIZE or not more:
                break
        for name in names:
            try:
                p = services.registry.get_group(Namespace(namespace), name)
            except NotFound:  # deleted since its name was read
                continue
            groups.append(GroupEntry(name, p.format.name, policy_text(p.compatibility)))
    return RegistryPage(namespaces, namespace, text, groups, cursor if more else "")


@dataclass(frozen=True)
class Diff:
    """Two versions side by side."""

    left: VersionInfo
    right: VersionInfo
    rows: list[DiffRow]
    fields: FieldChanges


@dataclass(frozen=True)
class Check:
    """The verdict of a compatibility check: reasons as ``validate`` gives them (none: compatible)."""

    schema_text: str
    reasons: list[Incompatibility] = field(default_factory=list)
    error: str = ""

    @property
    def compatible(self) -> bool:
        """Whether the group would accept the schema."""
        return not self.reasons and not self.error


@dataclass(frozen=True)
class GroupPage:
    """Everything the group page shows."""

    namespace: str
    name: str
    properties: GroupProperties
    policy: str
    versions: list[SchemaWithVersion]
    history: list[HistoryRecord]
    codecs: list[CodecType]
    encodings: list[tuple[int, VersionInfo, str]]
    #: the data contracts of the versions that have one (rules, metadata), oldest first
    contracts: list[VersionContract]
    #: the text of the latest version, laid out (with its doc strings)
    latest_text: str
    diff: Diff | None
    check: Check | None
    #: the table bound to this group (a table of the same name in the scope of the same name)
    table: str | None


def _schema_text(schema: SchemaInfo) -> str:
    return readable(schema.data.decode("utf-8", errors="replace"))


def group_page(
    services: Services, namespace: str, name: str, left: int | None, right: int | None, check: Check | None = None
) -> GroupPage:
    """A group's page (the caller checked read permission), with the diff of schema ids ``left`` and
    ``right`` when both are given."""
    ns, group = Namespace(namespace), GroupName(name)
    registry = services.registry
    properties = registry.get_group(ns, group)
    versions = registry.versions(ns, group, None)
    history = registry.history(ns, group)
    latest = versions[-1] if versions else None
    diff = None
    if left is not None and right is not None:
        a = registry.schema_by_id(ns, group, SchemaId(left))
        b = registry.schema_by_id(ns, group, SchemaId(right))
        by_id = {h.version.id: h.version for h in history}
        if left in by_id and right in by_id:
            ta, tb = _schema_text(a), _schema_text(b)
            diff = Diff(by_id[SchemaId(left)], by_id[SchemaId(right)], side_by_side(ta, tb), field_changes(ta, tb))
    table = name if _is_table(services, namespace, name) else None
    return GroupPage(
        namespace=namespace,
        name=name,
        properties=properties,
        policy=policy_text(properties.compatibility),
        versions=versions,
        history=history,
        codecs=registry.codec_types(ns, group),
        encodings=[(int(i), v, str(c)) for i, v, c in registry.encodings(ns, group)],
        contracts=[c for c in map(contract_of, versions) if c is not None],
        latest_text=_schema_text(latest.schema) if latest else "",
        diff=diff,
        check=check,
        table=table,
    )


def _is_table(services: Services, scope: str, name: str) -> bool:
    try:
        services.catalog.get_table(scope, name)
    except NotFound:  # no such scope or table: a group of the registry only
        return False
    return True


def check_schema(services: Services, namespace: str, name: str, text: str) -> Check:
    """Would the group accept ``text`` as its next schema (of the latest version's type)? The same
    decision as ``validate``, with its reasons and their paths."""
    ns, group = Namespace(namespace), GroupName(name)
    properties = services.registry.get_group(ns, group)
    latest = services.registry.latest_version(ns, group)
    type_name = latest.version.type if latest else _type_of(text)
    info = SchemaInfo(type=type_name, format=properties.format, data=text.encode("utf-8"))
    try:
        return Check(text, services.registry.validate(ns, group, info, None))
    except StreamcatError as e:  # an unparseable schema, a format the group refuses: the API's answer
        return Check(text, error=e.message)


def _type_of(text: str) -> TypeName:
    try:
        body = json.loads(text)
    except ValueError:
        return TypeName("")
    return TypeName(str(body.get("name", ""))) if isinstance(body, dict) else TypeName("")
