"""The aggregation merge engine's settings, read from a table's properties as Paimon spells them.

``'merge-engine' = 'aggregation'`` makes every non-key column of a primary-key table the aggregate of the
values written for its key: ``'fields.<column>.aggregate-function'`` names the function (default
``last_non_null_value``), ``'fields.<column>.ignore-retract' = 'true'`` lets a function that cannot
retract skip retractions instead of refusing them, and ``'fields.<column>.list-agg-delimiter'`` is
``listagg``'s separator (default ``,``), and ``'aggregation.row-count-field' = '<column>'`` names a ``sum``
column that counts each key's rows: a key whose count sums to 0 or less (or null) is not live.

Some results are kept through **hidden state columns**, whose names hold ``$`` (no table column can: Avro names
cannot) and which follow from the properties alone (:func:`state_columns`): ``avg`` keeps ``<column>$sum`` and
``<column>$count``, and ``'aggregation.row-count-field' = '$rows'`` counts rows in a hidden ``$rows``. They are
in chunk files (read by name; their ids, :data:`HIDDEN_FIELD_IDS`, are none a schema has) and in the engine's
merge, never in the table's schema.
docs/changelog-tables.md has the semantics; this module is
plain Python (no pyarrow) so that the server validates what the data plane applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: Paimon's names of the functions the aggregation engine applies per column.
FUNCTIONS = ("sum", "product", "count", "avg", "min", "max", "first_value", "first_non_null_value", "last_value",
             "last_non_null_value", "bool_and", "bool_or", "listagg")
#: The functions a retraction (a delete's or an update's before-image) can be taken back from.
RETRACTABLE = frozenset({"sum", "product", "count", "avg"})
DEFAULT_FUNCTION = "last_non_null_value"
#: The table property naming the column whose sum counts each key's rows (Streamcat's; Paimon has none).
ROW_COUNT_FIELD = "aggregation.row-count-field"
#: The row-count field that is a hidden state column rather than a table column.
HIDDEN_ROWS = "$rows"
#: What marks a hidden state column's name (never in a table column's).
HIDDEN_MARK = "$"
#: The suffixes of an ``avg`` column's hidden state: the sum of its samples and their number.
SUM_SUFFIX, COUNT_SUFFIX = "$sum", "$count"
_ENGINE = "merge-engine"
_PREFIX = "fields."
_SETTINGS = ("aggregate-function", "ignore-retract", "list-agg-delimiter")
#: The Spark types (their JSON names) each function takes; None: any type that has an order or equality.
NUMERIC = ("byte", "short", "integer", "long", "float", "double")
FUNCTION_TYPES: dict[str, tuple[str, ...] | None] = {
    "sum": NUMERIC, "product": NUMERIC, "count": ("byte", "short", "integer", "long"), "avg": ("float", "double"),
    "bool_and": ("boolean",), "bool_or": ("boolean",), "listagg": ("string",),
}


class AggregateError(ValueError):
    """Properties that do not describe an aggregation the engine can apply."""


@dataclass(frozen=True)
class FieldAggregate:
    """How one column aggregates the values written for a key."""

    function: str = DEFAULT_FUNCTION
    ignore_retract: bool = False
    delimiter: str = ","

    @property
    def retracts(self) -> bool:
        """Whether a retraction is taken back from the aggregate (else refused, or skipped when ignored)."""
        return self.function in RETRACTABLE


def field_aggregates(properties: Mapping[str, str]) -> dict[str, FieldAggregate]:
    """The columns that ``fields.<column>.*`` properties configure, with their settings."""
    settings: dict[str, dict[str, str]] = {}
    for name, value in properties.items():
        if not name.startswith(_PREFIX):
            continue
        column, _, setting = name[len(_PREFIX):].rpartition(".")
        if not column or setting not in _SETTINGS:
            continue
        settings.setdefault(column, {})[setting] = value
    found = {}
    for column, values in settings.items():
        function = values.get("aggregate-function", DEFAULT_FUNCTION).strip().lower()
        if function not in FUNCTIONS:
            raise AggregateError(f"'fields.{column}.aggregate-function' {function!r} is not one of "
                                 f"{', '.join(FUNCTIONS)}")
        ignore = values.get("ignore-retract", "false").strip().lower()
        if ignore not in ("true", "false"):
            raise AggregateError(f"'fields.{column}.ignore-retract' must be true or false, not {ignore!r}")
        found[column] = FieldAggregate(function, ignore == "true", values.get("list-agg-delimiter", ","))
    return found


def has_field_settings(properties: Mapping[str, str]) -> bool:
    """Whether any property configures a column's aggregation (they need ``'merge-engine' = 'aggregation'``)."""
    return ROW_COUNT_FIELD in properties or any(
        name.startswith(_PREFIX) and name.rpartition(".")[2] in _SETTINGS for name in properties)


def check_columns(aggregates: Mapping[str, FieldAggregate], columns: Mapping[str, object],
                  key: tuple[str, ...]) -> None:
    """Each configured column exists, is not a key column, and has a type its function takes.

    ``columns``: the table's top-level columns by name, each its Spark type's JSON (a name, or a dict for
    nested types and decimals).
    """
    for column, aggregate in aggregates.items():
        if is_hidden(column):
            raise AggregateError(f"'fields.{column}.aggregate-function': names holding '$' are hidden state columns, "
                                 "which the engine keeps itself; configure the table column instead")
        if column not in columns:
            raise AggregateError(f"'fields.{column}.aggregate-function' names no column of the table "
                                 f"(columns: {', '.join(columns)})")
        if column in key:
            raise AggregateError(f"'fields.{column}.aggregate-function': {column} is a key column; key "
                                 "columns identify the row and are not aggregated")
        kind = columns[column]
        allowed = FUNCTION_TYPES.get(aggregate.function)
        name = kind if isinstance(kind, str) else ""
        if allowed is not None and not (name in allowed or (name.startswith("decimal") and allowed is NUMERIC)):
            raise AggregateError(f"column {column} of type {name or 'nested'} cannot take aggregate function "
                                 f"{aggregate.function} (it takes {', '.join(allowed)})")
        if allowed is None and not isinstance(kind, str):
            raise AggregateError(f"column {column} has a nested type; {aggregate.function} needs a comparable one")


#: The Parquet field id of a file's first hidden state column (the next ones count up, in the file's column
#: order): Iceberg readers project a file's columns by id and pass over ids the table's schema does not have,
#: while Streamcat reads hidden columns by name. Far above any id a table assigns (they count up from 1), and
#: below the ids Iceberg reserves (from 2147483447).
HIDDEN_FIELD_IDS = 2_147_483_000


def is_hidden(name: str) -> bool:
    """Whether ``name`` is a hidden state column's (it holds ``$``, which no table column's can)."""
    return HIDDEN_MARK in name


def state_columns(properties: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The hidden state columns a table's properties declare, as (name, Spark type's JSON name), in this order:
    for each ``avg`` column, by the column's name as its property spells it (sorted), ``<column>$sum``
    (``double``) then ``<column>$count`` (``long``); then ``$rows`` (``long``) when it is the row-count field.
    None unless ``'merge-engine' = 'aggregation'``. Raises :class:`AggregateError` as :func:`field_aggregates`.
    """
    if (properties.get(_ENGINE) or "").strip().lower() != "aggregation":
        return ()
    found: list[tuple[str, str]] = []
    for column, aggregate in sorted(field_aggregates(properties).items()):
        if aggregate.function == "avg":
            found += [(column + SUM_SUFFIX, "double"), (column + COUNT_SUFFIX, "long")]
    if row_count_field(properties) == HIDDEN_ROWS:
        found.append((HIDDEN_ROWS, "long"))
    return tuple(found)


def row_count_field(properties: Mapping[str, str]) -> str | None:
    """The column ``'aggregation.row-count-field'`` names, if any (a key whose count is not positive is not live)."""
    return (properties.get(ROW_COUNT_FIELD) or "").strip() or None


def check_row_count_field(properties: Mapping[str, str], columns: Mapping[str, object],
                          key: tuple[str, ...]) -> None:
    """``'aggregation.row-count-field'``, when set, names a non-key integer column that aggregates by ``sum``, or
    is ``$rows`` (a hidden column, :func:`state_columns`)."""
    column = row_count_field(properties)
    if column is None or column == HIDDEN_ROWS:
        return  # $rows: a hidden column, counted by sum
    if is_hidden(column):
        raise AggregateError(f"'{ROW_COUNT_FIELD}' {column!r}: the only hidden row count is {HIDDEN_ROWS!r}; "
                             "other names holding '$' are no columns")
    if column not in columns or column in key:
        raise AggregateError(f"'{ROW_COUNT_FIELD}' {column!r} must name a column of the table that is not a key "
                             f"column (columns: {', '.join(c for c in columns if c not in key)})")
    if columns[column] not in ("byte", "short", "integer", "long"):
        raise AggregateError(f"'{ROW_COUNT_FIELD}' {column!r} must name an integer column")
    if field_aggregates(properties).get(column, FieldAggregate()).function != "sum":
        raise AggregateError(f"'{ROW_COUNT_FIELD}' {column!r} needs 'fields.{column}.aggregate-function' = 'sum' "
                             "(a key's rows are counted by adding their counts)")
