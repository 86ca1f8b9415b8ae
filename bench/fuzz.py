"""Fuzz the server against its OpenAPI document for a while, with random seeds.

The contract test (tests/contract/test_schemathesis.py) runs a fixed, small budget in CI; this
runs the same checks (tests/contract/fuzzing.py: no 5xx, documented statuses, content types and
bodies, requests the document rules out refused) round after round until the time is up: every
operation with valid and with invalid requests, then sequences of operations through the
document's links. It prints each failure once, with a curl command that reproduces it, and exits
with status 1 if there was any.

    .venv/bin/python bench/fuzz.py --minutes 10
    .venv/bin/python bench/fuzz.py --minutes 30 --seed 1234 --database-url postgresql://...

The server is the in-process application over a fresh SQLite database by default, or over the
(empty) database given, which is migrated first. A round's seed makes its per-operation phase
repeatable (``--seed``); sequences are Hypothesis's own draws, reported as the steps that fail.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import schemathesis
from flask import Flask
from hypothesis import given, seed, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.core.result import Err
from schemathesis.generation import GenerationMode

from catalog_api.server import migrate
from catalog_api.server.app import create_app
from catalog_api.server.config import Settings
from tests.contract.conftest import empty
from tests.contract.fuzzing import CHECKS, SETTINGS, TableFuzz, document, stateful_document, table_bodies, table_changes


class Findings:
    """Failures, each reported once (by operation and the first line of what failed)."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, str]] = Counter()

    def add(self, where: str, error: BaseException) -> None:
        text = str(error).strip()
        # Schemathesis' first line counts failures; the lines with "- " name them ("- ST201 ...").
        titles = [line for line in text.splitlines() if line.startswith("- ")] or text.splitlines()[:1]
        key = (where, "; ".join(titles) or type(error).__name__)
        self.seen[key] += 1
        if self.seen[key] == 1:
            print(f"\n--- {where}\n{text or repr(error)}\n", flush=True)


def each_operation(api: schemathesis.BaseSchema, round_seed: int, examples: int, deadline: float,
                   findings: Findings) -> int:
    """Every operation with ``examples`` valid and as many invalid requests; returns how many ran."""
    ran = 0
    for result in api.get_all_operations():
        if time.monotonic() > deadline:
            break
        if isinstance(result, Err):
            findings.add("the document", result.err())
            continue
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @seed(round_seed)
            @settings(max_examples=examples, **SETTINGS)
            @given(case=operation.as_strategy(generation_mode=mode))
            def check(case: schemathesis.Case) -> None:
                case.call_and_validate(checks=CHECKS)

            try:
                check()
            except Unsatisfiable:
                continue  # nothing in the operation can be made invalid (no parameters, no body)
            except BaseException as error:  # schemathesis reports failures as exception groups
                if not isinstance(error, Exception | BaseExceptionGroup):
                    raise  # KeyboardInterrupt, SystemExit
                findings.add(f"{operation.label} ({mode.value})", error)
            ran += examples
    return ran


def tables(app: Flask, round_seed: int, examples: int, findings: Findings) -> int:
    """``examples`` malformed table bodies and as many change lists; returns how many ran."""
    fuzz = TableFuzz(app)  # its scope again: sequences empty the database

    @seed(round_seed)
    @settings(max_examples=examples, **SETTINGS)
    @given(body=table_bodies())
    def create(body: dict[str, Any]) -> None:
        fuzz.create(body)

    @seed(round_seed)
    @settings(max_examples=examples, **SETTINGS)
    @given(changes=table_changes())
    def alter(changes: list[Any]) -> None:
        fuzz.alter(changes)

    for where, run in (("table bodies", create), ("table changes", alter)):
        try:
            run()
        except Exception as error:
            findings.add(where, error)
    return 2 * examples


def sequences(app: Flask, count: int, steps: int, findings: Findings) -> None:
    """``count`` sequences of up to ``steps`` calls through the document's links."""

    class Sequences(stateful_document(app).as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            empty(app)

        def validate_response(self, response: Any, case: schemathesis.Case, **_: Any) -> None:
            case.validate_response(response, checks=CHECKS)

    try:
        Sequences.run(settings=settings(max_examples=count, stateful_step_count=steps, **SETTINGS))
    except BaseException as error:
        if not isinstance(error, Exception | BaseExceptionGroup):
            raise
        findings.add("sequences", error)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long to fuzz (default 5)")
    parser.add_argument("--seed", type=int, help="seed of the first round (default: random)")
    parser.add_argument("--examples", type=int, default=25, help="requests per operation and mode, per round")
    parser.add_argument("--table-examples", type=int, default=200,
                        help="malformed table bodies, and change lists, per round")
    parser.add_argument("--sequences", type=int, default=50, help="sequences per round")
    parser.add_argument("--steps", type=int, default=20, help="calls per sequence")
    parser.add_argument("--database-url", help="an empty database to use (default: a fresh SQLite file)")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="streamcat-fuzz-"))
    url = args.database_url or f"sqlite:///{root / 'fuzz.db'}"
    migrate.upgrade(url)
    app = create_app(Settings(database_url=url, warehouse=str(root / "warehouse")))
    api = document(app)
    first = args.seed if args.seed is not None else random.randrange(2**32)
    deadline = time.monotonic() + args.minutes * 60
    findings, rounds, requests = Findings(), 0, 0
    print(f"fuzzing {url} for {args.minutes} minutes, first seed {first}", flush=True)
    while time.monotonic() < deadline:
        round_seed = first + rounds
        print(f"round {rounds + 1}, seed {round_seed}", flush=True)
        requests += each_operation(api, round_seed, args.examples, deadline, findings)
        if time.monotonic() < deadline:
            requests += tables(app, round_seed, args.table_examples, findings)
        if time.monotonic() < deadline:
            sequences(app, args.sequences, args.steps, findings)
        rounds += 1
    print(f"\n{rounds} rounds, about {requests} single requests plus sequences; {len(findings.seen)} distinct failures")
    for (where, what), times in sorted(findings.seen.items()):
        print(f"  {times:4d}x  {where}: {what}")
    return 1 if findings.seen else 0


if __name__ == "__main__":
    sys.exit(main())
