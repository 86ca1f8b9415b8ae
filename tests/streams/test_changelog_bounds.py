"""Change-feed bounds of Spark scans (``streamcat.changes.*``): which commits (after, to] they stand for."""

from __future__ import annotations

import pytest
from pyspark_streamcat.options import OptionError, SourceOptions
from pyspark_streamcat.reader import feed_range


def bounds(**changes: str) -> tuple[int, int | None]:
    options = SourceOptions.parse({"uri": "http://unused", "scope": "s", "table": "t",
                                   **{f"streamcat.changes.{k}": v for k, v in changes.items()}})
    return feed_range(options)


def test_version_bounds_inclusive_and_exclusive() -> None:
    assert bounds(**{"from": "3"}) == (2, None)
    assert bounds(**{"from": "3", "frominclusive": "false"}) == (3, None)
    assert bounds(**{"from": "3", "to": "5"}) == (2, 5)
    assert bounds(**{"from": "3", "to": "5", "toinclusive": "false"}) == (2, 4)
    assert bounds(**{"from": "0"}) == (0, None)


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(OptionError, match="commit number"):
        bounds(**{"from": "yesterday"})
    with pytest.raises(OptionError, match="true or false"):
        bounds(**{"from": "1", "frominclusive": "maybe"})
