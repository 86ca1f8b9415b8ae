"""Row-level DML in Spark agrees with PostgreSQL 15, statement by statement, on both kinds of table.

The same DELETE / UPDATE / MERGE INTO (every clause kind Spark parses) / TRUNCATE / INSERT OVERWRITE
sequence runs on a Streamcat table through spark-sql and on a PostgreSQL table; after every statement
both hold the same rows. PostgreSQL 15 has MERGE but not ``WHEN NOT MATCHED BY SOURCE`` (version 17):
those clauses run there as the UPDATE/DELETE of target rows without a source row that they mean.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from catalog_api.client import CatalogClient
from tests.spark.helpers import rows
from tests.support.postgres import PostgresServer

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

COLUMNS = "id, grp, v"
SOURCE = [(2, 7, "s2"), (3, 8, None), (5, 9, "s5"), (41, 1, "s41"), (42, 2, None), (44, 3, "s44")]


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def _values(data: list[tuple[Any, ...]]) -> str:
    return ", ".join("(" + ", ".join(_literal(v) for v in row) + ")" for row in data)


INITIAL = [(i, i % 4, None if i % 7 == 0 else f"v{i}") for i in range(1, 41)]


def statements(keyed: bool) -> list[tuple[str, str | list[str]]]:
    """(Spark SQL on {t}, PostgreSQL SQL on {t}) pairs; {src} is the source rows in both."""
    upsert_pg = (f"INSERT INTO {{t}} VALUES {_values([(1, 100, 'up1'), (50, 5, 'n50')])} "
                 "ON CONFLICT (id) DO UPDATE SET grp = EXCLUDED.grp, v = EXCLUDED.v")
    append_pg = f"INSERT INTO {{t}} VALUES {_values([(1, 100, 'up1'), (50, 5, 'n50')])}"
    return [
        (f"INSERT INTO {{t}} VALUES {_values(INITIAL)}", f"INSERT INTO {{t}} VALUES {_values(INITIAL)}"),
        ("DELETE FROM {t} WHERE grp = 1", "DELETE FROM {t} WHERE grp = 1"),
        ("UPDATE {t} SET v = concat(v, '!'), grp = grp + 10 WHERE id % 3 = 0",
         "UPDATE {t} SET v = v || '!', grp = grp + 10 WHERE id % 3 = 0"),
        ("DELETE FROM {t} WHERE v IS NULL AND id > 20", "DELETE FROM {t} WHERE v IS NULL AND id > 20"),
        # matched with and without a condition, update and delete; not matched insert
        ("MERGE INTO {t} t USING {src} s ON t.id = s.id "
         "WHEN MATCHED AND s.v IS NULL THEN DELETE "
         "WHEN MATCHED THEN UPDATE SET grp = s.grp, v = s.v "
         "WHEN NOT MATCHED AND s.id < 44 THEN INSERT (id, grp, v) VALUES (s.id, s.grp, s.v)",
         "MERGE INTO {t} t USING {src} s ON t.id = s.id "
         "WHEN MATCHED AND s.v IS NULL THEN DELETE "
         "WHEN MATCHED THEN UPDATE SET grp = s.grp, v = s.v "
         "WHEN NOT MATCHED AND s.id < 44 THEN INSERT (id, grp, v) VALUES (s.id, s.grp, s.v)"),
        # not matched by source: update with a condition, delete the rest of a group
        ("MERGE INTO {t} t USING {src} s ON t.id = s.id "
         "WHEN MATCHED THEN UPDATE SET v = concat('m', s.v) "
         "WHEN NOT MATCHED BY SOURCE AND t.grp = 2 THEN UPDATE SET v = 'orphan' "
         "WHEN NOT MATCHED BY SOURCE AND t.grp = 0 AND t.id > 30 THEN DELETE",
         ["MERGE INTO {t} t USING {src} s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'm' || s.v",
          "UPDATE {t} t SET v = 'orphan' WHERE t.grp = 2 AND NOT EXISTS (SELECT 1 FROM {src} s WHERE s.id = t.id)",
          "DELETE FROM {t} t WHERE t.grp = 0 AND t.id > 30 "
          "AND NOT EXISTS (SELECT 1 FROM {src} s WHERE s.id = t.id)"]),
        ("UPDATE {t} SET grp = -1 WHERE id IN (SELECT id FROM {src} WHERE grp > 7)",
         "UPDATE {t} SET grp = -1 WHERE id IN (SELECT id FROM {src} WHERE grp > 7)"),
        (f"INSERT INTO {{t}} VALUES {_values([(1, 100, 'up1'), (50, 5, 'n50')])}",
         upsert_pg if keyed else append_pg),
        ("DELETE FROM {t} WHERE id > 1000", "DELETE FROM {t} WHERE id > 1000"),
        ("INSERT OVERWRITE {t} SELECT id, grp * 2, v FROM {t} WHERE grp >= 0",
         ["CREATE TEMP TABLE keep AS SELECT id, grp * 2 AS grp, v FROM {t} WHERE grp >= 0",
          "DELETE FROM {t}", "INSERT INTO {t} SELECT * FROM keep", "DROP TABLE keep"]),
        ("UPDATE {t} SET v = upper(v)", "UPDATE {t} SET v = upper(v)"),
        ("TRUNCATE TABLE {t}", "TRUNCATE TABLE {t}"),
        (f"INSERT INTO {{t}} VALUES {_values(INITIAL[:5])}", f"INSERT INTO {{t}} VALUES {_values(INITIAL[:5])}"),
    ]


@pytest.fixture
def pg(postgres: PostgresServer) -> Iterator[psycopg.Connection[Any]]:
    """A connection to a fresh database of the session's PostgreSQL, autocommitting."""
    url = postgres.create_database(f"dml_{uuid.uuid4().hex[:12]}")
    with psycopg.connect(url, autocommit=True) as connection:
        yield connection


@pytest.mark.parametrize("keyed", [False, True], ids=["append", "primary-key"])
def test_dml_agrees_with_postgresql(spark: Any, spark_server: str, scope: str, pg: Any, keyed: bool) -> None:
    table = f"streamcat.{scope}.t"
    key = ", CONSTRAINT t_pk PRIMARY KEY (id)" if keyed else ""
    spark.sql(f"CREATE TABLE {table} (id BIGINT NOT NULL, grp INT, v STRING{key}) USING avro")
    spark.sql(f"CREATE OR REPLACE TEMP VIEW src AS SELECT * FROM VALUES {_values(SOURCE)} AS s({COLUMNS})")
    pg.execute(f"CREATE TABLE t (id BIGINT NOT NULL{' PRIMARY KEY' if keyed else ''}, grp INT, v TEXT)")
    pg.execute("CREATE TABLE src (id BIGINT, grp INT, v TEXT)")
    pg.execute(f"INSERT INTO src VALUES {_values(SOURCE)}")
    catalog = CatalogClient(spark_server)

    for number, (spark_sql, pg_sql) in enumerate(statements(keyed), start=1):
        before = catalog.get_table(scope, "t")["stream"]["lastCommit"]
        spark.sql(spark_sql.format(t=table, src="src"))
        with pg.transaction():
            for sql in [pg_sql] if isinstance(pg_sql, str) else pg_sql:
                pg.execute(sql.format(t="t", src="src"))
        expected = sorted(pg.execute(f"SELECT {COLUMNS} FROM t").fetchall(), key=repr)
        actual = sorted(rows(spark, f"SELECT {COLUMNS} FROM {table}"), key=repr)
        assert actual == expected, f"after statement {number}: {spark_sql}"
        commits = catalog.commits(scope, "t", after=before)
        assert len(commits) <= 1, f"statement {number} made {len(commits)} commits: {spark_sql}"
        if spark_sql.startswith(("DELETE", "UPDATE", "MERGE")) and commits:
            assert commits[0]["kind"] == "row-level"
            assert commits[0]["readCut"] == before


@pytest.mark.parametrize("keyed", [False, True], ids=["append", "primary-key"])
def test_conflicting_merges_one_fails_and_its_retry_loses_nothing(
        spark: Any, scope: str, tmp_path: Path, keyed: bool) -> None:
    """Session B reads the table, then waits inside its MERGE until session A's MERGE of the same rows
    has committed; B's commit must then fail with the conflict error, and B run again must apply on
    top of A's: both increments are in the table."""
    table = f"streamcat.{scope}.c"
    key = ", CONSTRAINT c_pk PRIMARY KEY (id)" if keyed else ""
    spark.sql(f"CREATE TABLE {table} (id BIGINT NOT NULL, n INT{key}) USING avro")
    spark.sql(f"INSERT INTO {table} SELECT id, 0 FROM range(10)")
    started, a_done = tmp_path / "b-started", tmp_path / "a-done"

    def wait_for_a(value: int) -> int:
        import time
        from pathlib import Path as P

        P(str(started)).touch()
        deadline = time.monotonic() + 180
        while not P(str(a_done)).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return value

    session_a, session_b = spark.newSession(), spark.newSession()
    session_b.udf.register("wait_for_a", wait_for_a, "int")
    # One partition of source: B's waiting task holds one of the session's two task slots, not both.
    merge = ("MERGE INTO {t} t USING (SELECT id, {d} AS d FROM range(3, 6, 1, 1)) s ON t.id = s.id "
             "WHEN MATCHED THEN UPDATE SET n = t.n + s.d")
    failure: list[BaseException] = []

    def run_b() -> None:
        try:
            session_b.sql(merge.format(t=table, d="wait_for_a(10)")).collect()
        except BaseException as e:  # the conflict, checked below
            failure.append(e)

    b = threading.Thread(target=run_b)
    b.start()
    for _ in range(3600):
        if started.exists() or not b.is_alive():
            break
        threading.Event().wait(0.05)
    assert started.exists(), f"session B never reached its source: {failure}"
    session_a.sql(merge.format(t=table, d="1")).collect()
    a_done.touch()
    b.join(timeout=300)

    assert failure, "session B's MERGE committed over session A's without a conflict"
    message = str(failure[0])
    assert "CommitConflict" in message or "conflict" in message.lower(), message
    assert "retr" in message.lower(), message  # it says the statement may be retried
    assert rows(spark, f"SELECT id, n FROM {table} WHERE n > 0 ORDER BY id") == [(3, 1), (4, 1), (5, 1)]

    session_b.sql(merge.format(t=table, d="wait_for_a(10)")).collect()  # the retry
    assert rows(spark, f"SELECT id, n FROM {table} ORDER BY id") == [
        (i, 11 if 3 <= i < 6 else 0) for i in range(10)]
