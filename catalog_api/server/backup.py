"""Backup and restore of the whole database in a streaming, versioned JSON-lines format.

The file is::

    {"format": "streamcat-backup", "version": 1, "revision": ["0002"], "created": <ms>}
    {"table": "groups", "row": {...}}          one line per row, parents before children
    ...
    {"end": true, "rows": {"groups": 3, ...}}

Every column is kept as stored, ids included, so that schema ids, encoding ids and
commit numbers mean the same after a restore. Bytes are ``{"$b64": "..."}``. Rows are
read and written in batches, so memory stays flat however large the database is.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import IO, Any

from sqlalchemy import Connection, Engine, LargeBinary, Table, func, insert, select, text

import catalog_api.orm  # noqa: F401  (the catalog's tables are part of every backup)
import registry.confluent.orm
import registry.store.orm  # noqa: F401  (the registry's tables are part of the metadata)
from catalog_api.materialized import orm as materialized_orm  # noqa: F401  (and materialized_tables)
from catalog_api.server.migrate import current_revisions, current_revisions_of
from catalog_api.views import orm as views_orm  # noqa: F401  (and the views table)
from registry.db import Base, now_ms
from registry.errors import StreamcatError

FORMAT = "streamcat-backup"
VERSION = 1
BATCH = 1000


class BackupError(StreamcatError):
    """A backup cannot be taken or restored as asked."""

    status = 400
    code = "BackupError"


def _tables() -> list[Table]:
    # sorted_tables puts every table after the tables its foreign keys point to.
    return list(Base.metadata.sorted_tables)


def _encode(table: Table, row: Any) -> dict[str, Any]:
    return _encode_values(table, {c.name: row._mapping[c] for c in table.columns})


def _decode(table: Table, row: dict[str, Any]) -> dict[str, Any]:
    unknown = set(row) - set(table.columns.keys())
    if unknown:
        raise BackupError(f"backup row of {table.name} has columns this version does not know: {sorted(unknown)}")
    out = dict(row)
    for column in table.columns:
        value = out.get(column.name)
        if isinstance(value, dict) and isinstance(column.type, LargeBinary) and "$b64" in value:
            out[column.name] = base64.b64decode(value["$b64"])
    return out


def backup(engine: Engine, out: IO[str]) -> dict[str, int]:
    """Write every row of every table to ``out``; returns the row counts."""
    counts: dict[str, int] = {}
    with engine.connect() as conn:
        # One repeatable snapshot on PostgreSQL, so rows of different tables agree.
        if conn.dialect.name == "postgresql":
            conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))
        header = {
            "format": FORMAT,
            "version": VERSION,
            "revision": sorted(current_revisions_of(conn)),
            "created": now_ms(),
        }
        out.write(json.dumps(header) + "\n")
        for table in _tables():
            counts[table.name] = 0
            primary = list(table.primary_key.columns)
            rows = conn.execution_options(yield_per=BATCH).execute(select(table).order_by(*primary))
            for row in rows:
                out.write(json.dumps({"table": table.name, "row": _encode(table, row)}, separators=(",", ":")))
                out.write("\n")
                counts[table.name] += 1
        out.write(json.dumps({"end": True, "rows": counts}) + "\n")
    return counts


def _lines(source: IO[str]) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as e:
            raise BackupError(f"backup line {number} is not JSON: {e}") from None


def restore(engine: Engine, source: IO[str], merge: bool = False) -> dict[str, int]:
    """Load a backup. The database must be migrated to the backup's revision and empty,
    unless ``merge``: then rows already present (same id, same content) are skipped, which
    makes restoring the same backup twice change nothing. Returns rows inserted per table."""
    lines = _lines(source)
    header = next(lines, None)
    if not header or header.get("format") != FORMAT:
        raise BackupError("not a streamcat backup (no header line)")
    if header.get("version") != VERSION:
        raise BackupError(f"backup format version {header.get('version')} is not supported (this reads {VERSION})")
    revision = set(current_revisions(engine))
    if set(header.get("revision", [])) != revision:
        raise BackupError(
            f"the backup was taken at revision {header.get('revision')} but the database is at {sorted(revision)}; "
            "migrate the database to the backup's revision first"
        )
    tables = {t.name: t for t in _tables()}
    inserted = dict.fromkeys(tables, 0)
    with engine.begin() as conn:
        if not merge:
            for table in tables.values():
                if conn.execute(select(func.count()).select_from(table)).scalar_one():
                    raise BackupError(f"the database is not empty (table {table.name} has rows); use --merge")
        pending: list[dict[str, Any]] = []
        current: Table | None = None
        ended = False
        for entry in lines:
            if entry.get("end"):
                ended = True
                break
            found = tables.get(entry.get("table", ""))
            if found is None:
                raise BackupError(f"backup names an unknown table {entry.get('table')!r}")
            table = found
            if current is not None and table is not current:
                inserted[current.name] += _flush(conn, current, pending, merge)
                pending = []
            current = table
            pending.append(_decode(table, entry["row"]))
            if len(pending) >= BATCH:
                inserted[table.name] += _flush(conn, table, pending, merge)
                pending = []
        if current is not None and pending:
            inserted[current.name] += _flush(conn, current, pending, merge)
        if not ended:
            raise BackupError("the backup is truncated (no end line); nothing was restored")
        _advance_sequences(conn)
    return inserted


def _flush(conn: Connection, table: Table, rows: list[dict[str, Any]], merge: bool) -> int:
    if merge:
        (key,) = table.primary_key.columns  # every table has a one-column key
        stored = {
            row._mapping[key]: _encode(table, row)
            for row in conn.execute(select(table).where(key.in_([r[key.name] for r in rows])))
        }
        fresh = []
        for row in rows:
            found = stored.get(row[key.name])
            if found is None:
                fresh.append(row)
            elif found != _encode_values(table, row):
                raise BackupError(f"{table.name} row {row[key.name]} differs from the backup's; refusing to merge")
        rows = fresh
    if rows:
        conn.execute(insert(table), rows)
    return len(rows)


def _encode_values(table: Table, row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for column in table.columns:
        value = row.get(column.name)
        if value is not None and isinstance(column.type, LargeBinary):
            value = {"$b64": base64.b64encode(value).decode("ascii")}
        out[column.name] = value
    return out


def _advance_sequences(conn: Connection) -> None:
    # Explicit ids do not move PostgreSQL sequences; new ids must start after the restored ones.
    if conn.dialect.name != "postgresql":
        return
    for table in _tables():
        primary = list(table.primary_key.columns)
        if table.name == "tables":  # keyed by its stream's id, no sequence of its own
            continue
        column = primary[0].name
        conn.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence('{table.name}', '{column}'), "
                f"COALESCE((SELECT MAX({column}) FROM {table.name}), 0) + 1, false)"
            )
        )
