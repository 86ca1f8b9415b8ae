"""Dead-letter tables: where ``StreamWriter`` and ``streamcat ingest`` put the rows a DLQ rule refuses
(docs/data-contracts.md, "Dead-letter tables").

A CEL condition rule with ``onFailure`` ``DLQ`` and the parameter ``dlq.table`` (``scope.table``) does not
refuse a write: the rows it refuses are kept here, per dead-letter table, until the writer's next commit,
which writes them as one columnar chunk per table and commits them with the batch's other rows in ONE
commit of several tables (``POST /v1/commits``), so that a row is either in the table or in its
dead-letter table, never in both and never lost. A dead-letter table is created on first use with the
columns of :data:`DEAD_LETTER_SCHEMA`.
"""

from __future__ import annotations

import contextlib
import datetime
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pyarrow as pa

from catalog_api.client import CatalogClient
from catalog_api.model import Chunk
from catalog_api.streams.contracts import DeadLetter
from registry.client import RegistryClient
from registry.errors import AlreadyExists, NotFound
from registry.serde import Serializer


class TableWriter(Protocol):
    """What this module needs of the writer of a dead-letter table (``StreamWriter`` is one)."""

    location: str

    def write_table(self, table: pa.Table) -> None:
        """Write rows as chunk files, pending commit."""
        ...

    def hand_over(self) -> list[Chunk]:
        """The chunks written and not committed, which the caller commits (and the writer forgets)."""
        ...


def _column(name: str, type_: str) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": True, "metadata": {}}


#: The Spark schema of a dead-letter table: the refused row as JSON text, the rule that refused it, why,
#: who wrote it (the writer id, or the command's name) and when it was refused.
DEAD_LETTER_SCHEMA: dict[str, Any] = {"type": "struct", "fields": [
    _column("row", "string"), _column("rule", "string"), _column("error", "string"), _column("writer", "string"),
    _column("at", "timestamp")]}


def row_json(row: Any) -> str:
    """A refused row as JSON text (bytes as text when they are UTF-8, else escaped; times in ISO 8601)."""
    def default(value: Any) -> Any:
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value).decode("utf-8", "backslashreplace")
        if isinstance(value, datetime.datetime | datetime.date | datetime.time):
            return value.isoformat()
        return str(value)

    return json.dumps(dict(row), default=default, sort_keys=True, ensure_ascii=False)


class DeadLetters:
    """The dead letters one writer holds for its next commit, and the writers of their tables.

    ``open_writer`` makes the writer of a dead-letter table (the table found, or created when missing);
    ``writer`` is what the ``writer`` column records."""

    def __init__(self, catalog: CatalogClient, registry: RegistryClient, writer: str,
                 open_writer: Callable[[str, str, Serializer], TableWriter]) -> None:
        self.catalog = catalog
        self.registry = registry
        self.writer = writer
        self._open_writer = open_writer
        self._held: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._writers: dict[tuple[str, str], TableWriter] = {}

    def add(self, letters: Sequence[DeadLetter]) -> None:
        """Keep ``letters`` for the next commit, stamped now."""
        at = datetime.datetime.now(datetime.UTC)
        for letter in letters:
            self._held.setdefault(letter.table, []).append(
                {"row": row_json(letter.row), "rule": letter.rule, "error": letter.error, "writer": self.writer,
                 "at": at})

    @property
    def held(self) -> int:
        """Dead letters kept for the next commit."""
        return sum(len(rows) for rows in self._held.values())

    def write_chunks(self) -> list[tuple[str, str, list[Chunk], str]]:
        """Write the dead letters held as chunk files of their tables (created when missing) and forget them:
        (scope, table, chunks, location) per table, for the caller to commit."""
        out = []
        for (scope, table), rows in self._held.items():
            writer = self._writer_of(scope, table)
            writer.write_table(pa.Table.from_pylist(rows))
            out.append((scope, table, writer.hand_over(), writer.location))
        self._held = {}  # only now: a failure above keeps them for the next try
        return out

    def drop(self) -> None:
        """Forget the dead letters held (the batch they came from is aborted)."""
        self._held = {}

    def _writer_of(self, scope: str, table: str) -> TableWriter:
        found = self._writers.get((scope, table))
        if found is None:
            try:
                self.catalog.get_table(scope, table)
            except NotFound:
                with contextlib.suppress(AlreadyExists):  # another writer created it first
                    self.catalog.create_table(scope, table, DEAD_LETTER_SCHEMA,
                                              comment="dead letters (docs/data-contracts.md)")
            registry = RegistryClient(self.registry.url, scope, timeout=self.registry.timeout,
                                      session=self.registry.http)
            latest = registry.latest_schemas(table)
            if len(latest) != 1:
                raise ValueError(f"dead-letter table {scope}.{table}'s group has {len(latest)} latest schemas")
            found = self._writers[(scope, table)] = self._open_writer(
                scope, table, Serializer(registry, table, latest[0].schema, register=False))
        return found


__all__ = ["DEAD_LETTER_SCHEMA", "DeadLetters", "row_json"]
