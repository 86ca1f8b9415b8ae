"""What an Iceberg reader is shown of a Streamcat table: data files, snapshots and the table's state.

Everything here is derived from the catalog's commits and chunks; nothing is stored. A snapshot is a
Streamcat cut whose live chunks a plain union of Parquet files reads exactly as Streamcat does
(:mod:`catalog_api.iceberg.snapshots` decides which cuts are).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from catalog_api.model import Scope

#: Table properties that tell an Iceberg reader which Streamcat commit it sees, and how far behind
#: the newest commit that is.
COMMIT_PROPERTY = "streamcat.commit"
BEHIND_PROPERTY = "streamcat.commits-behind"
#: The namespace property that is a scope's comment.
COMMENT = "comment"
#: Iceberg snapshot operations.
APPEND_OP, OVERWRITE_OP, REPLACE_OP, DELETE_OP = "append", "overwrite", "replace", "delete"
#: What a manifest (and each file it lists) holds: data files, or position delete files.
DATA_CONTENT, POSITION_DELETES_CONTENT = 0, 1


@dataclass(frozen=True)
class DataFile:
    """One Parquet file of a snapshot, its path relative to the location: a data file (a columnar chunk), or a
    position delete file (a position-deletes chunk), listed once per partition whose files it may name."""

    path: str
    #: the commit that added it (its data sequence number and the snapshot that added it)
    commit: int
    record_count: int
    size: int
    spec_id: int
    #: the partition values in chunk statistics' units (days, microseconds, ...), in spec order
    partition: tuple[Any, ...] = ()
    content: int = DATA_CONTENT
    #: a position delete file's lowest and highest ``file_path`` (absolute URIs)
    path_bounds: tuple[str, str] | None = None


@dataclass(frozen=True)
class ManifestKey:
    """One manifest: the files of one ``content`` (data or position deletes) and partition spec added by the
    commits ``first`` to ``last`` (an aligned block of commit numbers) that are live after the block's newest
    removal up to the snapshot, ``removal`` (0: none). The same key always holds the same files, so snapshots
    share manifests."""

    spec_id: int
    first: int
    last: int
    removal: int
    content: int = DATA_CONTENT

    @property
    def name(self) -> str:
        """The manifest's file name (without the table's prefix): ``m-`` of data files, ``d-`` of deletes."""
        kind = "m" if self.content == DATA_CONTENT else "d"
        return f"{kind}-{self.spec_id}-{self.first}-{self.last}-{self.removal}.avro"


@dataclass(frozen=True)
class IcebergSnapshot:
    """An expressible cut: its manifests, what the commit that made it was, and when."""

    cut: int
    timestamp_ms: int
    operation: str
    parent: int | None
    manifests: tuple[ManifestKey, ...]
    summary: dict[str, str] = field(default_factory=dict)
    #: the schema (version) the rows of its commit, or of the newest commit before it that wrote rows, were
    #: written with (None: unknown, the current schema is named)
    schema_id: int | None = None


@dataclass(frozen=True)
class TableHistory:
    """What a table's commits come to for Iceberg: its expressible snapshots (oldest first), its
    newest commit, and the last-updated time."""

    snapshots: tuple[IcebergSnapshot, ...]
    last_commit: int
    last_updated_ms: int
    #: the files each manifest holds
    files: Callable[[ManifestKey], list[DataFile]]

    @property
    def current(self) -> IcebergSnapshot | None:
        """The newest expressible snapshot (None: the table has none yet)."""
        return self.snapshots[-1] if self.snapshots else None

    @property
    def behind(self) -> int:
        """How many commits after the shown one Iceberg readers cannot see yet."""
        shown = self.current.cut if self.current is not None else 0
        return self.last_commit - shown


@dataclass(frozen=True, eq=False)
class LoadedTable:
    """A table as ``loadTable`` answers: where its metadata file is, and the metadata. Compared by
    identity: a service hands out the same instance while the table does not change."""

    metadata_location: str
    metadata: dict[str, Any]


def namespace_properties(scope: Scope) -> dict[str, str]:
    """A scope's properties as an Iceberg namespace's (its comment under ``comment``)."""
    found = dict(scope.properties)
    if scope.comment:
        found[COMMENT] = scope.comment
    return found


@dataclass(frozen=True)
class Requirement:
    """One requirement of an Iceberg commit (``assert-current-schema-id``...), with its values by
    their Iceberg names (``current-schema-id``...)."""

    type: str
    values: dict[str, Any]


@dataclass(frozen=True)
class Update:
    """One update of an Iceberg commit (``add-schema``...), with its values by their Iceberg names."""

    action: str
    values: dict[str, Any]
