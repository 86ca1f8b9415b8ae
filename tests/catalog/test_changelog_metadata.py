"""The server side of tables that change (docs/changelog-tables.md): commit kinds and what each cut
sees, compare-and-set and removal conflicts, commit times, compaction order, the change description,
registered readers, expiry and gc, primary-key tables, and the 0008 migration.

Run against every backend of the ``database_url`` fixture, over real HTTP; visibility is compared
with a model of the rules written out below (the oracle), at every cut.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from catalog_api.client import CatalogClient
from catalog_api.errors import CommitConflict, ReaderNotFound, StreamNotFound
from catalog_api.model import Chunk
from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.cli_streams import streams
from catalog_api.server.config import Settings
from catalog_api.service import CatalogService
from registry.client import RegistryClient
from registry.db import make_engine
from registry.errors import BadRequest, GroupNotFound
from tests.conftest import new_database
from tests.support.auth import Api, add_user, auth_server, unique

# -- helpers ---------------------------------------------------------------------------------------


def col(name: str, type_: Any, nullable: bool = True) -> dict[str, Any]:
    """A StructField in Spark's JSON form."""
    return {"name": name, "type": type_, "nullable": nullable, "metadata": {}}


def struct(*fields: dict[str, Any]) -> dict[str, Any]:
    """A StructType in Spark's JSON form."""
    return {"type": "struct", "fields": list(fields)}


ORDERS = struct(col("id", "long"), col("region", "string"), col("amount", "double"), col("ts", "long"))


def chunk(path: str, kind: str = "columnar", events: int = 1) -> Chunk:
    """A chunk to commit (its file need not exist unless gc looks at it)."""
    return Chunk(path=path, kind=kind, event_count=events, bytes=10 * events)


@pytest.fixture
def service(settings: Settings) -> Iterator[CatalogService]:
    """The catalog service on the test server's database, as the admin host (gc, expire) builds it."""
    extension = create_app(settings).extensions["streamcat"]
    yield extension.catalog
    extension.engine.dispose()


def paths(catalog: CatalogClient, scope: str, stream: str, **where: Any) -> list[str]:
    """The chunk paths a snapshot lists, in its order."""
    return [c.path for c in catalog.snapshot(scope, stream, **where)[1]]


# -- the oracle: the visibility rules of docs/changelog-tables.md, written out -----------------------


@dataclass
class Added:
    """A chunk as the model knows it."""

    path: str
    added: int
    sequence: int
    index: int
    removed: int | None = None


@dataclass
class Model:
    """What each cut of a stream shows, by the rules: an overwrite removes every live chunk, row-level
    commits and compactions the chunks they name; a compaction's chunks sort at its base cut."""

    chunks: dict[str, Added] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)
    last: int = 0
    truncated: int = 0

    def live(self) -> list[Added]:
        return [c for c in self.chunks.values() if c.removed is None and c.added > self.truncated]

    def commit(self, kind: str, added: list[str], removes: list[str], base: int | None = None) -> int:
        number = self.last + 1
        for c in self.chunks.values():
            if (kind == "overwrite" and c.removed is None) or c.path in removes:
                c.removed = number
        sequence = base if kind == "compaction" and base is not None else number
        for p in added:
            self.chunks[p] = Added(p, number, sequence, len(self.chunks))
        self.kinds[number] = kind
        self.last = number
        return number

    @staticmethod
    def _ordered(found: list[Added]) -> list[str]:
        return [c.path for c in sorted(found, key=lambda c: (c.sequence, c.added, c.index))]

    def visible(self, cut: int) -> list[str]:
        return self._ordered([
            c for c in self.chunks.values()
            if self.truncated < c.added <= cut and (c.removed is None or c.removed > cut)
        ])

    def after(self, position: int, cut: int) -> list[str]:
        return self._ordered([
            c for c in self.chunks.values()
            if max(position, self.truncated) < c.added <= cut and self.kinds[c.added] != "compaction"
        ])


def _random_commit(rng: random.Random, model: Model, step: int) -> dict[str, Any]:
    """A random commit the rules allow: its kind, chunks, removals and cuts."""
    live = model.live()
    roll = rng.random()
    new = [f"c{step}-{i}.parquet" for i in range(rng.randint(1, 2))]
    if roll < 0.12 and model.last:
        return {"kind": "overwrite", "added": new[: rng.randint(0, len(new))], "removes": []}
    if roll < 0.35 and live:
        removes = [c.path for c in rng.sample(live, rng.randint(0, min(2, len(live))))]
        added = [f"d{step}.deletes"] if rng.random() < 0.6 else []
        if not added and not removes:
            added = new
        return {"kind": "row-level", "added": added, "removes": removes, "read_cut": rng.randint(0, model.last)}
    if roll < 0.55 and live:
        base = rng.randint(min(c.sequence for c in live), model.last)
        candidates = [c for c in live if c.sequence <= base]
        removes = [c.path for c in rng.sample(candidates, rng.randint(1, min(3, len(candidates))))]
        return {"kind": "compaction", "added": new[:1], "removes": removes, "base_cut": base}
    return {"kind": "append", "added": new, "removes": []}


def test_every_cut_shows_what_the_rules_say_after_random_commits(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "s")
    rng, model = random.Random(11), Model()
    for step in range(40):
        spec = _random_commit(rng, model, step)
        answer = catalog.commit(
            scope, "s",
            [chunk(p, "deletes" if p.endswith(".deletes") else "columnar") for p in spec["added"]],
            kind=spec["kind"], removes=spec["removes"], read_cut=spec.get("read_cut"), base_cut=spec.get("base_cut"),
        )
        number = model.commit(spec["kind"], spec["added"], spec["removes"], spec.get("base_cut"))
        assert (answer["number"], answer["kind"], answer["overwrite"]) == (
            number, spec["kind"], spec["kind"] == "overwrite"
        )
        assert (answer["readCut"], answer["baseCut"]) == (spec.get("read_cut"), spec.get("base_cut"))
    assert set(model.kinds.values()) == {"append", "overwrite", "row-level", "compaction"}, "every kind was made"
    for cut in range(model.last + 1):
        assert paths(catalog, scope, "s", cut=cut) == model.visible(cut), f"cut {cut}"
    for position in range(0, model.last + 1, 3):
        assert paths(catalog, scope, "s", after=position) == model.after(position, model.last), f"after {position}"
    # What the server says of each chunk is the model's too.
    for listed in catalog.snapshot(scope, "s", cut=model.last // 2)[1]:
        known = model.chunks[listed.path]
        assert (listed.commit, listed.sequence, listed.removed_at) == (known.added, known.sequence, known.removed)
    catalog.truncate_stream(scope, "s", model.last // 3)
    model.truncated = model.last // 3
    for cut in range(model.last + 1):
        assert paths(catalog, scope, "s", cut=cut) == model.visible(cut), f"cut {cut} after truncation"


def test_each_commit_kind_at_each_cut(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "s")
    catalog.commit(scope, "s", [chunk("a.parquet")])                                           # 1
    catalog.commit(scope, "s", [chunk("b.parquet"), chunk("c.parquet")])                       # 2
    catalog.commit(scope, "s", [chunk("p.deletes", "deletes")], kind="row-level", read_cut=2,
                   removes=["c.parquet"])                                                      # 3
    catalog.commit(scope, "s", [chunk("ab.parquet")], kind="compaction", base_cut=3,
                   removes=["a.parquet", "b.parquet", "p.deletes"])                            # 4
    catalog.commit(scope, "s", [chunk("e.parquet")])                                           # 5
    catalog.commit(scope, "s", [chunk("o.parquet")], overwrite=True)                           # 6
    catalog.commit(scope, "s", [], kind="overwrite")                                           # 7: TRUNCATE TABLE
    catalog.commit(scope, "s", [chunk("f.parquet")])                                           # 8
    expected = {
        0: [], 1: ["a.parquet"], 2: ["a.parquet", "b.parquet", "c.parquet"],
        3: ["a.parquet", "b.parquet", "p.deletes"], 4: ["ab.parquet"], 5: ["ab.parquet", "e.parquet"],
        6: ["o.parquet"], 7: [], 8: ["f.parquet"],
    }
    for cut, wanted in expected.items():
        assert paths(catalog, scope, "s", cut=cut) == wanted, f"cut {cut}"
    # A compaction sorts at its base cut: before what commits after the base added.
    listed = {c.path: c for c in catalog.snapshot(scope, "s", cut=5)[1]}
    assert (listed["ab.parquet"].sequence, listed["ab.parquet"].commit) == (3, 4)
    assert listed["e.parquet"].sequence == 5
    # Streaming reads skip the compaction: its rows were all read already.
    assert paths(catalog, scope, "s", after=3, cut=5) == ["e.parquet"]
    commits = catalog.commits(scope, "s")
    assert [c["kind"] for c in commits] == [
        "append", "append", "row-level", "compaction", "append", "overwrite", "overwrite", "append"
    ]
    assert [c["overwrite"] for c in commits] == [False] * 5 + [True, True, False]


def test_commits_a_kind_refuses_are_400_and_change_nothing(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "s")
    catalog.commit(scope, "s", [chunk("a.parquet")])
    refused: list[tuple[dict[str, Any], str]] = [
        ({"kind": "row-level"}, "readCut"),
        ({"kind": "row-level", "read_cut": 5}, "past the latest commit"),
        ({"kind": "compaction"}, "baseCut"),
        ({"kind": "compaction", "base_cut": 2}, "base cut 2"),
        ({"kind": "append", "removes": ["a.parquet"]}, "remove"),
        ({"kind": "append", "base_cut": 1}, "baseCut"),
        ({"kind": "append", "read_cut": 1}, "readCut"),
        ({"kind": "append", "overwrite": True}, "overwrite"),
        ({"kind": "row-level", "read_cut": 1, "removes": ["../x"]}, "relative"),
        ({"kind": "row-level", "read_cut": 1, "removes": ["a.parquet", "a.parquet"]}, "twice"),
        ({"kind": "row-level", "read_cut": 1, "removes": ["n.parquet"], "extra": "n.parquet"}, "both adds and removes"),
    ]
    for options, message in refused:
        added = [chunk(options.pop("extra", "n.parquet"))]
        with pytest.raises(BadRequest, match=message):
            catalog.commit(scope, "s", added, **options)
    with pytest.raises(BadRequest, match="at least one chunk"):
        catalog.commit(scope, "s", [], kind="row-level", read_cut=1)
    with pytest.raises(BadRequest):
        catalog.commit(scope, "s", [chunk("n.parquet")], kind="merge")
    assert catalog.get_stream(scope, "s")["lastCommit"] == 1
    assert paths(catalog, scope, "s") == ["a.parquet"]


def test_a_compaction_cannot_remove_what_sorts_after_its_base(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "s")
    catalog.commit(scope, "s", [chunk("a.parquet")])
    catalog.commit(scope, "s", [chunk("b.parquet")])
    with pytest.raises(BadRequest, match=r"b\.parquet"):
        catalog.commit(scope, "s", [chunk("ab.parquet")], kind="compaction", base_cut=1,
                       removes=["a.parquet", "b.parquet"])
    assert paths(catalog, scope, "s") == ["a.parquet", "b.parquet"]


# -- conflicts -------------------------------------------------------------------------------------


def test_removing_a_chunk_that_is_not_live_conflicts(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "s")
    catalog.commit(scope, "s", [chunk("a.parquet"), chunk("b.parquet")])
    catalog.commit(scope, "s", [chunk("c.parquet")])
    catalog.commit(scope, "s", [], kind="row-level", read_cut=2, removes=["a.parquet"])
    cases = {
        "removed already": ["a.parquet"],
        "never committed": ["nope.parquet"],
        "one of two gone": ["b.parquet", "a.parquet"],
    }
    for why, removes in cases.items():
        with pytest.raises(CommitConflict, match="not a live chunk"):
            catalog.commit(scope, "s", [], kind="row-level", read_cut=3, removes=removes)
        assert catalog.get_stream(scope, "s")["lastCommit"] == 3, why
    catalog.truncate_stream(scope, "s", 1)
    with pytest.raises(CommitConflict, match=r"b\.parquet"):
        catalog.commit(scope, "s", [chunk("bc.parquet")], kind="compaction", base_cut=2, removes=["b.parquet"])
    assert paths(catalog, scope, "s") == ["c.parquet"], "refused commits changed nothing"
    catalog.commit(scope, "s", [], kind="row-level", read_cut=3, removes=["c.parquet"])
    assert paths(catalog, scope, "s") == []


def test_expected_last_commit_is_a_compare_and_set(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "s")
    catalog.commit(scope, "s", [chunk("a.parquet")], expected_last_commit=0)
    with pytest.raises(CommitConflict, match="at commit 1, not 0"):
        catalog.commit(scope, "s", [chunk("b.parquet")], expected_last_commit=0)
    assert catalog.get_stream(scope, "s")["lastCommit"] == 1
    # Racing writers that all read commit 1: exactly one gets in, the others are told to retry.
    outcomes: list[str] = []

    def race(i: int) -> None:
        try:
            catalog.commit(scope, "s", [chunk(f"r{i}.parquet")], kind="row-level", read_cut=1,
                           removes=["a.parquet"], expected_last_commit=1)
            outcomes.append("committed")
        except CommitConflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=race, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["committed"] + ["conflict"] * 5
    assert catalog.get_stream(scope, "s")["lastCommit"] == 2
    assert len(paths(catalog, scope, "s")) == 1


def test_a_repeated_writer_sequence_is_acknowledged_before_any_check(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "s")
    catalog.commit(scope, "s", [chunk("a.parquet")])
    first = catalog.commit(scope, "s", [chunk("d.deletes", "deletes")], kind="row-level", read_cut=1,
                           removes=["a.parquet"], writer_id="w", writer_sequence=7, expected_last_commit=1)
    # The retry of a commit whose answer was lost: a.parquet is gone and the stream moved on, yet the
    # answer is the first commit's, and nothing is written twice.
    again = catalog.commit(scope, "s", [chunk("d.deletes", "deletes")], kind="row-level", read_cut=1,
                           removes=["a.parquet"], writer_id="w", writer_sequence=7, expected_last_commit=1)
    assert again["duplicate"] is True
    assert (again["number"], again["kind"], again["readCut"]) == (first["number"], "row-level", 1)
    assert catalog.get_stream(scope, "s")["lastCommit"] == 2


def test_commit_times_increase_strictly_under_a_burst(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "s")

    def burst(worker: int) -> None:
        for i in range(20):
            catalog.commit(scope, "s", [chunk(f"w{worker}-{i}.parquet")])

    threads = [threading.Thread(target=burst, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    commits = catalog.commits(scope, "s")
    assert [c["number"] for c in commits] == list(range(1, 61))
    times = [c["createdAt"] for c in commits]
    assert all(a < b for a, b in itertools.pairwise(times)), times
    assert [c["timestamp"] for c in commits] == times
    # TIMESTAMP AS OF a commit's time is that commit's cut, whatever shared its millisecond before.
    for c in commits[::7]:
        assert catalog.snapshot(scope, "s", as_of_time=c["createdAt"])[0] == c["number"]


# -- the change description -------------------------------------------------------------------------


def test_changes_list_the_non_compaction_commits_with_what_they_added_and_removed(
    catalog: CatalogClient, scope: str
) -> None:
    catalog.create_stream(scope, "s")
    catalog.commit(scope, "s", [chunk("a.parquet")])                                        # 1
    catalog.commit(scope, "s", [chunk("b.parquet")])                                        # 2
    catalog.commit(scope, "s", [chunk("p.deletes", "deletes")], kind="row-level", read_cut=2,
                   removes=["a.parquet"])                                                   # 3
    catalog.commit(scope, "s", [chunk("c.parquet")], kind="compaction", base_cut=3,
                   removes=["b.parquet", "p.deletes"])                                      # 4
    catalog.commit(scope, "s", [chunk("d.parquet")], overwrite=True)                        # 5
    catalog.commit(scope, "s", [chunk("e.parquet")])                                        # 6

    def summary(found: list[dict[str, Any]]) -> list[tuple[int, str, list[str], list[str]]]:
        return [(c["number"], c["kind"], [x["path"] for x in c["chunks"]], [x["path"] for x in c["removed"]])
                for c in found]

    everything = catalog.changes(scope, "s", 0)
    assert summary(everything) == [
        (1, "append", ["a.parquet"], []),
        (2, "append", ["b.parquet"], []),
        (3, "row-level", ["p.deletes"], ["a.parquet"]),
        (5, "overwrite", ["d.parquet"], ["c.parquet"]),
        (6, "append", ["e.parquet"], []),
    ]
    assert [c["readCut"] for c in everything] == [None, None, 2, None, None]
    times = {c["number"]: c["timestamp"] for c in catalog.commits(scope, "s")}
    assert all(c["createdAt"] == times[c["number"]] for c in everything)
    assert summary(catalog.changes(scope, "s", 3, 5)) == [(5, "overwrite", ["d.parquet"], ["c.parquet"])]
    assert summary(catalog.changes(scope, "s", 4)) == summary(everything)[3:]
    assert catalog.changes(scope, "s", 2, 2) == []
    with pytest.raises(BadRequest, match="runs forward"):
        catalog.changes(scope, "s", 4, 3)
    with pytest.raises(BadRequest, match="latest commit"):
        catalog.changes(scope, "s", 0, 9)
    with pytest.raises(StreamNotFound):
        catalog.changes(scope, "nope", 0)


# -- readers, expiry, gc ------------------------------------------------------------------------------


def test_readers_are_registered_moved_listed_and_forgotten(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "s")
    for i in range(3):
        catalog.commit(scope, "s", [chunk(f"{i}.parquet")])
    assert catalog.readers(scope, "s") == []
    q = catalog.set_reader(scope, "s", "query-1", 1)
    assert (q["readerName"], q["offset"]) == ("query-1", 1)
    catalog.set_reader(scope, "s", "feed", 0)
    moved = catalog.set_reader(scope, "s", "query-1", 3)
    assert moved["offset"] == 3
    assert moved["updatedAt"] >= q["updatedAt"]
    assert [(r["readerName"], r["offset"]) for r in catalog.readers(scope, "s")] == [("feed", 0), ("query-1", 3)]
    assert catalog.get_reader(scope, "s", "feed")["offset"] == 0
    with pytest.raises(BadRequest, match="offset 4"):
        catalog.set_reader(scope, "s", "late", 4)
    with pytest.raises(BadRequest, match="reader name"):
        catalog.set_reader(scope, "s", "a b", 1)
    catalog.delete_reader(scope, "s", "feed")
    with pytest.raises(ReaderNotFound):
        catalog.get_reader(scope, "s", "feed")
    with pytest.raises(ReaderNotFound):
        catalog.delete_reader(scope, "s", "feed")
    assert [r["readerName"] for r in catalog.readers(scope, "s")] == ["query-1"]


def test_expiry_moves_forward_within_every_limit(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "s")
    with pytest.raises(BadRequest, match="olderThan"):
        catalog.expire(scope, "s")
    assert catalog.expire(scope, "s", retain_last=1)["retainedFrom"] == 0, "no commit: nothing to expire"
    created = {}
    for i in range(1, 7):
        created[i] = catalog.commit(scope, "s", [chunk(f"{i}.parquet")])["createdAt"]
    # Cuts whose commit is older than the time may go: commits 1 to 3 are, so cuts up to 3 go.
    assert catalog.expire(scope, "s", older_than_ms=created[3] + 1)["retainedFrom"] == 4
    assert catalog.expire(scope, "s", older_than_ms=created[1])["retainedFrom"] == 4, "never backwards"
    assert catalog.expire(scope, "s", retain_last=10)["retainedFrom"] == 4
    catalog.set_reader(scope, "s", "q", 5)
    assert catalog.expire(scope, "s", retain_last=1)["retainedFrom"] == 5, "the reader keeps its cut"
    catalog.set_reader(scope, "s", "q", 6)
    assert catalog.expire(scope, "s", older_than_ms=created[6] + 1, retain_last=2)["retainedFrom"] == 5
    stream = catalog.expire(scope, "s", older_than_ms=created[6] + 1)
    assert stream["retainedFrom"] == 6, "never past the latest commit"
    with pytest.raises(BadRequest, match="retained cut"):
        catalog.set_reader(scope, "s", "old", 2)
    with pytest.raises(BadRequest):
        catalog.expire(scope, "s", retain_last=0)


def test_expired_cuts_are_refused_with_a_reason(catalog: CatalogClient, scope: str) -> None:
    catalog.create_stream(scope, "s")
    created = [catalog.commit(scope, "s", [chunk(f"{i}.parquet")])["createdAt"] for i in range(1, 5)]
    catalog.expire(scope, "s", retain_last=2)  # keeps cuts 3 and 4
    with pytest.raises(BadRequest, match="cut 2 was expired"):
        catalog.snapshot(scope, "s", cut=2)
    with pytest.raises(BadRequest, match="cut 1 was expired"):
        catalog.snapshot(scope, "s", as_of_time=created[0])
    with pytest.raises(BadRequest, match="expired"):
        catalog.changes(scope, "s", 1)
    with pytest.raises(BadRequest, match="expired"):
        catalog.snapshot(scope, "s", after=1)
    assert paths(catalog, scope, "s", cut=3) == ["1.parquet", "2.parquet", "3.parquet"]
    assert paths(catalog, scope, "s", after=2) == ["3.parquet", "4.parquet"]
    with pytest.raises(BadRequest, match="base cut 2"):
        catalog.commit(scope, "s", [chunk("x.parquet")], kind="compaction", base_cut=2, removes=["1.parquet"])


def _files(location: str) -> set[str]:
    root = Path(location)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def _needed(catalog: CatalogClient, scope: str, stream: str) -> set[str]:
    """Every file a retained cut or a registered reader's streaming read lists."""
    current = catalog.get_stream(scope, stream)
    needed: set[str] = set()
    for cut in range(current["retainedFrom"], current["lastCommit"] + 1):
        needed.update(paths(catalog, scope, stream, cut=cut))
    for reader in catalog.readers(scope, stream):
        needed.update(paths(catalog, scope, stream, after=reader["offset"]))
        needed.update(paths(catalog, scope, stream, cut=reader["offset"]))
    return needed


def test_gc_keeps_what_a_retained_cut_or_a_reader_needs_and_deletes_the_rest(
    catalog: CatalogClient, service: CatalogService, scope: str
) -> None:
    location = catalog.create_stream(scope, "s")["location"]
    names = ["a1.parquet", "a2.parquet", "b.parquet", "c.parquet", "d.parquet", "e.parquet", "f.parquet",
             "g.deletes", "orphan.parquet"]
    Path(location).mkdir(parents=True, exist_ok=True)
    for name in names:
        (Path(location) / name).write_bytes(b"x")
    catalog.commit(scope, "s", [chunk("a1.parquet"), chunk("a2.parquet")])                        # 1
    catalog.commit(scope, "s", [chunk("b.parquet")])                                              # 2
    catalog.commit(scope, "s", [chunk("c.parquet")], kind="compaction", base_cut=2,
                   removes=["a1.parquet", "a2.parquet", "b.parquet"])                             # 3
    catalog.commit(scope, "s", [chunk("d.parquet")])                                              # 4
    catalog.commit(scope, "s", [chunk("e.parquet")], overwrite=True)                              # 5
    catalog.commit(scope, "s", [chunk("f.parquet")])                                              # 6
    catalog.commit(scope, "s", [chunk("g.deletes", "deletes")], kind="row-level", read_cut=6,
                   removes=["f.parquet"])                                                         # 7

    def collect() -> set[str]:
        before = _files(location)
        removed = set(service.collect_garbage(scope, "s", 0))
        assert _files(location) == before - removed
        assert _needed(catalog, scope, "s") <= _files(location), "a needed file went"
        return removed

    catalog.set_reader(scope, "s", "query", 2)
    assert catalog.expire(scope, "s", retain_last=1)["retainedFrom"] == 2
    assert collect() == {"orphan.parquet"}, "cut 2 needs a1, a2 and b"
    catalog.set_reader(scope, "s", "query", 5)
    assert catalog.expire(scope, "s", retain_last=1)["retainedFrom"] == 5
    assert collect() == {"a1.parquet", "a2.parquet", "b.parquet", "c.parquet", "d.parquet"}
    catalog.delete_reader(scope, "s", "query")
    catalog.set_reader(scope, "s", "late", 6)
    assert catalog.expire(scope, "s", retain_last=1)["retainedFrom"] == 6
    assert collect() == set(), "cut 6 needs f, which commit 7 removed"
    catalog.delete_reader(scope, "s", "late")
    assert catalog.expire(scope, "s", retain_last=1)["retainedFrom"] == 7
    assert collect() == {"f.parquet"}
    assert _files(location) == {"e.parquet", "g.deletes"}
    assert paths(catalog, scope, "s") == ["e.parquet", "g.deletes"]


def test_the_expire_command(catalog: CatalogClient, scope: str, settings: Settings) -> None:
    catalog.create_stream(scope, "s")
    created = [catalog.commit(scope, "s", [chunk(f"{i}.parquet")])["createdAt"] for i in range(1, 5)]
    runner = CliRunner(env={"STREAMCAT_DATABASE_URL": settings.database_url, "STREAMCAT_WAREHOUSE": settings.warehouse})
    done = runner.invoke(streams, ["expire", f"{scope}.s", "--retain-last", "3"])
    assert done.exit_code == 0, done.output
    assert "cuts 2 to 4 are retained (were 0 to 4)" in done.output
    from datetime import UTC, datetime

    when = datetime.fromtimestamp((created[2] + 1) / 1000, UTC).isoformat()
    done = runner.invoke(streams, ["expire", f"{scope}.s", "--older-than", when])
    assert done.exit_code == 0, done.output
    assert catalog.get_stream(scope, "s")["retainedFrom"] == 4
    for args, message in (
        ([f"{scope}.s"], "--older-than"),
        ([f"{scope}.s", "--older-than", "yesterday"], "ISO 8601"),
        ([f"{scope}.nope", "--retain-last", "1"], "no stream"),
        ([f"{scope}.s", "--retain-last", "0"], "0"),
    ):
        failed = runner.invoke(streams, ["expire", *args])
        assert failed.exit_code != 0, failed.output
        assert message in failed.output


def test_who_may_read_register_expire_and_forget(settings: Settings) -> None:
    reader, writer, admin = unique("r"), unique("w"), unique("a")
    for name, role in ((reader, "reader"), (writer, "writer"), (admin, "admin")):
        add_user(settings.database_url, name, "a-long-password", role)
    with auth_server(settings, auth=("basic",)) as url:
        as_ = {name: Api(url, auth=(name, "a-long-password")) for name in (reader, writer, admin)}
        scope = unique("sc")
        as_[admin].ok("POST", "/v1/scopes", json={"scopeName": scope})
        as_[admin].ok("POST", f"/v1/scopes/{scope}/streams", json={"streamName": "s"})
        base = f"/v1/scopes/{scope}/streams/s"
        as_[writer].ok("POST", f"{base}/commits", json={"chunks": [{"path": "a", "kind": "events", "eventCount": 1,
                                                                   "bytes": 1}]})
        calls = [
            ("GET", f"{base}/changes", None, {reader, writer, admin}),
            ("GET", f"{base}/readers", None, {reader, writer, admin}),
            ("PUT", f"{base}/readers/q", {"offset": 1}, {writer, admin}),
            ("GET", f"{base}/readers/q", None, {reader, writer, admin}),
            ("POST", f"{base}/expire", {"retainLast": 1}, {writer, admin}),
            ("DELETE", f"{base}/readers/q", None, {admin}),
        ]
        for method, path, body, allowed in calls:
            for name, api in as_.items():
                if name in allowed:
                    continue
                refused = api.call(method, path, json=body)
                assert refused.status_code == 403, f"{name} {method} {path}: {refused.status_code}"
            for name in sorted(allowed, key=[admin, writer, reader].index):
                answer = as_[name].call(method, path, json=body)
                assert answer.status_code < 300, f"{name} {method} {path}: {answer.status_code} {answer.text}"
                if method == "DELETE":
                    break


# -- primary-key tables -----------------------------------------------------------------------------


def test_a_primary_key_table_is_stored_with_non_null_keys(
    catalog: CatalogClient, client: RegistryClient, scope: str
) -> None:
    table = catalog.create_table(
        scope, "orders", ORDERS,
        properties={"primary-key": "ID, region", "sequence.field": "ts", "merge-engine": "partial-update"},
    )
    assert table["primaryKey"] == ["id", "region"]
    assert table["properties"]["primary-key"] == "id,region"
    nullable = {f["name"]: f["nullable"] for f in table["schema"]["fields"]}
    assert nullable == {"id": False, "region": False, "amount": True, "ts": True}
    assert client.get_group("orders").properties["streamcat.primary-key"] == "id,region"
    assert catalog.get_table(scope, "orders")["primaryKey"] == ["id", "region"]
    plain = catalog.create_table(scope, "plain", ORDERS)
    assert plain["primaryKey"] == []
    assert "streamcat.primary-key" not in client.get_group("plain").properties


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"primary-key": "id,nope"}, "'nope'"),
        ({"primary-key": " , "}, "names no column"),
        ({"primary-key": "id,ID"}, "twice"),
        ({"primary-key": "id", "sequence.field": "when"}, "'when'"),
        ({"primary-key": "id", "merge-engine": "aggregate"}, "'aggregate'"),
        ({"sequence.field": "ts"}, "primary-key tables only"),
        ({"merge-engine": "deduplicate"}, "primary-key tables only"),
        ({"primary-key": "nested"}, "nested"),
    ],
)
def test_bad_primary_key_properties_are_400_and_create_nothing(
    catalog: CatalogClient, client: RegistryClient, scope: str, properties: dict[str, str], message: str
) -> None:
    schema = struct(*ORDERS["fields"], col("nested", struct(col("x", "long"))))
    with pytest.raises(BadRequest, match=message):
        catalog.create_table(scope, "orders", schema, properties=properties)
    with pytest.raises(StreamNotFound):
        catalog.get_stream(scope, "orders")
    with pytest.raises(GroupNotFound):
        client.get_group("orders")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"op": "setProperty", "key": "primary-key", "value": "id"}, "cannot change 'primary-key'"),
        ({"op": "removeProperty", "key": "primary-key"}, "cannot remove 'primary-key'"),
        ({"op": "dropColumn", "path": ["region"]}, "cannot drop column 'region'"),
        ({"op": "renameColumn", "path": ["id"], "newName": "key"}, "cannot rename column 'id'"),
        ({"op": "updateColumnType", "path": ["id"], "type": "string"}, "type of column 'id'"),
        ({"op": "updateColumnNullability", "path": ["id"], "nullable": True}, "nullable column 'id'"),
        ({"op": "setProperty", "key": "sequence.field", "value": "nope"}, "'nope'"),
        ({"op": "setProperty", "key": "merge-engine", "value": "sum"}, "'sum'"),
        ({"op": "dropColumn", "path": ["ts"]}, "'ts'"),  # the sequence field
    ],
)
def test_alters_that_break_the_key_are_400_and_change_nothing(
    catalog: CatalogClient, scope: str, change: dict[str, Any], message: str
) -> None:
    created = catalog.create_table(scope, "orders", ORDERS, properties={"primary-key": "id,region",
                                                                        "sequence.field": "ts"})
    with pytest.raises(BadRequest, match=message):
        catalog.alter_table(scope, "orders", [{"op": "addColumn", "path": ["note"], "type": "string"}, change])
    assert catalog.get_table(scope, "orders") == created


def test_alters_that_keep_the_key_work(catalog: CatalogClient, scope: str) -> None:
    catalog.create_table(scope, "orders", ORDERS, properties={"primary-key": "id"})
    altered = catalog.alter_table(scope, "orders", [
        {"op": "addColumn", "path": ["note"], "type": "string"},
        {"op": "setProperty", "key": "primary-key", "value": " id "},  # the key it has: no change
        {"op": "setProperty", "key": "merge-engine", "value": "deduplicate"},
        {"op": "setProperty", "key": "sequence.field", "value": "ts"},
        {"op": "updateColumnComment", "path": ["id"], "comment": "the order"},
        {"op": "dropColumn", "path": ["amount"]},
    ])
    assert altered["primaryKey"] == ["id"]
    assert altered["properties"] == {"primary-key": "id", "merge-engine": "deduplicate", "sequence.field": "ts"}
    catalog.create_table(scope, "plain", ORDERS)
    with pytest.raises(BadRequest, match="cannot add 'primary-key'"):
        catalog.alter_table(scope, "plain", [{"op": "setProperty", "key": "primary-key", "value": "id"}])


# -- the migration ------------------------------------------------------------------------------------


def _inserted(conn: sa.Connection, statement: sa.Insert) -> int:
    key = conn.execute(statement).inserted_primary_key
    assert key is not None
    return int(key[0])


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_migration_0008_backfills_kinds_and_removals_and_goes_back(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = new_database(kind, tmp_path, request)
    migrate.upgrade(url, "0007")
    engine = make_engine(url)
    meta = sa.MetaData()
    meta.reflect(bind=engine)
    scopes, streams_, commits, chunks = (meta.tables[n] for n in ("scopes", "streams", "commits", "chunks"))
    history = [(1, False, ["a", "b"]), (2, False, ["c"]), (3, True, ["d"]), (4, False, ["e"]), (5, True, []),
               (6, False, ["f"])]
    with engine.begin() as conn:
        # No explicit ids: PostgreSQL's sequences must go on from these rows.
        scope_id = _inserted(conn, scopes.insert().values(name="shop", comment="", properties={}, created_at=0))
        stream = _inserted(conn, streams_.insert().values(
            scope_id=scope_id, name="s", location=str(tmp_path / "shop" / "s"), managed=True, segments=1,
            retention_ms=None, retention_bytes=None, sealed=False, truncated_at=0, last_commit=6, created_at=0,
        ))
        for number, overwrite, added in history:
            commit = _inserted(conn, commits.insert().values(
                stream_id=stream, number=number, overwrite=overwrite, writer_id=None, writer_sequence=None,
                event_count=len(added), bytes=0, properties={}, created_at=number * 10,
            ))
            for path in added:
                conn.execute(chunks.insert().values(
                    stream_id=stream, commit_id=commit, commit_number=number, path=f"{path}.parquet", kind="columnar",
                    segment=0, event_count=1, bytes=1, encoding_ids=[], min_event_time=None, max_event_time=None,
                    stats={},
                ))
    migrate.upgrade(url)
    assert migrate.model_drift(url) == []
    with engine.connect() as conn:
        kinds = conn.execute(sa.text("SELECT kind FROM commits ORDER BY number")).scalars().all()
        marks = conn.execute(sa.text("SELECT path, sequence, removed_at FROM chunks ORDER BY path")).all()
        retained = conn.execute(sa.text("SELECT retained_from FROM streams")).scalar_one()
    assert kinds == ["append", "append", "overwrite", "append", "overwrite", "append"]
    assert [tuple(m) for m in marks] == [
        ("a.parquet", 1, 3), ("b.parquet", 1, 3), ("c.parquet", 2, 3), ("d.parquet", 3, 5), ("e.parquet", 4, 5),
        ("f.parquet", 6, None),
    ]
    assert retained == 0
    extension = create_app(Settings(database_url=url, warehouse=str(tmp_path))).extensions["streamcat"]
    service: CatalogService = extension.catalog
    seen = {cut: [c.path for c in service.snapshot("shop", "s", cut=cut).chunks] for cut in range(7)}
    assert seen == {0: [], 1: ["a.parquet", "b.parquet"], 2: ["a.parquet", "b.parquet", "c.parquet"],
                    3: ["d.parquet"], 4: ["d.parquet", "e.parquet"], 5: [], 6: ["f.parquet"]}, "what 0007 showed"
    service.set_reader("shop", "s", "q", 4)
    migrate.downgrade(url, "0007")
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM chunks")).scalar_one() == 6, "data survives the downgrade"
        assert "kind" not in {c["name"] for c in sa.inspect(conn).get_columns("commits")}
        assert "readers" not in sa.inspect(conn).get_table_names()
    migrate.upgrade(url)
    service.commit("shop", "s", [], kind="row-level", read_cut=6, removes=["f.parquet"])
    with pytest.raises(RuntimeError, match="cannot downgrade below 0008"):
        migrate.downgrade(url, "0007")
    # 0008 stays (PostgreSQL rolls back the later revisions' downgrades too; SQLite keeps those)
    assert migrate.current_revisions(engine) in ({"0008"}, set(migrate.head_revisions(url)))
    migrate.upgrade(url)
    assert [c.path for c in service.snapshot("shop", "s").chunks] == []
    extension.engine.dispose()
    engine.dispose()
