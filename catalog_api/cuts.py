"""Stream cuts: which commit a read stops at, and which commits it sees.

A cut is a commit number. A read at cut ``n`` sees the commits from the newest overwrite
at or before ``n`` (an overwrite replaces all that came before it) up to ``n``, never those
hidden by truncation; a streaming read sees what came after its last offset.
"""

from __future__ import annotations

from catalog_api.model import Stream
from registry.errors import BadRequest


def check_cut(stream: Stream, cut: int) -> int:
    """``cut`` if it names a commit of ``stream`` (0: before the first); BadRequest otherwise."""
    if not 0 <= cut <= stream.last_commit:
        raise BadRequest(f"stream cut {cut} is not between 0 and the latest commit {stream.last_commit}")
    return cut


def check_truncation(stream: Stream, cut: int) -> int:
    """``cut`` if the stream may be truncated there: truncation only moves forward, up to the latest commit."""
    if not stream.truncated_at <= cut <= stream.last_commit:
        raise BadRequest(
            f"stream cut {cut} must lie between the current truncation {stream.truncated_at} "
            f"and the latest commit {stream.last_commit}"
        )
    return cut


def first_visible(stream: Stream, after: int | None, last_overwrite: int | None) -> int:
    """The first commit a read sees: after ``after`` for streaming reads, else from the newest
    overwrite at or before the cut (``last_overwrite``), and never a truncated one."""
    first = after + 1 if after is not None else (last_overwrite or 1)
    return max(first, stream.truncated_at + 1)
