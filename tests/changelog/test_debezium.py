"""The Debezium decoder: both envelopes, every op, tombstones, re-deliveries, bad lines, value types, pre-merge."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from catalog_api.streams.debezium.decoder import (
    ChangeBatch,
    DebeziumDecoder,
    DebeziumError,
    SourceMark,
    source_position,
)
from catalog_api.streams.merge import TableLayout
from tests.changelog.helpers import ARROW, event, line, row

KEYED = TableLayout(("id",))


def decode(events: list[Any], layout: TableLayout = KEYED, batch_size: int = 1000,
           mark: SourceMark | None = None, **options: Any) -> tuple[list[ChangeBatch], DebeziumDecoder]:
    decoder = DebeziumDecoder(ARROW, layout, batch_size=batch_size, mark=mark, **options)
    return list(decoder.batches(events)), decoder


def changes(batches: list[ChangeBatch]) -> list[tuple[int, dict[str, Any]]]:
    """(op, row) of every batch's rows, in order."""
    out = []
    for batch in batches:
        for op, record in zip(batch.ops.to_pylist(), batch.table.to_pylist(), strict=True):
            out.append((op, record))
    return out


def wrapped(payload: dict[str, Any] | None, fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The schema/payload envelope (the JSON converter with schemas.enable), with a schema for the row."""
    columns = fields or [{"type": "int64", "optional": False, "field": "id"},
                         {"type": "string", "optional": True, "field": "name"}]
    schema = {"type": "struct", "name": "test.public.t.Envelope", "optional": False, "fields": [
        {"type": "struct", "optional": True, "name": "test.public.t.Value", "field": "before", "fields": columns},
        {"type": "struct", "optional": True, "name": "test.public.t.Value", "field": "after", "fields": columns},
        {"type": "struct", "optional": False, "field": "source", "fields": []},
        {"type": "string", "optional": False, "field": "op"},
    ]}
    return {"schema": schema, "payload": payload}


# -- envelopes and ops -------------------------------------------------------------------------------

def test_both_envelopes_give_the_same_changes() -> None:
    events = [
        event("r", None, row(1, name="snap"), 100, snapshot=True),
        event("c", None, row(2, name="two"), 110),
        event("u", row(2, name="two"), row(2, name="deux"), 120),
        event("d", row(1, name="snap"), None, 130),
    ]
    bare, _ = decode([line(e) for e in events])
    full, _ = decode([line(wrapped(e)) for e in events])
    assert changes(bare) == changes(full)
    assert [(op, r["id"], r["name"]) for op, r in changes(bare)] == [(1, 1, None), (0, 2, "deux")]


def test_every_op_and_a_key_change() -> None:
    batches, decoder = decode([line(e) for e in [
        event("c", None, row(1, name="a"), 100),
        event("r", None, row(2, name="b"), 110),
        event("u", row(2, name="b"), row(2, name="B"), 120),
        event("c", None, row(3, name="c"), 130),
        event("u", row(3, name="c"), row(4, name="c"), 140),  # the key changes: 3 goes, 4 comes
        event("d", row(1, name="a"), None, 150),
    ]])
    assert sorted((op, r["id"], r["name"]) for op, r in changes(batches)) == [
        (0, 2, "B"), (0, 4, "c"), (1, 1, None), (1, 3, None)]
    assert decoder.stats.applied == 6
    deleted = [r for op, r in changes(batches) if op == 1]
    assert all({k for k, v in r.items() if v is not None} == {"id"} for r in deleted)  # only the key


def test_tombstones_are_skipped() -> None:
    batches, decoder = decode([
        line(event("c", None, row(1), 100)), b"", b"\n", b"null", b"null\n", line(wrapped(None)),
        line({"schema": None, "payload": None}), None, line(event("d", row(1), None, 110)),
    ])
    assert decoder.stats.tombstones == 7
    assert [(op, r["id"]) for op, r in changes(batches)] == [(1, 1)]


def test_the_last_change_of_a_key_wins_within_a_batch_and_batches_split_by_size() -> None:
    events = [line(event("c" if i == 0 else "u", row(7, qty=i - 1) if i else None, row(7, qty=i), 100 + i))
              for i in range(10)]
    batches, _ = decode(events, batch_size=4)
    assert [b.events for b in batches] == [4, 4, 2]
    assert [b.table.num_rows for b in batches] == [1, 1, 1]
    assert [b.table.column("qty").to_pylist() for b in batches] == [[3], [7], [9]]
    assert [b.lines for b in batches] == [(1, 4), (5, 8), (9, 10)]
    assert [b.mark.position if b.mark else None for b in batches] == [(102, 103), (106, 107), (108, 109)]


def test_partial_update_merges_non_null_fields_and_keeps_a_delete_before_them() -> None:
    layout = TableLayout(("id",), merge_engine="partial-update")
    batches, _ = decode([line(e) for e in [
        event("c", None, row(1, name="a", qty=1), 100),
        event("u", row(1), row(1, qty=2), 110),
        event("c", None, row(2, name="x"), 120),
        event("d", row(2), None, 130),
        event("c", None, row(2, qty=5), 140),
        event("u", row(2), row(2, name="y"), 150),
    ]], layout=layout)
    assert [(op, r["id"], r["name"], r["qty"]) for op, r in changes(batches)] == [
        (0, 1, "a", 2), (1, 2, None, None), (0, 2, "y", 5)]


def test_a_sequence_field_keeps_every_change() -> None:
    layout = TableLayout(("id",), sequence_field="qty")
    batches, _ = decode([line(e) for e in [
        event("c", None, row(1, qty=1), 100), event("u", row(1), row(1, qty=2), 110), event("d", row(1), None, 120),
    ]], layout=layout)
    assert [(op, r["qty"]) for op, r in changes(batches)] == [(0, 1), (0, 2), (1, None)]


def test_composite_keys() -> None:
    schema = pa.schema([pa.field("a", pa.string(), nullable=False), pa.field("b", pa.int64(), nullable=False),
                        pa.field("v", pa.string())])
    decoder = DebeziumDecoder(schema, TableLayout(("a", "b")))
    batches = list(decoder.batches([line(e) for e in [
        event("c", None, {"a": "x", "b": 1, "v": "1"}, 100),
        event("c", None, {"a": "x", "b": 2, "v": "2"}, 110),
        event("u", {"a": "x", "b": 1, "v": "1"}, {"a": "x", "b": 1, "v": "one"}, 120),
        event("d", {"a": "x", "b": 2, "v": None}, None, 130),
    ]]))
    assert sorted(zip(batches[0].ops.to_pylist(), batches[0].table.to_pylist(), strict=True)) == [
        (0, {"a": "x", "b": 1, "v": "one"}), (1, {"a": "x", "b": 2, "v": None})]


# -- re-deliveries -------------------------------------------------------------------------------------

def test_redelivered_events_are_applied_once() -> None:
    first = [event("c", None, row(1, qty=1), 100), event("u", row(1, qty=1), row(1, qty=2), 110)]
    # a restarted connector sends the tail again, then goes on; one event is even sent twice in a row
    again = [*first, event("u", row(1, qty=2), row(1, qty=3), 120), event("u", row(1, qty=2), row(1, qty=3), 120),
             event("u", row(1, qty=3), row(1, qty=4), 130)]
    batches, decoder = decode([line(e) for e in first + again], batch_size=1)
    assert [r["qty"] for _, r in changes(batches)] == [1, 2, 3, 4]
    assert (decoder.stats.events, decoder.stats.applied, decoder.stats.duplicates) == (7, 4, 3)


def test_a_primary_key_update_gives_two_events_at_one_position() -> None:
    # PostgreSQL's connector sends a delete, a tombstone and a create for one WAL record
    events = [event("c", None, row(1, qty=1), 100), event("d", row(1, qty=1), None, 110), None,
              event("c", None, row(2, qty=1), 110)]
    batches, decoder = decode([line(e) for e in events + events], batch_size=1)
    assert [(op, r["id"]) for op, r in changes(batches)] == [(0, 1), (1, 1), (0, 2)]
    assert decoder.stats.duplicates == 3
    assert batches[-1].mark == SourceMark("postgresql", (109, 110), 0, "dc")
    # a re-run after the delete was committed applies the create only
    batches, _ = decode([line(e) for e in events], mark=SourceMark("postgresql", (109, 110), 0, "d"))
    assert [(op, r["id"]) for op, r in changes(batches)] == [(0, 2)]


def test_snapshot_reads_share_a_position_and_a_mark_counts_them() -> None:
    snapshot = [event("r", None, row(i), 500, commit=0, snapshot=True) for i in range(1, 6)]
    batches, _decoder = decode([line(e) for e in snapshot], batch_size=3)
    assert [r["id"] for _, r in changes(batches)] == [1, 2, 3, 4, 5]
    assert [b.mark for b in batches] == [SourceMark("postgresql", (0, 500), 3), SourceMark("postgresql", (0, 500), 5)]
    assert batches[-1].mark is not None
    assert SourceMark.from_property(batches[-1].mark.to_property()) == batches[-1].mark
    # a re-run resuming after the first batch applies the last two only
    batches, _ = decode([line(e) for e in snapshot], mark=SourceMark("postgresql", (0, 500), 3))
    assert [r["id"] for _, r in changes(batches)] == [4, 5]
    # after the snapshot, a streamed change to the same table goes on from there
    batches, _ = decode([line(e) for e in [*snapshot, event("u", row(1), row(1, name="x"), 510, commit=505)]],
                        mark=SourceMark("postgresql", (0, 500), 5))
    assert [(r["id"], r["name"]) for _, r in changes(batches)] == [(1, "x")]


def test_source_positions_of_postgresql_and_mysql() -> None:
    assert source_position({"lsn": 42, "sequence": '["40","42"]'}) == ("postgresql", (40, 42))
    assert source_position({"lsn": 42, "sequence": '[null,"42"]'}) == ("postgresql", (0, 42))
    assert source_position({"lsn": 42}) == ("postgresql", (0, 42))
    assert source_position({"file": "mysql-bin.000003", "pos": 154, "row": 1}) == (
        "mysql", ("mysql-bin.000003", 154, 1))
    assert source_position({"connector": "sqlserver", "change_lsn": "x"}) is None
    # transactions interleave in the WAL: the commit LSN orders them
    later = source_position({"lsn": 90, "sequence": '["200","90"]'})
    earlier = source_position({"lsn": 150, "sequence": '["100","150"]'})
    assert later is not None
    assert earlier is not None
    assert later[1] > earlier[1]


def test_mysql_positions_deduplicate_too() -> None:
    def my(op: str, before: Any, after: Any, pos: int, r: int = 0) -> dict[str, Any]:
        return {"before": before, "after": after, "op": op,
                "source": {"connector": "mysql", "file": "mysql-bin.000001", "pos": pos, "row": r}}
    events = [my("c", None, row(1), 10), my("c", None, row(2), 20, 0), my("c", None, row(3), 20, 1),
              my("c", None, row(2), 20, 0), my("d", row(1), None, 30)]
    batches, decoder = decode([line(e) for e in events])
    assert sorted((op, r["id"]) for op, r in changes(batches)) == [(0, 2), (0, 3), (1, 1)]
    assert decoder.stats.duplicates == 1


# -- refused lines ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("bad", "message"), [
    (b"{not json", "line 3: not JSON"),
    (b"[1, 2]", "line 3: an event is a JSON object"),
    (line({"op": "x", "after": row(9)}), "line 3: unknown op 'x'"),
    (line(event("c", None, None, 900)), "line 3: op 'c' without an `after` row"),
    (line(event("c", None, {"name": "no key"}, 900)), r"line 3: a key column \(id\) missing or null in `after`"),
    (line(event("u", None, row(1, name="x"), 900)), "line 3: an update without `before`; .*REPLICA IDENTITY FULL"),
    (line(event("u", {"name": "a"}, row(1), 900)), r"line 3: an update whose `before` lacks a key column \(id\).*"
                                                   "REPLICA IDENTITY FULL"),
    (line(event("d", None, None, 900)), "line 3: a delete without `before`; .*REPLICA IDENTITY FULL"),
    (line(event("d", {"id": None, "name": "a"}, None, 900)), r"line 3: a delete whose `before` lacks a key.*null"),
    (line(event("c", None, row(5, qty="many"), 900)), "line 3: column 'qty': 'many' does not convert to int32"),
    (line(event("c", None, {**row(5), "colour": "red"}, 900)), r"line 3: columns \['colour'\] are not in the table"),
    (line(event("c", None, row(5, price="%%%"), 900)), "line 3: column 'price': '%%%' does not convert"),
])
def test_a_bad_line_fails_its_batch_naming_the_line(bad: bytes, message: str) -> None:
    decoder = DebeziumDecoder(ARROW, KEYED, batch_size=2)
    good = [line(event("c", None, row(i), 100 + i)) for i in range(1, 3)]
    batches = decoder.batches([*good, bad, line(event("c", None, row(4), 990))])
    first = next(batches)
    assert first.lines == (1, 2)
    with pytest.raises(DebeziumError, match=message) as caught:
        next(batches)
    assert caught.value.line == 3


def test_a_bad_value_is_found_among_many() -> None:
    events = [line(event("c", None, row(i, day=19000 + i), 100 + i)) for i in range(1, 500)]
    events[321] = line(event("c", None, row(322, day="not a date"), 9000))
    with pytest.raises(DebeziumError, match="line 322: column 'day'"):
        decode(events)


# -- value types -------------------------------------------------------------------------------------------

def unscaled(value: int) -> str:
    return base64.b64encode(value.to_bytes(16, "big", signed=True).lstrip(b"\0") or b"\0").decode()


def test_postgresql_default_encodings_convert_to_the_column_types() -> None:
    image = row(1, name="é", qty=-3, price=unscaled(-12345), flag=True, day=19_000, at=1_700_000_000_123_456,
                ts="2023-11-14T22:13:20.123456Z", score=0.1, data=base64.b64encode(b"\x00\xffbytes").decode())
    batches, _ = decode([line(event("c", None, image, 100))])
    assert batches[0].table.to_pylist() == [{
        "id": 1, "name": "é", "qty": -3, "price": Decimal("-123.45"), "flag": True,
        "day": dt.date(2022, 1, 8), "at": dt.datetime(2023, 11, 14, 22, 13, 20, 123456),
        "ts": dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=dt.UTC), "score": 0.1, "data": b"\x00\xffbytes",
    }]


def test_big_and_small_decimals_and_the_other_decimal_modes() -> None:
    big = 10**11 - 1  # the largest numeric(12,2) unscaled value
    prices = [unscaled(big), unscaled(-big), unscaled(0), None, {"scale": 1, "value": unscaled(15)}]
    batches, _ = decode([line(event("c", None, row(i, price=p), 100 + i)) for i, p in enumerate(prices)])
    assert batches[0].table.column("price").to_pylist() == [
        Decimal("999999999.99"), Decimal("-999999999.99"), Decimal("0.00"), None, Decimal("1.50")]
    batches, _ = decode([line(event("c", None, row(1, price="12.5"), 100))], decimal_handling="string")
    assert batches[0].table.column("price").to_pylist() == [Decimal("12.50")]
    batches, _ = decode([line(event("c", None, row(1, price=12.25), 100))], decimal_handling="double")
    assert batches[0].table.column("price").to_pylist() == [Decimal("12.25")]


def test_the_envelope_schema_names_units_and_scales() -> None:
    fields = [{"type": "int64", "optional": False, "field": "id"},
              {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "field": "at"},
              {"type": "int64", "optional": True, "name": "io.debezium.time.NanoTimestamp", "field": "ts"},
              {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
               "parameters": {"scale": "3"}, "field": "price"}]
    image: dict[str, Any] = {"id": 1, "at": 1_700_000_000_123, "ts": 1_700_000_000_123_456_000,
                             "price": unscaled(12340)}
    batches, _ = decode([line(wrapped(event("c", None, image, 100), fields))])
    record = batches[0].table.to_pylist()[0]
    assert record["at"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000)
    assert record["ts"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=dt.UTC)
    assert record["price"] == Decimal("12.34")
    # nanoseconds the column cannot hold are refused, not cut
    image["ts"] += 1
    with pytest.raises(DebeziumError, match="line 1: column 'ts'"):
        decode([line(wrapped(event("c", None, image, 100), fields))])


def test_a_schema_change_starts_a_new_batch() -> None:
    ms = [{"type": "int64", "optional": False, "field": "id"},
          {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "field": "at"}]
    us = [{"type": "int64", "optional": False, "field": "id"},
          {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "field": "at"}]
    batches, _ = decode([line(wrapped(event("c", None, {"id": 1, "at": 1000}, 100), ms)),
                         line(wrapped(event("c", None, {"id": 2, "at": 1000}, 110), us))])
    assert [b.table.column("at").to_pylist() for b in batches] == [
        [dt.datetime(1970, 1, 1, 0, 0, 1)], [dt.datetime(1970, 1, 1, 0, 0, 0, 1000)]]


def test_parsed_events_go_in_as_dicts() -> None:
    batches, decoder = decode([event("c", None, row(1), 100), None, wrapped(event("c", None, row(2), 110))])
    assert [r["id"] for _, r in changes(batches)] == [1, 2]
    assert decoder.stats.tombstones == 1


def test_the_columns_at_once_equal_the_columns_one_by_one() -> None:
    from catalog_api.streams.debezium.values import Hint, convert

    images = [row(i, name=f"n{i}", qty=i - 50, price=unscaled(i * 1001 - 7), flag=i % 2 == 0, day=i * 37,
                  at=i * 1_000_003, ts=f"2024-0{1 + i % 9}-1{i % 10}T0{i % 10}:00:00.{i:06d}+02:00", score=i / 7,
                  data=base64.b64encode(bytes([i % 256])).decode()) for i in range(1, 300)]
    images += [row(1000 + i) for i in range(20)]  # nulls
    decoder = DebeziumDecoder(ARROW, KEYED)
    rows = [tuple(image[c] for c in ARROW.names) for image in images]
    at_once = decoder._columns_at_once(rows)
    assert at_once is not None
    one_by_one = [convert(list(values), target, Hint(), "precise")
                  for values, target in zip(zip(*rows, strict=True), ARROW.types, strict=True)]
    assert [c.to_pylist() for c in at_once] == [c.to_pylist() for c in one_by_one]
    # a value that does not fit sends the batch down the column-by-column path, which names its line
    assert decoder._columns_at_once([*rows[:-1], (*rows[-1][:2], 2**40, *rows[-1][3:])]) is None
