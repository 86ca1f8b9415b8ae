"""Stream cuts: which commit a read stops at, and which commits it sees.

A cut is a commit number. A read at cut ``n`` sees the chunks added at or before ``n`` and not
removed at or before ``n`` (an overwrite removes every live chunk, a compaction or a row-level
commit the ones it names), never those hidden by truncation; a streaming read sees what the
commits after its last offset added. Cuts below the stream's ``retained_from`` are expired: their
files may be gone, and reading them is refused.
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


def check_retained(stream: Stream, cut: int) -> int:
    """``cut`` if it is not expired; BadRequest saying so otherwise."""
    if cut < stream.retained_from:
        raise BadRequest(
            f"stream cut {cut} was expired: {stream.scope}.{stream.name} keeps the cuts from {stream.retained_from} "
            f"to {stream.last_commit}"
        )
    return cut


def check_after(stream: Stream, after: int) -> int:
    """``after`` if a streaming read positioned there reads no expired commit (its first is ``after + 1``)."""
    if after + 1 < stream.retained_from:
        raise BadRequest(
            f"the commits after {after} were expired: {stream.scope}.{stream.name} keeps the cuts from "
            f"{stream.retained_from} to {stream.last_commit}; read from a retained cut"
        )
    return after


def check_expiry(stream: Stream, retained_from: int) -> int:
    """``retained_from`` if it moves the stream's forward (or keeps it), up to the latest commit."""
    if not stream.retained_from <= retained_from <= max(stream.last_commit, stream.retained_from):
        raise BadRequest(
            f"cuts are retained from {stream.retained_from}; expiry moves that forward, up to the latest commit "
            f"{stream.last_commit}, not to {retained_from}"
        )
    return retained_from
