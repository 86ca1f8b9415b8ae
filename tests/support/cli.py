"""The ``streamcat`` command, run in-process against a given environment."""

from __future__ import annotations

from click.testing import CliRunner

from catalog_api.server.cli import main


def streamcat(env: dict[str, str], *args: str, input: str | None = None) -> str:
    """Run ``streamcat ARGS`` with ``env`` as its environment; its standard output (fails the test on an error)."""
    result = CliRunner().invoke(main, list(args), env=env, input=input)
    assert result.exit_code == 0, f"streamcat {' '.join(args)}: {result.output}"
    return result.stdout
