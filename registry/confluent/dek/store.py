"""Storage of the DEK registry, on SQLAlchemy (tables in ``registry.confluent.orm``).

KEKs are unique by (context, name) and DEKs by (KEK, subject, version, algorithm): the database
decides races between clients creating the same key, and the loser reads the winner's.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, Select, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from registry.confluent.dek.model import Dek, Kek
from registry.confluent.errors import KeyNotFound, KeyNotSoftDeleted, KeyReferenceExists
from registry.confluent.orm import DekRow, KekRow
from registry.db import Transactions, now_ms, retried


def _kek(row: KekRow) -> Kek:
    return Kek(row.namespace, row.name, row.kms_type, row.kms_key_id, dict(row.kms_props), row.doc, row.shared,
               row.ts, row.deleted)


def _dek(row: DekRow, kek_name: str) -> Dek:
    return Dek(kek_name, row.subject, row.version, row.algorithm, row.encrypted, row.ts, row.deleted)


class SqlDekStore:
    """KEKs and DEKs, kept transactionally."""

    def __init__(self, engine: Engine) -> None:
        self._tx = Transactions(engine)
        self._read, self._write = self._tx.read, self._tx.write

    @staticmethod
    def _kek_row(session: Session, namespace: str, name: str, *, lock: bool = False) -> KekRow | None:
        query = select(KekRow).where(KekRow.namespace == namespace, KekRow.name == name)
        return session.scalars(query.with_for_update() if lock else query).one_or_none()

    def _live_kek(self, session: Session, namespace: str, name: str, *, lock: bool = False) -> KekRow:
        row = self._kek_row(session, namespace, name, lock=lock)
        if row is None or row.deleted:
            raise KeyNotFound(f"Key '{name}' not found")
        return row

    # -- KEKs -------------------------------------------------------------------------------

    def kek_names(self, namespace: str, *, deleted: bool) -> list[str]:
        """Names of the context's KEKs (soft-deleted ones too, if asked), in order."""
        query = select(KekRow.name).where(KekRow.namespace == namespace).order_by(KekRow.name)
        if not deleted:
            query = query.where(KekRow.deleted.is_(False))
        with self._read() as session:
            return list(session.scalars(query))

    def kek(self, namespace: str, name: str, *, deleted: bool) -> Kek | None:
        """The KEK (a soft-deleted one only if asked)."""
        with self._read() as session:
            row = self._kek_row(session, namespace, name)
            return None if row is None or (row.deleted and not deleted) else _kek(row)

    @retried
    def create_kek(self, kek: Kek) -> Kek:
        """Store ``kek``, unless the context has a KEK of that name: then return that one."""
        with self._write() as session:
            found = self._kek_row(session, kek.namespace, kek.name, lock=True)
            if found is not None:
                return _kek(found)
            try:
                with session.begin_nested():
                    row = KekRow(namespace=kek.namespace, name=kek.name, kms_type=kek.kms_type,
                                 kms_key_id=kek.kms_key_id, kms_props=dict(kek.kms_props), doc=kek.doc,
                                 shared=kek.shared, ts=now_ms(), deleted=False)
                    session.add(row)
                return _kek(row)
            except IntegrityError:  # created concurrently
                found = self._kek_row(session, kek.namespace, kek.name)
                if found is None:
                    raise
                return _kek(found)

    @retried
    def update_kek(self, namespace: str, name: str, kms_props: dict[str, str] | None, doc: str | None,
                   shared: bool | None) -> Kek:
        """Change the KEK's KMS properties, doc or sharing (None: unchanged)."""
        with self._write() as session:
            row = self._live_kek(session, namespace, name, lock=True)
            if kms_props is not None:
                row.kms_props = kms_props
            if doc is not None:
                row.doc = doc
            if shared is not None:
                row.shared = shared
            row.ts = now_ms()
            return _kek(row)

    @retried
    def delete_kek(self, namespace: str, name: str, *, permanent: bool) -> None:
        """Soft-delete the KEK (none of its DEKs may be live), or, after that, delete it and its
        DEKs for good."""
        with self._write() as session:
            row = self._kek_row(session, namespace, name, lock=True)
            if row is None:
                raise KeyNotFound(f"Key '{name}' not found")
            live = session.scalar(select(DekRow.id).where(DekRow.kek_id == row.id, DekRow.deleted.is_(False))
                                  .limit(1))
            if live is not None:
                raise KeyReferenceExists(f"Key '{name}' still has live DEKs: delete them first")
            if not permanent:
                if row.deleted:
                    raise KeyNotFound(f"Key '{name}' not found")
                row.deleted, row.ts = True, now_ms()
                return
            if not row.deleted:
                raise KeyNotSoftDeleted(f"Key '{name}' must be soft-deleted before being permanently deleted")
            session.execute(delete(DekRow).where(DekRow.kek_id == row.id))
            session.delete(row)

    @retried
    def undelete_kek(self, namespace: str, name: str) -> None:
        """Bring back a soft-deleted KEK."""
        with self._write() as session:
            row = self._kek_row(session, namespace, name, lock=True)
            if row is None:
                raise KeyNotFound(f"Key '{name}' not found")
            row.deleted, row.ts = False, now_ms()

    # -- DEKs -------------------------------------------------------------------------------

    @staticmethod
    def _deks(kek_id: int, subject: str, algorithm: str | None, deleted: bool) -> Select[DekRow]:
        query = select(DekRow).where(DekRow.kek_id == kek_id, DekRow.subject == subject)
        if algorithm is not None:
            query = query.where(DekRow.algorithm == algorithm)
        if not deleted:
            query = query.where(DekRow.deleted.is_(False))
        return query.order_by(DekRow.version)

    def dek_subjects(self, namespace: str, kek_name: str, *, deleted: bool) -> list[str]:
        """Subjects with DEKs under the KEK (soft-deleted ones too, if asked), in order."""
        with self._read() as session:
            kek = self._live_kek(session, namespace, kek_name)
            query = select(DekRow.subject).where(DekRow.kek_id == kek.id).distinct().order_by(DekRow.subject)
            if not deleted:
                query = query.where(DekRow.deleted.is_(False))
            return list(session.scalars(query))

    def deks(self, namespace: str, kek_name: str, subject: str, algorithm: str, *, deleted: bool
             ) -> tuple[Kek, list[Dek]]:
        """The KEK (it may be soft-deleted when ``deleted``), and its DEKs of the subject and
        algorithm, by version."""
        with self._read() as session:
            row = self._kek_row(session, namespace, kek_name)
            if row is None or (row.deleted and not deleted):
                raise KeyNotFound(f"Key '{kek_name}' not found")
            found = [_dek(d, kek_name) for d in session.scalars(self._deks(row.id, subject, algorithm, deleted))]
            return _kek(row), found

    @retried
    def create_dek(self, namespace: str, dek: Dek) -> tuple[Kek, Dek, bool]:
        """Store ``dek`` under its KEK, unless one of that subject, version and algorithm exists:
        then return that one. (KEK, DEK, whether it was created.)"""
        with self._write() as session:
            kek = self._live_kek(session, namespace, dek.kek_name, lock=True)
            query = self._deks(kek.id, dek.subject, dek.algorithm, True).where(DekRow.version == dek.version)
            found = session.scalars(query).one_or_none()
            if found is not None:
                return _kek(kek), _dek(found, dek.kek_name), False
            row = DekRow(kek_id=kek.id, subject=dek.subject, version=dek.version, algorithm=dek.algorithm,
                         encrypted=dek.encrypted_key_material, ts=now_ms(), deleted=False)
            session.add(row)
            session.flush()
            return _kek(kek), _dek(row, dek.kek_name), True

    @retried
    def delete_deks(self, namespace: str, kek_name: str, subject: str, algorithm: str, versions: Sequence[int] | None,
                    *, permanent: bool) -> None:
        """Soft-delete the subject's DEKs of the algorithm (those ``versions``; None: all), or,
        after that, delete them for good."""
        with self._write() as session:
            kek = self._live_kek(session, namespace, kek_name, lock=True)
            rows = list(session.scalars(self._deks(kek.id, subject, algorithm, True)))
            chosen = [r for r in rows if versions is None or r.version in versions]
            if not chosen or (not permanent and all(r.deleted for r in chosen)):
                raise KeyNotFound(f"Key '{kek_name}' has no DEK of subject '{subject}' to delete")
            ids = [r.id for r in chosen]
            if not permanent:
                session.execute(update(DekRow).where(DekRow.id.in_(ids)).values(deleted=True, ts=now_ms()))
                return
            if any(not r.deleted for r in chosen):
                raise KeyNotSoftDeleted(
                    f"the DEKs of subject '{subject}' must be soft-deleted before being permanently deleted")
            session.execute(delete(DekRow).where(DekRow.id.in_(ids)))

    @retried
    def undelete_deks(self, namespace: str, kek_name: str, subject: str, algorithm: str,
                      versions: Sequence[int] | None) -> None:
        """Bring back the subject's soft-deleted DEKs of the algorithm (those ``versions``; None: all)."""
        with self._write() as session:
            kek = self._live_kek(session, namespace, kek_name, lock=True)
            rows = [r for r in session.scalars(self._deks(kek.id, subject, algorithm, True))
                    if versions is None or r.version in versions]
            if not rows:
                raise KeyNotFound(f"Key '{kek_name}' has no DEK of subject '{subject}'")
            session.execute(update(DekRow).where(DekRow.id.in_([r.id for r in rows])).values(deleted=False))
