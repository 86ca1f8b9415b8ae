"""A commit's fields and a chunk's are defined once per language: a field added in one place only fails here.

Python: the domain's ``CommitOptions`` and ``Chunk`` (catalog_api/model.py) and the wire models
``CommitRequest`` and ``ChunkInfo`` (catalog_api/api/models.py) list the same fields and convert every one
of them both ways; ``CatalogService.commit`` and ``CatalogClient.commit`` take the same objects. Java:
``CommitBody`` (spark_plugin/java/streamcat/spark/CommitBody.java), which builds every commit request of
the Spark shim, names exactly the wire models' members.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any

from catalog_api.api.models import ChunkInfo, ChunkPartition, CommitRequest
from catalog_api.client import CatalogClient
from catalog_api.model import Chunk, CommitOptions
from catalog_api.service import CatalogService

ROOT = Path(__file__).resolve().parents[2]
COMMIT_BODY = ROOT / "spark_plugin" / "java" / "streamcat" / "spark" / "CommitBody.java"
#: ChunkInfo's members the server sets (a request's are ignored): the Java side never sends them.
SERVER_SET = {"commit", "sequence", "removedAt"}

#: Every field of the domain types at a value that is not its default: a new field fails the test until it
#: is given one here (and then the round trips below check that both conversions carry it).
OPTIONS = CommitOptions(
    overwrite=True, kind="compaction", writer_id="w", writer_sequence=7, properties={"k": "v"}, read_cut=3,
    base_cut=2, expected_last_commit=5, removes=("old.parquet",),
)
CHUNK = Chunk(
    path="data/a.parquet", kind="columnar", segment=1, event_count=10, bytes=100, encoding_ids=(4,),
    min_event_time=1, max_event_time=2, stats={"rows": 10}, commit=3, sequence=2, removed_at=4,
    partition={"specId": 1, "values": [5]},
)


def _field_names(cls: Any) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _defaults(cls: Any) -> dict[str, Any]:
    found = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            found[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            found[f.name] = f.default_factory()
    return found


def test_the_wire_models_have_the_domain_fields() -> None:
    assert set(CommitRequest.model_fields) - {"chunks"} == _field_names(CommitOptions)
    assert set(ChunkInfo.model_fields) == _field_names(Chunk)


def test_every_field_of_the_samples_is_set() -> None:
    for sample in (OPTIONS, CHUNK):
        defaults = _defaults(type(sample))
        unset = [name for name, value in defaults.items() if getattr(sample, name) == value]
        assert not unset, f"give {type(sample).__name__}.{unset} a value in this test's sample"


def test_a_commit_converts_every_field_both_ways() -> None:
    chunks, options = CommitRequest.of([CHUNK], OPTIONS).to_domain()
    assert options == OPTIONS
    assert chunks == [CHUNK]
    assert ChunkInfo.of(CHUNK).to_domain() == CHUNK


def test_the_service_and_the_client_take_the_same_commit() -> None:
    def parameters(method: Any) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.annotation, p.kind) for p in inspect.signature(method).parameters.values()]

    assert parameters(CatalogService.commit) == parameters(CatalogClient.commit)
    assert "options" in inspect.signature(CatalogService.commit).parameters


def _aliases(model: Any) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


def test_the_java_commit_body_names_the_wire_members() -> None:
    source = COMMIT_BODY.read_text()
    named = set(re.findall(r'static final String [A-Z_]+ = "([a-zA-Z]+)";', source))
    wire = _aliases(CommitRequest) | (_aliases(ChunkInfo) - SERVER_SET) | _aliases(ChunkPartition)
    assert named == wire, f"only in Java: {sorted(named - wire)}; only in the wire models: {sorted(wire - named)}"


def test_the_java_shim_writes_commit_bodies_only_through_commit_body() -> None:
    members = ("writerId", "writerSequence", "expectedLastCommit", "readCut", "baseCut", "removes", "encodingIds",
               "eventCount")
    writers = []
    for path in sorted(COMMIT_BODY.parent.glob("*.java")):
        if path == COMMIT_BODY:
            continue
        text = path.read_text()
        writers += [f"{path.name}: {m}" for m in members if re.search(rf'\.(put|set|putArray)\("{m}"', text)]
    assert not writers, f"commit members written outside CommitBody: {writers}"
