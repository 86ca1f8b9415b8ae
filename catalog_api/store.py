"""The catalog's storage interface. Stream, group and table metadata change together
or not at all; commits are numbered and deduplicated by the database.

The rules (what may change, what a commit must hold) are the service's: it hands them to
the store as callbacks, which the store runs inside its transaction with the rows locked,
on a :class:`SchemaGroups` bound to that same transaction.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from catalog_api.groups import SchemaGroups
from catalog_api.model import (
    Change,
    Chunk,
    Commit,
    CommitOptions,
    Reader,
    Scope,
    Snapshot,
    Stream,
    StreamConfig,
    Table,
    TableCommit,
    WriterCommit,
)
from catalog_api.partitioning.spec import NO_PARTITION_FIELDS, UNPARTITIONED, PartitionSpec


@dataclass(frozen=True)
class TableSpec:
    """What a new table's row holds besides its stream (its schema is its group's)."""

    format: str
    comment: str
    properties: dict[str, str]
    #: the table's first partition spec (stored unless unpartitioned)
    partitioning: PartitionSpec = UNPARTITIONED


@dataclass(frozen=True)
class TableRecord:
    """A table as the catalog stores it: its stream and its own metadata, without the schema."""

    stream: Stream
    format: str
    comment: str
    properties: dict[str, str]
    #: bumped by every change of the table's metadata, for optimistic concurrency
    version: int
    #: the id of the current partition spec (0: unpartitioned)
    spec_id: int = 0
    #: the highest partition field id any spec of the table used
    last_partition_field_id: int = NO_PARTITION_FIELDS
    #: every spec the table has had, by id, the unpartitioned spec 0 first
    partition_specs: tuple[PartitionSpec, ...] = (UNPARTITIONED,)

    @property
    def partition_spec(self) -> PartitionSpec:
        """The current partition spec."""
        return next((s for s in self.partition_specs if s.spec_id == self.spec_id), UNPARTITIONED)


@dataclass(frozen=True)
class TableMeta:
    """The table metadata an ALTER TABLE writes back."""

    comment: str
    properties: dict[str, str]
    #: the new current partition spec (stored if its id is new); None: the current one stays
    partitioning: PartitionSpec | None = None


#: Registry work done inside the catalog's transaction.
RegisterGroup = Callable[[SchemaGroups], None]
#: A stored table and its group, as the Table clients see.
ViewTable = Callable[[TableRecord, SchemaGroups], Table]
#: The new metadata of a table, or an error refusing the change.
UpdateTable = Callable[[TableRecord, SchemaGroups], TableMeta]
#: Raises to refuse a commit to ``stream``, given the table it backs (None: a plain stream).
CheckCommit = Callable[[Stream, TableRecord | None, SchemaGroups], None]
#: Raises to refuse deleting a scope holding ``streams``, else clears its groups.
ClearScope = Callable[[list[Stream], SchemaGroups], None]
#: Raises to refuse deleting a stream (``is_table``: it backs a table).
CheckDelete = Callable[[Stream, bool], None]
#: The new ``retained_from`` of a locked stream, given the newest commit older than the expiry's
#: time (None: no time given; 0: none is) and the oldest registered reader's offset (None: no reader).
DecideExpiry = Callable[[Stream, int | None, int | None], int]
#: Raises to refuse a new stream's location, given every live stream as (``scope.stream``, location).
CheckLocation = Callable[[list[tuple[str, str]]], None]


@dataclass(frozen=True)
class Placement:
    """Where a new stream keeps its files, and whether the server manages them (purges them with
    the stream). ``check`` runs in the transaction that inserts the stream, against every live
    stream, so that no two creations can both pass it with overlapping locations."""

    location: str
    managed: bool
    check: CheckLocation


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
    def count_tables(self) -> int:
        """How many tables all scopes hold."""

    @abstractmethod
    def recent_commits(self, limit: int) -> list[tuple[str, str, Commit]]:
        """The newest ``limit`` commits of every stream, newest first, as (scope, stream, commit)
        (their ``chunk_count`` is not counted: 0)."""

    @abstractmethod
    def list_scopes(self, token: str | None, limit: int) -> Page:
        """Scopes in creation order."""

    @abstractmethod
    def update_scope(self, name: str, change: Callable[[Scope], Scope]) -> Scope:
        """Replace a scope's comment and properties by what ``change`` makes of them, under a lock."""

    @abstractmethod
    def delete_scope(self, name: str, clear: ClearScope) -> list[Stream]:
        """Delete a scope with its streams and tables, after ``clear`` (returns the streams that were)."""

    @abstractmethod
    def create_stream(self, scope: str, name: str, config: StreamConfig, placement: Placement) -> Stream:
        """Create a stream where ``placement`` says, if its check passes; AlreadyExists if the name is taken."""

    @abstractmethod
    def get_stream(self, scope: str, name: str) -> Stream:
        """A stream; StreamNotFound if none."""

    @abstractmethod
    def list_streams(self, scope: str, token: str | None, limit: int) -> Page:
        """Streams of a scope in creation order."""

    @abstractmethod
    def update_stream(self, scope: str, name: str, change: Callable[[Stream], Stream]) -> Stream:
        """Store the seal and truncation that ``change`` makes of the locked stream."""

    @abstractmethod
    def delete_stream(self, scope: str, name: str, check: CheckDelete) -> Stream:
        """Delete a stream with its commits, unless ``check`` refuses; returns the stream that was."""

    @abstractmethod
    def create_table(
        self,
        scope: str,
        name: str,
        config: StreamConfig,
        placement: Placement,
        spec: TableSpec,
        register: RegisterGroup,
        view: ViewTable,
    ) -> Table:
        """Create stream (where ``placement`` says), group (by ``register``) and table in one transaction."""

    @abstractmethod
    def get_table(self, scope: str, name: str, view: ViewTable) -> Table:
        """A table; TableNotFound if none."""

    @abstractmethod
    def list_table_entries(self, scope: str, token: str | None, limit: int) -> Page:
        """Tables of a scope in creation order, as TableEntry (no group is read)."""

    @abstractmethod
    def list_tables(self, scope: str, token: str | None, limit: int, view: ViewTable) -> Page:
        """Tables of a scope in creation order."""

    @abstractmethod
    def alter_table(self, scope: str, name: str, update: UpdateTable, view: ViewTable) -> Table:
        """Change a locked table's metadata (and, through ``update``, its group); bumps its version."""

    @abstractmethod
    def drop_table(self, scope: str, name: str, unregister: RegisterGroup) -> Stream:
        """Delete the table, its stream and commits, and (by ``unregister``) its group."""

    @abstractmethod
    def commit(
        self, scope: str, stream: str, chunks: Sequence[Chunk], options: CommitOptions, check: CheckCommit
    ) -> Commit:
        """Add chunks atomically as the next commit, if ``check`` accepts the locked stream; a
        repeated (writer, sequence) returns the first commit and writes nothing. An overwrite marks
        every live chunk removed by it, other commits the live chunks ``options.removes`` names
        (CommitConflict if one is not live). The new chunks sort at the commit's number, a
        compaction's at its base cut; the commit's time is after its predecessor's."""

    @abstractmethod
    def commit_tables(self, parts: Sequence[TableCommit], checks: Sequence[CheckCommit]) -> list[Commit]:
        """Make each part (checked by the check of its index) a commit of its stream as :meth:`commit` would,
        all in one transaction and at one time, or none; the commits in the parts' order. When every part's
        (writer, sequence) is already there, the first commits are returned and nothing is written; when only
        some are, Conflict."""

    @abstractmethod
    def find_commit(self, scope: str, stream: str, writer_id: str, writer_sequence: int) -> WriterCommit | None:
        """The commit ``writer_id`` made with ``writer_sequence``, with the paths of the chunks it added; None
        when there is none."""

    @abstractmethod
    def commits(self, scope: str, stream: str, after: int, limit: int) -> list[Commit]:
        """Commits numbered above ``after``, oldest first."""

    @abstractmethod
    def snapshot(self, scope: str, stream: str, cut: int | None, as_of_time: int | None, after: int | None) -> Snapshot:
        """Chunks visible at a cut (latest by default), or added after ``after`` up to it."""

    @abstractmethod
    def changes(self, scope: str, stream: str, after: int, to: int | None) -> list[Change]:
        """The non-compaction commits in (``after``, ``to``] with the chunks each added and removed."""

    @abstractmethod
    def chunk_paths(self, scope: str, stream: str) -> set[str]:
        """Paths of every chunk some readable cut needs: not truncated, and not removed at or before
        the oldest cut that the retention or a registered reader keeps."""

    @abstractmethod
    def expire(self, scope: str, stream: str, older_than: int | None, decide: DecideExpiry) -> Stream:
        """Store the ``retained_from`` that ``decide`` makes of the locked stream."""

    @abstractmethod
    def set_reader(self, scope: str, stream: str, name: str, offset: int, check: Callable[[Stream], None]) -> Reader:
        """Register a reader at ``offset`` (or move it there), if ``check`` accepts the locked stream."""

    @abstractmethod
    def readers(self, scope: str, stream: str) -> list[Reader]:
        """The stream's registered readers, by name."""

    @abstractmethod
    def get_reader(self, scope: str, stream: str, name: str) -> Reader:
        """A registered reader; ReaderNotFound if none."""

    @abstractmethod
    def delete_reader(self, scope: str, stream: str, name: str) -> None:
        """Forget a registered reader; ReaderNotFound if none."""
