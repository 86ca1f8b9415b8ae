"""What the data source is told: which table, at which point of its history, how to split the work.

The catalog shim hands every scan and write the table's coordinates (``uri``, ``scope``,
``stream``, ``location``, ``format``) and the schema version Spark planned with
(``streamcat.schema.*``); a user of ``spark.read.format("streamcat")`` gives ``uri``, ``scope``
and ``table`` (or ``stream``) and the rest is looked up. Spark lower-cases option keys.
Credentials travel the same way (``token``, or ``user`` and ``password``, and ``ca-bundle``), so that
every request of the source, on the driver and on the executors, presents them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from registry.credentials import Credentials
from registry.ids import SchemaId, TypeName, Version
from registry.model import VersionInfo

if TYPE_CHECKING:
    from catalog_api.client import CatalogClient
    from registry.client import RegistryClient

#: Rows of one write task that go into one chunk file before the next one is started.
DEFAULT_ROWS_PER_CHUNK = 1_000_000
#: Rows a read task aims for when it groups small chunks into one partition.
DEFAULT_ROWS_PER_PARTITION = 1_000_000


class OptionKeys:
    """The option keys the catalog shim and the data source exchange (Spark lower-cases them), each spelled
    once per language: ``spark_plugin/java/streamcat/spark/OptionKeys.java`` holds the same names and values
    (tests/architecture/test_option_keys.py checks it)."""

    #: where the table is: the server, its scope and stream (``table`` for users of the source by name)
    URI = "uri"
    SCOPE = "scope"
    STREAM = "stream"
    TABLE = "table"
    LOCATION = "location"
    FORMAT = "format"
    #: the schema version Spark planned with
    SCHEMA_TYPE = "streamcat.schema.type"
    SCHEMA_VERSION = "streamcat.schema.version"
    SCHEMA_ID = "streamcat.schema.id"
    #: the point of the table's history a scan reads: a commit number, or a time (ms since the epoch)
    CUT = "streamcat.cut"
    VERSION_AS_OF = "versionasof"
    AS_OF_TIME = "streamcat.asoftime"
    #: pushed filters (JSON) and the streaming query a scan or write belongs to
    FILTERS = "streamcat.filters"
    QUERY_ID = "streamcat.queryid"
    #: streaming reads: where to start and how much per trigger
    STARTING_COMMIT = "startingcommit"
    MAX_COMMITS_PER_TRIGGER = "maxcommitspertrigger"
    MAX_ROWS_PER_TRIGGER = "maxrowspertrigger"
    #: how work is split: rows per written chunk, rows per read partition
    ROWS_PER_CHUNK = "rowsperchunk"
    ROWS_PER_PARTITION = "rowsperpartition"
    #: a row-level write (DELETE/UPDATE/MERGE) and the cut its scan read
    ROW_LEVEL = "streamcat.rowlevel"
    READ_CUT = "streamcat.readcut"
    #: a compaction written by Spark: the base cut whose merged rows it holds
    COMPACT_BASE = "streamcat.compact.base"
    #: a batch write's commit: its properties (this prefix, then the property) and the commit it expects last
    COMMIT_PROPERTY = "streamcat.commit.property."
    EXPECTED_LAST_COMMIT = "streamcat.expectedlastcommit"
    #: a batch write that replaces live chunks (a JSON list of their paths): one row-level commit removes them
    REPLACES = "streamcat.replaces"
    #: a change-feed scan: the range (``from``, ``to`` and whether each end is included) under this prefix
    CHANGES = "streamcat.changes."
    CHANGES_FROM = "streamcat.changes.from"
    CHANGES_FROM_INCLUSIVE = "streamcat.changes.frominclusive"
    CHANGES_TO = "streamcat.changes.to"
    CHANGES_TO_INCLUSIVE = "streamcat.changes.toinclusive"
    #: the shim's own switches (table options the catalog sets): the native Parquet scan and write
    NATIVE_SCAN = "streamcat.nativescan"
    NATIVE_WRITE = "streamcat.nativewrite"


#: Options with this prefix become properties of a batch write's commit (the rest of the key).
COMMIT_PROPERTY = OptionKeys.COMMIT_PROPERTY
#: The statements a row-level write (``streamcat.rowlevel``) can come from.
ROW_LEVEL_OPERATIONS = ("delete", "update", "merge")


class OptionError(ValueError):
    """An option is missing or has a value the source cannot use."""


def _int(options: Mapping[str, str], key: str, default: int | None = None, minimum: int = 0) -> int | None:
    raw = options.get(key)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise OptionError(f"option {key} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise OptionError(f"option {key} must be at least {minimum}, not {value}")
    return value


def _paths(options: Mapping[str, str], key: str) -> tuple[str, ...] | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        paths = json.loads(raw)
    except ValueError:
        paths = None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise OptionError(f"option {key} must be a JSON list of chunk paths, not {raw!r}")
    return tuple(paths)


@dataclass(frozen=True)
class SourceOptions:
    """The parsed options of one scan or write."""

    uri: str
    scope: str
    stream: str
    location: str | None = None
    format: str | None = None
    schema_version: VersionInfo | None = None
    cut: int | None = None
    as_of_time: int | None = None
    filters: list[dict[str, Any]] = field(default_factory=list)
    query_id: str | None = None
    max_commits_per_trigger: int | None = None
    max_rows_per_trigger: int | None = None
    starting_commit: str = "earliest"
    rows_per_chunk: int = DEFAULT_ROWS_PER_CHUNK
    rows_per_partition: int = DEFAULT_ROWS_PER_PARTITION
    #: a row-level write (DELETE/UPDATE/MERGE): which statement, and the cut its scan read
    row_level: str | None = None
    read_cut: int | None = None
    #: a compaction written by Spark: the base cut whose merged rows the write holds
    compact_base: int | None = None
    #: a batch write's commit: properties to record (options ``streamcat.commit.property.<key>``) and
    #: the newest commit the stream must still be at (``streamcat.expectedlastcommit``): how a
    #: materialized table's refresh records its source cuts and is fenced against a later refresher
    commit_properties: dict[str, str] = field(default_factory=dict)
    expected_last_commit: int | None = None
    #: the live chunks a batch write replaces (a materialized table's partition refresh): its commit is a
    #: row-level commit, read at ``expected_last_commit``, removing them
    replaces: tuple[str, ...] | None = None
    #: a change-feed scan (reader.py parses them): the raw ``streamcat.changes.*`` options
    changes: dict[str, str] = field(default_factory=dict)
    #: what the clients present to the server (the catalog passes its own: ``token`` or ``user`` and
    #: ``password``, ``ca-bundle``, ``client-cert``, ``client-key``); not shown by repr
    credentials: Credentials = field(default_factory=Credentials, repr=False)

    @property
    def table_location(self) -> str:
        """The location of the table's chunk files (known once the options are resolved)."""
        if self.location is None:
            raise OptionError(f"no location is known for {self.scope}.{self.stream}: the options were not resolved")
        return self.location

    @property
    def table_version(self) -> VersionInfo:
        """The table's schema version (known once the options are resolved)."""
        if self.schema_version is None:
            raise OptionError(
                f"no schema version is known for {self.scope}.{self.stream}: the options were not resolved"
            )
        return self.schema_version

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """From Spark's (lower-cased) options."""
        opts = {str(k).lower(): str(v) for k, v in options.items()}
        missing = [k for k in (OptionKeys.URI, OptionKeys.SCOPE) if not opts.get(k)]
        stream = opts.get(OptionKeys.STREAM) or opts.get(OptionKeys.TABLE)
        if not stream:
            missing.append(OptionKeys.TABLE)
        if missing:
            raise OptionError(f"the streamcat data source needs the option(s) {', '.join(missing)}")
        version = None
        if opts.get(OptionKeys.SCHEMA_VERSION) and opts.get(OptionKeys.SCHEMA_ID):
            version = VersionInfo(TypeName(opts.get(OptionKeys.SCHEMA_TYPE, "")),
                                  Version(int(opts[OptionKeys.SCHEMA_VERSION])),
                                  SchemaId(int(opts[OptionKeys.SCHEMA_ID])))
        cut = _int(opts, OptionKeys.CUT)
        if cut is None:
            cut = _int(opts, OptionKeys.VERSION_AS_OF)
        try:
            filters = json.loads(opts.get(OptionKeys.FILTERS) or "[]")
        except ValueError:
            raise OptionError(f"option {OptionKeys.FILTERS} is not JSON") from None
        try:
            credentials = Credentials.from_options(opts)
        except ValueError as e:
            raise OptionError(str(e)) from None
        row_level = (opts.get(OptionKeys.ROW_LEVEL) or "").strip().lower() or None
        if row_level is not None and row_level not in ROW_LEVEL_OPERATIONS:
            raise OptionError(f"option {OptionKeys.ROW_LEVEL} must be one of {', '.join(ROW_LEVEL_OPERATIONS)}, "
                              f"not {row_level!r}")
        starting = (opts.get(OptionKeys.STARTING_COMMIT) or "earliest").strip().lower()
        if starting not in ("earliest", "latest"):
            _int(opts, OptionKeys.STARTING_COMMIT, minimum=1)
        return cls(
            uri=opts[OptionKeys.URI],
            scope=opts[OptionKeys.SCOPE],
            stream=str(stream),
            location=opts.get(OptionKeys.LOCATION) or None,
            format=opts.get(OptionKeys.FORMAT) or None,
            schema_version=version,
            cut=cut,
            as_of_time=_int(opts, OptionKeys.AS_OF_TIME),
            filters=list(filters),
            query_id=opts.get(OptionKeys.QUERY_ID) or None,
            max_commits_per_trigger=_int(opts, OptionKeys.MAX_COMMITS_PER_TRIGGER, minimum=1),
            max_rows_per_trigger=_int(opts, OptionKeys.MAX_ROWS_PER_TRIGGER, minimum=1),
            starting_commit=starting,
            rows_per_chunk=(_int(opts, OptionKeys.ROWS_PER_CHUNK, DEFAULT_ROWS_PER_CHUNK, minimum=1)
                            or DEFAULT_ROWS_PER_CHUNK),
            rows_per_partition=(_int(opts, OptionKeys.ROWS_PER_PARTITION, DEFAULT_ROWS_PER_PARTITION, minimum=1)
                                or DEFAULT_ROWS_PER_PARTITION),
            row_level=row_level,
            read_cut=_int(opts, OptionKeys.READ_CUT),
            compact_base=_int(opts, OptionKeys.COMPACT_BASE),
            commit_properties={k[len(COMMIT_PROPERTY):]: v for k, v in opts.items() if k.startswith(COMMIT_PROPERTY)},
            expected_last_commit=_int(opts, OptionKeys.EXPECTED_LAST_COMMIT),
            replaces=_paths(opts, OptionKeys.REPLACES),
            changes={k: v for k, v in opts.items() if k.startswith(OptionKeys.CHANGES)},
            credentials=credentials,
        )

    def catalog_client(self) -> CatalogClient:
        """A catalog client of the server, presenting the credentials."""
        from catalog_api.client import CatalogClient

        return CatalogClient(self.uri, session=self.credentials.session())

    def registry_client(self) -> RegistryClient:
        """A registry client in the table's namespace (its scope), presenting the credentials."""
        from registry.client import RegistryClient

        return RegistryClient(self.uri, self.scope, session=self.credentials.session())

    def resolved(self) -> SourceOptions:
        """These options with location, format and schema version filled in from the catalog if absent."""
        if self.location and self.format and self.schema_version:
            return self
        from registry.api.models import VersionInfo as VersionInfoModel

        table = self.catalog_client().get_table(self.scope, self.stream)
        return replace(
            self,
            location=self.location or table["stream"]["location"],
            format=self.format or table["format"],
            schema_version=self.schema_version or VersionInfoModel.model_validate(table["schemaVersion"]).to_domain(),
        )
