"""Small helpers the Spark tests share."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def rows(spark: Any, query: str) -> list[tuple[Any, ...]]:
    """The rows of a query as plain tuples, in the order Spark returns them."""
    return [tuple(r) for r in spark.sql(query).collect()]


def describe(spark: Any, what: str) -> dict[str, str]:
    """``DESCRIBE ...`` as a dict of its first two columns."""
    return {str(r[0]): str(r[1]) for r in spark.sql(f"DESCRIBE {what}").collect()}


def table_files(location: str) -> set[str]:
    """The chunk files under a table's location, relative to it."""
    root = Path(location)
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def forget_batch(checkpoint: Path, batch: int) -> None:
    """Undo a streaming query's record that ``batch`` is done, as if it died before writing it."""
    for name in (str(batch), f".{batch}.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
