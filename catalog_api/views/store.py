"""Views on SQLAlchemy, in the catalog's database: one row per view, keyed by (scope, name).

Tables and views share one name space per scope: a view's write transaction checks, under the
same transaction, that no table of that name exists. A view's row references its scope's row, so
the insert holds the scope against deletion (the foreign key check on PostgreSQL, the one write
lock on SQLite) and a scope's deletion, which locks the scope's row first, sees every view
committed before it and deletes them with the scope.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from catalog_api.errors import ScopeNotFound
from catalog_api.orm import ScopeRow, StreamRow, TableRow
from catalog_api.store import Page
from catalog_api.views.errors import TableAlreadyExists, ViewAlreadyExists, ViewNotFound
from catalog_api.views.model import View, ViewDefinition
from catalog_api.views.orm import ViewRow
from registry.db import Transactions, lock_name, now_ms, retried
from registry.pagination import decode_token

#: Given the stored view (None: there is none), the definition to store, or an error.
DecideView = Callable[[View | None], ViewDefinition]


def _view(row: ViewRow, scope: str) -> View:
    definition = ViewDefinition(
        query_text=row.query_text,
        schema=dict(row.schema),
        current_catalog=row.current_catalog,
        current_namespace=tuple(row.current_namespace),
        query_column_names=tuple(row.query_column_names),
        sql_configs=dict(row.sql_configs),
        schema_mode=row.schema_mode,
        comment=row.comment,
        properties=dict(row.properties),
        owner=row.owner,
    )
    return View(scope, row.name, definition, row.version, row.created_at, row.updated_at)


def _fill(row: ViewRow, definition: ViewDefinition) -> None:
    row.query_text = definition.query_text
    row.schema = dict(definition.schema)
    row.current_catalog = definition.current_catalog
    row.current_namespace = list(definition.current_namespace)
    row.query_column_names = list(definition.query_column_names)
    row.sql_configs = dict(definition.sql_configs)
    row.schema_mode = definition.schema_mode
    row.comment = definition.comment
    row.properties = dict(definition.properties)
    row.owner = definition.owner


class SqlViewStore:
    """Views on one engine (the catalog's)."""

    def __init__(self, engine: Engine) -> None:
        self._tx = Transactions(engine)
        self._read, self._write = self._tx.read, self._tx.write

    @staticmethod
    def _scope_id(session: Session, scope: str) -> int:
        found = session.scalars(select(ScopeRow.id).where(ScopeRow.name == scope)).one_or_none()
        if found is None:
            raise ScopeNotFound(f"scope {scope!r} not found")
        return found

    @staticmethod
    def _row(session: Session, scope_id: int, scope: str, name: str, *, lock: bool = False) -> ViewRow:
        query = select(ViewRow).where(ViewRow.scope_id == scope_id, ViewRow.name == name)
        row = session.scalars(query.with_for_update() if lock else query).one_or_none()
        if row is None:
            raise ViewNotFound(f"view {name!r} not found in scope {scope!r}")
        return row

    @staticmethod
    def _refuse_table(session: Session, scope_id: int, scope: str, name: str) -> None:
        table = session.scalars(
            select(TableRow.stream_id)
            .join(StreamRow, StreamRow.id == TableRow.stream_id)
            .where(StreamRow.scope_id == scope_id, StreamRow.name == name)
        ).first()
        if table is not None:
            raise TableAlreadyExists(
                f"{scope}.{name} is a table; tables and views share one name space, so a view cannot take its name"
            )

    def put(self, scope: str, name: str, decide: DecideView) -> tuple[View, bool]:
        """Create or replace the view with what ``decide`` makes of the stored one; whether it was created.

        Two requests that both find no view race to insert it: the loser's insert breaks the unique
        constraint, and it runs again, deciding on the view the winner stored (a create is then
        refused, a create-or-replace replaces it).
        """
        try:
            return self._put(scope, name, decide)
        except IntegrityError:
            pass
        try:
            return self._put(scope, name, decide)
        except IntegrityError:
            raise ViewAlreadyExists(f"view {scope}.{name} is being created concurrently; retry") from None

    @retried
    def _put(self, scope: str, name: str, decide: DecideView) -> tuple[View, bool]:
        with self._write() as session:
            scope_id = self._scope_id(session, scope)
            lock_name(session, "relation", scope, name)  # as table creation does: one name space
            self._refuse_table(session, scope_id, scope, name)
            query = select(ViewRow).where(ViewRow.scope_id == scope_id, ViewRow.name == name).with_for_update()
            row = session.scalars(query).one_or_none()
            definition = decide(None if row is None else _view(row, scope))
            now = now_ms()
            created = row is None
            if row is None:
                row = ViewRow(scope_id=scope_id, name=name, version=1, created_at=now)
                session.add(row)
            else:
                row.version += 1
            row.updated_at = now
            _fill(row, definition)
            session.flush()
            return _view(row, scope), created

    def get(self, scope: str, name: str) -> View:
        """The view; ViewNotFound (ScopeNotFound) if there is none."""
        with self._read() as session:
            return _view(self._row(session, self._scope_id(session, scope), scope, name), scope)

    def list(self, scope: str, token: str | None, limit: int) -> Page:
        """A page of the scope's views, in the order they were created."""
        after = decode_token(token)
        with self._read() as session:
            scope_id = self._scope_id(session, scope)
            rows = session.scalars(
                select(ViewRow)
                .where(ViewRow.scope_id == scope_id, ViewRow.id > after)
                .order_by(ViewRow.id)
                .limit(limit)
            ).all()
            return Page([_view(r, scope) for r in rows], str(rows[-1].id if rows else after))

    @retried
    def delete(self, scope: str, name: str) -> None:
        """Delete the view; ViewNotFound if there is none."""
        with self._write() as session:
            session.delete(self._row(session, self._scope_id(session, scope), scope, name, lock=True))

    @retried
    def rename(self, scope: str, name: str, new_scope: str, new_name: str) -> View:
        """Give the view another name, in the same or another scope; the name must be free there."""
        try:
            with self._write() as session:
                row = self._row(session, self._scope_id(session, scope), scope, name, lock=True)
                target = self._scope_id(session, new_scope)
                lock_name(session, "relation", new_scope, new_name)
                self._refuse_table(session, target, new_scope, new_name)
                taken = session.scalars(
                    select(ViewRow.id).where(ViewRow.scope_id == target, ViewRow.name == new_name)
                ).first()
                if taken is not None and taken != row.id:
                    raise ViewAlreadyExists(f"view {new_scope}.{new_name} already exists")
                row.scope_id, row.name = target, new_name
                row.version += 1
                row.updated_at = now_ms()
                session.flush()
                return _view(row, new_scope)
        except IntegrityError:
            raise ViewAlreadyExists(f"view {new_scope}.{new_name} was created concurrently") from None

    def count(self, scope: str) -> int:
        """How many views the scope holds (0 when there is no such scope)."""
        with self._read() as session:
            counted = session.scalar(
                select(func.count(ViewRow.id))
                .join(ScopeRow, ScopeRow.id == ViewRow.scope_id)
                .where(ScopeRow.name == scope)
            )
            return int(counted or 0)
