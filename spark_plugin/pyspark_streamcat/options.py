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
#: Options with this prefix become properties of a batch write's commit (the rest of the key).
COMMIT_PROPERTY = "streamcat.commit.property."
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
    #: a change-feed scan (B1, reading.py parses them): the raw ``streamcat.changes.*`` options
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
        missing = [k for k in ("uri", "scope") if not opts.get(k)]
        stream = opts.get("stream") or opts.get("table")
        if not stream:
            missing.append("table")
        if missing:
            raise OptionError(f"the streamcat data source needs the option(s) {', '.join(missing)}")
        version = None
        if opts.get("streamcat.schema.version") and opts.get("streamcat.schema.id"):
            version = VersionInfo(TypeName(opts.get("streamcat.schema.type", "")),
                                  Version(int(opts["streamcat.schema.version"])),
                                  SchemaId(int(opts["streamcat.schema.id"])))
        cut = _int(opts, "streamcat.cut")
        if cut is None:
            cut = _int(opts, "versionasof")
        try:
            filters = json.loads(opts.get("streamcat.filters") or "[]")
        except ValueError:
            raise OptionError("option streamcat.filters is not JSON") from None
        try:
            credentials = Credentials.from_options(opts)
        except ValueError as e:
            raise OptionError(str(e)) from None
        row_level = (opts.get("streamcat.rowlevel") or "").strip().lower() or None
        if row_level is not None and row_level not in ROW_LEVEL_OPERATIONS:
            raise OptionError(f"option streamcat.rowlevel must be one of {', '.join(ROW_LEVEL_OPERATIONS)}, "
                              f"not {row_level!r}")
        starting = (opts.get("startingcommit") or "earliest").strip().lower()
        if starting not in ("earliest", "latest"):
            _int(opts, "startingcommit", minimum=1)
        return cls(
            uri=opts["uri"],
            scope=opts["scope"],
            stream=str(stream),
            location=opts.get("location") or None,
            format=opts.get("format") or None,
            schema_version=version,
            cut=cut,
            as_of_time=_int(opts, "streamcat.asoftime"),
            filters=list(filters),
            query_id=opts.get("streamcat.queryid") or None,
            max_commits_per_trigger=_int(opts, "maxcommitspertrigger", minimum=1),
            max_rows_per_trigger=_int(opts, "maxrowspertrigger", minimum=1),
            starting_commit=starting,
            rows_per_chunk=_int(opts, "rowsperchunk", DEFAULT_ROWS_PER_CHUNK, minimum=1) or DEFAULT_ROWS_PER_CHUNK,
            rows_per_partition=(_int(opts, "rowsperpartition", DEFAULT_ROWS_PER_PARTITION, minimum=1)
                                or DEFAULT_ROWS_PER_PARTITION),
            row_level=row_level,
            read_cut=_int(opts, "streamcat.readcut"),
            compact_base=_int(opts, "streamcat.compact.base"),
            commit_properties={k[len(COMMIT_PROPERTY):]: v for k, v in opts.items() if k.startswith(COMMIT_PROPERTY)},
            expected_last_commit=_int(opts, "streamcat.expectedlastcommit"),
            changes={k: v for k, v in opts.items() if k.startswith("streamcat.changes.")},
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
