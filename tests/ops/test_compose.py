"""The compose file: what it builds exists, and the Streamcat commands its services run parse as the CLI's.

No Docker engine runs here; these checks catch what would otherwise surface only at `docker compose up`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from catalog_api.server.cli import main

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker" / "compose.yaml"


def services() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return dict(loaded["services"])


@pytest.mark.parametrize("name", [n for n, s in services().items() if "build" in s])
def test_what_a_service_builds_exists(name: str) -> None:
    build = services()[name]["build"]
    context = (COMPOSE.parent / build["context"]).resolve()
    assert (context / build["dockerfile"]).is_file()
    assert (context / "pyproject.toml").is_file()


@pytest.mark.parametrize("name", [n for n, s in services().items() if (s.get("command") or [""])[0] == "streamcat"])
def test_a_streamcat_command_parses(name: str) -> None:
    args = services()[name]["command"][1:]
    with main.make_context("streamcat", list(args), resilient_parsing=False) as context:
        command = main.get_command(context, args[0])
        assert command is not None, f"{name}: no command {args[0]!r}"
        try:
            command.make_context(args[0], list(args[1:]), parent=context)
        except click.UsageError as e:  # an unknown option or a bad value
            pytest.fail(f"{name}: {e.format_message()}")


def test_the_refresher_runs_beside_the_server_on_the_shared_warehouse() -> None:
    refresher = services()["refresher"]
    assert refresher["command"][:2] == ["streamcat", "refresher"]
    assert refresher["depends_on"]["streamcat"]["condition"] == "service_healthy"
    assert "warehouse:/warehouse" in refresher["volumes"]
    assert refresher["environment"]["STREAMCAT_URI"] == "http://streamcat:9092"
