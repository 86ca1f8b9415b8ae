"""The registry store on SQLAlchemy: SQLite or PostgreSQL.

Integrity errors are turned into domain errors here, at the storage boundary.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, Row, Select, func, not_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from registry.db import Transactions, now_ms, retried
from registry.errors import (
    AlreadyExists,
    CodecNotRegistered,
    EncodingNotFound,
    GroupNotFound,
    SchemaNotFound,
    WriteConflict,
)
from registry.formats.base import ParsedSchema
from registry.ids import CodecName, EncodingId, GroupName, Namespace, SchemaId, TypeName, Version
from registry.model import (
    NO_CODEC,
    CodecType,
    Compatibility,
    EncodingInfo,
    GroupProperties,
    SchemaInfo,
    SerializationFormat,
    VersionInfo,
)
from registry.pagination import decode_token
from registry.policy import Needed, needed
from registry.store.base import AddCheck, AddContext, GroupPage, RegistryStore, StoredVersion
from registry.store.orm import CodecRow, EncodingRow, GroupRow, SchemaRow, VersionRow
from registry.store.policies import policy_from_json, policy_to_json

#: Versions not deleted. Written NOT deleted, as the partial index on live versions says it, so that
#: PostgreSQL uses that index ("deleted IS false" means the same but does not match it).
_LIVE = not_(VersionRow.deleted)


def _properties(row: GroupRow) -> GroupProperties:
    return GroupProperties(
        format=SerializationFormat(row.serialization_format, row.full_type_name),
        compatibility=policy_from_json(row.compatibility),
        allow_multiple_types=row.allow_multiple_types,
        properties=dict(row.properties),
    )


def _version_info(row: VersionRow) -> VersionInfo:
    return VersionInfo(TypeName(row.type_name), Version(row.version), SchemaId(row.schema_id))


def _stored(version: VersionRow, schema: SchemaRow) -> StoredVersion:
    info = SchemaInfo(
        type=TypeName(version.type_name),
        format=SerializationFormat(schema.serialization_format, schema.full_type_name),
        data=schema.data,
        properties=dict(version.properties),
    )
    return StoredVersion(
        schema=info,
        version=_version_info(version),
        compatibility=policy_from_json(version.compatibility),
        created_at=version.created_at,
        deleted=version.deleted,
    )


def _versions(group_id: int) -> Select[VersionRow, SchemaRow]:
    return (
        select(VersionRow, SchemaRow)
        .join(SchemaRow, SchemaRow.id == VersionRow.schema_id)
        .where(VersionRow.group_id == group_id)
    )


def _schema_key(schema: ParsedSchema, full_type_name: str) -> Select[SchemaRow]:
    return select(SchemaRow).where(
        SchemaRow.serialization_format == schema.format,
        SchemaRow.full_type_name == full_type_name,
        SchemaRow.type_name == schema.type_name,
        SchemaRow.fingerprint == schema.fingerprint,
    )


class SqlRegistryStore(RegistryStore):
    """RegistryStore on one SQLAlchemy engine.

    ``bound(session)`` gives a store whose operations join that session's transaction,
    so that the catalog can create a stream, its group and its first schema atomically.
    """

    def __init__(self, engine: Engine, session: Session | None = None) -> None:
        self.engine = engine
        self._tx = Transactions(engine, session)
        self._read, self._write = self._tx.read, self._tx.write

    def bound(self, session: Session) -> SqlRegistryStore:
        """This store, working inside ``session``'s transaction (which the caller commits)."""
        return SqlRegistryStore(self.engine, session)

    @staticmethod
    def _group(
        session: Session, namespace: Namespace, name: GroupName, *, lock: bool = False, share: bool = False
    ) -> GroupRow:
        """The group's row; ``lock``: locked for update (its versions change); ``share``: locked
        against its deletion only (FOR KEY SHARE). Group before versions: docs/decisions.md."""
        query = select(GroupRow).where(GroupRow.namespace == namespace, GroupRow.name == name)
        if lock or share:
            query = query.with_for_update(read=share, key_share=share)
        row = session.scalars(query).one_or_none()
        if row is None:
            where = f" in namespace {namespace!r}" if namespace else ""
            raise GroupNotFound(f"group {name!r} not found{where}")
        return row

    # -- groups ---------------------------------------------------------------------------

    @retried
    def create_group(self, namespace: Namespace, name: GroupName, properties: GroupProperties) -> None:
        try:
            with self._write() as session, session.begin_nested():
                session.add(
                    GroupRow(
                        namespace=namespace,
                        name=name,
                        serialization_format=properties.format.name,
                        full_type_name=properties.format.full_type_name,
                        allow_multiple_types=properties.allow_multiple_types,
                        compatibility=policy_to_json(properties.compatibility),
                        properties=dict(properties.properties),
                        created_at=now_ms(),
                    )
                )
        except IntegrityError:
            raise AlreadyExists(f"group {name!r} already exists") from None

    def get_group(self, namespace: Namespace, name: GroupName) -> GroupProperties:
        with self._read() as session:
            return _properties(self._group(session, namespace, name))

    def list_groups(self, namespace: Namespace, token: str | None, limit: int) -> GroupPage:
        after = decode_token(token)
        with self._read() as session:
            rows = session.scalars(
                select(GroupRow)
                .where(GroupRow.namespace == namespace, GroupRow.id > after)
                .order_by(GroupRow.id)
                .limit(limit)
            ).all()
        next_token = str(rows[-1].id) if rows else str(after)
        return GroupPage([(GroupName(r.name), _properties(r)) for r in rows], next_token)

    @retried
    def delete_group(self, namespace: Namespace, name: GroupName) -> None:
        with self._write() as session:
            session.delete(self._group(session, namespace, name, lock=True))

    def count_groups(self, namespace: Namespace) -> int:
        with self._read() as session:
            return session.scalar(select(func.count()).where(GroupRow.namespace == namespace)) or 0

    def namespaces(self) -> list[tuple[Namespace, int]]:
        with self._read() as session:
            rows = session.execute(
                select(GroupRow.namespace, func.count()).group_by(GroupRow.namespace).order_by(GroupRow.namespace)
            ).all()
        return [(Namespace(namespace), count) for namespace, count in rows]

    def recent_versions(self, limit: int) -> list[tuple[Namespace, GroupName, VersionInfo, int]]:
        with self._read() as session:
            rows = session.execute(
                select(GroupRow.namespace, GroupRow.name, VersionRow)
                .join(VersionRow, VersionRow.group_id == GroupRow.id)
                .order_by(VersionRow.id.desc())
                .limit(limit)
            ).all()
            return [(Namespace(ns), GroupName(g), _version_info(v), v.created_at) for ns, g, v in rows]

    def find_groups(
        self, namespace: Namespace, text: str, after: str, limit: int
    ) -> list[tuple[GroupName, GroupProperties]]:
        query = select(GroupRow).where(GroupRow.namespace == namespace, GroupRow.name > after)
        if text:
            query = query.where(func.lower(GroupRow.name).contains(text.lower(), autoescape=True))
        with self._read() as session:
            rows = session.scalars(query.order_by(GroupRow.name).limit(limit)).all()
        return [(GroupName(r.name), _properties(r)) for r in rows]

    def group_names(self, namespace: Namespace, text: str, after: str, limit: int) -> list[GroupName]:
        query = select(GroupRow.name).where(GroupRow.namespace == namespace, GroupRow.name > after)
        if text:
            query = query.where(func.lower(GroupRow.name).contains(text.lower(), autoescape=True))
        with self._read() as session:
            return [GroupName(n) for n in session.scalars(query.order_by(GroupRow.name).limit(limit))]

    @retried
    def delete_namespace(self, namespace: Namespace) -> list[GroupName]:
        with self._write() as session:
            rows = session.scalars(
                select(GroupRow).where(GroupRow.namespace == namespace).order_by(GroupRow.id).with_for_update()
            ).all()
            for row in rows:
                session.delete(row)
            return [GroupName(r.name) for r in rows]

    @retried
    def update_compatibility(
        self,
        namespace: Namespace,
        name: GroupName,
        compatibility: Compatibility,
        previous: Compatibility | None,
    ) -> GroupProperties:
        with self._write() as session:
            row = self._group(session, namespace, name, lock=True)
            current = policy_from_json(row.compatibility)
            if previous is not None and previous != current:
                raise WriteConflict(
                    f"previousCompatibility {previous.policy} does not match the current policy {current.policy}"
                )
            row.compatibility = policy_to_json(compatibility)
            return _properties(row)

    # -- schemas --------------------------------------------------------------------------

    @retried
    def add_schema(
        self, namespace: Namespace, name: GroupName, schema: ParsedSchema, info: SchemaInfo, check: AddCheck
    ) -> VersionInfo:
        full_type = info.format.full_type_name
        with self._write() as session:
            group = self._group(session, namespace, name, lock=True)
            content = session.scalars(_schema_key(schema, full_type)).one_or_none()
            if content is not None:
                existing = session.scalars(
                    select(VersionRow).where(
                        VersionRow.group_id == group.id,
                        VersionRow.schema_id == content.id,
                        _LIVE,
                    )
                ).one_or_none()
                if existing is not None:
                    return _version_info(existing)
            properties = _properties(group)
            check(self._context(session, group.id, properties, schema.type_name, needed(properties.compatibility)))
            if content is None:
                content = self._insert_schema(session, schema, full_type)
            highest = session.scalar(
                select(func.max(VersionRow.version)).where(
                    VersionRow.group_id == group.id, VersionRow.type_name == schema.type_name
                )
            )
            row = VersionRow(
                group_id=group.id,
                schema_id=content.id,
                type_name=schema.type_name,
                version=0 if highest is None else highest + 1,
                properties=dict(info.properties),
                compatibility=policy_to_json(properties.compatibility),
                created_at=now_ms(),
                deleted=False,
            )
            session.add(row)
            session.flush()
            return _version_info(row)

    def add_context(self, namespace: Namespace, name: GroupName, type_name: TypeName, needs: Needed) -> AddContext:
        with self._read() as session:
            group = self._group(session, namespace, name)
            return self._context(session, group.id, _properties(group), type_name, needs)

    @classmethod
    def _context(
        cls, session: Session, group_id: int, properties: GroupProperties, type_name: str, needs: Needed
    ) -> AddContext:
        live = cls._needed(session, group_id, type_name, needs)
        return AddContext(properties, live, cls._live_types(session, group_id, type_name, bool(live)))

    @staticmethod
    def _needed(session: Session, group_id: int, type_name: str, needs: Needed) -> list[StoredVersion]:
        """The live versions of ``type_name`` that ``needs`` names, oldest first (``Needed.select``, in SQL)."""
        live = _versions(group_id).where(VersionRow.type_name == type_name, _LIVE)
        rows: Sequence[Row[VersionRow, SchemaRow]] = []
        if needs.floor is not None:
            rows = session.execute(live.where(VersionRow.version >= needs.floor).order_by(VersionRow.version)).all()
        if needs.newest and not rows:
            rows = session.execute(live.order_by(VersionRow.version.desc()).limit(1)).all()
        return [_stored(v, s) for v, s in rows]

    @staticmethod
    def _live_types(session: Session, group_id: int, type_name: str, type_is_live: bool) -> frozenset[str]:
        """The group's live types, found with index probes rather than a scan of its versions: whether
        another type is live settles it for the usual group, which holds one type."""
        live = (VersionRow.group_id == group_id, _LIVE)
        # Two ranges rather than "!=", which an index can only filter by, row after row.
        for other in (VersionRow.type_name < type_name, VersionRow.type_name > type_name):
            if session.scalar(select(VersionRow.id).where(*live, other).limit(1)) is not None:
                return frozenset(session.scalars(select(VersionRow.type_name).where(*live).distinct()))
        if not type_is_live:
            probe = select(VersionRow.id).where(*live, VersionRow.type_name == type_name).limit(1)
            type_is_live = session.scalar(probe) is not None
        return frozenset({type_name}) if type_is_live else frozenset()

    @staticmethod
    def _insert_schema(session: Session, schema: ParsedSchema, full_type: str) -> SchemaRow:
        # Another group may be registering the same content right now: the unique key
        # decides, and the loser takes the winner's row (and so its global id).
        try:
            with session.begin_nested():
                row = SchemaRow(
                    serialization_format=schema.format,
                    full_type_name=full_type,
                    type_name=schema.type_name,
                    fingerprint=schema.fingerprint,
                    data=schema.data,
                    created_at=now_ms(),
                )
                session.add(row)
            return row
        except IntegrityError:
            return session.scalars(_schema_key(schema, full_type)).one()

    def live_versions(self, namespace: Namespace, name: GroupName, type_name: TypeName) -> list[StoredVersion]:
        with self._read() as session:
            group = self._group(session, namespace, name)
            query = _versions(group.id).where(_LIVE)
            if type_name:
                query = query.where(VersionRow.type_name == type_name)
            rows = session.execute(query.order_by(VersionRow.id))
            return [_stored(v, s) for v, s in rows]

    def newest_of_types(self, namespace: Namespace, name: GroupName, type_name: TypeName | None) -> list[StoredVersion]:
        with self._read() as session:
            group = self._group(session, namespace, name)
            live = (VersionRow.group_id == group.id, _LIVE)
            if not type_name:
                # Two index probes tell a group of one type (the usual) from one of several.
                first = session.scalar(
                    select(VersionRow.type_name).where(*live).order_by(VersionRow.type_name).limit(1)
                )
                if first is None:
                    return []
                second = session.scalar(
                    select(VersionRow.type_name)
                    .where(*live, VersionRow.type_name > first)
                    .order_by(VersionRow.type_name)
                    .limit(1)
                )
                if second is not None:
                    return self._newest_of_every_type(session, group.id)
                type_name = TypeName(first)
            found = session.execute(
                _versions(group.id)
                .where(*live, VersionRow.type_name == type_name)
                .order_by(VersionRow.version.desc())
                .limit(1)
            ).first()
            return [] if found is None else [_stored(*found)]

    @staticmethod
    def _newest_of_every_type(session: Session, group_id: int) -> list[StoredVersion]:
        # One pass over the group's live versions: per type, the highest number and the oldest id.
        ranked = (
            select(
                VersionRow.id,
                func.row_number()
                .over(partition_by=VersionRow.type_name, order_by=VersionRow.version.desc())
                .label("rank"),
                func.min(VersionRow.id).over(partition_by=VersionRow.type_name).label("oldest"),
            )
            .where(VersionRow.group_id == group_id, _LIVE)
            .subquery()
        )
        rows = session.execute(
            select(VersionRow, SchemaRow)
            .join(ranked, ranked.c.id == VersionRow.id)
            .join(SchemaRow, SchemaRow.id == VersionRow.schema_id)
            .where(ranked.c.rank == 1)
            .order_by(ranked.c.oldest)
        )
        return [_stored(v, s) for v, s in rows]

    def latest_version(self, namespace: Namespace, name: GroupName) -> StoredVersion | None:
        with self._read() as session:
            group = self._group(session, namespace, name)
            found = session.execute(_versions(group.id).where(_LIVE).order_by(VersionRow.id.desc()).limit(1)).first()
            return None if found is None else _stored(*found)

    def history(self, namespace: Namespace, name: GroupName) -> list[StoredVersion]:
        with self._read() as session:
            group = self._group(session, namespace, name)
            return [_stored(v, s) for v, s in session.execute(_versions(group.id).order_by(VersionRow.id))]

    def find_version(self, namespace: Namespace, name: GroupName, schema: ParsedSchema) -> VersionInfo | None:
        with self._read() as session:
            group = self._group(session, namespace, name)
            row = session.scalars(
                select(VersionRow)
                .join(SchemaRow, SchemaRow.id == VersionRow.schema_id)
                .where(
                    VersionRow.group_id == group.id,
                    _LIVE,
                    SchemaRow.serialization_format == schema.format,
                    SchemaRow.type_name == schema.type_name,
                    SchemaRow.fingerprint == schema.fingerprint,
                )
            ).first()
            return None if row is None else _version_info(row)

    def version_by_id(self, namespace: Namespace, name: GroupName, schema_id: SchemaId) -> StoredVersion:
        with self._read() as session:
            group = self._group(session, namespace, name)
            found = session.execute(
                _versions(group.id).where(VersionRow.schema_id == schema_id).order_by(VersionRow.id.desc()).limit(1)
            ).first()
            if found is None:
                raise SchemaNotFound(f"schema id {schema_id} is not in group {name!r}")
            return _stored(*found)

    def version_by_number(
        self, namespace: Namespace, name: GroupName, fmt: SerializationFormat, type_name: TypeName, version: Version
    ) -> StoredVersion:
        with self._read() as session:
            group = self._group(session, namespace, name)
            found = session.execute(
                _versions(group.id).where(
                    SchemaRow.serialization_format == fmt.name,
                    VersionRow.type_name == type_name,
                    VersionRow.version == version,
                )
            ).first()
            if found is None:
                raise SchemaNotFound(f"no version {version} of {fmt.name} type {type_name!r} in group {name!r}")
            return _stored(*found)

    @retried
    def delete_by_id(self, namespace: Namespace, name: GroupName, schema_id: SchemaId) -> None:
        with self._write() as session:
            group = self._group(session, namespace, name, lock=True)
            rows = session.scalars(
                select(VersionRow).where(VersionRow.group_id == group.id, VersionRow.schema_id == schema_id)
            ).all()
            if not rows:
                raise SchemaNotFound(f"schema id {schema_id} is not in group {name!r}")
            for row in rows:
                row.deleted = True

    @retried
    def delete_by_number(
        self, namespace: Namespace, name: GroupName, fmt: SerializationFormat, type_name: TypeName, version: Version
    ) -> None:
        with self._write() as session:
            group = self._group(session, namespace, name, lock=True)
            row = session.scalars(
                select(VersionRow)
                .join(SchemaRow, SchemaRow.id == VersionRow.schema_id)
                .where(
                    VersionRow.group_id == group.id,
                    SchemaRow.serialization_format == fmt.name,
                    VersionRow.type_name == type_name,
                    VersionRow.version == version,
                )
            ).one_or_none()
            if row is None:
                raise SchemaNotFound(f"no version {version} of {fmt.name} type {type_name!r} in group {name!r}")
            row.deleted = True

    # -- codecs and encodings ---------------------------------------------------------------

    def codec_types(self, namespace: Namespace, name: GroupName) -> list[CodecType]:
        with self._read() as session:
            group = self._group(session, namespace, name)
            rows = session.scalars(select(CodecRow).where(CodecRow.group_id == group.id).order_by(CodecRow.id))
            return [CodecType(CodecName(r.name), dict(r.properties)) for r in rows]

    @retried
    def add_codec_type(self, namespace: Namespace, name: GroupName, codec: CodecType) -> None:
        with self._write() as session:
            group = self._group(session, namespace, name, lock=True)
            exists = session.scalars(
                select(CodecRow).where(CodecRow.group_id == group.id, CodecRow.name == codec.name)
            ).one_or_none()
            if exists is None:
                session.add(CodecRow(group_id=group.id, name=codec.name, properties=dict(codec.properties)))
            elif dict(exists.properties) != codec.properties:
                raise AlreadyExists(f"codec type {codec.name!r} is registered with other properties")

    @retried
    def encoding_id(self, namespace: Namespace, name: GroupName, version: VersionInfo, codec: CodecName) -> EncodingId:
        with self._write() as session:
            # Kept from deletion until the new encoding row is in: a group deleted meanwhile is
            # GroupNotFound here rather than a foreign key violation at the insert.
            group = self._group(session, namespace, name, share=True)
            if codec != NO_CODEC and (
                session.scalars(
                    select(CodecRow.id).where(CodecRow.group_id == group.id, CodecRow.name == codec)
                ).first()
                is None
            ):
                raise CodecNotRegistered(f"codec type {codec!r} is not registered in group {name!r}")
            row = session.scalars(
                select(VersionRow).where(
                    VersionRow.group_id == group.id,
                    VersionRow.type_name == version.type,
                    VersionRow.version == version.version,
                    VersionRow.schema_id == version.id,
                )
            ).one_or_none()
            if row is None:
                raise SchemaNotFound(
                    f"no version {version.version} of type {version.type!r} with id {version.id} in group {name!r}"
                )
            encoding = self._encoding_of(session, row.id, codec)
            if encoding is not None:
                return EncodingId(encoding)
            if row.deleted:
                raise SchemaNotFound(f"version {version.version} of type {version.type!r} is deleted")
            try:
                with session.begin_nested():
                    new = EncodingRow(group_id=group.id, version_id=row.id, codec=codec)
                    session.add(new)
                return EncodingId(new.id)
            except IntegrityError:
                # A concurrent request created it first; that one is the id.
                found = self._encoding_of(session, row.id, codec)
                if found is None:  # the unique key said it exists: only a broken database disagrees
                    raise RuntimeError(f"encoding of version row {row.id} and codec {codec!r} vanished") from None
                return EncodingId(found)

    @staticmethod
    def _encoding_of(session: Session, version_row: int, codec: str) -> int | None:
        return session.scalar(
            select(EncodingRow.id).where(EncodingRow.version_id == version_row, EncodingRow.codec == codec)
        )

    def encoding_info(self, namespace: Namespace, name: GroupName, encoding: EncodingId) -> EncodingInfo:
        with self._read() as session:
            group = self._group(session, namespace, name)
            found = session.execute(
                select(EncodingRow, VersionRow, SchemaRow)
                .join(VersionRow, VersionRow.id == EncodingRow.version_id)
                .join(SchemaRow, SchemaRow.id == VersionRow.schema_id)
                .where(EncodingRow.id == encoding, EncodingRow.group_id == group.id)
            ).first()
            if found is None:
                raise EncodingNotFound(f"encoding id {encoding} is not in group {name!r}")
            enc, version, schema = found
            codec = CodecType(CodecName(enc.codec))
            if enc.codec != NO_CODEC:
                row = session.scalars(
                    select(CodecRow).where(CodecRow.group_id == group.id, CodecRow.name == enc.codec)
                ).one_or_none()
                if row is not None:
                    codec = CodecType(CodecName(row.name), dict(row.properties))
            stored = _stored(version, schema)
            return EncodingInfo(EncodingId(enc.id), stored.schema, stored.version, codec)

    def encodings(self, namespace: Namespace, name: GroupName) -> list[tuple[EncodingId, VersionInfo, CodecName]]:
        with self._read() as session:
            group = self._group(session, namespace, name)
            rows = session.execute(
                select(EncodingRow.id, EncodingRow.codec, VersionRow)
                .join(VersionRow, VersionRow.id == EncodingRow.version_id)
                .where(EncodingRow.group_id == group.id)
                .order_by(EncodingRow.id)
            ).all()
            return [(EncodingId(i), _version_info(v), CodecName(codec)) for i, codec, v in rows]

    def encodings_of(self, namespace: Namespace, name: GroupName, ids: frozenset[int]) -> frozenset[EncodingId]:
        with self._read() as session:
            group = self._group(session, namespace, name)
            found = session.scalars(
                select(EncodingRow.id).where(EncodingRow.group_id == group.id, EncodingRow.id.in_(ids))
            )
            return frozenset(EncodingId(i) for i in found)

    def added_to(self, namespace: Namespace, schema: ParsedSchema) -> dict[GroupName, VersionInfo]:
        with self._read() as session:
            rows = session.execute(
                select(GroupRow.name, VersionRow)
                .join(VersionRow, VersionRow.group_id == GroupRow.id)
                .join(SchemaRow, SchemaRow.id == VersionRow.schema_id)
                .where(
                    GroupRow.namespace == namespace,
                    _LIVE,
                    SchemaRow.serialization_format == schema.format,
                    SchemaRow.type_name == schema.type_name,
                    SchemaRow.fingerprint == schema.fingerprint,
                )
                .order_by(GroupRow.id)
            )
            return {GroupName(group): _version_info(version) for group, version in rows}
