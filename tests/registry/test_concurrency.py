"""Eight clients writing to one group at once, through two server processes on one database.

The database alone keeps versions gapless and unique, gives identical content one id and
hands every client the same encoding id for the same (version, codec): each server process
is started on its own (``streamcat serve``, gunicorn, one worker each) and clients are spread
over both, so no process-local lock or cache can be what makes it right.
"""

from __future__ import annotations

import json
import os
import random
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import TypeVar

import pytest

from catalog_api.server import migrate
from registry.client import RegistryClient
from registry.ids import CodecName, EncodingId
from registry.model import NO_CODEC, CodecType, SchemaInfo, VersionInfo
from tests.registry.helpers import avro_record, field, group
from tests.support.net import serve_with_gunicorn
from tests.support.postgres import PostgresServer

CLIENTS = 8
OWN = 10  # distinct schemas each client brings
BORROWED = 5  # schemas of each of two other clients that a client re-adds
GROUP = "events"

T = TypeVar("T")
Key = tuple[int, int]  # (client that owns the schema, its index)


def event_schema(key: Key) -> SchemaInfo:
    """Schema ``key``: a record every other one can read, since each adds one field with a default."""
    owner, index = key
    return avro_record(
        "Event",
        field("id", "long"),
        field(f"f_{owner}_{index}", ["null", "string"], default=None),
        namespace="conc",
    )


def key_of(schema: SchemaInfo) -> Key:
    """The key of a schema made by ``event_schema``, read back from its field name."""
    name = json.loads(schema.data)["fields"][1]["name"]
    _, owner, index = name.split("_")
    return int(owner), int(index)


def workload(client: int) -> list[Key]:
    """A client's own schemas plus some of two neighbours', in an order of its own."""
    keys = [(client, j) for j in range(OWN)]
    for other in ((client + 1) % CLIENTS, (client + 3) % CLIENTS):
        keys += [(other, j) for j in range(BORROWED)]
    random.Random(client).shuffle(keys)
    return keys


@pytest.fixture(params=["sqlite", "postgresql"])
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    """Two separate ``streamcat serve`` processes on one fresh, migrated database."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        postgres: PostgresServer = request.getfixturevalue("postgres")
        url = postgres.create_database(f"c_{uuid.uuid4().hex[:16]}")
    migrate.upgrade(url)
    env = {**os.environ, "STREAMCAT_DATABASE_URL": url, "STREAMCAT_WAREHOUSE": str(tmp_path / "warehouse")}
    with ExitStack() as stack:
        yield [stack.enter_context(serve_with_gunicorn(env, workers=1)) for _ in range(2)]


def run_all(task: Callable[[int], T], count: int) -> list[T]:
    """Run ``task(i)`` for i in 0..count-1 on as many threads, started together; re-raise any failure."""
    barrier = threading.Barrier(count)

    def start(i: int) -> T:
        barrier.wait(timeout=60)
        return task(i)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(start, range(count)))


def test_concurrent_adds_and_encodings_through_two_processes(servers: list[str]) -> None:
    namespace = f"conc{uuid.uuid4().hex[:12]}"
    assert len(set(servers)) == 2
    # Each client has its own HTTP session (RegistryClient makes one) and caches nothing another client knows.
    clients = [RegistryClient(servers[i % 2], namespace) for i in range(CLIENTS)]
    assert all(c.ping() for c in clients)
    clients[0].create_group(GROUP, group("Avro", "Backward"))

    def add_all(i: int) -> list[tuple[Key, VersionInfo]]:
        return [(key, clients[i].add_schema(GROUP, event_schema(key))) for key in workload(i)]

    answers: dict[Key, set[VersionInfo]] = defaultdict(set)
    for results in run_all(add_all, CLIENTS):
        for key, version in results:
            answers[key].add(version)

    distinct = {(i, j) for i in range(CLIENTS) for j in range(OWN)}
    assert set(answers) == distinct
    # Whoever added it, and however often: one schema, one answer.
    assert {key: len(found) for key, found in answers.items() if len(found) != 1} == {}
    answered = {key: next(iter(found)) for key, found in answers.items()}

    for reader in (RegistryClient(url, namespace) for url in servers):
        listed = reader.versions(GROUP)
        assert sorted(v.version.version for v in listed) == list(range(len(distinct)))
        by_key = {key_of(v.schema): v.version for v in listed}
        assert len(by_key) == len(listed) == len(distinct)
        assert by_key == answered
        assert len({v.version.id for v in listed}) == len(distinct)
        assert len(reader.history(GROUP)) == len(distinct)
        # find, without adding, sees the same version from either process
        for key in [(0, 0), (CLIENTS - 1, OWN - 1), (3, 4)]:
            assert reader.find_version(GROUP, event_schema(key)) == answered[key]

    # -- encoding ids: every client asks for the same pairs at the same moment ----------------------
    clients[1].add_codec_type(GROUP, CodecType(CodecName("gzip")))
    versions = sorted(answered.values(), key=lambda v: v.version)[:10]
    pairs = [(v, codec) for v in versions for codec in (NO_CODEC, CodecName("gzip"))]
    fresh = [RegistryClient(servers[i % 2], namespace) for i in range(CLIENTS)]

    def encode_all(i: int) -> list[EncodingId]:
        order = pairs if i % 2 == 0 else pairs[::-1]
        found = {pair: fresh[i].encoding_id(GROUP, *pair) for pair in order}
        return [found[pair] for pair in pairs]

    per_client = run_all(encode_all, CLIENTS)
    assert all(ids == per_client[0] for ids in per_client), per_client
    ids = per_client[0]
    assert len(set(ids)) == len(pairs)
    for url in servers:
        reader = RegistryClient(url, namespace)
        for (version, codec), encoding in zip(pairs, ids, strict=True):
            info = reader.encoding_info(GROUP, encoding)
            assert (info.version, info.codec.name) == (version, codec)
            assert key_of(info.schema) == key_of(reader.schema_by_id(GROUP, version.id))
