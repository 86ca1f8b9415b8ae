"""Sending a commit whose answer may be lost, and learning from the catalog whether it was made.

A commit request that got no answer (a connection reset, a timeout, a 5xx) may or may not have been
made. Every writer of this project (the Spark data source's writers, :class:`StreamWriter`, CDC ingest,
compaction, the conflict-checked commits of row-level writes) commits through :func:`commit_resolved`,
which never guesses: it asks the catalog for the commit of the writer's (id, sequence)
(``CatalogClient.find_commit``) and only then sends again (the same pair: the server makes it at most
once) or gives up. A writer keeps its files while the outcome is unknown (:class:`CommitInDoubt`);
the Java shim's ``NativeWrite`` follows the same contract.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import requests

from catalog_api.model import Chunk, CommitOptions, TableCommit
from registry.errors import StreamcatError

#: How often a commit is sent before its outcome is left in doubt, and the first pause between tries.
DEFAULT_ATTEMPTS = 3
DEFAULT_BACKOFF = 0.2
#: What a commit's sends resolve to: one Committed, or one per table of a commit of several tables.
Outcome = TypeVar("Outcome")


class CommitInDoubt(Exception):
    """A commit was sent but whether it was made is unknown (no answer, and the catalog could not be asked):
    its files must stay. Sending it again with the same writer id and sequence is safe."""


class Committer(Protocol):
    """What :func:`commit_resolved` needs of a catalog client (``CatalogClient`` is one)."""

    def commit(self, scope: str, stream: str, chunks: Sequence[Chunk], options: CommitOptions | None = None,
               **fields: Any) -> dict[str, Any]:
        """Send one commit request; the Commit answer."""
        ...

    def find_commit(self, scope: str, stream: str, writer_id: str, writer_sequence: int) -> dict[str, Any] | None:
        """The commit of (writer id, sequence) with the paths it added, or None."""
        ...


class TablesCommitter(Committer, Protocol):
    """What :func:`commit_tables_resolved` needs of a catalog client (``CatalogClient`` is one)."""

    def commit_tables(self, parts: Sequence[TableCommit]) -> list[dict[str, Any]]:
        """Send one commit request of several tables; the Commit answers in the parts' order."""
        ...


@dataclass(frozen=True)
class Committed:
    """A commit that was made: the Commit answer (``duplicate`` only when an earlier commit of the same writer
    id and sequence holds other files than this one's) and ``stale``, the paths of this commit's chunks the
    stream does not hold (a repeat's files, which the writer deletes)."""

    answer: dict[str, Any]
    stale: tuple[str, ...] = ()


def _unanswered(error: BaseException) -> bool:
    """Whether a failed request may have been carried out: no answer, or a server-side failure (5xx)."""
    if isinstance(error, requests.RequestException):
        return True
    return isinstance(error, StreamcatError) and error.status >= 500


class _Unknown:
    """The catalog could not be asked."""


_UNKNOWN = _Unknown()


def _ask(catalog: Committer, scope: str, stream: str, options: CommitOptions) -> dict[str, Any] | _Unknown | None:
    assert options.writer_id is not None
    assert options.writer_sequence is not None
    try:
        return catalog.find_commit(scope, stream, options.writer_id, options.writer_sequence)
    except (requests.RequestException, StreamcatError) as error:
        if _unanswered(error):
            return _UNKNOWN
        raise


def _made(found: dict[str, Any], paths: Sequence[str]) -> Committed:
    """The outcome when the catalog holds the commit of this writer id and sequence (``found``)."""
    held = set(found["paths"])
    stale = tuple(p for p in paths if p not in held)
    return Committed({**found["commit"], "duplicate": bool(stale) or (not paths and bool(held))}, stale)


def _resolved(send: Callable[[], Outcome], ask: Callable[[], Outcome | _Unknown | None],
              repeated: Callable[[Outcome], bool], traceable: bool, what: str, *, attempts: int, backoff: float,
              in_doubt: bool) -> Outcome:
    """The loop of :func:`commit_resolved` (see there), for a commit that ``send`` sends and whose outcome
    ``ask`` looks up by its writer id and sequence (None: not made); ``repeated`` tells an answer that is a
    repeat of the writer id and sequence (which ``ask`` then resolves)."""
    failure: BaseException | None = None
    delay = backoff
    for sends in range(attempts):
        if in_doubt:
            if not traceable:
                break
            found = ask()
            if found is not None and not isinstance(found, _Unknown):
                return found
            if found is None:
                in_doubt = False  # not made: sending again is as good as sending first
        if sends:
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
        try:
            answer = send()
        except (requests.RequestException, StreamcatError) as error:
            if _unanswered(error):
                failure, in_doubt = error, True
                continue
            if in_doubt and traceable:  # refused now, but an earlier send of it may have been made
                found = ask()
                if isinstance(found, _Unknown):
                    raise CommitInDoubt(f"{what} may or may not have been made ({error})") from error
                if found is not None:
                    return found
            raise
        if not repeated(answer) or not traceable:
            return answer
        # A repeat of (writer id, sequence): this try's own earlier send, or another run's commit.
        found = ask()
        return answer if found is None or isinstance(found, _Unknown) else found
    raise CommitInDoubt(f"{what} was sent but no answer came ({failure}); it may or may not have been made") \
        from failure


def commit_resolved(
    catalog: Committer,
    scope: str,
    stream: str,
    chunks: Sequence[Chunk],
    options: CommitOptions,
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    backoff: float = DEFAULT_BACKOFF,
    in_doubt: bool = False,
) -> Committed:
    """Commit ``chunks`` with ``options``, resolving a lost answer from the catalog; returns what was made.

    After a try that got no answer (``in_doubt``: an earlier call's), the commit of the writer id and
    sequence is looked up before it is sent again: found, the commit was made (its answer is returned);
    not found (or the catalog cannot be asked: the server makes a pair at most once), it is sent again,
    at most ``attempts`` sends in all, pausing ``backoff`` seconds (doubling) between them. A refusal (a
    4xx: nothing committed) is raised as the server's error, unless an earlier
    try may have been made, which is looked up first. Raises CommitInDoubt when the outcome stays unknown,
    at once for options without a writer id (then nothing can tell).
    """
    paths = [c.path for c in chunks]

    def ask() -> Committed | _Unknown | None:
        found = _ask(catalog, scope, stream, options)
        return found if found is None or isinstance(found, _Unknown) else _made(found, paths)

    return _resolved(lambda: Committed(catalog.commit(scope, stream, chunks, options)), ask,
                     lambda made: bool(made.answer.get("duplicate")), _traceable(options),
                     f"commit {options.writer_sequence} of writer {options.writer_id} to {scope}.{stream}",
                     attempts=attempts, backoff=backoff, in_doubt=in_doubt)


def commit_tables_resolved(
    catalog: TablesCommitter,
    parts: Sequence[TableCommit],
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    backoff: float = DEFAULT_BACKOFF,
    in_doubt: bool = False,
) -> list[Committed]:
    """:func:`commit_resolved` of a commit of several tables (``CatalogClient.commit_tables``: all made, or
    none); what was made, a :class:`Committed` per part. The server makes all parts or none, so a lost answer
    is resolved by looking up the parts' writer ids and sequences: the first part found made means all were.
    Traceable only when every part carries a writer id and sequence."""

    def ask() -> list[Committed] | _Unknown | None:
        made: list[Committed] = []
        for part in parts:
            found = _ask(catalog, part.scope, part.stream, part.options)
            if found is None or isinstance(found, _Unknown):
                return found
            made.append(_made(found, [c.path for c in part.chunks]))
        return made

    first = parts[0].options
    return _resolved(lambda: [Committed(a) for a in catalog.commit_tables(parts)], ask,
                     lambda made: all(m.answer.get("duplicate") for m in made),
                     all(_traceable(p.options) for p in parts),
                     f"commit {first.writer_sequence} of writer {first.writer_id} to "
                     + ", ".join(f"{p.scope}.{p.stream}" for p in parts),
                     attempts=attempts, backoff=backoff, in_doubt=in_doubt)


def _traceable(options: CommitOptions) -> bool:
    return options.writer_id is not None and options.writer_sequence is not None


__all__ = ["DEFAULT_ATTEMPTS", "DEFAULT_BACKOFF", "CommitInDoubt", "Committed", "Committer", "TablesCommitter",
           "commit_resolved", "commit_tables_resolved"]
