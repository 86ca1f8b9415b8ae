"""Storage of the Confluent API: subjects over the registry's groups and versions, on SQLAlchemy.

It reads and writes the registry's own tables (``registry.store.orm``) beside its own
(``registry.confluent.orm``), with the registry's locking: a write locks the subject's group row,
as the registry store does when it adds a version, so numbers never race.

A version's number is its position in its group (every version the group ever had, deleted ones
included), counting on from the pin of the nearest pinned version before it: permanent deletes
pin the versions after the deleted one, IMPORT pins a version given another number. So numbers
never change and never need writing for versions added through the Pravega API.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Engine, Select, and_, delete, exists, func, or_, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from registry.confluent.contracts import (
    METADATA_PROPERTY,
    NO_CONTRACT,
    RULE_SET_PROPERTY,
    Contract,
    ContractConfig,
    contract_key,
    contract_of_key,
)
from registry.confluent.errors import OperationNotPermitted
from registry.confluent.model import (
    INHERITED_POLICY,
    TYPE_OF_FORMAT,
    Configs,
    ConfigValues,
    SchemaReference,
    StoredSchema,
    Subject,
    SubjectVersion,
    VersionEntry,
)
from registry.confluent.orm import ConfigRow, ContractRow, ReferenceRow, RegisteredTextRow, VersionPinRow
from registry.db import Transactions, now_ms, retried
from registry.formats.base import ParsedSchema
from registry.ids import GroupName, Namespace, TypeName
from registry.model import Compatibility, GroupProperties, SchemaInfo, SerializationFormat
from registry.store.orm import GroupRow, SchemaRow, VersionRow
from registry.store.policies import policy_from_json, policy_to_json

#: Property of a version's SchemaInfo (Pravega API) listing its schema's references, as JSON.
REFERENCES_PROPERTY = "streamcat.references"
_CONFLUENT_FORMATS = tuple(TYPE_OF_FORMAT)
#: Rows per statement when many groups change at once.
_CHUNK = 500


@dataclass(frozen=True)
class LiveVersion:
    """A live version of the subject a schema is being registered under."""

    number: int
    schema_id: int
    schema: SchemaInfo
    contract: Contract = NO_CONTRACT


@dataclass(frozen=True)
class RegisterContext:
    """What a new version is judged against, read with the subject locked."""

    #: the group's properties (or those it is created with, when ``new_group``)
    properties: GroupProperties
    new_group: bool
    #: live versions of the subject, oldest first (every format)
    live: Sequence[LiveVersion]


@dataclass(frozen=True)
class DeleteContext:
    """What a delete would remove, read with the subject locked."""

    properties: GroupProperties
    #: the versions about to be deleted (soft or for good)
    versions: Sequence[VersionEntry]
    #: ids of live schemas whose references name one of those versions
    referrers: Sequence[int]


@dataclass(frozen=True)
class Registration:
    """A schema's place in a subject after registering it."""

    schema_id: int
    number: int
    #: False when the schema was registered under the subject already
    added: bool


@dataclass(frozen=True)
class NewVersion:
    """Everything a registration writes besides what its group already holds."""

    parsed: ParsedSchema
    #: the content's identity: the fingerprint, references included
    fingerprint: str
    #: the text as registered, kept when the stored data differs from it (a schema with references)
    registered: str | None
    references: Sequence[SchemaReference]
    #: IMPORT mode: the id and number to register under (None: allocated as usual)
    schema_id: int | None = None
    number: int | None = None
    #: the data contract, and the fingerprint of the same schema without one (``fingerprint``
    #: includes the contract)
    contract: Contract = NO_CONTRACT
    content: str = ""


RegisterCheck = Callable[[RegisterContext], None]
DeleteCheck = Callable[[DeleteContext], None]
#: Whether a group (by its format and current policy) follows a changed context or registry level.
FollowRule = Callable[[str, Compatibility], bool]


def _properties(row: GroupRow) -> GroupProperties:
    return GroupProperties(
        SerializationFormat(row.serialization_format, row.full_type_name),
        policy_from_json(row.compatibility),
        row.allow_multiple_types,
        dict(row.properties),
    )


def _numbered(rows: Iterable[Any]) -> list[tuple[Any, int]]:
    """Each row (in id order, with a ``pin`` column) with its number."""
    numbered, previous = [], 0
    for row in rows:
        previous = row.pin if row.pin is not None else previous + 1
        numbered.append((row, previous))
    return numbered


def _entry_rows(where: ColumnElement[bool]) -> Select[int, int, int, bool, int, str]:
    return (
        select(
            VersionRow.group_id,
            VersionRow.id,
            VersionRow.schema_id,
            VersionRow.deleted,
            VersionPinRow.number.label("pin"),
            SchemaRow.serialization_format.label("format"),
        )
        .join(SchemaRow, SchemaRow.id == VersionRow.schema_id)
        .outerjoin(VersionPinRow, VersionPinRow.version_id == VersionRow.id)
        .where(where)
        .order_by(VersionRow.group_id, VersionRow.id)
    )


class SqlConfluentStore:
    """Subjects, versions, references and configuration, kept transactionally."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._tx = Transactions(engine)
        self._read, self._write = self._tx.read, self._tx.write

    # -- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _group(session: Session, subject: Subject, *, lock: bool = False) -> GroupRow | None:
        query = select(GroupRow).where(GroupRow.namespace == subject.namespace, GroupRow.name == subject.name)
        if lock:
            query = query.with_for_update()
        return session.scalars(query).one_or_none()

    @staticmethod
    def _all_entries(session: Session, group_ids: Sequence[int]) -> dict[int, list[tuple[Any, int]]]:
        """Every version row of the groups, numbered, in order, per group (all formats)."""
        by_group: dict[int, list[Any]] = {g: [] for g in group_ids}
        for row in session.execute(_entry_rows(VersionRow.group_id.in_(group_ids))):
            by_group[row.group_id].append(row)
        return {g: _numbered(rows) for g, rows in by_group.items()}

    def _entries(self, session: Session, group_id: int) -> list[VersionEntry]:
        return [
            VersionEntry(number, row.id, row.schema_id, row.deleted)
            for row, number in self._all_entries(session, [group_id])[group_id]
            if row.format in _CONFLUENT_FORMATS
        ]

    @staticmethod
    def _schemas(session: Session, ids: Iterable[int]) -> dict[int, StoredSchema]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        texts = dict(
            session.execute(
                select(RegisteredTextRow.schema_id, RegisteredTextRow.schema).where(
                    RegisteredTextRow.schema_id.in_(wanted)
                )
            ).all()
        )
        contracts = SqlConfluentStore._contracts(session, wanted)
        references: dict[int, list[SchemaReference]] = {}
        for ref in session.scalars(
            select(ReferenceRow).where(ReferenceRow.schema_id.in_(wanted)).order_by(ReferenceRow.position)
        ):
            references.setdefault(ref.schema_id, []).append(SchemaReference(ref.name, ref.subject, ref.version))
        return {
            row.id: StoredSchema(
                row.id, row.serialization_format, row.type_name, row.data, texts.get(row.id),
                references.get(row.id, []), contracts.get(row.id, Contract()),
            )
            for row in session.scalars(select(SchemaRow).where(SchemaRow.id.in_(wanted)))
        }

    @staticmethod
    def _contracts(session: Session, ids: Sequence[int]) -> dict[int, Contract]:
        """The data contracts of the schemas that have one, by id."""
        found: dict[int, Contract] = {}
        for start in range(0, len(ids), _CHUNK):
            rows = session.execute(
                select(ContractRow.schema_id, ContractRow.contract).where(
                    ContractRow.schema_id.in_(ids[start : start + _CHUNK])
                )
            )
            found.update((schema_id, contract_of_key(text)) for schema_id, text in rows)
        return found

    # -- reads ------------------------------------------------------------------------------

    def group(self, subject: Subject) -> GroupProperties | None:
        """The properties of the subject's group, or None if there is none."""
        with self._read() as session:
            row = self._group(session, subject)
            return None if row is None else _properties(row)

    def entries(self, subject: Subject) -> list[VersionEntry] | None:
        """Every version of the subject, deleted ones included, oldest first; None: no such subject."""
        with self._read() as session:
            row = self._group(session, subject)
            return None if row is None else self._entries(session, row.id)

    def schemas(self, ids: Iterable[int]) -> dict[int, StoredSchema]:
        """The schemas with these ids (those that exist), by id."""
        with self._read() as session:
            return self._schemas(session, ids)

    def schema(self, schema_id: int) -> StoredSchema | None:
        """The schema with that id, if some subject has (or had, soft-deleted) a version of it."""
        with self._read() as session:
            used = session.scalar(
                select(
                    exists().where(
                        VersionRow.schema_id == SchemaRow.id,
                        SchemaRow.id == schema_id,
                        SchemaRow.serialization_format.in_(_CONFLUENT_FORMATS),
                    )
                )
            )
            return self._schemas(session, [schema_id]).get(schema_id) if used else None

    @staticmethod
    def _holding(schema_id: int, subject: Subject | None, deleted: bool) -> Select[int, int, str, str]:
        query = (
            select(VersionRow.id, VersionRow.group_id, GroupRow.namespace, GroupRow.name)
            .join(GroupRow, GroupRow.id == VersionRow.group_id)
            .where(VersionRow.schema_id == schema_id)
        )
        if subject is not None:
            query = query.where(GroupRow.namespace == subject.namespace, GroupRow.name == subject.name)
        if not deleted:
            query = query.where(VersionRow.deleted.is_(False))
        return query

    def uses(
        self, schema_id: int, subject: Subject | None, *, deleted: bool, offset: int, limit: int
    ) -> list[tuple[Subject, int]]:
        """The subject versions holding the schema (live ones, or deleted ones too; of one subject,
        or all), by subject then number: one page of them."""
        query = self._holding(schema_id, subject, deleted)
        query = query.order_by(GroupRow.namespace, GroupRow.name, VersionRow.id).offset(offset).limit(limit)
        with self._read() as session:
            page = session.execute(query).all()
            entries = self._all_entries(session, sorted({r.group_id for r in page}))
        number_of = {row.id: number for rows in entries.values() for row, number in rows}
        return [(Subject(Namespace(r.namespace), GroupName(r.name)), number_of[r.id]) for r in page]

    def subjects_holding(
        self, schema_id: int, subject: Subject | None, *, deleted: bool, offset: int, limit: int
    ) -> list[Subject]:
        """The subjects with a version of the schema (as :meth:`uses` selects them), one page."""
        query = (
            self._holding(schema_id, subject, deleted)
            .with_only_columns(GroupRow.namespace, GroupRow.name)
            .distinct()
            .order_by(GroupRow.namespace, GroupRow.name)
            .offset(offset)
            .limit(limit)
        )
        with self._read() as session:
            return [Subject(Namespace(ns), GroupName(name)) for ns, name in session.execute(query)]

    def find(self, parsed: ParsedSchema, fingerprint: str) -> int | None:
        """The id of the content ``parsed`` with ``fingerprint`` (references included), if stored."""
        with self._read() as session:
            return session.scalar(self._content(parsed, fingerprint).with_only_columns(SchemaRow.id))

    def with_content(self, content: str) -> list[int]:
        """Ids of the schemas that are the content with fingerprint ``content`` under some data
        contract (the content without a contract is :meth:`find`'s)."""
        with self._read() as session:
            return list(session.scalars(select(ContractRow.schema_id).where(ContractRow.content == content)))

    @staticmethod
    def _content(parsed: ParsedSchema, fingerprint: str) -> Select[Any]:
        return select(SchemaRow).where(
            SchemaRow.serialization_format == parsed.format,
            SchemaRow.full_type_name == "",
            SchemaRow.type_name == parsed.type_name,
            SchemaRow.fingerprint == fingerprint,
        )

    def referenced_by(self, subject: Subject, number: int) -> list[int]:
        """Ids of the schemas with a live version whose references name this subject version."""
        with self._read() as session:
            return self._referrers(session, subject, [number])

    @staticmethod
    def _referrers(session: Session, subject: Subject, numbers: Sequence[int]) -> list[int]:
        if not numbers:
            return []
        # Stored relative to the referring schema's context (model.relative_name).
        names = or_(
            and_(ReferenceRow.subject == subject.name, GroupRow.namespace == subject.namespace),
            and_(ReferenceRow.subject == f":.{subject.namespace}:{subject.name}",
                 GroupRow.namespace != subject.namespace),
        )
        return list(
            session.scalars(
                select(ReferenceRow.schema_id)
                .join(VersionRow, VersionRow.schema_id == ReferenceRow.schema_id)
                .join(GroupRow, GroupRow.id == VersionRow.group_id)
                .where(ReferenceRow.version.in_(numbers), VersionRow.deleted.is_(False), names)
                .distinct()
                .order_by(ReferenceRow.schema_id)
            )
        )

    def subjects(
        self, namespace: Namespace | None, prefix: str, *, deleted: bool, deleted_only: bool, offset: int, limit: int
    ) -> list[Subject]:
        """Subjects (of one namespace, or all) whose names start with ``prefix``, by namespace
        then name: those with live versions, or also those whose versions are all deleted, or
        only those."""
        live = exists().where(VersionRow.group_id == GroupRow.id, VersionRow.deleted.is_(False))
        any_version = exists().where(VersionRow.group_id == GroupRow.id)
        query = select(GroupRow.namespace, GroupRow.name).where(GroupRow.serialization_format != "Custom")
        if namespace is not None:
            query = query.where(GroupRow.namespace == namespace)
        if prefix:
            query = query.where(GroupRow.name.startswith(prefix, autoescape=True))
        wanted = (any_version, ~live) if deleted_only else (any_version if deleted else live,)
        query = query.where(*wanted)
        query = query.order_by(GroupRow.namespace, GroupRow.name).offset(offset).limit(limit)
        with self._read() as session:
            return [Subject(Namespace(ns), GroupName(name)) for ns, name in session.execute(query)]

    def versions(
        self, namespace: Namespace | None, prefix: str, *, deleted: bool, latest_only: bool, offset: int, limit: int
    ) -> list[SubjectVersion]:
        """Versions of the subjects (as :meth:`subjects` selects them), by subject then number:
        live ones (deleted ones too, if asked), or only the newest of each subject."""
        query = (
            select(VersionRow.id, VersionRow.group_id, GroupRow.namespace, GroupRow.name)
            .join(GroupRow, GroupRow.id == VersionRow.group_id)
            .join(SchemaRow, SchemaRow.id == VersionRow.schema_id)
            .where(SchemaRow.serialization_format.in_(_CONFLUENT_FORMATS))
        )
        if namespace is not None:
            query = query.where(GroupRow.namespace == namespace)
        if prefix:
            query = query.where(GroupRow.name.startswith(prefix, autoescape=True))
        if not deleted:
            query = query.where(VersionRow.deleted.is_(False))
        if latest_only:
            other = aliased(VersionRow)
            newest = select(func.max(other.id)).where(other.group_id == VersionRow.group_id)
            if not deleted:
                newest = newest.where(other.deleted.is_(False))
            query = query.where(VersionRow.id == newest.scalar_subquery())
        query = query.order_by(GroupRow.namespace, GroupRow.name, VersionRow.id).offset(offset).limit(limit)
        with self._read() as session:
            page = session.execute(query).all()
            entries = self._all_entries(session, sorted({r.group_id for r in page}))
            number_of = {row.id: (number, row) for rows in entries.values() for row, number in rows}
            schemas = self._schemas(session, (number_of[r.id][1].schema_id for r in page))
            found = []
            for r in page:
                number, row = number_of[r.id]
                subject = Subject(Namespace(r.namespace), GroupName(r.name))
                found.append(SubjectVersion(subject, number, schemas[row.schema_id], row.deleted))
            return found

    def contexts(self) -> list[Namespace]:
        """Namespaces that hold groups, in order."""
        with self._read() as session:
            return [Namespace(n) for n in session.scalars(select(GroupRow.namespace).distinct().order_by("namespace"))]

    def max_schema_id(self) -> int:
        """The highest schema id given out (0 before the first)."""
        with self._read() as session:
            return session.scalar(select(func.max(SchemaRow.id))) or 0

    def has_versions(self, namespace: Namespace, name: GroupName | None) -> bool:
        """Whether the subject (or, with ``name`` None, any subject of the namespace) has versions."""
        query = exists().where(VersionRow.group_id == GroupRow.id, GroupRow.namespace == namespace)
        if name is not None:
            query = query.where(GroupRow.name == name)
        with self._read() as session:
            return bool(session.scalar(select(query)))

    # -- configuration ----------------------------------------------------------------------

    def configs(self, subject: Subject) -> Configs:
        """The configuration scopes of a subject (``subject.name`` empty: of a context)."""
        keys = {(subject.namespace, subject.name), (subject.namespace, ""), ("", "")}
        with self._read() as session:
            rows = session.scalars(
                select(ConfigRow).where(
                    or_(*(and_(ConfigRow.namespace == ns, ConfigRow.subject == name) for ns, name in keys))
                )
            ).all()
        found = {
            (r.namespace, r.subject): ConfigValues(
                r.compatibility, r.normalize, r.mode,
                ContractConfig.of_columns(r.compatibility_group, r.default_metadata, r.override_metadata,
                                          r.default_rule_set, r.override_rule_set),
            )
            for r in rows
        }
        empty = ConfigValues()
        subject_values = found.get((subject.namespace, subject.name), empty) if subject.name else empty
        context = found.get((subject.namespace, ""), empty) if subject.namespace else empty
        return Configs(subject_values, context, found.get(("", ""), empty))

    @retried
    def set_config(self, /, subject: Subject, **values: Any) -> None:
        """Set (a value None: clear) ``compatibility``, ``normalize``, ``mode`` or a data-contract
        column (:meth:`ContractConfig.to_json`) of one scope: a subject, a context
        (``subject.name`` empty), the registry (both empty)."""
        with self._write() as session:
            self._set_config(session, subject, values)

    @staticmethod
    def _set_config(session: Session, subject: Subject, values: dict[str, Any]) -> None:
        key = (ConfigRow.namespace == subject.namespace, ConfigRow.subject == subject.name)
        row = session.scalars(select(ConfigRow).where(*key).with_for_update()).one_or_none()
        if row is None:
            try:
                with session.begin_nested():
                    session.add(ConfigRow(namespace=subject.namespace, subject=subject.name, **values))
                return
            except IntegrityError:  # set concurrently: update that row instead
                row = session.scalars(select(ConfigRow).where(*key).with_for_update()).one()
        for name, value in values.items():
            setattr(row, name, value)
        settings = (row.compatibility, row.normalize, row.mode, row.compatibility_group, row.default_metadata,
                    row.override_metadata, row.default_rule_set, row.override_rule_set)
        if all(value is None for value in settings):
            session.delete(row)

    @retried
    def set_level(self, subject: Subject, level: str | None, policy: Compatibility, followers: FollowRule) -> None:
        """Set (None: clear) a scope's compatibility level, and apply ``policy`` to the groups it
        governs, in one transaction: for a subject, its group; for a context or the registry,
        every group of the scope without a level of its own (nor of its context, for the
        registry) whose current policy ``followers`` accepts. A subject's group is marked
        (:data:`INHERITED_POLICY`) as inheriting its policy when its level is cleared, and unmarked
        when one is set."""
        with self._write() as session:
            self._set_config(session, subject, {"compatibility": level})
            if subject.name:
                group = self._group(session, subject, lock=True)
                if group is not None:
                    properties = {k: v for k, v in group.properties.items() if k != INHERITED_POLICY}
                    if level is None:
                        properties[INHERITED_POLICY] = "true"
                    group.compatibility = policy_to_json(policy)
                    group.properties = properties
                return
            own_level = exists().where(
                ConfigRow.namespace == GroupRow.namespace,
                ConfigRow.subject == GroupRow.name,
                ConfigRow.compatibility.is_not(None),
            )
            query = select(GroupRow.id, GroupRow.serialization_format, GroupRow.compatibility).where(~own_level)
            if subject.namespace:
                query = query.where(GroupRow.namespace == subject.namespace)
            else:
                context_level = exists().where(
                    ConfigRow.namespace == GroupRow.namespace,
                    ConfigRow.subject == "",
                    ConfigRow.namespace != "",
                    ConfigRow.compatibility.is_not(None),
                )
                query = query.where(~context_level)
            chosen = [
                group_id
                for group_id, fmt, current in session.execute(query)
                if followers(fmt, policy_from_json(current))
            ]
            for start in range(0, len(chosen), _CHUNK):
                session.execute(
                    update(GroupRow)
                    .where(GroupRow.id.in_(chosen[start : start + _CHUNK]))
                    .values(compatibility=policy_to_json(policy))
                )

    # -- registration -----------------------------------------------------------------------

    @retried
    def register(
        self, subject: Subject, new: NewVersion, create: GroupProperties, check: RegisterCheck
    ) -> Registration:
        """Register ``new`` under the subject (creating its group with ``create``), unless it has a
        live version of that content already, whose number is then returned. ``check`` runs with
        the group locked and refuses by raising; then nothing is written."""
        with self._write() as session:
            group, created = self._lock_or_create(session, subject, create)
            content = session.scalars(self._content(new.parsed, new.fingerprint)).one_or_none()
            numbered = self._all_entries(session, [group.id])[group.id]
            if content is not None:
                for row, number in reversed(numbered):
                    if row.schema_id == content.id and not row.deleted:
                        return Registration(content.id, number, added=False)
            live_rows = [(row, n) for row, n in numbered if not row.deleted]
            infos = {
                s.id: s
                for s in session.scalars(select(SchemaRow).where(SchemaRow.id.in_([r.schema_id for r, _ in live_rows])))
            }
            contracts = self._contracts(session, sorted(infos))
            live = [
                LiveVersion(
                    n,
                    row.schema_id,
                    SchemaInfo(
                        TypeName(infos[row.schema_id].type_name),
                        SerializationFormat(infos[row.schema_id].serialization_format,
                                            infos[row.schema_id].full_type_name),
                        infos[row.schema_id].data,
                    ),
                    contracts.get(row.schema_id, Contract()),
                )
                for row, n in live_rows
            ]
            properties = create if created else _properties(group)
            check(RegisterContext(properties, created, live))
            if group.serialization_format not in (new.parsed.format, "Any"):
                group.serialization_format = new.parsed.format  # the check allowed it: no live versions
            if content is None:
                content = self._insert_schema(session, new)
            elif new.schema_id is not None and new.schema_id != content.id:
                raise OperationNotPermitted(
                    f"the schema is registered with id {content.id} already; it cannot be imported as {new.schema_id}"
                )
            highest = numbered[-1][1] if numbered else 0
            number = highest + 1 if new.number is None else new.number
            if number <= highest:
                raise OperationNotPermitted(
                    f"version {number} cannot be imported into subject {subject.qualified!r}, "
                    f"which has versions up to {highest}; import versions in increasing order"
                )
            return Registration(content.id, self._insert_version(session, group, content, new, number, highest), True)

    def _lock_or_create(self, session: Session, subject: Subject, create: GroupProperties) -> tuple[GroupRow, bool]:
        group = self._group(session, subject, lock=True)
        if group is not None:
            return group, False
        try:
            with session.begin_nested():
                group = GroupRow(
                    namespace=subject.namespace,
                    name=subject.name,
                    serialization_format=create.format.name,
                    full_type_name=create.format.full_type_name,
                    allow_multiple_types=create.allow_multiple_types,
                    compatibility=policy_to_json(create.compatibility),
                    properties=dict(create.properties),
                    created_at=now_ms(),
                )
                session.add(group)
            return group, True
        except IntegrityError:  # created concurrently: register into that one
            found = self._group(session, subject, lock=True)
            if found is None:
                raise
            return found, False

    def _insert_schema(self, session: Session, new: NewVersion) -> SchemaRow:
        parsed = new.parsed
        if new.schema_id is not None:
            taken = session.get(SchemaRow, new.schema_id)
            if taken is not None:
                raise OperationNotPermitted(
                    f"Overwrite new schema with id {new.schema_id} is not permitted: "
                    "the id belongs to another schema"
                )
            if session.get_bind().dialect.name == "postgresql":
                # No id may be handed out while the sequence is moved past the imported one.
                session.execute(text("LOCK TABLE schemas IN SHARE ROW EXCLUSIVE MODE"))
        try:
            with session.begin_nested():
                row = SchemaRow(
                    serialization_format=parsed.format,
                    full_type_name="",
                    type_name=parsed.type_name,
                    fingerprint=new.fingerprint,
                    data=parsed.data,
                    created_at=now_ms(),
                )
                if new.schema_id is not None:
                    row.id = new.schema_id
                session.add(row)
        except IntegrityError:
            # The same content was stored concurrently (through either API): that row is its id.
            found = session.scalars(self._content(parsed, new.fingerprint)).one_or_none()
            if found is None:
                raise
            if new.schema_id is not None and found.id != new.schema_id:
                raise OperationNotPermitted(f"the schema is registered with id {found.id} already") from None
            return found
        if new.schema_id is not None and session.get_bind().dialect.name == "postgresql":
            session.execute(
                text(
                    "SELECT setval(pg_get_serial_sequence('schemas', 'id'), "
                    "GREATEST(:id, nextval(pg_get_serial_sequence('schemas', 'id'))))"
                ),
                {"id": new.schema_id},
            )
        if new.contract:
            session.add(ContractRow(schema_id=row.id, content=new.content, contract=contract_key(new.contract)))
        if new.references:
            if new.registered is not None:
                session.add(RegisteredTextRow(schema_id=row.id, schema=new.registered))
            session.add_all(
                ReferenceRow(schema_id=row.id, position=i, name=r.name, subject=r.subject, version=r.version)
                for i, r in enumerate(new.references)
            )
        return row

    @staticmethod
    def _insert_version(
        session: Session, group: GroupRow, content: SchemaRow, new: NewVersion, number: int, highest: int
    ) -> int:
        type_name = new.parsed.type_name
        previous = session.scalar(
            select(func.max(VersionRow.version)).where(
                VersionRow.group_id == group.id, VersionRow.type_name == type_name
            )
        )
        properties = {}
        if new.references:
            properties[REFERENCES_PROPERTY] = json.dumps(
                [{"name": r.name, "subject": r.subject, "version": r.version} for r in new.references]
            )
        if new.contract.metadata:
            properties[METADATA_PROPERTY] = json.dumps(new.contract.metadata.to_json(), sort_keys=True)
        if new.contract.rule_set:
            properties[RULE_SET_PROPERTY] = json.dumps(new.contract.rule_set.to_json(), sort_keys=True)
        row = VersionRow(
            group_id=group.id,
            schema_id=content.id,
            type_name=type_name,
            version=0 if previous is None else previous + 1,
            properties=properties,
            compatibility=group.compatibility,
            created_at=now_ms(),
            deleted=False,
        )
        session.add(row)
        session.flush()
        if number != highest + 1:
            session.add(VersionPinRow(version_id=row.id, group_id=group.id, number=number))
        return number

    # -- deletes ----------------------------------------------------------------------------

    @retried
    def soft_delete(self, subject: Subject, numbers: Sequence[int], check: DeleteCheck) -> None:
        """Mark the subject's versions ``numbers`` deleted (kept, numbers and ids never reused)."""
        with self._write() as session:
            group = self._group(session, subject, lock=True)
            if group is None:
                return
            chosen = [e for e in self._entries(session, group.id) if e.number in numbers]
            referrers = self._referrers(session, subject, [e.number for e in chosen])
            check(DeleteContext(_properties(group), chosen, referrers))
            session.execute(
                update(VersionRow).where(VersionRow.id.in_([e.row_id for e in chosen])).values(deleted=True)
            )

    @retried
    def hard_delete(self, subject: Subject, numbers: Sequence[int] | None, check: DeleteCheck) -> None:
        """Delete versions for good (None: the whole subject, its group and its subject-level
        configuration). The versions after a deleted one keep their numbers (pinned)."""
        with self._write() as session:
            group = self._group(session, subject, lock=True)
            if group is None:
                return
            numbered = self._all_entries(session, [group.id])[group.id]
            entries = self._entries(session, group.id)
            chosen = entries if numbers is None else [e for e in entries if e.number in numbers]
            referrers = self._referrers(session, subject, [e.number for e in chosen])
            check(DeleteContext(_properties(group), chosen, referrers))
            if numbers is None:
                session.delete(group)
                session.execute(
                    delete(ConfigRow).where(ConfigRow.namespace == subject.namespace, ConfigRow.subject == subject.name)
                )
                return
            gone = {e.row_id for e in chosen}
            pinned = {row.id for row, _ in numbered if row.pin is not None}
            after_gap = False
            for row, number in numbered:
                if row.id in gone:
                    after_gap = True
                elif after_gap and row.id not in pinned:
                    session.add(VersionPinRow(version_id=row.id, group_id=group.id, number=number))
            session.execute(delete(VersionPinRow).where(VersionPinRow.version_id.in_(gone)))
            session.flush()
            session.execute(delete(VersionRow).where(VersionRow.id.in_(gone)))
