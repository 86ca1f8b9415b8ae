"""Every refusal reaches a spark-sql user as one line naming the table: the statements of issue 23's
items 3 and 4, through one real ``spark-sql`` process (``hive.cli.errors.ignore``: it goes on after a
failed statement). A second ``spark-sql`` runs beside it in the same directory the whole time."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.spark_sql import finish, frames, start_spark_sql

#: statement -> what its one line must say, besides the table's name.
REFUSED = {
    "INSERT INTO streamcat.{ns}.mt VALUES ('x', 1)":
        ("streamcat.{ns}.mt", "STREAMCAT_UNSUPPORTED_OPERATION", "is a materialized table"),
    "ALTER TABLE streamcat.{ns}.src RENAME TO streamcat.{ns}.renamed":
        ("streamcat.{ns}.src", "STREAMCAT_UNSUPPORTED_OPERATION", "cannot rename"),
    "CREATE TABLE streamcat.{ns}.pq (id INT) USING parquet":
        ("streamcat.{ns}.pq", "STREAMCAT_INVALID_ARGUMENT", "USING parquet"),
    "CALL streamcat.system.compact(table => '{ns}.nosuch')":
        ("'nosuch'", "STREAMCAT_TABLE_NOT_FOUND", "not found"),
    "CALL streamcat.system.create_materialized_table(table => '{ns}.soon', query => 'SELECT * FROM "
    "streamcat.{ns}.src', freshness => 'soon')":
        ("{ns}.soon", "STREAMCAT_BAD_REQUEST", "freshness 'soon'"),
    "SELECT * FROM streamcat.{ns}.src VERSION AS OF 99":
        ("streamcat.{ns}.src", "STREAMCAT_INVALID_ARGUMENT", "VERSION AS OF 99"),
    "SELECT * FROM streamcat.{ns}.src CHANGES FROM VERSION 1 TO VERSION 0":
        ("streamcat.{ns}.src", "STREAMCAT_INVALID_ARGUMENT", "reversed range"),
}

SETUP = """
CREATE NAMESPACE streamcat.{ns};
CREATE TABLE streamcat.{ns}.src (id BIGINT, region STRING) USING avro;
INSERT INTO streamcat.{ns}.src VALUES (1, 'eu');
CALL streamcat.system.create_materialized_table(table => '{ns}.mt',
  query => 'SELECT region, count(*) AS n FROM streamcat.{ns}.src GROUP BY region', freshness => '1 hour');
"""


@dataclass(frozen=True)
class Run:
    """What one spark-sql process came to."""

    code: int
    out: str
    err: str


@dataclass(frozen=True)
class Session:
    """The refusals' spark-sql and the one beside it, in one directory, for namespace ``ns``."""

    ns: str
    directory: Path
    refused: Run
    beside: Run


@pytest.fixture(scope="module")
def session(docs_server: str, tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The refusals' spark-sql, and a second one started in the same directory while it runs."""
    ns = f"err{uuid.uuid4().hex[:8]}"
    here = tmp_path_factory.mktemp("side-by-side")
    script = here / "refused.sql"
    script.write_text(SETUP.format(ns=ns) + "".join(f"{s.format(ns=ns)};\n" for s in REFUSED))
    other = here / "other.sql"
    other.write_text(f"CREATE NAMESPACE streamcat.{ns}_beside;\nSHOW NAMESPACES IN streamcat LIKE '{ns}_beside';\n")
    first = start_spark_sql(docs_server, script, here, "--hiveconf", "hive.cli.errors.ignore=true")
    second = start_spark_sql(docs_server, other, here)
    refused = Run(*finish(first))
    beside = Run(*finish(second))
    return Session(ns, here, refused, beside)


def test_no_refusal_prints_a_stack_frame_or_traceback(session: Session) -> None:
    # (its exit code is its last statement's: a refusal)
    assert session.refused.code == 1, session.refused.err
    assert frames(session.refused.err) == []


@pytest.mark.parametrize("statement", list(REFUSED))
def test_a_refusal_is_one_line_naming_the_table(session: Session, statement: str) -> None:
    table, condition, words = (part.format(ns=session.ns) for part in REFUSED[statement])
    lines = [line for line in session.refused.err.splitlines() if line.startswith(f"[{condition}]")
             and words in line and table in line]
    assert len(lines) == 1, f"{statement}: {session.refused.err}"
    assert re.search(r" SQLSTATE: [0-9A-Z]{5}$", lines[0])


def test_two_spark_sql_side_by_side_in_one_directory(session: Session) -> None:
    assert session.beside.code == 0, session.beside.err
    assert f"\n{session.ns}_beside\n" in f"\n{session.beside.out}"
    left = sorted(p.name for p in session.directory.iterdir())
    assert left == ["other.sql", "refused.sql"], "no metastore_db, derby.log or spark-warehouse left behind"
