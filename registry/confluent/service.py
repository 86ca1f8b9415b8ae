"""The Confluent API's rules over the registry: levels, modes, references, deletes.

Compatibility is decided by the registry's policy engine (``registry.service.refusal``, the one
decision behind every add): a subject's level is its group's policy, and a new version is checked
against the subject's live versions whatever their type, as Confluent does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace

from cachetools import LRUCache
from google.protobuf import descriptor_pb2

from registry import errors
from registry.confluent import errors as ce
from registry.confluent.contracts import NO_CONTRACT, NO_SETTINGS, Contract, ContractConfig, contract_key, merged
from registry.confluent.model import (
    ALL_CONTEXTS,
    DEFAULT_LEVEL,
    DEFAULT_MODE,
    INHERITED_POLICY,
    LEVELS,
    MODES,
    SCHEMA_TYPES,
    TYPE_OF_FORMAT,
    Configs,
    SchemaReference,
    StoredSchema,
    Subject,
    SubjectVersion,
    VersionEntry,
    level_of,
    policy_of,
    reference_subject,
    relative_name,
    same_policy,
    shown_name,
)
from registry.confluent.store import (
    DeleteContext,
    LiveVersion,
    NewVersion,
    RegisterContext,
    SqlConfluentStore,
)
from registry.formats import get_format
from registry.formats.base import Incompatibility, ParsedSchema, Reference
from registry.formats.protobuf import is_proto_text, main_file
from registry.formats.protobuf_text import proto_text
from registry.ids import GroupName, Namespace, SchemaId, TypeName, Version
from registry.model import (
    OWNER_PROPERTY,
    Compatibility,
    GroupProperties,
    Rule,
    SchemaInfo,
    SerializationFormat,
    VersionInfo,
)
from registry.policy import Existing
from registry.service import RegistryService, refusal

#: Listings (``GET /subjects``, ``GET /schemas``, ...) answer at most this many items per request;
#: a request without ``limit`` (or with a negative one, as clients send for "all") gets this many.
MAX_LIMIT = 10_000
#: How many reasons a refusal's message spells out.
_SHOWN_REASONS = 10
#: Formats with no compatibility rules of their own: their groups take only NONE.
_UNCHECKED = ("Any", "Custom")


@dataclass(frozen=True)
class SchemaRequest:
    """A schema as a Confluent client sends it (registration, lookup, compatibility test)."""

    schema: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = ()
    #: IMPORT mode only: the id and version to register under
    id: int | None = None
    version: int | None = None
    #: the data contract given (None parts: not given, inherited from the latest version)
    contract: Contract = NO_CONTRACT


@dataclass(frozen=True)
class ConfigView:
    """A configuration as ``GET /config`` answers it."""

    level: str
    normalize: bool | None = None
    contracts: ContractConfig = NO_SETTINGS


@dataclass(frozen=True)
class _Parsed:
    parsed: ParsedSchema
    #: the identity of the schema without a data contract (see :func:`_with_contract`)
    fingerprint: str
    registered: str | None
    references: tuple[SchemaReference, ...]


def _identity(parsed: ParsedSchema, references: Sequence[SchemaReference]) -> str:
    # A schema's references are part of what it is (Confluent keeps them with it): the same
    # text with other references is another schema, with another id.
    if not references:
        return parsed.fingerprint
    listed = json.dumps([[r.name, r.subject, r.version] for r in references], separators=(",", ":"))
    return hashlib.sha256(parsed.canonical + b"\0references\0" + listed.encode()).hexdigest()


def _with_contract(content: str, contract: Contract) -> str:
    """The identity of a schema whose identity without a contract is ``content``: so is its
    contract (Confluent's ids hash metadata and rule sets too), and no contract changes nothing."""
    key = contract_key(contract)
    if not key:
        return content
    return hashlib.sha256(f"{content}\0contract\0{key}".encode()).hexdigest()


def _explain(reasons: Sequence[Incompatibility]) -> list[str]:
    return [str(r) for r in reasons]


def _version_number(selector: str) -> int | None:
    """The number a path's version names; None for the latest (``latest`` or -1)."""
    if selector in ("latest", "-1"):
        return None
    if selector.isascii() and selector.isdigit() and len(selector) <= 10 and 1 <= int(selector) <= 2**31 - 1:
        return int(selector)
    raise ce.InvalidVersion(
        f"The specified version '{selector[:40]}' is not a valid version id. "
        "Allowed values are between [1, 2^31-1] and the string \"latest\""
    )


def _in_group(live: Sequence[LiveVersion], group_key: str | None, contract: Contract) -> list[LiveVersion]:
    """The versions a new one with ``contract`` is checked against: with a compatibility group
    (a metadata property), those whose value of it is the new one's (absent counts as a value)."""
    if not group_key:
        return list(live)
    value = contract.property(group_key)
    return [v for v in live if v.contract.property(group_key) == value]


def _direction_only(policy: Compatibility) -> Compatibility:
    """``policy``'s directions against one chosen version (what testing against a version means)."""
    backward = Rule("all") if policy.backward is not None else None
    forward = Rule("all") if policy.forward is not None else None
    return Compatibility(policy.policy, backward, forward)


class ConfluentService:
    """The Confluent Schema Registry's operations; the Confluent REST views call these."""

    def __init__(self, registry: RegistryService, store: SqlConfluentStore) -> None:
        self.registry = registry
        self.store = store
        self._texts: LRUCache[tuple[int, str], str] = LRUCache(maxsize=4096)
        self._texts_lock = threading.Lock()

    # -- names and limits -------------------------------------------------------------------

    @staticmethod
    def subject(text: str, *, context_only: bool = False) -> Subject:
        """The subject (or, with ``context_only``, possibly just the context) a path names."""
        return Subject.parse(text, context_only=context_only)

    @staticmethod
    def page(offset: int, limit: int | None) -> tuple[int, int]:
        """(offset, limit) of a listing: no limit or a negative one means :data:`MAX_LIMIT`, and
        more than that is cut to it."""
        if limit is None or limit <= 0 or limit > MAX_LIMIT:
            limit = MAX_LIMIT
        return max(offset, 0), limit

    @staticmethod
    def _prefix(prefix: str | None) -> tuple[Namespace | None, str]:
        if prefix is None or prefix == ALL_CONTEXTS:
            return None, ""
        if prefix.startswith(":."):
            parsed = Subject.parse(prefix, context_only=True)
            return parsed.namespace, parsed.name
        return Namespace(""), prefix

    # -- subjects and versions --------------------------------------------------------------

    def list_subjects(
        self, prefix: str | None, *, deleted: bool, deleted_only: bool, offset: int, limit: int | None
    ) -> list[Subject]:
        """Subjects whose qualified names start with ``prefix`` (every context by default)."""
        namespace, name = self._prefix(prefix)
        offset, limit = self.page(offset, limit)
        return self.store.subjects(namespace, name, deleted=deleted, deleted_only=deleted_only, offset=offset,
                                   limit=limit)

    def _entries(self, subject: Subject, *, deleted: bool) -> list[VersionEntry]:
        entries = self.store.entries(subject)
        if not entries or (not deleted and all(e.deleted for e in entries)):
            raise ce.SubjectNotFound(f"Subject '{subject.qualified}' not found.")
        return entries

    def versions(self, subject: Subject, *, deleted: bool, deleted_only: bool, offset: int,
                 limit: int | None) -> list[int]:
        """The subject's version numbers: live ones, or deleted ones too, or only those."""
        entries = self._entries(subject, deleted=deleted or deleted_only)
        if deleted_only:
            chosen = [e.number for e in entries if e.deleted]
        else:
            chosen = [e.number for e in entries if deleted or not e.deleted]
        offset, limit = self.page(offset, limit)
        return chosen[offset : offset + limit]

    def _entry(self, subject: Subject, selector: str, *, deleted: bool) -> VersionEntry:
        number = _version_number(selector)
        entries = self._entries(subject, deleted=deleted)
        visible = [e for e in entries if deleted or not e.deleted]
        if number is None:
            if visible:
                return visible[-1]
        else:
            for entry in visible:
                if entry.number == number:
                    return entry
        raise ce.VersionNotFound(f"Version {selector} not found.")

    def version(self, subject: Subject, selector: str, *, deleted: bool) -> SubjectVersion:
        """A version of the subject by number, ``latest`` or -1 (soft-deleted ones if ``deleted``)."""
        entry = self._entry(subject, selector, deleted=deleted)
        return SubjectVersion(subject, entry.number, self._stored(entry.schema_id), entry.deleted)

    def _stored(self, schema_id: int) -> StoredSchema:
        found = self.store.schemas([schema_id]).get(schema_id)
        if found is None:
            raise ce.SchemaNotFound(f"Schema {schema_id} not found")
        return found

    def referenced_by(self, subject: Subject, selector: str) -> list[int]:
        """Ids of the live schemas that reference this version of the subject."""
        entry = self._entry(subject, selector, deleted=True)
        return self.store.referenced_by(subject, entry.number)

    # -- schemas by id ----------------------------------------------------------------------

    def schema_by_id(self, schema_id: int) -> StoredSchema:
        """The schema with that global id (soft-deleted versions count: old data stays readable)."""
        found = self.store.schema(schema_id) if 1 <= schema_id <= 2**31 - 1 else None
        if found is None:
            raise ce.SchemaNotFound(f"Schema {schema_id} not found")
        return found

    def max_id(self) -> int:
        """The highest schema id given out."""
        return self.store.max_schema_id()

    def uses(
        self, schema_id: int, subject: str | None, *, deleted: bool, offset: int, limit: int | None
    ) -> list[tuple[Subject, int]]:
        """The subject versions holding the schema (live ones, or deleted ones too), optionally of
        one subject only: one page of them."""
        self.schema_by_id(schema_id)
        only = Subject.parse(subject) if subject else None
        offset, limit = self.page(offset, limit)
        return self.store.uses(schema_id, only, deleted=deleted, offset=offset, limit=limit)

    def subjects_holding(
        self, schema_id: int, subject: str | None, *, deleted: bool, offset: int, limit: int | None
    ) -> list[Subject]:
        """The subjects with a version of the schema, as :meth:`uses` selects them."""
        self.schema_by_id(schema_id)
        only = Subject.parse(subject) if subject else None
        offset, limit = self.page(offset, limit)
        return self.store.subjects_holding(schema_id, only, deleted=deleted, offset=offset, limit=limit)

    def list_schemas(
        self, prefix: str | None, *, deleted: bool, latest_only: bool, offset: int, limit: int | None
    ) -> list[SubjectVersion]:
        """Versions of every subject (filtered by name prefix), by subject then number."""
        namespace, name = self._prefix(prefix)
        offset, limit = self.page(offset, limit)
        return self.store.versions(namespace, name, deleted=deleted, latest_only=latest_only, offset=offset,
                                   limit=limit)

    def text(self, schema: StoredSchema, fmt: str | None = None) -> str:
        """The schema as the Confluent API shows it: as registered (Avro and JSON Schema),
        ``.proto`` text (Protobuf). ``fmt``: ``serialized`` gives Protobuf as a base64
        FileDescriptorProto, ``resolved`` Avro and JSON Schema with their references resolved."""
        kind = fmt if fmt in ("serialized", "resolved") else ""
        key = (schema.id, kind)
        with self._texts_lock:
            cached = self._texts.get(key)
        if cached is not None:
            return cached
        if schema.format == "Protobuf":
            fds = descriptor_pb2.FileDescriptorSet.FromString(schema.data)
            own = main_file(fds, schema.type_name)
            if kind == "serialized":
                shown = base64.b64encode(own.SerializeToString(deterministic=True)).decode("ascii")
            else:
                shown = proto_text(own)
        elif schema.registered is not None and kind != "resolved":
            shown = schema.registered
        else:
            shown = schema.data.decode("utf-8", errors="replace")
        with self._texts_lock:
            self._texts[key] = shown
        return shown

    @staticmethod
    def references(schema: StoredSchema, context: Namespace) -> list[SchemaReference]:
        """The schema's references as answered for a use of it in ``context``: subjects named
        with their context, which clients need to fetch them."""
        return [SchemaReference(r.name, shown_name(r.subject, context), r.version) for r in schema.references]

    def context_of(self, schema: StoredSchema, subject: str | None) -> Namespace:
        """The context a schema asked for by id is answered in (only its references depend on it):
        that of a subject holding it, the ``subject`` parameter's when it is one of them."""
        if not schema.references:
            return Namespace("")
        wanted = Subject.parse(subject) if subject else None
        if wanted is not None and self.store.subjects_holding(schema.id, wanted, deleted=True, offset=0, limit=1):
            return wanted.namespace
        holders = self.store.subjects_holding(schema.id, None, deleted=True, offset=0, limit=1)
        return holders[0].namespace if holders else Namespace("")

    # -- parsing ----------------------------------------------------------------------------

    def _parse(self, subject: Subject, request: SchemaRequest, normalize: bool) -> _Parsed:
        fmt = SCHEMA_TYPES.get(request.schema_type.upper())
        if fmt is None:
            raise ce.InvalidSchema(
                f"Invalid schema type {request.schema_type!r}: expected one of {', '.join(SCHEMA_TYPES)}"
            )
        references = tuple(self._resolve(subject, fmt, request.references))
        data = self._schema_bytes(fmt, request.schema)
        try:
            parsed = get_format(fmt).parse(data, "", [ref for ref, _ in references])
        except errors.StreamcatError as e:
            raise ce.InvalidSchema(f"Invalid schema: {e.message}") from None
        listed = tuple(r for _, r in references)
        if normalize and not listed and fmt != "Protobuf":
            parsed = replace(parsed, data=parsed.canonical)
        registered = request.schema if listed and fmt != "Protobuf" else None
        return _Parsed(parsed, _identity(parsed, listed), registered, listed)

    @staticmethod
    def _schema_bytes(fmt: str, text: str) -> bytes:
        if fmt != "Protobuf":
            return text.encode("utf-8", errors="surrogatepass")
        raw = text.encode("utf-8", errors="surrogatepass")
        if is_proto_text(raw):
            return raw
        try:
            return base64.b64decode(text.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise ce.InvalidSchema(
                "Invalid schema: a Protobuf schema is .proto text or a base64 FileDescriptorProto"
            ) from None

    def _resolve(
        self, subject: Subject, fmt: str, references: Sequence[SchemaReference]
    ) -> list[tuple[Reference, SchemaReference]]:
        """Each reference with the schema it names (self-contained, as stored)."""
        resolved = []
        for ref in references:
            if not ref.name or not ref.subject:
                raise ce.InvalidSchema("Invalid schema: a reference needs a name, a subject and a version")
            named = reference_subject(ref.subject, subject.namespace)
            where = f"reference {ref.name!r} to version {ref.version} of subject {ref.subject!r}"
            try:
                found = self.version(named, "latest" if ref.version == -1 else str(ref.version), deleted=True)
            except (ce.SubjectNotFound, ce.VersionNotFound, ce.InvalidVersion):
                raise ce.InvalidSchema(f"Invalid schema: {where}: no such subject version") from None
            if found.schema.format != fmt:
                raise ce.InvalidSchema(
                    f"Invalid schema: {where} is a {found.schema.schema_type} schema, not {TYPE_OF_FORMAT[fmt]}"
                )
            stored = found.schema
            listed = SchemaReference(ref.name, relative_name(named, subject.namespace), found.number)
            resolved.append((Reference(ref.name, stored.data, stored.type_name), listed))
        return resolved

    # -- registration and lookup ------------------------------------------------------------

    def _configs(self, subject: Subject) -> Configs:
        return self.store.configs(subject)

    def register(self, subject: Subject, request: SchemaRequest, normalize: bool | None) -> tuple[int, int]:
        """Register a schema under the subject: (its id, its version). A schema the subject has
        already returns its id; IMPORT mode registers under the id and version given."""
        configs = self._configs(subject)
        mode = configs.mode()
        if mode in ("READONLY", "READONLY_OVERRIDE"):
            raise ce.OperationNotPermitted(f"Subject {subject.qualified} is in read-only mode")
        importing = mode == "IMPORT"
        wanted_id = request.id if request.id is not None and request.id > 0 else None
        wanted_version = request.version if request.version is not None and request.version > 0 else None
        if not importing and (wanted_id is not None or wanted_version is not None):
            raise ce.OperationNotPermitted(
                f"Subject {subject.qualified} is not in import mode: a schema id or version cannot be given"
            )
        if wanted_id is not None and wanted_id > 2**31 - 1:
            raise ce.OperationNotPermitted(f"schema id {wanted_id} is not a 32-bit id")
        found = self._parse(subject, request, bool(configs.normalize()) if normalize is None else normalize)
        parsed = found.parsed
        # The contract inherited is the latest version's when the request is read: a registration
        # racing this one may add a newer version first (as two clients racing on Confluent do).
        contract = merged(configs.contracts(), request.contract, self._latest_contract(subject))
        group_key = configs.contracts().compatibility_group
        level = configs.inherited_level(include_subject=True)
        create = GroupProperties(SerializationFormat(parsed.format), policy_of(level), allow_multiple_types=True,
                                 properties={INHERITED_POLICY: "true"})

        def check(context: RegisterContext) -> None:
            if importing:  # no compatibility checks, but a group holds one format at a time
                live_formats = {v.schema.format.name for v in context.live} - {parsed.format}
                if live_formats and context.properties.format.name != "Any":
                    raise ce.Incompatible(
                        f"schema type {TYPE_OF_FORMAT[parsed.format]} differs from the type of subject "
                        f"{subject.qualified}'s live versions"
                    )
                return
            self._check(subject, context.properties, parsed, _in_group(context.live, group_key, contract))

        new = NewVersion(parsed, _with_contract(found.fingerprint, contract), found.registered, found.references,
                         wanted_id, wanted_version, contract, found.fingerprint)
        done = self.store.register(subject, new, create, check)
        return done.schema_id, done.number

    def _latest_contract(self, subject: Subject) -> Contract | None:
        """The data contract of the subject's latest live version (None: it has none)."""
        live = [e for e in self.store.entries(subject) or [] if not e.deleted]
        return self._stored(live[-1].schema_id).contract if live else None

    def _check(
        self,
        subject: Subject,
        properties: GroupProperties,
        parsed: ParsedSchema,
        live: Sequence[LiveVersion],
    ) -> None:
        """Raise Incompatible unless the subject's policy accepts ``parsed`` after ``live``."""
        reasons = self._reasons(subject, properties, parsed, live, properties.compatibility)
        if reasons:
            shown = "; ".join(_explain(reasons[:_SHOWN_REASONS]))
            more = f" (and {len(reasons) - _SHOWN_REASONS} more)" if len(reasons) > _SHOWN_REASONS else ""
            raise ce.Incompatible(
                f'Schema being registered is incompatible with an earlier schema for subject "{subject.qualified}", '
                f"details: [{shown}{more}]"
            )

    def _reasons(
        self,
        subject: Subject,
        properties: GroupProperties,
        parsed: ParsedSchema,
        live: Sequence[LiveVersion],
        policy: Compatibility,
    ) -> list[Incompatibility]:
        other = sorted({v.schema.format.name for v in live if v.schema.format.name != parsed.format})
        if other and (policy.backward is not None or policy.forward is not None or policy.deny_all):
            kinds = ", ".join(TYPE_OF_FORMAT.get(o, o) for o in other)
            new = TYPE_OF_FORMAT[parsed.format]
            return [Incompatibility("$", f"schema type {new} differs from the subject's {kinds}")]
        if live and properties.format.name not in (parsed.format, "Any"):
            return [Incompatibility(
                "$", f"subject {subject.qualified} holds {properties.format.name} schemas, not {parsed.format}"
            )]
        same = [v for v in live if v.schema.format.name == parsed.format]
        existing = [
            Existing(VersionInfo(v.schema.type, Version(v.number), SchemaId(v.schema_id)),
                     self.registry.parsed.parse(v.schema))
            for v in same
        ]
        refused = refusal(
            GroupName(subject.qualified), properties, policy, parsed, existing, frozenset(v.schema.type for v in same)
        )
        return [] if refused is None else refused.reasons

    def lookup(self, subject: Subject, request: SchemaRequest, *, normalize: bool | None,
               deleted: bool) -> SubjectVersion:
        """The subject's version holding this schema (the newest, soft-deleted ones if ``deleted``)."""
        entries = self._entries(subject, deleted=deleted)
        configs = self._configs(subject)
        found = self._parse(subject, request, bool(configs.normalize()) if normalize is None else normalize)
        wanted = self._candidates(subject, found, request.contract, configs)
        for entry in reversed(entries):
            if entry.schema_id in wanted and (deleted or not entry.deleted):
                return SubjectVersion(subject, entry.number, self._stored(entry.schema_id), entry.deleted)
        raise ce.SchemaNotFound("Schema not found")

    def _candidates(self, subject: Subject, found: _Parsed, contract: Contract, configs: Configs) -> set[int]:
        """Ids a lookup of ``found`` matches: without a contract given, the schema under any
        contract (a client serializing without rules finds its version); with one, the schema
        under that contract as given or as a registration would merge it."""
        if not contract:
            ids = set(self.store.with_content(found.fingerprint))
            plain = self.store.find(found.parsed, found.fingerprint)
            return ids | ({plain} if plain is not None else set())
        ids = set()
        for candidate in (contract, merged(configs.contracts(), contract, self._latest_contract(subject))):
            schema_id = self.store.find(found.parsed, _with_contract(found.fingerprint, candidate))
            if schema_id is not None:
                ids.add(schema_id)
        return ids

    def latest_with_metadata(self, subject: Subject, wanted: dict[str, str], *, deleted: bool) -> SubjectVersion:
        """The subject's newest version whose metadata has every property ``wanted`` (soft-deleted
        versions count with ``deleted``); what ``use.latest.with.metadata`` serializers read."""
        entries = self._entries(subject, deleted=deleted)
        visible = [e for e in entries if deleted or not e.deleted]
        schemas = self.store.schemas(e.schema_id for e in visible)
        for entry in reversed(visible):
            schema = schemas[entry.schema_id]
            if all(schema.contract.property(k) == v for k, v in wanted.items()):
                return SubjectVersion(subject, entry.number, schema, entry.deleted)
        shown = ", ".join(f"{k}={v}" for k, v in wanted.items())
        raise ce.VersionNotFound(f"No version of subject '{subject.qualified}' has the metadata {shown}")

    def test_compatibility(
        self, subject: Subject, selector: str | None, request: SchemaRequest, *, normalize: bool | None
    ) -> list[str]:
        """Why the subject's level refuses the schema, against one version (``selector``) or
        against the versions the level checks (None); empty: compatible."""
        configs = self._configs(subject)
        found = self._parse(subject, request, bool(configs.normalize()) if normalize is None else normalize)
        properties = self.store.group(subject)
        entries = self.store.entries(subject) or []
        if selector is None and (properties is None or not any(not e.deleted for e in entries)):
            return []
        if properties is None:
            raise ce.SubjectNotFound(f"Subject '{subject.qualified}' not found.")
        policy = properties.compatibility
        live = [e for e in entries if not e.deleted]
        if selector is not None:
            live = [self._entry(subject, selector, deleted=False)]
            policy = _direction_only(policy)
        schemas = self.store.schemas(e.schema_id for e in live)
        versions = [
            LiveVersion(e.number, e.schema_id, self._info(schemas[e.schema_id]), schemas[e.schema_id].contract)
            for e in live
        ]
        group_key = configs.contracts().compatibility_group
        if group_key and selector is None:
            contract = merged(configs.contracts(), request.contract, versions[-1].contract if versions else None)
            versions = _in_group(versions, group_key, contract)
        return _explain(self._reasons(subject, properties, found.parsed, versions, policy))

    @staticmethod
    def _info(schema: StoredSchema) -> SchemaInfo:
        return SchemaInfo(TypeName(schema.type_name), SerializationFormat(schema.format), schema.data)

    # -- deletes ----------------------------------------------------------------------------

    def _writable(self, subject: Subject) -> None:
        if self._configs(subject).mode() in ("READONLY", "READONLY_OVERRIDE"):
            raise ce.OperationNotPermitted(f"Subject {subject.qualified} is in read-only mode")

    @staticmethod
    def _deletable(subject: Subject, context: DeleteContext) -> None:
        owner = context.properties.properties.get(OWNER_PROPERTY)
        if owner:
            raise ce.OperationNotPermitted(
                f"Subject {subject.qualified} belongs to {owner}; delete it there (for a table: DROP TABLE)"
            )
        if context.referrers:
            numbers = ", ".join(str(e.number) for e in context.versions)
            ids = ", ".join(str(i) for i in context.referrers)
            raise ce.ReferenceExists(
                f"One or more references exist to the schema {{subject={subject.qualified}, version={numbers}}}: "
                f"schema ids {ids}"
            )

    def delete_subject(self, subject: Subject, *, permanent: bool) -> list[int]:
        """Soft-delete every live version of the subject, or (``permanent``, after a soft delete)
        delete the subject for good; the numbers deleted."""
        self._writable(subject)
        entries = self.store.entries(subject)
        if not entries:
            raise ce.SubjectNotFound(f"Subject '{subject.qualified}' not found.")
        if permanent:
            if any(not e.deleted for e in entries):
                raise ce.SubjectNotSoftDeleted(
                    f"Subject '{subject.qualified}' was not deleted first before being permanently deleted"
                )
            self.store.hard_delete(subject, None, lambda context: self._deletable(subject, context))
            self.registry.answers.forget((subject.namespace, subject.name))
            return [e.number for e in entries]
        live = [e.number for e in entries if not e.deleted]
        if not live:
            raise ce.SubjectSoftDeleted(
                f"Subject '{subject.qualified}' was soft deleted. Set permanent=true to delete permanently"
            )

        def check(context: DeleteContext) -> None:
            self._deletable(subject, context)

        self.store.soft_delete(subject, live, check)
        return live

    def delete_version(self, subject: Subject, selector: str, *, permanent: bool) -> int:
        """Soft-delete a version, or (``permanent``, after a soft delete) delete it for good."""
        self._writable(subject)
        number = _version_number(selector)
        entries = self._entries(subject, deleted=True)
        if number is None:
            live = [e for e in entries if not e.deleted]
            if not live:
                raise ce.VersionNotFound(f"Version {selector} not found.")
            entry = live[-1] if not permanent else entries[-1]
        else:
            matches = [e for e in entries if e.number == number]
            if not matches:
                raise ce.VersionNotFound(f"Version {selector} not found.")
            entry = matches[0]
        if permanent:
            if not entry.deleted:
                raise ce.VersionNotSoftDeleted(
                    f"Subject '{subject.qualified}' Version {entry.number} was not deleted first before being "
                    "permanently deleted"
                )
            self.store.hard_delete(subject, [entry.number], lambda context: self._deletable(subject, context))
            self.registry.answers.forget((subject.namespace, subject.name))
        else:
            if entry.deleted:
                raise ce.VersionSoftDeleted(
                    f"Subject '{subject.qualified}' Version {entry.number} was soft deleted. "
                    "Set permanent=true to delete permanently"
                )
            self.store.soft_delete(subject, [entry.number], lambda context: self._deletable(subject, context))
        return entry.number

    # -- configuration ----------------------------------------------------------------------

    @staticmethod
    def _level(level: str | None) -> str:
        if level is None or level.upper() not in LEVELS:
            raise ce.InvalidCompatibilityLevel(
                f"Invalid compatibility level {level!r}. Valid values are {', '.join(LEVELS)}"
            )
        return level.upper()

    def get_config(self, subject: Subject, *, default_to_global: bool) -> ConfigView:
        """The configuration of a subject, of a context (``subject.name`` empty) or of the
        registry (both empty). A subject (or context) without a level of its own answers
        40408, unless ``default_to_global``."""
        configs = self._configs(subject)
        if not subject.name:
            scope = configs.context if subject.namespace else configs.registry
            own = scope.compatibility
            if own is None and subject.namespace and not default_to_global and not scope.contracts:
                raise ce.CompatibilityNotConfigured(f"Subject '{subject.qualified}' does not have subject-level "
                                                    "compatibility configured")
            scopes = [configs.context, configs.registry] if subject.namespace else [configs.registry]
            shown = ContractConfig.innermost([v.contracts for v in scopes]) if default_to_global else scope.contracts
            return ConfigView(own or configs.inherited_level(), scope.normalize, shown)
        group = self.store.group(subject)
        inherited = configs.inherited_level()
        explicit = configs.subject.compatibility
        if group is not None:
            level = level_of(group.compatibility)
            # A policy set through either API is the subject's level; an inherited one that the Pravega API
            # changed since (the mark stays) shows as the subject's own when it differs from the inherited level.
            inherits = group.properties.get(INHERITED_POLICY) == "true"
            has_own = (explicit is not None or not inherits
                       or not same_policy(group.compatibility, policy_of(inherited)))
        else:
            level = explicit or inherited
            has_own = explicit is not None
        own_contracts = configs.subject.contracts
        if not has_own and not default_to_global and not own_contracts:
            raise ce.CompatibilityNotConfigured(
                f"Subject '{subject.qualified}' does not have subject-level compatibility configured"
            )
        normalize = configs.subject.normalize if has_own else configs.normalize()
        return ConfigView(level, normalize, configs.contracts() if default_to_global else own_contracts)

    def set_config(self, subject: Subject, level: str | None, normalize: bool | None,
                   contracts: ContractConfig = NO_SETTINGS) -> ConfigView:
        """Set the level (and normalization, and the data-contract settings given) of a subject, a
        context or the registry. Groups that follow the changed scope (no level of their own)
        take the new level's policy."""
        contract_settings = {k: v for k, v in contracts.to_json().items() if v is not None}
        if level is None and normalize is None and not contract_settings:
            raise ce.InvalidCompatibilityLevel("Invalid compatibility level None: give compatibility or normalize")
        if level is not None:
            level = self._level(level)
            policy = policy_of(level)
            configs = self._configs(subject)
            if subject.name:
                group = self.store.group(subject)
                if group is not None and group.format.name in _UNCHECKED and level != "NONE":
                    raise ce.InvalidCompatibilityLevel(
                        f"Subject {subject.qualified} holds {group.format.name} schemas, which take level NONE only"
                    )
                self.store.set_level(subject, level, policy, lambda _fmt, _current: False)
            else:
                old = policy_of(configs.context.compatibility or configs.inherited_level()
                                if subject.namespace else configs.registry.compatibility or DEFAULT_LEVEL)

                def follows(fmt: str, current: Compatibility) -> bool:
                    return same_policy(current, old) and (fmt not in _UNCHECKED or level == "NONE")

                self.store.set_level(subject, level, policy, follows)
        if normalize is not None or contract_settings:
            self.store.set_config(subject, **({} if normalize is None else {"normalize": normalize}),
                                  **contract_settings)
        now = self._configs(subject)
        own = now.subject if subject.name else now.context if subject.namespace else now.registry
        return ConfigView(level or "", normalize, own.contracts)

    def delete_config(self, subject: Subject) -> ConfigView:
        """Remove the level (and normalization) set for a subject, a context or the registry (which
        then has the default, BACKWARD); answers the configuration removed."""
        configs = self._configs(subject)
        if subject.name:
            old = self.get_config(subject, default_to_global=True)
            inherited = configs.inherited_level()
            group = self.store.group(subject)
            fallback = inherited if group is None or group.format.name not in _UNCHECKED else "NONE"
            if group is not None:
                self.store.set_level(subject, None, policy_of(fallback), lambda _fmt, _current: False)
            else:
                self.store.set_config(subject, compatibility=None)
            self.store.set_config(subject, normalize=None, **NO_SETTINGS.to_json())
            return old
        scope = configs.context if subject.namespace else configs.registry
        old_level = scope.compatibility or (configs.inherited_level() if subject.namespace else DEFAULT_LEVEL)
        new_level = configs.registry.compatibility or DEFAULT_LEVEL if subject.namespace else DEFAULT_LEVEL
        old_policy = policy_of(old_level)

        def follows(fmt: str, current: Compatibility) -> bool:
            return same_policy(current, old_policy) and (fmt not in _UNCHECKED or new_level == "NONE")

        self.store.set_level(subject, None, policy_of(new_level), follows)
        self.store.set_config(subject, normalize=None, **NO_SETTINGS.to_json())
        return ConfigView(old_level, scope.normalize, scope.contracts)

    # -- modes ------------------------------------------------------------------------------

    def get_mode(self, subject: Subject, *, default_to_global: bool) -> str:
        """The mode of a subject, a context (``subject.name`` empty) or the registry. A subject (or
        context) without a mode of its own answers 40409, unless ``default_to_global``: then the
        mode it is in."""
        configs = self._configs(subject)
        if not subject.name and not subject.namespace:
            return configs.registry.mode or DEFAULT_MODE
        own = configs.subject.mode if subject.name else configs.context.mode
        if own is not None:
            return own
        if not default_to_global:
            raise ce.ModeNotConfigured(f"Subject '{subject.qualified}' does not have subject-level mode configured")
        return configs.mode()

    def set_mode(self, subject: Subject, mode: str | None, *, force: bool) -> str:
        """Set the mode of a subject, a context or the registry. IMPORT needs the subject (or the
        context) to hold no versions, unless ``force``."""
        if mode is None or mode.upper() not in MODES:
            raise ce.InvalidMode(f"Invalid mode {mode!r}. Valid values are {', '.join(MODES)}")
        mode = mode.upper()
        if mode == "IMPORT" and not force:
            name = subject.name or None
            if self.store.has_versions(subject.namespace, name):
                raise ce.OperationNotPermitted(
                    "Cannot import since found existing subjects" if name is None
                    else f"Cannot import since subject {subject.qualified} has versions"
                )
        self.store.set_config(subject, mode=mode)
        return mode

    def delete_mode(self, subject: Subject) -> str:
        """Remove the mode set for a subject, a context or the registry; answers the mode removed."""
        configs = self._configs(subject)
        scope = configs.subject if subject.name else configs.context if subject.namespace else configs.registry
        old = scope.mode or configs.mode()
        self.store.set_config(subject, mode=None)
        return old

    # -- contexts ---------------------------------------------------------------------------

    def contexts(self, offset: int, limit: int | None) -> list[str]:
        """Contexts holding subjects, ``.`` (the default one) first."""
        names = ["."] + [f".{ns}" for ns in self.store.contexts() if ns]
        offset, limit = self.page(offset, limit)
        return names[offset : offset + limit]
