"""A table's CHECK constraints as the Python writers enforce them (docs/data-contracts.md).

Every constraint in force on a table (the ``checks`` of its ``getTable`` answer: those declared in
SQL, and the CEL condition rules of its schema version) is evaluated as CEL on each row a writer
accepts, with cel-python, the library the stock confluent-kafka client runs its CEL rules with: a
row passes when its condition is true, and is refused when it is false or fails to evaluate, as the
client decides. A refused write names the constraint and a sample of the failing rows, and nothing
of it is buffered. A constraint without a CEL form is not ignored: the writer refuses every write to
the table, naming it (Spark enforces it).

A rule whose ``onFailure`` is ``DLQ`` and that names a dead-letter table (its parameter ``dlq.table``)
does not refuse the write in :meth:`TableContract.screen`: its failing rows are set apart as
:class:`DeadLetter` for the writer to commit to that table with the rest of its batch
(``catalog_api.streams.dead_letters``). Writers that cannot (Spark's streaming writer, :meth:`TableContract.check`)
refuse them as for ``ERROR``.
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
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from registry.confluent.contracts import dlq_table

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
    cel: str
    program: Any
    #: the dead-letter table (scope, table) of a DLQ rule; None: a failing row refuses the write
    dlq_table: tuple[str, str] | None


@dataclass(frozen=True)
class DeadLetter:
    """A row a DLQ rule refused: the rule, why (as the stock client words it), and where the row goes."""

    row: Mapping[str, Any]
    rule: str
    error: str
    #: the dead-letter table: (scope, table)
    table: tuple[str, str]


@dataclass(frozen=True)
class Screened:
    """The verdict on rows: ``passed[i]`` tells whether row i passed every constraint; the others are
    ``dead`` (in row order)."""

    passed: list[bool]
    dead: list[DeadLetter]


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
            dlq = check.get("dlqTable") if check.get("onFailure") == "DLQ" else None
            self._checks.append(_Check(str(check["name"]), str(check.get("sql") or cel), str(cel), program,
                                       None if not dlq else dlq_table(str(dlq))))

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

    def screen_record(self, record: Any) -> Screened:
        """:meth:`screen` of one record; wire-format bytes are refused, as by :meth:`check_record`."""
        if not isinstance(record, Mapping):
            raise TypeError(f"{self.table} has CHECK constraints: write records (dicts) for the writer to check, "
                            f"not {type(record).__name__}")
        return self.screen([record])

    def checked(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` once :meth:`check` accepts its rows."""
        self.check(batch.to_pylist())
        return batch

    @property
    def dead_letter_tables(self) -> list[tuple[str, str]]:
        """The dead-letter tables (scope, table) of the contract's DLQ rules, in rule order."""
        return list(dict.fromkeys(c.dlq_table for c in self._checks if c.dlq_table is not None))

    def check(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Raise ConstraintViolation for the first constraint some of ``rows`` break, DLQ rules included
        (ValueError when the table has a constraint this writer cannot evaluate)."""
        self._screen(rows, dead_letters=False)

    def screen(self, rows: Sequence[Mapping[str, Any]]) -> Screened:
        """Which of ``rows`` pass; the rows a DLQ rule refuses are set apart as dead letters. The rules run in
        order, and a row refused by one is not checked by the next (the stock client stops at the first
        failing rule too). Raises ConstraintViolation when a rule that is not a DLQ rule refuses a row."""
        return self._screen(rows, dead_letters=True)

    def _screen(self, rows: Sequence[Mapping[str, Any]], *, dead_letters: bool) -> Screened:
        if self.unenforceable:
            name, sql = self.unenforceable[0]
            raise ValueError(f"{self.table}: CHECK constraint {name} ({sql}) has no CEL form the Python writers "
                             "can evaluate; write this table with Spark, or drop the constraint")
        passed = [True] * len(rows)
        dead: list[tuple[int, DeadLetter]] = []
        if not rows:
            return Screened(passed, [])
        activations = [{"message": _cel_value(dict(row))} for row in rows]
        for check in self._checks:
            failing = [(i, error) for i, activation in enumerate(activations)
                       if passed[i] and (error := _failure(check, activation)) is not None]
            if not failing:
                continue
            if check.dlq_table is None or not dead_letters:
                sample = [rows[i] for i, _ in failing[:SAMPLE]]
                raise ConstraintViolation(self.table, check.name, check.condition, sample, len(failing))
            for i, error in failing:
                passed[i] = False
                dead.append((i, DeadLetter(rows[i], check.name, error, check.dlq_table)))
        return Screened(passed, [letter for _, letter in sorted(dead, key=lambda d: d[0])])


def _failure(check: _Check, activation: dict[str, Any]) -> str | None:
    """Why the row fails ``check``, worded as the stock client's RuleConditionError; None: it passes."""
    try:
        result = check.program.evaluate(activation)
    except CELEvalError as error:  # a null in a comparison, say: the row is refused, as the client refuses it
        return f"Rule expr failed: {check.cel} ({error.args[0] if error.args else error})"
    if isinstance(result, celtypes.BoolType) and bool(result):
        return None
    return f"Rule expr failed: {check.cel}"


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
