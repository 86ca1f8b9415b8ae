"""Compatibility check times for large schemas, and BackwardTransitive over 1,000 versions.

Run: .venv/bin/python bench/compat.py [--versions 1000]

Each figure is the median of several runs, beside a baseline measured in the same run
(parsing the same schema, which every check already needs), printed as a ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from registry.formats import get_format  # noqa: E402
from registry.formats.base import ParsedSchema  # noqa: E402
from registry.ids import SchemaId, TypeName, Version  # noqa: E402
from registry.model import Compatibility, VersionInfo  # noqa: E402
from registry.policy import Existing, evaluate  # noqa: E402


def median_seconds(work: Callable[[], object], rounds: int = 5) -> float:
    """Median wall time of ``rounds`` calls."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def avro(fields: int, changed: bool = False) -> bytes:
    kinds = ["long", "double", "string", "boolean", ["null", "string"]]
    schema = {"type": "record", "name": "Big", "namespace": "bench", "fields": [
        {"name": f"f{i}", "type": kinds[i % len(kinds)], **({"default": None} if i % len(kinds) == 4 else {})}
        for i in range(fields)
    ]}
    if changed:  # one nested record added with a default: the full checker walks everything
        schema["fields"].append({"name": "extra", "type": {"type": "record", "name": "X", "fields": [
            {"name": "a", "type": "int"}]}, "default": {"a": 0}})
    return json.dumps(schema).encode()


def proto(messages: int, changed: bool = False) -> bytes:
    lines = ['syntax = "proto3";', "package bench;"]
    for m in range(messages):
        inner = f"  M{m - 1} prev = 9;" if m else ""
        extra = "  string added = 10;" if changed and m == messages - 1 else ""
        lines.append(f"message M{m} {{ int64 a = 1; string b = 2; repeated double c = 3; bool d = 4;"
                     f" map<string, int32> e = 5;{inner}{extra} }}")
    return "\n".join(lines).encode()


def json_schema(properties: int, changed: bool = False) -> bytes:
    kinds = [{"type": "integer", "minimum": 0}, {"type": "string", "maxLength": 64}, {"type": "number"},
             {"type": "array", "items": {"type": "string"}}, {"type": ["string", "null"]}]
    props = {f"p{i}": kinds[i % len(kinds)] for i in range(properties)}
    if changed:
        props["p0"] = {"type": "integer"}  # loosened: the new schema still reads the old data
    return json.dumps({"type": "object", "title": "Big", "properties": props, "required": ["p1"]}).encode()


def report(name: str, fmt: str, old: bytes, new: bytes, type_name: str) -> None:
    f = get_format(fmt)
    parse = median_seconds(lambda: f.parse(new, type_name))
    a, b = f.parse(old, type_name), f.parse(new, type_name)
    backward = median_seconds(lambda: f.check(reader=b, writer=a))
    forward = median_seconds(lambda: f.check(reader=a, writer=b))
    compatible = not f.check(reader=b, writer=a)
    print(f"{name:<34} parse {parse * 1000:8.2f} ms   backward {backward * 1000:8.2f} ms"
          f" ({backward / parse:5.2f}x parse)   forward {forward * 1000:8.2f} ms   backward ok={compatible}")


def transitive(versions: int) -> None:
    fmt = get_format("Avro")
    fields: list[dict[str, object]] = [{"name": "id", "type": "long"}]
    history: list[Existing] = []
    start = time.perf_counter()
    for i in range(versions):
        fields.append({"name": f"f{i}", "type": ["null", "string"], "default": None})
        parsed: ParsedSchema = fmt.parse(json.dumps({"type": "record", "name": "R", "fields": fields}).encode(), "")
        history.append(Existing(VersionInfo(TypeName("R"), Version(i), SchemaId(i + 1)), parsed))
    parse_all = time.perf_counter() - start
    fields.append({"name": "new", "type": "int", "default": 0})
    new = fmt.parse(json.dumps({"type": "record", "name": "R", "fields": fields}).encode(), "")
    for policy in ("Backward", "BackwardTransitive", "FullTransitive"):
        seconds = median_seconds(lambda p=policy: evaluate(Compatibility.of(p), new, history), rounds=3)  # type: ignore[misc]
        print(f"{policy:<20} over {versions} versions (up to {versions + 1} fields): {seconds:7.3f} s"
              f"   (parsing the history once: {parse_all:6.2f} s; target for BackwardTransitive: < 1 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--versions", type=int, default=1000)
    args = parser.parse_args()
    report("Avro record, 500 fields", "Avro", avro(500), avro(500, changed=True), "")
    report("Protobuf file, 200 messages", "Protobuf", proto(200), proto(200, changed=True), "bench.M199")
    report("JSON Schema, 500 properties", "Json", json_schema(500), json_schema(500, changed=True), "Big")
    transitive(args.versions)


if __name__ == "__main__":
    main()
