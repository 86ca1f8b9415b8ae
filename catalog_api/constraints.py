"""A table's CHECK constraints and their CEL mirror (docs/data-contracts.md).

A table keeps each CHECK constraint as the table property ``constraint.check.<name>`` (its SQL
text). Where the SQL has a CEL equivalent (comparisons, arithmetic but ``/``, ``AND``/``OR``/``NOT``,
``IN``, ``IS [NOT] NULL``, ``LIKE`` and ``RLIKE``, ``length``), the constraint is mirrored as a ``CEL``
``CONDITION`` rule (mode ``WRITE``) of the table's schema version, so that Kafka clients serializing
with the table's subject enforce it; a CEL condition rule of the subject becomes a CHECK constraint
where it translates back to SQL.

Verdicts agree on NULLs: a CHECK refuses a row only when its condition is false (unknown passes),
so the CEL form guards each comparison (``type(message.qty) == null_type || message.qty > 0``; CEL
errs comparing a number with ``null``); a CEL rule refuses a row whose condition is false or fails
to evaluate (a null in a comparison), so its SQL form is ``COALESCE(<condition>, FALSE)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from registry.confluent.contracts import DLQ_TABLE_PARAM, RULE_SET_PROPERTY
from registry.errors import BadRequest

#: The prefix of the table properties holding CHECK constraints (the rest of the key is the name).
PREFIX = "constraint.check."
#: The parameter of a mirrored rule holding the CHECK's SQL as written.
SQL_PARAM = "streamcat.check.sql"
#: The metadata property of a mirrored version: the table version whose constraints it mirrors.
REVISION_PROPERTY = "streamcat.checks.revision"
#: A constraint's name, as a Confluent rule name must be (so that it can be mirrored).
_NAME = re.compile(r"[^\W\d][\w\-]{0,63}")


class Untranslatable(ValueError):
    """An expression outside the subset both languages share."""


@dataclass(frozen=True)
class CheckConstraint:
    """A CHECK constraint in force on a table: its name, its condition as Spark SQL (None: the CEL rule it
    comes from has no SQL form, so Spark cannot enforce it) and as CEL (None: the SQL has no CEL form, so
    the Python writers cannot evaluate it), and whether the table declares it (a table property) or it is
    a CEL rule of the table's schema version."""

    name: str
    sql: str | None
    cel: str | None
    declared: bool = True
    #: what a writer does with a row it refuses (the rule's write-side ``onFailure``): ``ERROR`` refuses the
    #: write, ``DLQ`` sends the row to the dead-letter table ``dlq_table`` (``scope.table``; None: the rule
    #: names none, so the write is refused)
    on_failure: str = "ERROR"
    dlq_table: str | None = None


def _cel_or_none(sql: str) -> str | None:
    try:
        return sql_to_cel(sql)
    except Untranslatable:
        return None


def _sql_or_none(cel: str) -> str | None:
    try:
        return cel_to_sql(cel)
    except Untranslatable:
        return None


def declared(properties: Mapping[str, str]) -> list[CheckConstraint]:
    """The CHECK constraints a table's properties declare."""
    return [CheckConstraint(k[len(PREFIX):], v, _cel_or_none(v)) for k, v in properties.items() if k.startswith(PREFIX)]


def check_declared(properties: Mapping[str, str]) -> None:
    """BadRequest naming a CHECK constraint whose name or SQL the catalog cannot keep."""
    for key, sql in properties.items():
        if not key.startswith(PREFIX):
            continue
        name = key[len(PREFIX):]
        if not _NAME.fullmatch(name):
            raise BadRequest(
                f"CHECK constraint name {name!r}: a name starts with a letter or '_' and holds letters, "
                "digits, '_' and '-' (at most 64), as a Confluent rule name does"
            )
        if not sql.strip():
            raise BadRequest(f"CHECK constraint {name} has no condition")


def in_force(properties: Mapping[str, str], rule_set: Mapping[str, Any] | None) -> list[CheckConstraint]:
    """The table's declared CHECK constraints, then its other CEL condition rules (a rule of a declared
    constraint's name is its mirror)."""
    found = declared(properties)
    names = {c.name for c in found}
    for rule in cel_conditions(rule_set):
        if rule["name"] not in names:
            found.append(CheckConstraint(rule["name"], _sql_or_none(rule["expr"]), rule["expr"], declared=False,
                                         on_failure=write_action(rule),
                                         dlq_table=(rule.get("params") or {}).get(DLQ_TABLE_PARAM)))
    return found


def write_action(rule: Mapping[str, Any]) -> str:
    """The action a rule's ``onFailure`` names for writes, as the stock client reads it: the first of two
    (``DLQ,ERROR``) for a WRITEREAD rule, else the one given; ``ERROR`` when none is."""
    action = str(rule.get("onFailure") or "")
    if "," in action and rule.get("mode") == "WRITEREAD":
        action = action.split(",")[0]
    return action.strip() or "ERROR"


def cel_conditions(rule_set: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The enabled CEL CONDITION domain rules that apply on write, in their order, but those whose write-side
    action is ``NONE`` (the stock client lets a record that fails them through: they refuse nothing)."""
    rules = (rule_set or {}).get("domainRules") or []
    return [
        r for r in rules
        if r.get("type") == "CEL" and r.get("kind") == "CONDITION" and r.get("mode") in ("WRITE", "WRITEREAD")
        and not r.get("disabled") and r.get("expr") and write_action(r) != "NONE"
    ]


def rule_set_of(version_properties: Mapping[str, str]) -> dict[str, Any] | None:
    """The rule set a schema version's properties hold (None: none)."""
    text = version_properties.get(RULE_SET_PROPERTY)
    return None if not text else dict(json.loads(text))


def mirrored(properties: Mapping[str, str], rule_set: Mapping[str, Any] | None,
             dropped: Sequence[str] = ()) -> dict[str, Any] | None:
    """The rule set ``rule_set`` becomes when it mirrors the declared CHECK constraints: a CEL rule per
    translatable constraint (replacing a rule of its name), without the rules of ``dropped`` constraints;
    None when nothing changes."""
    wanted = {}
    for check in declared(properties):
        expr = check.cel
        if expr is None or check.sql is None:
            continue
        wanted[check.name] = {
            # the doc is what the stock client's refusal says: the constraint, not the guarded CEL
            "name": check.name, "doc": f"CHECK constraint {check.name} ({check.sql})",
            "kind": "CONDITION", "mode": "WRITE", "type": "CEL", "expr": expr,
            "params": {SQL_PARAM: check.sql}, "onFailure": "ERROR", "disabled": False,
        }
    current = dict(rule_set or {})
    rules = list(current.get("domainRules") or [])
    kept = [r for r in rules if r.get("name") not in wanted and r.get("name") not in dropped]
    new_rules = kept + list(wanted.values())
    if _canonical(new_rules) == _canonical(rules):
        return None
    current["domainRules"] = new_rules
    return current


def dropped(changes: Sequence[object]) -> list[str]:
    """The names of the CHECK constraints ``changes`` (catalog_api.changes) remove."""
    return [key[len(PREFIX):] for c in changes if type(c).__name__ == "RemoveProperty"
            and isinstance(key := getattr(c, "key", ""), str) and key.startswith(PREFIX)]


def _canonical(rules: list[Any]) -> str:
    return json.dumps(sorted(rules, key=lambda r: str(r.get("name"))), sort_keys=True)


# -- the shared expression tree -------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """An expression: ``op`` names it (``col``, ``lit``, ``cmp``, ``and``, ``or``, ``not``, ``isnull``,
    ``in``, ``like``, ``rlike``, ``arith``, ``neg``, ``length``); ``args`` are its operands."""

    op: str
    args: tuple[Any, ...] = ()


_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<sq>'(?:[^'\\]|''|\\.)*')|(?P<dq>\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<bq>`[^`]+`)|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<op><=|>=|<>|!=|==|&&|\|\||[=<>+\-*/%(),.!\[\]]))"
)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise Untranslatable(f"cannot read {text[pos:pos + 20]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self, offset: int = 0) -> tuple[str, str]:
        j = self.i + offset
        return self.tokens[j] if j < len(self.tokens) else ("end", "")

    def word(self, *words: str) -> bool:
        kind, text = self.peek()
        return kind == "id" and text.upper() in words

    def take(self) -> tuple[str, str]:
        token = self.peek()
        self.i += 1
        return token

    def expect(self, text: str) -> None:
        _kind, found = self.take()
        if found.upper() != text:
            raise Untranslatable(f"expected {text!r}, found {found!r}")

    def additive(self) -> Node:
        """Sums and differences of terms (the same precedence in SQL and CEL)."""
        node = self.term()
        while self.peek()[1] in ("+", "-"):
            node = Node("arith", (self.take()[1], node, self.term()))
        return node

    def term(self) -> Node:
        """Products and remainders of unary expressions; '/' is refused: Spark divides as decimals, CEL as
        integers, so no translation keeps the verdict."""
        node = self.unary()
        while self.peek()[1] in ("*", "/", "%"):
            op = self.take()[1]
            if op == "/":
                raise Untranslatable("'/' divides as decimals in Spark and as integers in CEL")
            node = Node("arith", (op, node, self.unary()))
        return node

    def unary(self) -> Node:
        raise NotImplementedError

    def minus(self) -> Node:
        """'-' and a unary expression: a negative literal folded, else a negation (SQL and CEL alike)."""
        self.take()
        operand = self.unary()
        if operand.op == "lit" and isinstance(operand.args[0], int | float):
            return Node("lit", (-operand.args[0],))
        return Node("neg", (operand,))

    def done(self, node: Node) -> Node:
        if self.peek()[0] != "end":
            raise Untranslatable(f"unexpected {self.peek()[1]!r}")
        return node


class _Sql(_Parser):
    """Spark SQL's CHECK subset."""

    def parse(self) -> Node:
        return self.done(self.or_())

    def or_(self) -> Node:
        node = self.and_()
        while self.word("OR"):
            self.take()
            node = Node("or", (node, self.and_()))
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.word("AND"):
            self.take()
            node = Node("and", (node, self.not_()))
        return node

    def not_(self) -> Node:
        if self.word("NOT"):
            self.take()
            return Node("not", (self.not_(),))
        return self.predicate()

    def predicate(self) -> Node:
        left = self.additive()
        kind, text = self.peek()
        if kind == "op" and text in ("=", "==", "<>", "!=", "<", "<=", ">", ">="):
            self.take()
            op = {"=": "==", "<>": "!="}.get(text, text)
            return Node("cmp", (op, left, self.additive()))
        negated = False
        if self.word("IS"):
            self.take()
            if self.word("NOT"):
                self.take()
                negated = True
            self.expect("NULL")
            node = Node("isnull", (left,))
            return Node("not", (node,)) if negated else node
        if self.word("NOT") and self.peek(1)[1].upper() in ("IN", "LIKE", "RLIKE", "REGEXP"):
            self.take()
            negated = True
        if self.word("IN"):
            self.take()
            self.expect("(")
            values = [self.additive()]
            while self.peek()[1] == ",":
                self.take()
                values.append(self.additive())
            self.expect(")")
            node = Node("in", (left, tuple(values)))
        elif self.word("LIKE", "RLIKE", "REGEXP"):
            op = "like" if self.take()[1].upper() == "LIKE" else "rlike"
            pattern = self.additive()
            if pattern.op != "lit" or not isinstance(pattern.args[0], str):
                raise Untranslatable(f"{op.upper()} takes a string literal here")
            node = Node(op, (left, pattern.args[0]))
        else:
            if negated:
                raise Untranslatable("NOT where IN, LIKE or RLIKE was expected")
            return left
        return Node("not", (node,)) if negated else node

    def unary(self) -> Node:
        if self.peek()[1] == "-":
            return self.minus()
        return self.primary()

    def primary(self) -> Node:
        kind, text = self.take()
        if kind == "num":
            return Node("lit", (float(text) if "." in text else int(text),))
        if kind == "sq":
            return Node("lit", (_sql_string(text),))
        if kind == "bq":
            return Node("col", (text[1:-1].replace("``", "`"),))
        if kind == "op" and text == "(":
            node = self.or_()
            self.expect(")")
            return node
        if kind == "id":
            upper = text.upper()
            if upper in ("TRUE", "FALSE"):
                return Node("lit", (upper == "TRUE",))
            if upper == "NULL":
                return Node("lit", (None,))
            if self.peek()[1] == "(":
                if upper not in ("LENGTH", "CHAR_LENGTH", "CHARACTER_LENGTH"):
                    raise Untranslatable(f"function {text} has no CEL equivalent here")
                self.take()
                arg = self.additive()
                self.expect(")")
                return Node("length", (arg,))
            return Node("col", (text,))
        raise Untranslatable(f"unexpected {text!r}")


def _sql_string(token: str) -> str:
    body = token[1:-1]
    return re.sub(r"''|\\(.)", lambda m: "'" if m.group(0) == "''" else m.group(1), body)


class _Cel(_Parser):
    """The CEL subset: ``message.<field>``, literals, ``== != < <= > >= + - * %``, ``&& || !``,
    ``in [..]``, ``.matches(re)``, ``size(x)``."""

    def parse(self) -> Node:
        return self.done(self.or_())

    def or_(self) -> Node:
        node = self.and_()
        while self.peek()[1] == "||":
            self.take()
            node = Node("or", (node, self.and_()))
        return node

    def and_(self) -> Node:
        node = self.relation()
        while self.peek()[1] == "&&":
            self.take()
            node = Node("and", (node, self.relation()))
        return node

    def relation(self) -> Node:
        left = self.additive()
        kind, text = self.peek()
        if kind == "op" and text in ("==", "!=", "<", "<=", ">", ">="):
            self.take()
            right = self.additive()
            if (right.op == "lit" and right.args[0] is None) or (left.op == "lit" and left.args[0] is None):
                # cel-python errs comparing a value with null where cel-go answers false: no one SQL form
                raise Untranslatable("compare with null as type(x) == null_type")
            return Node("cmp", (text, left, right))
        if self.word("IN"):
            self.take()
            self.expect("[")
            values = [self.additive()]
            while self.peek()[1] == ",":
                self.take()
                values.append(self.additive())
            self.expect("]")
            return Node("in", (left, tuple(values)))
        return left

    def unary(self) -> Node:
        if self.peek()[1] == "!":
            self.take()
            return Node("not", (self.unary(),))
        if self.peek()[1] == "-":
            return self.minus()
        return self.member()

    def member(self) -> Node:
        node = self.primary()
        while self.peek()[1] == ".":
            self.take()
            kind, name = self.take()
            if kind != "id":
                raise Untranslatable(f"unexpected {name!r} after '.'")
            if name == "matches" and self.peek()[1] == "(":
                self.take()
                pattern = self.additive()
                self.expect(")")
                if pattern.op != "lit" or not isinstance(pattern.args[0], str):
                    raise Untranslatable("matches() takes a string literal here")
                node = Node("rlike", (node, pattern.args[0]))
            elif node.op == "message":
                node = Node("col", (name,))
            else:
                raise Untranslatable(f"nested field .{name} has no SQL column here")
        return node

    def primary(self) -> Node:
        kind, text = self.take()
        if kind == "num":
            return Node("lit", (float(text) if "." in text else int(text),))
        if kind in ("sq", "dq"):
            return Node("lit", (_cel_string(text),))
        if kind == "op" and text == "(":
            node = self.or_()
            self.expect(")")
            return node
        if kind == "id":
            if text in ("true", "false"):
                return Node("lit", (text == "true",))
            if text == "null":
                return Node("lit", (None,))
            if text == "message":
                return Node("message")
            if text == "type" and self.peek()[1] == "(":
                self.take()
                arg = self.additive()
                self.expect(")")
                _kind, op = self.take()
                if op not in ("==", "!=") or self.take()[1] != "null_type":
                    raise Untranslatable("type() is compared with null_type only here")
                node = Node("isnull", (arg,))
                return node if op == "==" else Node("not", (node,))
            if text == "size" and self.peek()[1] == "(":
                self.take()
                arg = self.additive()
                self.expect(")")
                return Node("length", (arg,))
        raise Untranslatable(f"unexpected {text!r}")


def _cel_string(token: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), token[1:-1])


# -- SQL -> CEL ------------------------------------------------------------------------------------


def sql_to_cel(sql: str, nullable: Callable[[str], bool] = lambda _c: True) -> str:
    """The CEL condition refusing exactly the rows the CHECK ``sql`` refuses (Untranslatable if it has
    none); ``nullable`` says which columns may be null (their comparisons get a null guard)."""
    return _CelWriter(nullable).passes(_Sql(sql).parse())


class _CelWriter:
    def __init__(self, nullable: Callable[[str], bool]) -> None:
        self.nullable = nullable

    def passes(self, node: Node) -> str:
        """CEL: the SQL condition is not false (true or unknown)."""
        return self._verdict(node, want=True)

    def _verdict(self, node: Node, want: bool) -> str:
        # want=True: "not definitely false"; want=False: "not definitely true".
        if node.op == "and":
            a, b = (self._verdict(n, want) for n in node.args)
            return f"({a} {'&&' if want else '||'} {b})"
        if node.op == "or":
            a, b = (self._verdict(n, want) for n in node.args)
            return f"({a} {'||' if want else '&&'} {b})"
        if node.op == "not":
            return self._verdict(node.args[0], not want)
        if node.op == "isnull":
            test = self._is_null(node.args[0])
            return test if want else f"!{test}"
        if node.op == "lit":
            value = node.args[0]
            if value is None:
                return "true"
            if not isinstance(value, bool):
                raise Untranslatable("a CHECK condition is true or false, not a number or string")
            return "true" if value == want else "false"
        truth = self._value(node)
        guards = list(self._nullables(node))
        if truth is None:
            return "true"
        test = truth if want else f"!({truth})"
        if not guards:
            return test
        return "(" + " || ".join([*(f"type({g}) == null_type" for g in guards), test]) + ")"

    def _is_null(self, node: Node) -> str:
        guards = list(self._nullables(node))
        if node.op == "lit":
            return "true" if node.args[0] is None else "false"
        if not guards:
            return "false"
        return "(" + " || ".join(f"type({g}) == null_type" for g in guards) + ")"

    def _nullables(self, node: Node) -> Iterator[str]:
        seen: set[str] = set()
        for col in _columns(node):
            if col not in seen and self.nullable(col):
                seen.add(col)
                yield _cel_field(col)

    def _value(self, node: Node) -> str | None:
        """The CEL of a non-null value (None: a NULL literal makes the whole value null)."""
        if node.op == "col":
            return _cel_field(node.args[0])
        if node.op == "lit":
            value = node.args[0]
            if value is None:
                return None
            return _cel_literal(value)
        if node.op == "cmp":
            op, a, b = node.args
            left, right = self._value(a), self._value(b)
            return None if left is None or right is None else f"({left} {op} {right})"
        if node.op == "arith":
            op, a, b = node.args
            left, right = self._value(a), self._value(b)
            if op == "%" and not (b.op == "lit" and isinstance(b.args[0], int) and b.args[0] != 0):
                raise Untranslatable("'%' by a non-constant fails in CEL where SQL answers NULL")
            return None if left is None or right is None else f"({left} {op} {right})"
        if node.op == "neg":
            inner = self._value(node.args[0])
            return None if inner is None else f"-{inner}"
        if node.op == "length":
            inner = self._value(node.args[0])
            return None if inner is None else f"size({inner})"
        if node.op == "in":
            left = self._value(node.args[0])
            values = [self._value(v) for v in node.args[1]]
            if any(v is None for v in values) or any(v.op != "lit" for v in node.args[1]):
                raise Untranslatable("IN takes non-null literals here")
            return None if left is None else f"{left} in [{', '.join(str(v) for v in values)}]"
        if node.op in ("like", "rlike"):
            left = self._value(node.args[0])
            pattern = _like_regex(node.args[1]) if node.op == "like" else node.args[1]
            return None if left is None else f"{left}.matches({_cel_literal(pattern)})"
        if node.op in ("and", "or", "not", "isnull"):
            raise Untranslatable("a condition used as a value has no CEL equivalent here")
        raise Untranslatable(f"{node.op} has no CEL equivalent")


def _columns(node: Node) -> Iterator[str]:
    if node.op == "col":
        yield node.args[0]
    for arg in node.args:
        if isinstance(arg, Node):
            yield from _columns(arg)
        elif isinstance(arg, tuple):
            for item in arg:
                if isinstance(item, Node):
                    yield from _columns(item)


_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _cel_field(column: str) -> str:
    if not _FIELD.fullmatch(column):
        raise Untranslatable(f"column {column!r} is no CEL field name")
    return f"message.{column}"


def _cel_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{text}"'


def _like_regex(pattern: str) -> str:
    out = ["(?s)^"]
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    out.append("$")
    return "".join(out)


# -- CEL -> SQL ------------------------------------------------------------------------------------


def cel_to_sql(cel: str) -> str:
    """The CHECK refusing exactly the rows the CEL condition ``cel`` refuses (false, or failing to
    evaluate on a null); Untranslatable if it has none."""
    node = _Cel(cel).parse()
    return f"COALESCE({_sql(node)}, FALSE)"


def _sql(node: Node) -> str:
    if node.op == "col":
        name = node.args[0]
        return name if _FIELD.fullmatch(name) else "`" + name.replace("`", "``") + "`"
    if node.op == "lit":
        value = node.args[0]
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, int | float):
            return repr(value)
        return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
    if node.op in ("and", "or"):
        a, b = (_sql(n) for n in node.args)
        return f"({a} {node.op.upper()} {b})"
    if node.op == "not":
        return f"(NOT {_sql(node.args[0])})"
    if node.op == "isnull":
        return f"({_sql(node.args[0])} IS NULL)"
    if node.op == "cmp":
        op, a, b = node.args
        compared = f"({_sql(a)} {'=' if op == '==' else op} {_sql(b)})"
        if op in ("==", "!=") and a.op == "col" and b.op == "col":
            # CEL: null == null is true (a null and a value: an error, as SQL's NULL)
            both = f"{_sql(a)} IS NULL AND {_sql(b)} IS NULL"
            return f"(CASE WHEN {both} THEN {'TRUE' if op == '==' else 'FALSE'} ELSE {compared} END)"
        return compared
    if node.op == "arith":
        op, a, b = node.args
        return f"({_sql(a)} {op} {_sql(b)})"
    if node.op == "neg":
        return f"(- {_sql(node.args[0])})"
    if node.op == "length":
        return f"length({_sql(node.args[0])})"
    if node.op == "in":
        return f"({_sql(node.args[0])} IN ({', '.join(_sql(v) for v in node.args[1])}))"
    if node.op == "rlike":
        return f"({_sql(node.args[0])} RLIKE {_sql(Node('lit', (node.args[1],)))})"
    raise Untranslatable(f"{node.op} has no SQL equivalent")
