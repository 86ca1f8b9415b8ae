"""The translation of CHECK constraints to CEL rules and back (catalog_api/constraints.py), on a generated
corpus: each expression's verdict on generated rows (with nulls) is the same in both engines, SQLite's
evaluation of the SQL (the SQL oracle: a CHECK refuses a row when its condition is false) and cel-python's
of the CEL (the library the stock confluent-kafka client runs: a rule refuses a row when its condition is
false or fails to evaluate)."""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import celpy
import pytest
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from catalog_api.constraints import Untranslatable, cel_to_sql, sql_to_cel
from catalog_api.streams.contracts import ConstraintViolation, TableContract

COLUMNS = ("a", "b", "s", "f")
ALPHABET = "abc"


def _row(rng: random.Random) -> dict[str, Any]:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.2 else value

    return {
        "a": maybe(rng.randint(-5, 5)),
        "b": maybe(rng.randint(-5, 5)),
        "s": maybe("".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 4)))),
        "f": maybe(rng.random() < 0.5),
    }


class _SqlGenerator:
    """Random CHECK conditions in the translatable subset of Spark SQL."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def number(self, depth: int) -> str:
        r = self.rng.random()
        if depth <= 0 or r < 0.35:
            return self.rng.choice(["a", "b", str(self.rng.randint(-3, 6)), "length(s)"])
        if r < 0.55:
            return f"({self.number(depth - 1)} {self.rng.choice('+-*')} {self.number(depth - 1)})"
        if r < 0.65:
            return f"({self.number(depth - 1)} % {self.rng.randint(1, 4)})"
        if r < 0.72:
            return f"-({self.number(depth - 1)})"
        return self.rng.choice(["a", "b", "length(s)"])

    def condition(self, depth: int) -> str:
        r = self.rng.random()
        if depth > 0 and r < 0.3:
            joiner = self.rng.choice(["AND", "OR"])
            return f"({self.condition(depth - 1)} {joiner} {self.condition(depth - 1)})"
        if depth > 0 and r < 0.4:
            return f"NOT ({self.condition(depth - 1)})"
        kind = self.rng.randrange(8)
        if kind <= 2:
            op = self.rng.choice(["=", "<>", "!=", "<", "<=", ">", ">="])
            return f"{self.number(depth - 1)} {op} {self.number(depth - 1)}"
        if kind == 3:
            values = ", ".join(str(self.rng.randint(-3, 3)) for _ in range(self.rng.randint(1, 4)))
            return f"{self.rng.choice(['a', 'b'])} {self.rng.choice(['IN', 'NOT IN'])} ({values})"
        if kind == 4:
            return f"{self.rng.choice(COLUMNS)} IS {self.rng.choice(['', 'NOT '])}NULL"
        if kind == 5:
            pattern = self.rng.choice(["a%", "%b", "_c%", "ab", "%", "a_", "%a%b"])
            return f"s {self.rng.choice(['LIKE', 'NOT LIKE'])} '{pattern}'"
        if kind == 6:
            pattern = self.rng.choice(["a", "^b", "c$", "a.c", "^[ab]+$", "b{2}", "^$"])
            return f"s {self.rng.choice(['RLIKE', 'NOT RLIKE'])} '{pattern}'"
        if self.rng.random() < 0.5:
            return self.rng.choice(["f", "NOT f", "s = 'ab'", "s <> 'c'"])
        value = ", ".join(f"'{self.rng.choice(['a', 'ab', 'b', ''])}'" for _ in range(self.rng.randint(1, 3)))
        return f"s IN ({value})"


class _CelGenerator:
    """Random CEL conditions as people write them (no null guards)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def number(self, depth: int) -> str:
        r = self.rng.random()
        if depth <= 0 or r < 0.4:
            return self.rng.choice(["message.a", "message.b", str(self.rng.randint(-3, 6)), "size(message.s)"])
        if r < 0.7:
            return f"({self.number(depth - 1)} {self.rng.choice('+-*')} {self.number(depth - 1)})"
        return f"({self.number(depth - 1)} % {self.rng.randint(1, 4)})"

    def condition(self, depth: int) -> str:
        r = self.rng.random()
        if depth > 0 and r < 0.3:
            joiner = self.rng.choice(["&&", "||"])
            return f"({self.condition(depth - 1)} {joiner} {self.condition(depth - 1)})"
        if depth > 0 and r < 0.4:
            return f"!({self.condition(depth - 1)})"
        kind = self.rng.randrange(5)
        if kind <= 1:
            op = self.rng.choice(["==", "!=", "<", "<=", ">", ">="])
            return f"{self.number(depth - 1)} {op} {self.number(depth - 1)}"
        if kind == 2:
            values = ", ".join(str(self.rng.randint(-3, 3)) for _ in range(self.rng.randint(1, 3)))
            return f"message.{self.rng.choice(['a', 'b'])} in [{values}]"
        if kind == 3:
            return f"type(message.{self.rng.choice(COLUMNS)}) {self.rng.choice(['==', '!='])} null_type"
        pattern = self.rng.choice(["a", "^b", "c$", "^[ab]+$"])
        return self.rng.choice([f'message.s.matches("{pattern}")', "message.f", "message.s == 'ab'"])


@pytest.fixture(scope="module")
def sqlite() -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:")
    connection.execute("PRAGMA case_sensitive_like = ON")  # as Spark's LIKE
    connection.create_function(
        "regexp", 2, lambda pattern, value: None if value is None else int(re.search(pattern, value) is not None),
        deterministic=True,
    )
    yield connection
    connection.close()


def _sql_refuses(connection: sqlite3.Connection, sql: str, row: dict[str, Any]) -> bool:
    """Whether a CHECK of ``sql`` refuses ``row``: its condition is false (not true, not unknown)."""
    query = re.sub(r"\bRLIKE\b", "REGEXP", sql)
    found = connection.execute(
        f"SELECT CASE WHEN ({query}) THEN 1 WHEN NOT ({query}) THEN 0 END FROM (SELECT ? AS a, ? AS b, ? AS s, ? AS f)",
        (row["a"], row["b"], row["s"], row["f"]),
    ).fetchone()[0]
    return found == 0


def _cel_refuses(program: Any, row: dict[str, Any]) -> bool:
    """Whether a CEL condition rule refuses ``row``: false, or an evaluation error, as the client decides."""
    try:
        result = program.evaluate({"message": json_to_cel(row)})
    except CELEvalError:
        return True
    return not (isinstance(result, celpy.celtypes.BoolType) and bool(result))


def _corpus(make: Callable[[random.Random], str], count: int, seed: int) -> list[str]:
    """``count`` different generated expressions."""
    rng = random.Random(seed)
    found: dict[str, None] = {}
    while len(found) < count:
        found[make(rng)] = None
    return list(found)


def test_sql_checks_and_their_cel_rules_refuse_the_same_rows(sqlite: sqlite3.Connection) -> None:
    rng = random.Random(27)
    rows = [_row(rng) for _ in range(8)]
    environment = celpy.Environment()
    expressions = _corpus(lambda r: _SqlGenerator(r).condition(3), 550, 2700)
    refused_somewhere = 0
    for sql in expressions:
        cel = sql_to_cel(sql)
        program = environment.program(environment.compile(cel))
        verdicts = [(_sql_refuses(sqlite, sql, row), _cel_refuses(program, row)) for row in rows]
        wrong = [(row, v) for row, v in zip(rows, verdicts, strict=True) if v[0] != v[1]]
        assert not wrong, f"{sql!r} as {cel!r}: (sql, cel) verdicts differ on {wrong}"
        refused_somewhere += any(v[0] for v in verdicts)
        # and back: the CEL rule as a CHECK refuses the same rows again
        back = cel_to_sql(cel)
        assert [_sql_refuses(sqlite, back, row) for row in rows] == [v[1] for v in verdicts], (sql, cel, back)
    assert refused_somewhere > len(expressions) // 4  # the corpus refuses rows, not only passes them


def test_cel_rules_and_their_checks_refuse_the_same_rows(sqlite: sqlite3.Connection) -> None:
    rng = random.Random(72)
    rows = [_row(rng) for _ in range(8)]
    environment = celpy.Environment()
    expressions = _corpus(lambda r: _CelGenerator(r).condition(3), 200, 7200)
    for cel in expressions:
        sql = cel_to_sql(cel)
        program = environment.program(environment.compile(cel))
        for row in rows:
            assert _sql_refuses(sqlite, sql, row) == _cel_refuses(program, row), (cel, sql, row)


@pytest.mark.parametrize("sql", ["a / 2 > 1", "upper(s) = 'A'", "a BETWEEN 1 AND 2", "b % a = 0"])
def test_sql_outside_the_shared_subset_has_no_cel_form(sql: str) -> None:
    with pytest.raises(Untranslatable):
        sql_to_cel(sql)


@pytest.mark.parametrize("cel", ["message.a == null", "message.a / 2 > 1", "message.tags.exists(t, t == 'x')",
                                 "message.s.startsWith('a')"])
def test_cel_outside_the_shared_subset_has_no_sql_form(cel: str) -> None:
    # (comparing with null: cel-python errs where cel-go answers false, so no one CHECK agrees with both)
    with pytest.raises(Untranslatable):
        cel_to_sql(cel)


def test_the_python_writers_check_names_the_rule_and_samples_the_failing_rows() -> None:
    contract = TableContract("shop.orders", [
        {"name": "qty_positive", "sql": "qty > 0", "cel": sql_to_cel("qty > 0")},
        {"name": "known_sku", "sql": None, "cel": "message.sku.matches('^[A-Z]+$')"},
    ])
    contract.check([{"qty": 1, "sku": "AB"}, {"qty": None, "sku": "C"}])
    with pytest.raises(ConstraintViolation) as refused:
        contract.check([{"qty": 1, "sku": "AB"}, *({"qty": -n, "sku": "X"} for n in range(5))])
    assert refused.value.rule == "qty_positive"
    assert len(refused.value.rows) == 3
    assert str(refused.value).startswith("shop.orders: CHECK constraint qty_positive (qty > 0) refuses 5 row(s)")
    with pytest.raises(ConstraintViolation, match="known_sku"):
        contract.check([{"qty": 2, "sku": "lower"}])
    with pytest.raises(ValueError, match=r"upper_sku \(upper\(sku\) = sku\) has no CEL form"):
        TableContract("shop.orders", [{"name": "upper_sku", "sql": "upper(sku) = sku", "cel": None}]).check([{}])
