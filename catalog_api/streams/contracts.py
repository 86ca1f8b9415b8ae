"""A table's CHECK constraints as the Python writers enforce them (docs/data-contracts.md).

Every constraint in force on a table (the ``checks`` of its ``getTable`` answer: those declared in
SQL, and the CEL condition rules of its schema version) is evaluated as CEL on each row a writer
accepts, with cel-python, the library the stock confluent-kafka client runs its CEL rules with: a
row passes when its condition is true, and is refused when it is false or fails to evaluate, as the
client decides. A refused write names the constraint and a sample of the failing rows, and nothing
of it is buffered. A constraint without a CEL form is not ignored: the writer refuses every write to
the table, naming it (Spark enforces it).
"""

from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import celpy
import pyarrow as pa
import pyarrow.compute as pc
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from catalog_api.streams.row_kinds import UPSERT

#: How many failing rows a refusal shows.
SAMPLE = 3


class ConstraintViolation(ValueError):
    """Rows refused by a CHECK constraint (or CEL rule) of the table: ``rule`` names it, ``rows`` holds a
    sample of the failing rows."""

    def __init__(self, table: str, rule: str, condition: str, rows: Sequence[Mapping[str, Any]], failing: int):
        self.rule = rule
        self.rows = list(rows)
        shown = "; ".join(json.dumps(dict(r), default=str, sort_keys=True) for r in rows)
        more = f" (and {failing - len(rows)} more)" if failing > len(rows) else ""
        super().__init__(f"{table}: CHECK constraint {rule} ({condition}) refuses {failing} row(s): {shown}{more}")


@dataclass(frozen=True)
class _Check:
    name: str
    condition: str
    program: Any


class TableContract:
    """The CHECK constraints of one table, compiled once per writer."""

    def __init__(self, table: str, checks: Iterable[Mapping[str, Any]]) -> None:
        self.table = table
        environment = celpy.Environment()
        self._checks: list[_Check] = []
        #: constraints that have no CEL form (name, SQL): every write is refused while the table has any
        self.unenforceable: list[tuple[str, str]] = []
        for check in checks:
            cel = check.get("cel")
            if not cel:
                self.unenforceable.append((str(check["name"]), str(check.get("sql"))))
                continue
            program = environment.program(environment.compile(str(cel)))
            self._checks.append(_Check(str(check["name"]), str(check.get("sql") or cel), program))

    @classmethod
    def of(cls, table: Mapping[str, Any] | None) -> TableContract | None:
        """The contract of a ``getTable`` answer (None: no table, or no constraint)."""
        if table is None or not table.get("checks"):
            return None
        return cls(f"{table['scopeName']}.{table['tableName']}", table["checks"])

    def check_record(self, record: Any) -> None:
        """:meth:`check` of one record; wire-format bytes are refused (the writer evaluates records)."""
        if not isinstance(record, Mapping):
            raise TypeError(f"{self.table} has CHECK constraints: write records (dicts) for the writer to check, "
                            f"not {type(record).__name__}")
        self.check([record])

    def checked(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` once :meth:`check` accepts its rows."""
        self.check(batch.to_pylist())
        return batch

    def check(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Raise ConstraintViolation for the first constraint some of ``rows`` break (ValueError when the
        table has a constraint this writer cannot evaluate)."""
        if self.unenforceable:
            name, sql = self.unenforceable[0]
            raise ValueError(f"{self.table}: CHECK constraint {name} ({sql}) has no CEL form the Python writers "
                             "can evaluate; write this table with Spark, or drop the constraint")
        if not rows:
            return
        activations = [{"message": _cel_value(dict(row))} for row in rows]
        for check in self._checks:
            failing = [row for row, activation in zip(rows, activations, strict=True)
                       if not _passes(check.program, activation)]
            if failing:
                raise ConstraintViolation(self.table, check.name, check.condition, failing[:SAMPLE], len(failing))


def _passes(program: Any, activation: dict[str, Any]) -> bool:
    try:
        result = program.evaluate(activation)
    except CELEvalError:  # a null in a comparison, say: the row is refused, as the client refuses it
        return False
    return isinstance(result, celtypes.BoolType) and bool(result)


def _cel_value(value: Any) -> Any:
    """A row value as CEL sees it (JSON-like values as the client converts them; bytes, times and decimals too)."""
    if isinstance(value, dict):
        return celtypes.MapType({celtypes.StringType(str(k)): _cel_value(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return celtypes.ListType([_cel_value(v) for v in value])
    if isinstance(value, bytes):
        return celtypes.BytesType(value)
    if isinstance(value, datetime.datetime):
        return celtypes.TimestampType(value if value.tzinfo else value.replace(tzinfo=datetime.UTC))
    if isinstance(value, datetime.date):
        return celtypes.StringType(value.isoformat())
    if isinstance(value, decimal.Decimal):
        return celtypes.DoubleType(float(value))
    if isinstance(value, bool | int | float | str) or value is None:
        return json_to_cel(value)
    return celtypes.StringType(str(value))


def changed_rows(table: pa.Table, kinds: pa.Array | None) -> list[dict[str, Any]]:
    """The rows of change rows ``table`` that a commit would write as they are: its upserts (deletes and
    retractions carry keys and values of rows already there)."""
    if kinds is not None:
        table = table.filter(pc.equal(kinds, pa.scalar(UPSERT, pa.int8())))
    return list(table.to_pylist())
