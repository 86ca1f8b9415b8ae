"""The catalog's storage interface. Stream, group and table metadata change together
or not at all; commits are numbered and deduplicated by the database."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from catalog_api.model import Chunk, Commit, Scope, Snapshot, Stream, StreamConfig, Table
from registry.model import VersionInfo
from registry.store.base import RegistryStore


@dataclass(frozen=True)
class TableSpec:
    """What a new table's row holds besides its stream."""

    format: str
    type_name: str
    schema: dict[str, Any]
    comment: str
    properties: dict[str, str]


@dataclass(frozen=True)
class TableUpdate:
    """A table's metadata after a change. ``schema_version`` is set when a schema was added."""

    schema: dict[str, Any]
    schema_version: VersionInfo | None
    comment: str
    properties: dict[str, str]


#: Registry work done inside the catalog's transaction, on a store bound to it.
RegisterSchema = Callable[[RegistryStore], VersionInfo]
UpdateTable = Callable[[Table, RegistryStore], TableUpdate]


@dataclass(frozen=True)
class Page:
    """One page of a listing and the token that continues it."""

    items: list[Any]
    continuation_token: str


class CatalogStore(ABC):
    """Scopes, streams, tables and commits, kept transactionally."""

    @abstractmethod
    def create_scope(self, scope: Scope) -> Scope:
        """Create a scope; AlreadyExists if it does."""

    @abstractmethod
    def get_scope(self, name: str) -> Scope:
        """A scope; ScopeNotFound if none."""

    @abstractmethod
    def list_scopes(self, token: str | None, limit: int) -> Page:
        """Scopes in creation order."""

    @abstractmethod
    def alter_scope(
        self, name: str, set_properties: dict[str, str], remove: Sequence[str], comment: str | None
    ) -> Scope:
        """Set and remove properties (and change the comment)."""

    @abstractmethod
    def delete_scope(self, name: str, cascade: bool) -> list[Stream]:
        """Delete a scope; with ``cascade`` also its streams, tables and groups (returned streams)."""

    @abstractmethod
    def create_stream(self, scope: str, name: str, config: StreamConfig, location: str) -> Stream:
        """Create a stream; AlreadyExists if the name is taken."""

    @abstractmethod
    def get_stream(self, scope: str, name: str) -> Stream:
        """A stream; StreamNotFound if none."""

    @abstractmethod
    def list_streams(self, scope: str, token: str | None, limit: int) -> Page:
        """Streams of a scope in creation order."""

    @abstractmethod
    def seal_stream(self, scope: str, name: str) -> Stream:
        """Refuse further commits."""

    @abstractmethod
    def truncate_stream(self, scope: str, name: str, cut: int) -> Stream:
        """Hide every commit up to and including ``cut``."""

    @abstractmethod
    def delete_stream(self, scope: str, name: str) -> Stream:
        """Delete a stream that is not a table's, with its commits."""

    @abstractmethod
    def create_table(
        self, scope: str, name: str, config: StreamConfig, location: str, spec: TableSpec, register: RegisterSchema
    ) -> Table:
        """Create stream, group (by ``register``) and table in one transaction."""

    @abstractmethod
    def get_table(self, scope: str, name: str) -> Table:
        """A table; TableNotFound if none."""

    @abstractmethod
    def list_tables(self, scope: str, token: str | None, limit: int) -> Page:
        """Tables of a scope in creation order."""

    @abstractmethod
    def alter_table(self, scope: str, name: str, expected_version: int | None, update: UpdateTable) -> Table:
        """Change a table under a lock; WriteConflict if its version is not ``expected_version``."""

    @abstractmethod
    def drop_table(self, scope: str, name: str) -> Stream:
        """Delete the table, its stream, commits and group; returns the stream that was."""

    @abstractmethod
    def commit(
        self,
        scope: str,
        stream: str,
        chunks: Sequence[Chunk],
        *,
        overwrite: bool,
        writer_id: str | None,
        writer_sequence: int | None,
        properties: dict[str, str],
    ) -> Commit:
        """Append chunks atomically as the next commit; a repeated (writer, sequence) returns the first."""

    @abstractmethod
    def commits(self, scope: str, stream: str, after: int, limit: int) -> list[Commit]:
        """Commits numbered above ``after``, oldest first."""

    @abstractmethod
    def snapshot(self, scope: str, stream: str, cut: int | None, as_of_time: int | None, after: int | None) -> Snapshot:
        """Chunks visible at a cut (latest by default), or added after ``after`` up to it."""

    @abstractmethod
    def chunk_paths(self, scope: str, stream: str) -> set[str]:
        """Paths of every chunk still referenced by a commit that is not truncated."""
