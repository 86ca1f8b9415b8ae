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


def catalog_beside(spark: Any, name: str, **options: str) -> str:
    """A second catalog ``name`` on the session, on the same server as ``streamcat`` with the same settings
    plus ``options`` (e.g. ``{"native-scan": "false"}``); returns its name."""
    prefix = f"spark.sql.catalog.{name}"
    for key, value in spark.sparkContext.getConf().getAll():
        if key.startswith("spark.sql.catalog.streamcat.") or key == "spark.sql.catalog.streamcat":
            spark.conf.set(prefix + key[len("spark.sql.catalog.streamcat") :], value)
    for key, value in options.items():
        spark.conf.set(f"{prefix}.{key}", value)
    return name


def executed_plan(spark: Any, query: str) -> str:
    """The physical plan Spark executes for ``query``, as ``EXPLAIN`` prints it."""
    return str(spark.sql(query)._jdf.queryExecution().executedPlan().toString())


def scans_natively(spark: Any, query: str) -> bool:
    """Whether Spark plans ``query``'s table scan as its own Parquet scan (the native path) rather than
    the Python source's (a scan of a Streamcat table either way)."""
    plan = executed_plan(spark, query)
    assert "BatchScan" in plan, plan
    return "ParquetScan" in plan
