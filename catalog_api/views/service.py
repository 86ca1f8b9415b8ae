"""The rules of views: what a create, a replace, a drop and a rename may do."""

from __future__ import annotations

from catalog_api.store import Page
from catalog_api.views.errors import ViewAlreadyExists, ViewNotFound
from catalog_api.views.model import PutMode, View, ViewDefinition
from catalog_api.views.store import SqlViewStore
from registry.errors import BadRequest, WriteConflict


def check_definition(definition: ViewDefinition) -> None:
    """BadRequest, naming the field, unless the columns are uniquely named (case-insensitively, as
    Spark resolves them) and ``query_column_names`` is empty or names one query column per column."""
    fields = definition.schema.get("fields", [])
    seen: set[str] = set()
    for position, column in enumerate(fields):
        key = str(column.get("name", "")).lower()
        if key in seen:
            raise BadRequest(f"schema.fields[{position}].name: the view has two columns named {column['name']!r}")
        seen.add(key)
    names = definition.query_column_names
    if names and len(names) != len(fields):
        raise BadRequest(
            f"queryColumnNames: {len(names)} names for {len(fields)} columns; give one per column, or none"
        )


class ViewService:
    """Views of the catalog's scopes, over a store."""

    def __init__(self, store: SqlViewStore) -> None:
        self.store = store

    def put_view(
        self, scope: str, name: str, definition: ViewDefinition, mode: PutMode, expected_version: int | None = None
    ) -> tuple[View, bool]:
        """Create or replace a view, as ``mode`` allows: ``create`` refuses an existing view
        (ViewAlreadyExists), ``replace`` a missing one (ViewNotFound); with ``expected_version``
        only the view at that version is replaced (WriteConflict otherwise). A table of that name
        refuses either (TableAlreadyExists). Returns the view and whether it was created."""
        check_definition(definition)

        def decide(stored: View | None) -> ViewDefinition:
            if stored is None:
                if mode == "replace":
                    raise ViewNotFound(f"view {name!r} not found in scope {scope!r}; nothing to replace")
                if expected_version is not None:
                    raise WriteConflict(
                        f"view {scope}.{name} does not exist; expected it at version {expected_version}"
                    )
                return definition
            if mode == "create":
                raise ViewAlreadyExists(f"view {scope}.{name} already exists")
            if expected_version is not None and stored.version != expected_version:
                raise WriteConflict(
                    f"view {scope}.{name} is at version {stored.version}, not {expected_version}: "
                    "it changed since it was read"
                )
            return definition

        return self.store.put(scope, name, decide)

    def get_view(self, scope: str, name: str) -> View:
        """A view by name."""
        return self.store.get(scope, name)

    def list_views(self, scope: str, token: str | None, limit: int) -> Page:
        """A page of the scope's views."""
        return self.store.list(scope, token, limit)

    def drop_view(self, scope: str, name: str) -> None:
        """Drop a view (views hold no data: only the definition goes)."""
        self.store.delete(scope, name)

    def rename_view(self, scope: str, name: str, new_scope: str, new_name: str) -> View:
        """Rename a view, possibly into another scope. Views that name it by its old name stop resolving."""
        return self.store.rename(scope, name, new_scope, new_name)

    def scope_holding(self, scope: str) -> str:
        """What of a scope's content is views ("2 views"), or "" when it holds none: a scope with
        views is not empty (CatalogService.delete_scope asks this inside its deletion)."""
        count = self.store.count(scope)
        return f"{count} view{'s' if count != 1 else ''}" if count else ""
