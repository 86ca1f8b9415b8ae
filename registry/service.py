"""Registry operations: the rules of Pravega's schema registry over a RegistryStore."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence

from cachetools import LRUCache, TTLCache

from registry.errors import BadRequest, Conflict, FormatMismatch, IncompatibleSchema, SchemaNotFound
from registry.formats import get_format
from registry.formats.base import Incompatibility, ParsedSchema
from registry.ids import CodecName, EncodingId, GroupName, Namespace, SchemaId, TypeName, Version
from registry.model import (
    OWNER_PROPERTY,
    CodecType,
    Compatibility,
    EncodingInfo,
    GroupProperties,
    HistoryRecord,
    SchemaInfo,
    SchemaWithVersion,
    SerializationFormat,
    VersionInfo,
)
from registry.policy import Existing, can_read, evaluate, needed
from registry.store.base import AddContext, GroupPage, RegistryStore, StoredVersion


class ParsedCache:
    """Parsed schemas by (format, type, schema data): content never changes, so checks over
    long histories parse each stored schema once per process. Bounded by the total size of
    the schema data it holds (parsed forms take a small multiple of it)."""

    def __init__(self, budget_bytes: int = 64 * 1024 * 1024) -> None:
        self._items: LRUCache[tuple[str, str, bytes], ParsedSchema] = LRUCache(
            maxsize=budget_bytes, getsizeof=lambda parsed: max(1, len(parsed.data))
        )
        self._lock = threading.Lock()

    def parse(self, info: SchemaInfo) -> ParsedSchema:
        """``info`` parsed by its format, from the cache when it was parsed before."""
        key = (info.format.name, info.type, info.data)
        with self._lock:
            found = self._items.get(key)
        if found is not None:
            return found
        parsed = get_format(info.format.name).parse(info.data, info.type)
        with self._lock, contextlib.suppress(ValueError):  # ValueError: larger than the whole budget
            self._items[key] = parsed
        return parsed


def _accepts(group: GroupProperties, fmt: SerializationFormat) -> bool:
    if group.format.name == "Any":
        return True
    return group.format == fmt


def validate_group_properties(properties: GroupProperties) -> None:
    """Refuse policies the group's format cannot enforce (Pravega's rule, kept)."""
    fmt = properties.format.name
    if fmt in ("Any", "Custom") and properties.compatibility.policy not in ("AllowAny", "DenyAll"):
        raise BadRequest(
            f"serialization format {fmt} cannot be checked for compatibility; "
            f"its groups take policy AllowAny or DenyAll, not {properties.compatibility.policy}"
        )


class AnswerCache:
    """Answers that are immutable once given (encoding ids, schema ids), kept for a while.

    Only a group's deletion can make them wrong; this process forgets the group's entries
    at once, other processes after ``ttl`` seconds.
    """

    def __init__(self, ttl: float = 5.0, size: int = 65536) -> None:
        self._items: TTLCache[tuple[object, ...], object] = TTLCache(maxsize=size, ttl=ttl)
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...]) -> object | None:
        """The cached value, or None if absent or expired."""
        with self._lock:
            return self._items.get(key)

    def put(self, key: tuple[object, ...], value: object) -> None:
        """Remember ``value`` for ``ttl`` seconds."""
        with self._lock:
            self._items[key] = value

    def forget(self, prefix: tuple[object, ...]) -> None:
        """Drop every entry whose key starts with ``prefix``."""
        with self._lock:
            for key in [k for k in self._items if k[: len(prefix)] == prefix]:
                del self._items[key]


def refusal(
    name: GroupName,
    properties: GroupProperties,
    policy: Compatibility,
    new: ParsedSchema,
    live: Sequence[Existing],
    live_types: frozenset[str],
) -> IncompatibleSchema | None:
    """Why group ``name`` refuses ``new`` (None: it accepts it): another type where the group holds
    one type only, or what ``policy`` finds against the ``live`` versions of the new schema's type.

    The one decision behind adding a schema, validating one and the catalog's ALTER TABLE.
    """
    if not properties.allow_multiple_types and live_types - {new.type_name}:
        others = ", ".join(sorted(live_types))
        return IncompatibleSchema(
            f"group {name!r} does not allow multiple types; it holds {others}, not {new.type_name}",
            [Incompatibility("$", f"type {new.type_name} differs from the group's type {others}")],
        )
    reasons = evaluate(policy, new, live)
    if not reasons:
        return None
    more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return IncompatibleSchema(f"schema is incompatible under policy {policy.policy}: {reasons[0]}{more}", reasons)


class RegistryService:
    """The registry's use cases; the REST views are thin wrappers around these."""

    def __init__(self, store: RegistryStore, cache_ttl: float = 5.0) -> None:
        self.store = store
        self.parsed = ParsedCache()
        self.answers = AnswerCache(cache_ttl)

    def using(self, store: RegistryStore) -> RegistryService:
        """The same service (sharing its caches) over another store, e.g. one bound to a transaction."""
        other = RegistryService.__new__(RegistryService)
        other.store, other.parsed, other.answers = store, self.parsed, self.answers
        return other

    # -- groups ---------------------------------------------------------------------------

    def create_group(self, namespace: Namespace, name: GroupName, properties: GroupProperties) -> None:
        """Create a group after checking its policy suits its format."""
        validate_group_properties(properties)
        self.store.create_group(namespace, name, properties)

    def get_group(self, namespace: Namespace, name: GroupName) -> GroupProperties:
        """A group's properties."""
        return self.store.get_group(namespace, name)

    def delete_group(self, namespace: Namespace, name: GroupName) -> None:
        """Delete a group with everything in it, unless something else owns it (409: ask the owner)."""
        owner = self.store.get_group(namespace, name).properties.get(OWNER_PROPERTY)
        if owner:
            raise Conflict(f"group {name!r} belongs to {owner}; delete it there (for a table: DROP TABLE)")
        self.drop_group(namespace, name)

    def drop_group(self, namespace: Namespace, name: GroupName) -> None:
        """Delete a group with everything in it, whoever owns it: for the owner itself."""
        self.store.delete_group(namespace, name)
        self.answers.forget((namespace, name))

    def count_groups(self, namespace: Namespace) -> int:
        """How many groups the namespace holds."""
        return self.store.count_groups(namespace)

    def namespaces(self) -> list[tuple[Namespace, int]]:
        """Every namespace that holds a group, by name, with how many groups it holds."""
        return self.store.namespaces()

    def recent_versions(self, limit: int) -> list[tuple[Namespace, GroupName, VersionInfo, int]]:
        """The newest ``limit`` versions added anywhere, newest first: (namespace, group, version, time)."""
        return self.store.recent_versions(limit)

    def find_groups(
        self, namespace: Namespace, text: str, after: str, limit: int
    ) -> list[tuple[GroupName, GroupProperties]]:
        """A page of the namespace's groups whose name contains ``text`` (any case), by name, past ``after``."""
        return self.store.find_groups(namespace, text, after, limit)

    def group_names(self, namespace: Namespace, text: str, after: str, limit: int) -> list[GroupName]:
        """A page of the names of the namespace's groups that contain ``text`` (any case), by name, past
        ``after``: find_groups without reading the groups' properties."""
        return self.store.group_names(namespace, text, after, limit)

    def delete_namespace(self, namespace: Namespace) -> None:
        """Delete every group of the namespace."""
        self.store.delete_namespace(namespace)
        self.answers.forget((namespace,))

    def update_compatibility(
        self, namespace: Namespace, name: GroupName, new: Compatibility, previous: Compatibility | None
    ) -> GroupProperties:
        """Change a group's policy, compare-and-set when ``previous`` is given."""
        current = self.store.get_group(namespace, name)
        validate_group_properties(GroupProperties(current.format, new))
        return self.store.update_compatibility(namespace, name, new, previous)

    def list_groups(self, namespace: Namespace, token: str | None, limit: int) -> GroupPage:
        """A page of the namespace's groups."""
        return self.store.list_groups(namespace, token, limit)

    def history(self, namespace: Namespace, name: GroupName) -> list[HistoryRecord]:
        """Every schema added to the group, in order, with the policy it was checked under."""
        records = []
        for stored in self.store.history(namespace, name):
            parsed = self.parsed.parse(stored.schema)
            records.append(
                HistoryRecord(
                    schema=stored.schema,
                    version=stored.version,
                    compatibility=stored.compatibility,
                    timestamp=stored.created_at,
                    schema_string=get_format(parsed.format).describe(parsed),
                    deleted=stored.deleted,
                )
            )
        return records

    # -- schemas --------------------------------------------------------------------------

    def _parse_for(self, group: GroupProperties, info: SchemaInfo, name: GroupName) -> ParsedSchema:
        if not _accepts(group, info.format):
            raise FormatMismatch(
                f"group {name!r} accepts {group.format.name} schemas, not {info.format.name}"
                + (f" ({info.format.full_type_name})" if info.format.full_type_name else "")
            )
        return self.parsed.parse(info)

    def _existing(self, versions: Sequence[StoredVersion]) -> list[Existing]:
        return [Existing(v.version, self.parsed.parse(v.schema)) for v in versions]

    def add_schema(self, namespace: Namespace, name: GroupName, info: SchemaInfo) -> VersionInfo:
        """Register a schema under the group's policy; re-adding a live schema returns its version."""
        group = self.store.get_group(namespace, name)
        parsed = self._parse_for(group, info, name)

        def check(context: AddContext) -> None:
            props = context.properties
            refused = refusal(
                name, props, props.compatibility, parsed, self._existing(context.live), context.live_types
            )
            if refused is not None:
                raise refused

        return self.store.add_schema(namespace, name, parsed, info, check)

    def validate(
        self, namespace: Namespace, name: GroupName, info: SchemaInfo, policy: Compatibility | None
    ) -> list[Incompatibility]:
        """Why ``info`` would be refused under ``policy`` (the group's by default); empty: accepted.

        Under the group's own policy this is exactly what :meth:`add_schema` decides (a schema
        already registered is accepted: adding it again returns its version)."""
        group = self.store.get_group(namespace, name)
        parsed = self._parse_for(group, info, name)
        if policy is None and self.store.find_version(namespace, name, parsed) is not None:
            return []
        policy = policy or group.compatibility
        context = self.store.add_context(namespace, name, TypeName(parsed.type_name), needed(policy))
        refused = refusal(name, group, policy, parsed, self._existing(context.live), context.live_types)
        return [] if refused is None else refused.reasons

    def can_read(self, namespace: Namespace, name: GroupName, info: SchemaInfo) -> list[Incompatibility]:
        """Why ``info`` cannot read every live schema of its type in the group; empty: it can."""
        group = self.store.get_group(namespace, name)
        parsed = self._parse_for(group, info, name)
        live = self.store.live_versions(namespace, name, TypeName(parsed.type_name))
        return can_read(parsed, self._existing(live))

    def find(self, namespace: Namespace, name: GroupName, info: SchemaInfo) -> VersionInfo:
        """The version of ``info`` in the group; SchemaNotFound if it is not registered."""
        group = self.store.get_group(namespace, name)
        found = self.store.find_version(namespace, name, self._parse_for(group, info, name))
        if found is None:
            raise SchemaNotFound(f"schema of type {info.type!r} is not registered in group {name!r}")
        return found

    def latest(self, namespace: Namespace, name: GroupName, type_name: TypeName | None) -> list[SchemaWithVersion]:
        """The newest live version of each type (or of ``type_name``)."""
        return [SchemaWithVersion(s.schema, s.version) for s in self.store.newest_of_types(namespace, name, type_name)]

    def latest_version(self, namespace: Namespace, name: GroupName) -> SchemaWithVersion | None:
        """The most recently added live version of the group, whatever its type (None if none)."""
        found = self.store.latest_version(namespace, name)
        return None if found is None else SchemaWithVersion(found.schema, found.version)

    def unknown_encodings(self, namespace: Namespace, name: GroupName, ids: frozenset[int]) -> frozenset[int]:
        """Those of ``ids`` that are not encoding ids of the group."""
        return ids - self.store.encodings_of(namespace, name, ids)

    def versions(self, namespace: Namespace, name: GroupName, type_name: TypeName | None) -> list[SchemaWithVersion]:
        """Every live version (of ``type_name``, if given), in order of addition."""
        live = self.store.live_versions(namespace, name, type_name or TypeName(""))
        return [SchemaWithVersion(s.schema, s.version) for s in live]

    def schema_by_id(self, namespace: Namespace, name: GroupName, schema_id: SchemaId) -> SchemaInfo:
        """The schema with that id, deleted or not: data written with it must stay readable."""
        key = (namespace, name, "schema", schema_id)
        cached = self.answers.get(key)
        if isinstance(cached, SchemaInfo):
            return cached
        schema = self.store.version_by_id(namespace, name, schema_id).schema
        self.answers.put(key, schema)
        return schema

    def schema_by_version(
        self, namespace: Namespace, name: GroupName, fmt: SerializationFormat, type_name: TypeName, version: Version
    ) -> SchemaInfo:
        """The schema of a version, by number."""
        return self.store.version_by_number(namespace, name, fmt, type_name, version).schema

    def delete_by_id(self, namespace: Namespace, name: GroupName, schema_id: SchemaId) -> None:
        """Soft-delete by schema id."""
        self.store.delete_by_id(namespace, name, schema_id)

    def delete_by_version(
        self, namespace: Namespace, name: GroupName, fmt: SerializationFormat, type_name: TypeName, version: Version
    ) -> None:
        """Soft-delete by version number."""
        self.store.delete_by_number(namespace, name, fmt, type_name, version)

    def added_to(self, namespace: Namespace, info: SchemaInfo) -> dict[GroupName, VersionInfo]:
        """The groups of the namespace where ``info`` is registered; SchemaNotFound if none."""
        groups = self.store.added_to(namespace, self.parsed.parse(info))
        if not groups:
            raise SchemaNotFound(f"schema of type {info.type!r} is not registered in any group")
        return groups

    # -- codecs and encodings ---------------------------------------------------------------

    def codec_types(self, namespace: Namespace, name: GroupName) -> list[CodecType]:
        """Codec types registered in the group."""
        return self.store.codec_types(namespace, name)

    def add_codec_type(self, namespace: Namespace, name: GroupName, codec: CodecType) -> None:
        """Register a codec type."""
        self.store.add_codec_type(namespace, name, codec)

    def encoding_id(self, namespace: Namespace, name: GroupName, version: VersionInfo, codec: CodecName) -> EncodingId:
        """Get or create the encoding id of (version, codec)."""
        return self.store.encoding_id(namespace, name, version, codec)

    def encodings(self, namespace: Namespace, name: GroupName) -> list[tuple[EncodingId, VersionInfo, CodecName]]:
        """Every encoding id of the group, oldest first, with the version and codec it stands for."""
        return self.store.encodings(namespace, name)

    def encoding_info(self, namespace: Namespace, name: GroupName, encoding: EncodingId) -> EncodingInfo:
        """What an encoding id stands for."""
        key = (namespace, name, "encoding", encoding)
        cached = self.answers.get(key)
        if isinstance(cached, EncodingInfo):
            return cached
        info = self.store.encoding_info(namespace, name, encoding)
        self.answers.put(key, info)
        return info
