"""Parallel decoding (worker processes) gives what the one-pass decoder gives: the same batches, source marks,
counts and errors, over re-deliveries, deletes, key changes, out-of-order positions, snapshots and bad lines;
and ``ingest`` / ``streamcat ingest --workers`` commit the same through the server."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog_api.client import CatalogClient
from catalog_api.server.cli_ingest import ingest_command
from catalog_api.streams.debezium import parallel as debezium_parallel
from catalog_api.streams.debezium.decoder import ChangeBatch, DebeziumDecoder, DebeziumError, SourceMark
from catalog_api.streams.debezium.ingest import ingest
from catalog_api.streams.debezium.parallel import ParallelDecoder
from catalog_api.streams.merge import TableLayout
from registry.client import RegistryClient
from tests.changelog.helpers import ARROW, event, line, make_table, read_table, registry_fixture, row  # noqa: F401

KEYED = TableLayout(("id",))

#: What a step of a generated history does (see ``history``).
STEPS = ("create", "update", "move", "delete", "again", "older", "snapshot", "tombstone", "empty")


def history(steps: list[tuple[str, int]]) -> list[bytes]:
    """Debezium lines of ``steps`` (kind, key): creates, updates, key changes (``move``: a ``u`` whose
    ``before`` has another key), deletes and their tombstones, snapshot reads sharing one position, the
    last line again (a tie at the highest position) and a line from further back (a lower position)."""
    lines: list[bytes] = []
    live: dict[int, dict[str, Any]] = {}
    lsn, commit = 1000, 990
    for n, (kind, key) in enumerate(steps):
        if kind in ("again", "older"):
            events = [x for x in lines if x.strip() not in (b"", b"null")]
            if events:
                lines.append(events[-1] if kind == "again" else events[len(events) * (key % 8) // 8])
            continue
        if kind in ("tombstone", "empty"):
            lines.append(b"null" if kind == "tombstone" else b"")
            continue
        if kind != "snapshot":
            lsn += 10
            if n % 3 == 0:
                commit = lsn - 5  # a new transaction
        image = row(key, qty=n, name=None if n % 4 == 0 else f"v{n}", price="AQ==", day=n, at=n * 1000,
                    ts="2024-05-06T07:08:09.123456Z", score=n / 7, data="AAE=")
        old = live.get(key)
        if kind == "snapshot":
            lines.append(line(event("r", None, image, 500, commit=0, snapshot=True)))
            live[key] = image
        elif kind == "delete" and old is not None:
            lines.append(line(event("d", live.pop(key), None, lsn, commit=commit)))
            lines.append(b"null")
        elif kind == "move" and old is not None and key + 100 not in live:
            moved = {**old, "id": key + 100}
            del live[key]
            live[key + 100] = moved
            lines.append(line(event("u", old, moved, lsn, commit=commit)))
        elif old is not None and kind in ("update", "move", "delete"):
            live[key] = image
            lines.append(line(event("u", old, image, lsn, commit=commit)))
        else:
            live[key] = image
            lines.append(line(event("c", None, image, lsn, commit=commit)))
    return lines


def outcome(batches: list[ChangeBatch], decoder: DebeziumDecoder) -> dict[str, Any]:
    """What a decoder gave: each batch's changes (as a set: the pre-merge keeps one per key, in no set order),
    events and mark; and its counts and final mark."""
    return {
        "batches": [(sorted(msgspec.json.encode(r).decode() + f"/{op}"
                            for r, op in zip(b.table.to_pylist(), b.ops.to_pylist(), strict=True)),
                     b.events, b.mark) for b in batches],
        "stats": decoder.stats, "mark": decoder.mark,
    }


def one_pass(lines: list[bytes], batch_size: int, mark: SourceMark | None = None) -> dict[str, Any]:
    decoder = DebeziumDecoder(ARROW, KEYED, batch_size=batch_size, mark=mark)
    return outcome(list(decoder.batches(lines)), decoder)


def parallel(source: Any, batch_size: int, block_bytes: int, mark: SourceMark | None = None,
             workers: int = 2) -> tuple[dict[str, Any], ParallelDecoder]:
    decoder = DebeziumDecoder(ARROW, KEYED, batch_size=batch_size, mark=mark)
    fanned = ParallelDecoder(decoder, workers, block_bytes=block_bytes, min_bytes=0)
    return outcome(list(fanned.batches(source)), decoder), fanned


def mixed_history(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    weights = [30, 25, 3, 10, 4, 3, 0, 1, 1]
    return history([(rng.choices(STEPS, weights)[0], rng.randrange(40)) for _ in range(count)])


def test_workers_give_the_one_pass_batches_from_lines_and_from_a_file(tmp_path: Path) -> None:
    lines = history([("snapshot", k) for k in range(5)]) + mixed_history(1500, seed=3)
    expected = one_pass(lines, batch_size=97)
    from_lines, fanned = parallel(lines, batch_size=97, block_bytes=2_000)
    assert from_lines == expected
    assert fanned.started
    assert fanned.slow_blocks == 0
    assert fanned.fast_blocks > 50
    source = tmp_path / "changes.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    with source.open("rb") as f:
        from_file, fanned = parallel(f, batch_size=97, block_bytes=3_000, workers=3)
    assert from_file == expected
    assert fanned.slow_blocks == 0
    # lines longer than the look-ahead for a block's end, and no line end at the end of the file
    long = [*lines[:700], *history([("create", 1000 + k) for k in range(3)]), *lines[700:]]
    long[700:703] = [x.replace(b'"name":null', b'"name":"' + b"x" * 9_000 + b'"') for x in long[700:703]]
    source.write_bytes(b"\n".join(long))
    with source.open("rb") as f:
        assert parallel(f, batch_size=97, block_bytes=3_000)[0] == one_pass(long, batch_size=97)


def test_a_rerun_from_a_mark_skips_the_same_events_as_one_pass() -> None:
    lines = history([("snapshot", k) for k in range(6)]) + mixed_history(400, seed=5)
    first = DebeziumDecoder(ARROW, KEYED, batch_size=50)
    list(first.batches(lines[:3]))  # stopped among the snapshot reads: the mark counts those applied
    assert first.mark is not None
    assert first.mark.reads == 3
    assert parallel(lines, 50, 1_500, mark=first.mark)[0] == one_pass(lines, 50, mark=first.mark)
    later = DebeziumDecoder(ARROW, KEYED, batch_size=50)
    list(later.batches(lines[:200]))
    assert parallel(lines, 50, 1_500, mark=later.mark)[0] == one_pass(lines, 50, mark=later.mark)


def test_a_bad_line_in_the_middle_of_a_block_is_named_as_one_pass_names_it() -> None:
    lines = mixed_history(600, seed=11)
    for bad, message in ((b'{"op": "c", "after": ', "not JSON"),
                         (line(event("u", None, row(3, qty=1), 99_999_999)), "an update without `before`"),
                         (line(event("c", None, {"id": 1, "nope": 2}, 99_999_999)), "not in the table")):
        broken = [*lines[:301], bad, *lines[301:]]
        with pytest.raises(DebeziumError) as expected:
            list(DebeziumDecoder(ARROW, KEYED, batch_size=64).batches(broken))
        decoder = DebeziumDecoder(ARROW, KEYED, batch_size=64)
        fanned = ParallelDecoder(decoder, 2, block_bytes=4_000, min_bytes=0)
        got: list[ChangeBatch] = []
        with pytest.raises(DebeziumError) as caught:
            got.extend(fanned.batches(broken))  # (extend keeps what came before the error)
        assert caught.value.line == expected.value.line == 302
        assert str(caught.value) == str(expected.value)
        assert message in str(caught.value)
        sequential = DebeziumDecoder(ARROW, KEYED, batch_size=64)
        before: list[ChangeBatch] = []
        try:
            for batch in sequential.batches(broken):
                before.append(batch)
        except DebeziumError:
            pass
        assert outcome(got, decoder)["batches"] == outcome(before, sequential)["batches"]
        assert fanned.slow_blocks == 1


def test_what_workers_do_not_decode_goes_one_pass_with_the_same_result() -> None:
    # MySQL positions, and a wrapped envelope whose schema changes, are left to the one-pass decoder
    mysql = [line({**event("c", None, row(k, qty=k), 1000 + k), "source": {"file": "binlog.000001", "pos": 4 + k}})
             for k in range(300)]
    assert parallel(mysql, 40, 2_000)[0] == one_pass(mysql, 40)
    lines = mixed_history(300, seed=2)
    wrapped = [x if x.strip() in (b"", b"null") else
               line({"schema": {"fields": [{"field": "after", "fields": [
                   {"field": "at", "type": "int64", "name": "io.debezium.time.Timestamp" if i > 150 else None}]}]},
                     "payload": msgspec.json.decode(x)})
               for i, x in enumerate(lines)]
    result, fanned = parallel(wrapped, 40, 3_000)
    assert result == one_pass(wrapped, 40)
    assert fanned.slow_blocks >= 1
    assert fanned.fast_blocks >= 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from(STEPS), st.integers(0, 12)), min_size=1, max_size=250),
       batch_size=st.integers(1, 60), block_bytes=st.integers(200, 6_000), resume_at=st.integers(0, 300))
def test_any_history_decodes_in_parallel_as_in_one_pass(steps: list[tuple[str, int]], batch_size: int,
                                                        block_bytes: int, resume_at: int) -> None:
    lines = history(steps)
    first = DebeziumDecoder(ARROW, KEYED, batch_size=batch_size)
    list(first.batches(lines[:resume_at]))  # a previous run's mark (None before any positioned event)
    assert parallel(lines, batch_size, block_bytes, mark=first.mark)[0] == one_pass(lines, batch_size, first.mark)


def test_ingest_and_the_command_with_workers_commit_what_one_process_commits(
        catalog: CatalogClient, registry: RegistryClient, scope: str, server_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(debezium_parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(debezium_parallel, "BLOCK_BYTES", 5_000)
    lines = mixed_history(2000, seed=7)
    alone, fanned = make_table(catalog, scope), make_table(catalog, scope)
    one = ingest(catalog, registry, scope, alone, lines, writer_id="w", batch_size=300, workers=1)
    many = ingest(catalog, registry, scope, fanned, lines, writer_id="w", batch_size=300, workers=2)
    assert (one.workers, many.workers) == (1, 2)
    assert {k: v for k, v in vars(many).items() if k not in ("seconds", "workers", "last_commit")} == \
        {k: v for k, v in vars(one).items() if k not in ("seconds", "workers", "last_commit")}
    assert read_table(catalog, registry, scope, fanned) == read_table(catalog, registry, scope, alone)
    again = ingest(catalog, registry, scope, fanned, lines, writer_id="w", batch_size=300, workers=2)
    assert (again.commits, again.applied) == (0, 0)

    table = make_table(catalog, scope)
    source = tmp_path / "changes.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    arguments = ["--table", f"{scope}.{table}", "--format", "debezium-json", "--writer-id", "cli",
                 "--batch-size", "300", "--uri", server_url, "--workers", "2", str(source)]
    done = CliRunner().invoke(ingest_command, arguments)
    assert done.exit_code == 0, done.output
    assert "2 decoding processes" in done.stdout
    assert read_table(catalog, registry, scope, table) == read_table(catalog, registry, scope, alone)
