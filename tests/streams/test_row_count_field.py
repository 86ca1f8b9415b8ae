"""The aggregation engine's ``'aggregation.row-count-field'`` (docs/changelog-tables.md, "Merge engines"): a key
whose count sums to 0 is not live at any cut, leaves the change feed as a delete, is not written by compaction,
and starts again from its next input; what the server refuses."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest

from catalog_api.client import CatalogClient
from catalog_api.streams import StreamReader, StreamWriter
from catalog_api.streams.changelog import CHANGE_TYPE
from catalog_api.streams.compaction import compact
from registry.client import RegistryClient
from registry.errors import BadRequest

SCHEMA = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("s", pa.int64()),
                    pa.field("n", pa.int64())])
SPARK_SCHEMA = {"type": "struct", "fields": [
    {"name": "k", "type": "string", "nullable": False, "metadata": {}},
    {"name": "s", "type": "long", "nullable": True, "metadata": {}},
    {"name": "n", "type": "long", "nullable": True, "metadata": {}},
]}
PROPERTIES = {"primary-key": "k", "merge-engine": "aggregation", "fields.s.aggregate-function": "sum",
              "fields.n.aggregate-function": "sum", "aggregation.row-count-field": "n"}


def test_a_key_whose_count_sums_to_zero_is_gone_everywhere(server_url: str, catalog: CatalogClient,
                                                           scope: str) -> None:
    registry = RegistryClient(server_url, scope)
    name = f"counted{uuid.uuid4().hex[:8]}"
    catalog.create_table(scope, name, SPARK_SCHEMA, properties=PROPERTIES)
    deltas = [  # per commit, per key: (sum delta, count delta), as a materialized table's steps write them
        [("a", 5, 2), ("b", 1, 1)],
        [("a", -5, -2), ("b", 3, 1), ("c", 0, 0)],  # a's rows all leave; c came and went within the step
        [("a", 4, 1)],
    ]
    with StreamWriter(catalog, registry, scope, name) as writer:
        for commit in deltas:
            writer.write_changes(pa.Table.from_pylist([dict(zip("ksn", d, strict=True)) for d in commit],
                                                      schema=SCHEMA), [0] * len(commit))
            writer.flush()
    reader = StreamReader(catalog, registry, scope, name)
    expected = {1: {("a", 5, 2), ("b", 1, 1)}, 2: {("b", 4, 2)}, 3: {("a", 4, 1), ("b", 4, 2)}}
    for cut, rows in expected.items():
        assert {(r["k"], r["s"], r["n"]) for r in reader.read(cut=cut)} == rows, cut
    feed = pa.Table.from_batches(list(reader.change_batches(1, 2))).to_pylist()
    assert sorted((r["k"], r[CHANGE_TYPE]) for r in feed) == [
        ("a", "delete"), ("b", "update_postimage"), ("b", "update_preimage")]
    # compaction at cut 2 writes no row for a (a read of it needs no merge), and a comes back from zero
    with StreamWriter(catalog, registry, scope, name) as writer:
        writer.write_changes(pa.Table.from_pylist([{"k": "a", "s": -4, "n": -1}], schema=SCHEMA), [0])
        writer.flush()
    compact(catalog, registry, scope, name)
    assert {(r["k"], r["s"], r["n"]) for r in reader.read()} == {("b", 4, 2)}
    with StreamWriter(catalog, registry, scope, name) as writer:
        writer.write_changes(pa.Table.from_pylist([{"k": "a", "s": 7, "n": 1}], schema=SCHEMA), [0])
        writer.flush()
    assert {(r["k"], r["s"], r["n"]) for r in reader.read()} == {("a", 7, 1), ("b", 4, 2)}


@pytest.mark.parametrize(("properties", "message"), [
    ({"aggregation.row-count-field": "x"}, "must name a column of the table that is not a key column"),
    ({"aggregation.row-count-field": "k"}, "must name a column of the table that is not a key column"),
    ({"aggregation.row-count-field": "n", "fields.n.aggregate-function": "max"}, "needs 'fields.n.aggregate"),
    ({"aggregation.row-count-field": "n", "merge-engine": "deduplicate"}, "apply to tables with 'merge-engine'"),
])
def test_the_server_refuses_a_row_count_it_cannot_apply(catalog: CatalogClient, scope: str,
                                                        properties: dict[str, str], message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        catalog.create_table(scope, f"t{uuid.uuid4().hex[:8]}", SPARK_SCHEMA, properties={**PROPERTIES, **properties})
