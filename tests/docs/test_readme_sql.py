"""The SQL the README and docs/*.md give to paste runs, top to bottom, in one real ``spark-sql``.

The convention (docs/decisions.md, "SQL in the docs"): a block fenced as ```` ```sql ```` is meant to be
pasted into ``spark-sql`` in order, and is run here; an excerpt that is not (another engine's SQL, a
fragment) is fenced ```` ```sql no-run ````. Each document runs as a new user would paste it: after the
namespace ``shop`` of the previous one is dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.spark_sql import finish, frames, start_spark_sql

ROOT = Path(__file__).resolve().parents[2]
#: A fenced block whose info string is exactly ``sql``.
PASTED = re.compile(r"^```sql\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def pasted_sql(document: Path) -> list[str]:
    """The blocks of ``document`` meant to be pasted, in order."""
    return PASTED.findall(document.read_text())


def documents() -> list[Path]:
    """The README, then every doc with a block to paste."""
    docs = sorted(p for p in (ROOT / "docs").glob("*.md") if pasted_sql(p))
    return [ROOT / "README.md", *docs]


def test_the_convention_finds_the_blocks_and_skips_excerpts() -> None:
    names = [p.name for p in documents()]
    assert names[0] == "README.md"
    assert {"changelog-tables.md", "partitioning.md", "views.md", "materialized-tables.md"} <= set(names)
    assert "confluent-api.md" not in names, "its Flink SQL is marked sql no-run"
    assert pasted_sql(ROOT / "README.md")[0].startswith("CREATE NAMESPACE streamcat.shop;")


def test_the_readme_and_docs_sql_runs_in_one_spark_sql_session(docs_server: str, tmp_path: Path) -> None:
    parts = []
    for document in documents():
        parts.append(f"-- {document.name}\nDROP NAMESPACE IF EXISTS streamcat.shop CASCADE;\n")
        parts.extend(pasted_sql(document))
    script = tmp_path / "pasted.sql"
    script.write_text("\n".join(parts))

    # spark-sql stops at the first statement that fails, with exit code 1: 0 means every one ran.
    code, out, err = finish(start_spark_sql(docs_server, script, tmp_path))
    assert code == 0, err[-6000:]
    assert frames(err) == []
    lines = out.splitlines()
    # What the README's comments promise.
    assert "2\tpen\t10" in lines
    assert "1\tbook\tNULL" in lines
    assert lines[lines.index("sku\tqty") + 1:][:2] == ["b\t5", "c\t3"]
    assert any(line.startswith("shop.stock\t2\t3\t") and line.endswith("\tcompacted version 2 into commit 3")
               for line in lines), out
    partitions = [line for line in lines if line.startswith("ts_day=")]
    assert [p.split("/")[0] for p in partitions[:2]] == ["ts_day=2026-11-05", "ts_day=2026-11-06"]
    assert any("Parameters: table STRING (required)" in line and "partitioning STRING" in line for line in lines)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pasted.sql"], "nothing left in the working directory"
