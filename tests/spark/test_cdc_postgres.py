"""CDC equivalence against a real database (issue 11, "Must show").

A PostgreSQL table (on the test session's server) receives 50,000 random INSERT / UPDATE / DELETE
statements in 10 rounds: keys reused, rows deleted and inserted again, keys changed, nulls in every
nullable column, multi-row statements. A row trigger records each change's before and after images
(``to_jsonb``), transaction id and WAL position; from those the test writes what Debezium's
PostgreSQL connector would (default settings, REPLICA IDENTITY FULL): ``c``/``u``/``d`` events with
Debezium's encodings of decimals, dates, timestamps and bytes, a delete and a create for a key
change, a tombstone after each delete, the schema/payload envelope in odd rounds and the bare one in
even rounds, and at-least-once re-deliveries (single events sent twice, and tails re-sent as a
restarted connector does). Each round's file goes through the real ``streamcat ingest`` (a
subprocess) into a Streamcat primary-key table. After each round:

* the Spark batch read of the table equals ``SELECT *`` of the PostgreSQL table exactly, and so does
  the Python StreamReader's;
* the change feed between the previous round's cut and this one, replayed on the previous state,
  gives this state (each ``update_preimage`` matching the row it replaces);
* after round 5 the table is compacted: no read at any cut changes, and the feeds go on.

The Streamcat server keeps its catalog on the session's PostgreSQL too; the shared Spark session
reaches it through a second catalog (``cdc``) registered at run time.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import random
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import psycopg
import pytest

from catalog_api.client import CatalogClient
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from catalog_api.streams import StreamReader
from registry.client import RegistryClient
from tests.changelog.helpers import SCHEMA
from tests.changelog.helpers import read_table as python_read_table
from tests.support.net import serve_in_thread
from tests.support.postgres import PostgresServer

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.xdist_group("spark")]

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 10
STATEMENTS_PER_ROUND = 5_000
KEYS = 1_500
EPOCH = dt.datetime(1970, 1, 1)
Row = dict[str, Any]

#: How the test reads the Streamcat table at a cut: records sorted by key.
ReadTable = Callable[[CatalogClient, RegistryClient, str, str, int], list[Row]]


def spark_read(spark: Any, catalog: str) -> ReadTable:
    """The Spark batch read (``SELECT * ... VERSION AS OF cut`` through catalog ``catalog``), as records
    sorted by key in the shapes psycopg gives: UTC-aware ``timestamptz`` values, bytes."""
    def read(_catalog: CatalogClient, _registry: RegistryClient, scope: str, table: str, cut: int) -> list[Row]:
        frame = spark.sql(f"SELECT {', '.join(COLUMNS)} FROM {catalog}.{scope}.{table} VERSION AS OF {cut}")
        records = []
        for r in frame.collect():
            record = r.asDict()
            if record["ts"] is not None:  # Spark gives TIMESTAMP as naive session-time (UTC) values
                record["ts"] = record["ts"].replace(tzinfo=dt.UTC)
            if record["data"] is not None:
                record["data"] = bytes(record["data"])
            records.append(record)
        return sorted(records, key=lambda r: r["id"])
    return read


def both_reads(spark_reader: ReadTable) -> ReadTable:
    """The Spark read, checked against the Python StreamReader's merged read of the same cut."""
    def read(catalog: CatalogClient, registry: RegistryClient, scope: str, table: str, cut: int) -> list[Row]:
        through_spark = spark_reader(catalog, registry, scope, table, cut)
        assert through_spark == python_read_table(catalog, registry, scope, table, cut), f"cut {cut}"
        return through_spark
    return read


# -- the source database ----------------------------------------------------------------------------

SOURCE_DDL = """
CREATE TABLE src (
    id bigint PRIMARY KEY, name text, qty integer, price numeric(12,2), flag boolean, day date,
    at timestamp, ts timestamptz, score double precision, data bytea
);
ALTER TABLE src REPLICA IDENTITY FULL;
CREATE TABLE capture_log (
    n bigserial PRIMARY KEY, op text NOT NULL, before jsonb, after jsonb, tx bigint NOT NULL, lsn pg_lsn NOT NULL
);
CREATE FUNCTION capture() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO capture_log (op, before, after, tx, lsn) VALUES (
        TG_OP,
        CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END,
        CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END,
        txid_current(), pg_current_wal_insert_lsn());
    RETURN NULL;
END $$;
CREATE TRIGGER capture AFTER INSERT OR UPDATE OR DELETE ON src FOR EACH ROW EXECUTE FUNCTION capture();
"""
COLUMNS = ("id", "name", "qty", "price", "flag", "day", "at", "ts", "score", "data")


def random_values(rng: random.Random) -> dict[str, Any]:
    """Values of every non-key column, a quarter of them null."""
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.25 else value
    return {
        "name": maybe(rng.choice(["", "a", "ü'ñ\"\\", "long " * 20, f"n{rng.randint(0, 10**9)}"])),
        "qty": maybe(rng.randint(-2**31, 2**31 - 1)),
        "price": maybe(Decimal(rng.randint(-10**12 + 1, 10**12 - 1)).scaleb(-2)),
        "flag": maybe(rng.random() < 0.5),
        "day": maybe(dt.date(1900, 1, 1) + dt.timedelta(days=rng.randint(0, 200 * 365))),
        "at": maybe(EPOCH + dt.timedelta(microseconds=rng.randint(-2 * 10**15, 4 * 10**15))),
        "ts": maybe(dt.datetime(2000, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=rng.randint(0, 10**15))),
        "score": maybe(rng.choice([rng.random(), -rng.random() * 1e300, 1e-300 * rng.random(), 0.0, 3.0])),
        "data": maybe(rng.randbytes(rng.randint(0, 24))),
    }


def statements(rng: random.Random, count: int) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """``count`` random statements (SQL, parameters) on ``src``."""
    for _ in range(count):
        roll = rng.random()
        key = rng.randint(1, KEYS)
        values = random_values(rng)
        if roll < 0.35:
            yield ("INSERT INTO src (id, name, qty, price, flag, day, at, ts, score, data) "
                   "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                   (key, *values.values()))
        elif roll < 0.38:
            yield ("INSERT INTO src (id, name, qty) VALUES (%s, %s, %s) "
                   "ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, qty = EXCLUDED.qty",
                   (key, values["name"], values["qty"]))
        elif roll < 0.70:
            chosen = rng.sample(COLUMNS[1:], rng.randint(1, 4))
            sets = ", ".join(f"{c} = %s" for c in chosen)
            yield f"UPDATE src SET {sets} WHERE id = %s", (*(values[c] for c in chosen), key)
        elif roll < 0.75:
            target = rng.randint(1, KEYS)  # the key itself changes, unless the new one is taken
            yield ("UPDATE src SET id = %s WHERE id = %s AND NOT EXISTS (SELECT 1 FROM src WHERE id = %s)",
                   (target, key, target))
        elif roll < 0.78:
            yield "UPDATE src SET qty = NULL, flag = NOT flag WHERE id %% 97 = %s", (key % 97,)
        elif roll < 0.80:
            yield "DELETE FROM src WHERE id BETWEEN %s AND %s", (key, key + rng.randint(0, 20))
        else:
            yield "DELETE FROM src WHERE id = %s", (key,)


# -- Debezium events from the captured images ----------------------------------------------------------

def _unscaled(value: Decimal) -> str:
    """org.apache.kafka.connect.data.Decimal: base64 of the big-endian two's complement unscaled value."""
    unscaled = int(value.scaleb(2))
    size = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


def debezium_row(image: Row | None) -> Row | None:
    """A ``to_jsonb`` image as the PostgreSQL connector encodes the row (decimal.handling.mode precise,
    time.precision.mode adaptive, binary.handling.mode bytes)."""
    if image is None:
        return None
    out = dict(image)
    if out["price"] is not None:
        out["price"] = _unscaled(Decimal(out["price"]))
    if out["day"] is not None:
        out["day"] = (dt.date.fromisoformat(out["day"]) - EPOCH.date()).days
    if out["at"] is not None:
        out["at"] = (dt.datetime.fromisoformat(out["at"]) - EPOCH) // dt.timedelta(microseconds=1)
    if out["ts"] is not None:
        out["ts"] = dt.datetime.fromisoformat(out["ts"]).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if out["score"] is not None:
        out["score"] = float(out["score"])
    if out["data"] is not None:
        out["data"] = base64.b64encode(bytes.fromhex(out["data"][2:])).decode()
    return out


def _field(name: str, kind: str, optional: bool = True, semantic: str | None = None,
           parameters: dict[str, str] | None = None) -> dict[str, Any]:
    field: dict[str, Any] = {"type": kind, "optional": optional, "field": name}
    if semantic:
        field.update(name=semantic, version=1)
    if parameters:
        field["parameters"] = parameters
    return field


ROW_FIELDS = [
    _field("id", "int64", optional=False), _field("name", "string"), _field("qty", "int32"),
    _field("price", "bytes", semantic="org.apache.kafka.connect.data.Decimal",
           parameters={"scale": "2", "connect.decimal.precision": "12"}),
    _field("flag", "boolean"), _field("day", "int32", semantic="io.debezium.time.Date"),
    _field("at", "int64", semantic="io.debezium.time.MicroTimestamp"),
    _field("ts", "string", semantic="io.debezium.time.ZonedTimestamp"), _field("score", "double"),
    _field("data", "bytes"),
]
ENVELOPE_SCHEMA = {"type": "struct", "optional": False, "name": "cdc.public.src.Envelope", "version": 1, "fields": [
    {"type": "struct", "optional": True, "name": "cdc.public.src.Value", "field": "before", "fields": ROW_FIELDS},
    {"type": "struct", "optional": True, "name": "cdc.public.src.Value", "field": "after", "fields": ROW_FIELDS},
    {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source", "field": "source",
     "fields": [_field("version", "string", False), _field("connector", "string", False),
                _field("name", "string", False), _field("ts_ms", "int64", False),
                _field("snapshot", "string", semantic="io.debezium.data.Enum"), _field("db", "string", False),
                _field("sequence", "string"), _field("schema", "string", False), _field("table", "string", False),
                _field("txId", "int64"), _field("lsn", "int64"), _field("xmin", "int64")]},
    _field("op", "string", False), _field("ts_ms", "int64"),
]}


@dataclass
class Capture:
    """Turns the capture log into Debezium lines, remembering where the connector stands."""

    rng: random.Random
    last_n: int = 0
    last_lsn: int = 0
    last_commit: int = 0
    last_tx: int = -1
    sent: int = 0

    def lines(self, connection: psycopg.Connection[Any], wrapped: bool) -> tuple[list[bytes], int]:
        """The new changes as Debezium JSON lines, with tombstones and re-deliveries; and their count."""
        rows = connection.execute(
            "SELECT n, op, before::text, after::text, tx, lsn::text FROM capture_log WHERE n > %s ORDER BY n",
            (self.last_n,)).fetchall()
        out: list[bytes] = []
        changes = 0
        for n, op, before_text, after_text, tx, lsn_text in rows:
            self.last_n = n
            high, low = lsn_text.split("/")
            lsn = (int(high, 16) << 32) + int(low, 16)
            assert lsn > self.last_lsn, "the generator needs growing WAL positions"
            if tx != self.last_tx:  # a new transaction: the previous one committed before it
                self.last_commit, self.last_tx = self.last_lsn, tx
            self.last_lsn = lsn
            before = debezium_row(json.loads(before_text, parse_float=Decimal) if before_text else None)
            after = debezium_row(json.loads(after_text, parse_float=Decimal) if after_text else None)
            source = {"version": "2.5.0.Final", "connector": "postgresql", "name": "cdc", "ts_ms": 1_700_000_000_000,
                      "snapshot": "false", "db": "cdc", "sequence": f'["{self.last_commit}","{lsn}"]',
                      "schema": "public", "table": "src", "txId": tx, "lsn": lsn, "xmin": None}
            if op == "UPDATE" and before is not None and after is not None and before["id"] != after["id"]:
                # a primary key update: the connector sends a delete (and its tombstone) and a create
                events = [("d", before, None), (None, None, None), ("c", None, after)]
            elif op == "DELETE":
                events = [("d", before, None), (None, None, None)]
            else:
                events = [("c" if op == "INSERT" else "u", before, after)]
            for kind, old, new in events:
                if kind is None:
                    out.append(b"null")
                    continue
                payload = {"before": old, "after": new, "source": source, "op": kind, "ts_ms": 1_700_000_000_000,
                           "transaction": None}
                line = msgspec.json.encode({"schema": ENVELOPE_SCHEMA, "payload": payload} if wrapped else payload)
                out.append(line)
                changes += 1
                if self.rng.random() < 0.02:
                    out.append(line)  # delivered twice in a row
            if len(out) > 40 and self.rng.random() < 0.005:
                out.extend(out[-self.rng.randint(2, 40):])  # a restarted connector re-sends its tail
        return out, changes


# -- Streamcat ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def catalog_url(postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Streamcat server of the module's own, its catalog on the session's PostgreSQL."""
    database = postgres.create_database(f"catalog_{uuid.uuid4().hex[:12]}")
    migrate.upgrade(database)
    settings = Settings(database_url=database, warehouse=str(tmp_path_factory.mktemp("warehouse")))
    with serve_in_thread(create_app(settings)) as url:
        yield url


def ingest_command_line() -> list[str]:
    """``streamcat ingest``: the installed command, beside this interpreter."""
    return [str(Path(sys.executable).with_name("streamcat")), "ingest"]


def run_ingest(url: str, table: str, source: Path, batch_size: int) -> str:
    command = [*ingest_command_line(), "--table", table, "--format", "debezium-json", "--writer-id", "pg-cdc",
               "--batch-size", str(batch_size), "--uri", url, "--quiet", str(source)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def compact_table(catalog: CatalogClient, registry: RegistryClient, scope: str, table: str) -> int:
    """Compact the table locally with pyarrow (``streamcat tables compact``'s code); the compaction's commit."""
    from catalog_api.streams.compaction import compact

    done = compact(catalog, registry, scope, table)
    assert done.commit is not None
    assert done.chunks_removed > 1
    return done.commit


def change_feed(catalog: CatalogClient, registry: RegistryClient, scope: str, table: str, after: int,
                to: int) -> list[Row]:
    """The change feed of the commits in (after, to] (the Python StreamReader's)."""
    return list(StreamReader(catalog, registry, scope, table).changes(after, to))


def replayed(state: list[Row], feed: list[Row]) -> list[Row]:
    """``state`` with the feed's changes applied in order, as a consumer of the feed would apply them."""
    rows = {r["id"]: r for r in state}
    for change in feed:
        kind = change["_change_type"]
        record = {k: v for k, v in change.items() if not k.startswith("_")}
        if kind == "update_preimage":
            assert rows.get(record["id"]) == record, f"the preimage of {record['id']} is not the row it replaces"
        elif kind == "delete":
            assert rows.pop(record["id"]) == record, f"the deleted row {record['id']} is not the live one"
        elif kind == "insert":
            assert record["id"] not in rows, f"insert of {record['id']}, a live key"
            rows[record["id"]] = record
        else:
            assert kind == "update_postimage", kind
            rows[record["id"]] = record
    return sorted(rows.values(), key=lambda r: r["id"])


def source_rows(connection: psycopg.Connection[Any]) -> list[Row]:
    """SELECT * FROM the source table, as records comparable with the Streamcat read."""
    cursor = connection.execute(f"SELECT {', '.join(COLUMNS)} FROM src ORDER BY id")
    return [dict(zip(COLUMNS, values, strict=True)) for values in cursor.fetchall()]


def test_cdc_from_postgresql_equals_the_source_after_every_round(
        spark: Any, postgres: PostgresServer, catalog_url: str, tmp_path: Path) -> None:
    spark.conf.set("spark.sql.catalog.cdc", "streamcat.spark.StreamcatCatalog")
    spark.conf.set("spark.sql.catalog.cdc.uri", catalog_url)
    read_table = both_reads(spark_read(spark, "cdc"))
    rng = random.Random(11)
    source_url = postgres.create_database(f"cdc_{uuid.uuid4().hex[:12]}")
    scope, table = f"cdc{uuid.uuid4().hex[:8]}", "orders"
    catalog = CatalogClient(catalog_url)
    catalog.create_scope(scope)
    catalog.create_table(scope, table, SCHEMA, properties={"primary-key": "id"})
    registry = RegistryClient(catalog_url, scope)
    capture = Capture(random.Random(12))
    states: dict[int, list[Row]] = {0: []}
    cut = 0
    with psycopg.connect(source_url, autocommit=True) as connection:
        connection.execute("SET TimeZone = 'UTC'")
        connection.execute(SOURCE_DDL)
        totals = {"statements": 0, "changes": 0, "lines": 0}
        for round_number in range(1, ROUNDS + 1):
            with connection.pipeline() as pipeline:
                for sql, parameters in statements(rng, STATEMENTS_PER_ROUND):
                    connection.execute(sql, parameters)
                    pipeline.sync()  # each statement its own transaction
            totals["statements"] += STATEMENTS_PER_ROUND
            lines, changes = capture.lines(connection, wrapped=round_number % 2 == 1)
            totals["changes"] += changes
            totals["lines"] += len(lines)
            path = tmp_path / f"round-{round_number}.jsonl"
            path.write_bytes(b"\n".join(lines) + b"\n")
            summary = run_ingest(catalog_url, f"{scope}.{table}", path, batch_size=1_000)
            assert f"{changes} applied" in summary, summary
            previous, cut = cut, int(catalog.get_stream(scope, table)["lastCommit"])
            expected = source_rows(connection)
            assert read_table(catalog, registry, scope, table, cut) == expected, f"round {round_number}"
            states[cut] = expected
            feed = change_feed(catalog, registry, scope, table, previous, cut)
            assert replayed(states[previous], feed) == expected, f"round {round_number}'s change feed"
            if round_number == ROUNDS // 2:
                compacted = compact_table(catalog, registry, scope, table)
                assert read_table(catalog, registry, scope, table, compacted) == expected
                for at, state in states.items():
                    if at:
                        assert read_table(catalog, registry, scope, table, at) == state, f"cut {at} compacted"
            # a re-run of the round's file commits nothing
            if round_number == 3:
                again = run_ingest(catalog_url, f"{scope}.{table}", path, batch_size=1_000)
                assert again.startswith("0 commits"), again
                assert int(catalog.get_stream(scope, table)["lastCommit"]) == cut
    assert totals["statements"] == ROUNDS * STATEMENTS_PER_ROUND
    assert totals["changes"] > totals["statements"] * 0.6  # statements that changed nothing made no event
    assert any(r["name"] is None for r in expected)
    assert any(r["price"] is None for r in expected)
