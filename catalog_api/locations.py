"""Where streams may keep their files (docs/decisions.md, "Storage locations"): the server owns storage locations.

A stream's location is either the one the server gives it (``<warehouse>/<scope>/<stream>``:
*managed*, its files purged with it) or an explicit one strictly inside the warehouse or a root
the operator lists in ``STREAMCAT_ALLOWED_LOCATIONS`` (*external*: its files are never purged).
Every location is normalized before it is compared or stored, and no two live streams' locations
may be equal or nested.

These are pure functions over strings, except that local paths are resolved with
``os.path.realpath`` so that a symlink cannot lead a location, a purge or a garbage collection
out of its root.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from urllib.parse import quote, unquote, urlsplit

from catalog_api.errors import LocationNotAllowed, LocationOverlaps

#: URI schemes of pyarrow.fs filesystems a root may be on (``file:`` and ``local:`` are local paths).
REMOTE_SCHEMES = frozenset({"s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss"})
_LOCAL_SCHEMES = frozenset({"file", "local"})
#: Azure names ``container@account`` where other URIs would carry user information.
_AT_IN_HOST = frozenset({"abfs", "abfss"})
#: Two names pyarrow.fs gives one filesystem: spelled one way, they compare equal.
_ALIASES = {"gcs": "gs"}
#: Schemes whose URIs may leave the host out (the cluster's default filesystem).
_DEFAULT_HOST = frozenset({"hdfs", "viewfs"})
#: Characters RFC 3986 allows unescaped in a path, for writing remote locations back as URIs.
_PATH_SAFE = "/-._~!$&'()*+,;=:@"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: Where the setting is named in refusals, so an operator knows what to change.
SETTING = "STREAMCAT_ALLOWED_LOCATIONS"


@dataclass(frozen=True)
class Location:
    """A normalized location: a local absolute path (``scheme`` empty) or a filesystem URI.

    ``path`` is absolute, ``/``-separated, with no empty, ``.`` or ``..`` segment and no trailing
    ``/`` (only the filesystem root is ``/``), percent-escapes already decoded.
    """

    scheme: str
    netloc: str
    path: str

    def __str__(self) -> str:
        if not self.scheme:
            return self.path
        return f"{self.scheme}://{self.netloc}{quote(self.path, safe=_PATH_SAFE)}"

    @property
    def is_local(self) -> bool:
        """Whether this is a path of the server's own filesystem."""
        return not self.scheme

    def contains(self, other: Location) -> bool:
        """Whether ``other`` lies strictly below this location, on the same filesystem."""
        if (self.scheme, self.netloc) != (other.scheme, other.netloc):
            return False
        prefix = self.path if self.path.endswith("/") else f"{self.path}/"
        return other.path.startswith(prefix) and other.path != self.path

    def real(self) -> Location:
        """The location with symlinks of a local path resolved (object stores have none).

        ``os.path.realpath`` resolves every component that exists and keeps the rest as
        written: the deepest existing ancestor decides where a new directory will really be.
        """
        return replace(self, path=os.path.realpath(self.path)) if self.is_local else self

    def child(self, relative: str) -> Location:
        """The location of ``relative`` (a checked, ``/``-separated relative path) below this one."""
        return replace(self, path=f"{self.path.rstrip('/')}/{relative}")


def _refuse(text: str, why: str) -> LocationNotAllowed:
    return LocationNotAllowed(f"location {text!r} {why}")


def _split(text: str) -> tuple[str, str, str]:
    """Scheme, host and still-encoded path of ``text``; plain paths have neither scheme nor host."""
    if text.startswith("/"):
        return "", "", text
    if text.startswith("~"):
        raise _refuse(text, "is not absolute: '~' is not expanded")
    if not _SCHEME.match(text):
        raise _refuse(text, "is not an absolute path or a URI")
    if "?" in text or "#" in text:
        # pyarrow reads options (endpoint_override, credentials...) from a query: never a client's.
        raise _refuse(text, "has a query or fragment; a location is a path only")
    parts = urlsplit(text)
    scheme = _ALIASES.get(parts.scheme.lower(), parts.scheme.lower())
    if scheme in _LOCAL_SCHEMES:
        if parts.netloc not in ("", "localhost"):
            raise _refuse(text, f"names host {parts.netloc!r}; a file URI must be local")
        return "", "", parts.path
    if scheme not in REMOTE_SCHEMES:
        known = ", ".join(sorted(_LOCAL_SCHEMES | REMOTE_SCHEMES))
        raise _refuse(text, f"has scheme {scheme!r}; a location is an absolute path or a URI of {known}")
    user, at, host = parts.netloc.rpartition("@")
    if at and (scheme not in _AT_IN_HOST or ":" in user):
        raise _refuse(text, "carries user information; credentials come from the server's environment")
    if not host and scheme not in _DEFAULT_HOST:
        raise _refuse(text, "names no bucket or container")
    return scheme, (user + at + host).lower(), parts.path


def parse(text: str) -> Location:
    """Normalize a location given as an absolute path or a URI; LocationNotAllowed names what is wrong.

    ``file:`` (and ``local:``) URIs become plain paths, so that both spellings compare equal. URI
    paths are percent-decoded once, as pyarrow decodes them; an escape left after that (double
    encoding, or one in a plain path, which pyarrow would not decode but Spark or Hadoop might) is
    refused, as are ``..``, ``.`` and empty segments (refused, not resolved: a client must say where
    it means), backslashes and control characters. One trailing ``/`` is dropped.
    """
    if not text:
        raise _refuse(text, "is empty")
    if _CONTROL.search(text):
        raise _refuse(text, "contains a control character")
    if "\\" in text:
        raise _refuse(text, "contains a backslash; separate directories with '/'")
    scheme, netloc, raw = _split(text)
    try:
        path = raw if text.startswith("/") else unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise _refuse(text, "has percent-escapes that are not UTF-8") from None
    if _ESCAPE.search(path):
        raise _refuse(text, "holds a percent-escape after decoding; spell the directory names out")
    if _CONTROL.search(path) or "\\" in path:
        raise _refuse(text, "decodes to a control character or a backslash")
    if scheme and not path:
        path = "/"
    if not path.startswith("/"):
        raise _refuse(text, "is not absolute")
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    segments = path.split("/")[1:] if path != "/" else []
    if ".." in segments:
        raise _refuse(text, "has a '..' segment; locations are not resolved, name the directory itself")
    if "." in segments or "" in segments:
        raise _refuse(text, "has an empty or '.' segment")
    return Location(scheme, netloc, path)


def parse_root(text: str) -> Location:
    """A warehouse or allowed root: :func:`parse`, and not a whole local filesystem."""
    root = parse(text.strip())
    if root.is_local and root.path == "/":
        raise _refuse(text, "is the filesystem root; name a directory for stream data")
    return root


def check_allowed(location: Location, warehouse: Location, roots: Sequence[Location]) -> None:
    """Refuse a location that is not strictly inside the warehouse or an allowed root, both as
    written and with symlinks resolved, or that is or holds one of them."""
    every = [warehouse, *roots]
    real = location.real()
    for root in every:
        if location == root or location.contains(root) or real == root.real() or real.contains(root.real()):
            raise LocationNotAllowed(
                f"location {location} is or holds the warehouse or an allowed root ({root}); "
                "a location is a directory inside one"
            )
    under = [root for root in every if root.contains(location)]
    if not under:
        raise LocationNotAllowed(f"location {location} is not under the warehouse or an allowed root ({SETTING})")
    if not any(root.real().contains(real) for root in under):
        raise LocationNotAllowed(f"location {location} leads through a symlink to {real}, outside {under[0]}")


def stored(text: str) -> Location:
    """A location as the database holds it; rows written before normalization may not parse,
    and are then compared as written (minus a trailing ``/``)."""
    try:
        return parse(text)
    except LocationNotAllowed:
        return Location("", "", text.rstrip("/") or "/")


def check_overlap(location: Location, streams: Iterable[tuple[str, str]]) -> None:
    """Refuse a location equal to, inside, or holding the location of any of ``streams``
    (``(scope.stream, location)`` pairs), compared as written and with symlinks resolved."""
    real = location.real()
    for name, text in streams:
        other = stored(text)
        other_real = other.real()
        if location == other or real == other_real:
            raise LocationOverlaps(f"location {location} is the location of stream {name}")
        if other.contains(location) or other_real.contains(real):
            raise LocationOverlaps(f"location {location} is inside the location of stream {name}")
        if location.contains(other) or real.contains(other_real):
            raise LocationOverlaps(f"location {location} holds the location of stream {name}")


def symlink_free_below(base: Location, target: Location) -> bool:
    """Whether ``target`` lies strictly below ``base`` and no symlink sits between them, so that
    deleting ``target`` deletes nothing but what is below ``base`` as written.

    Stricter than :func:`check_allowed` on purpose: it guards deletions, where a symlink made
    after the location was accepted (even one pointing inside the warehouse, at another stream's
    directory) must not redirect what goes.
    """
    if not base.contains(target):
        return False
    if not target.is_local:
        return True
    relative = target.path[len(base.path.rstrip("/")) + 1 :]
    return os.path.realpath(target.path) == base.real().child(relative).path


def safe_relative(path: str) -> bool:
    """Whether ``path`` is a plain relative file path (a chunk's path below its stream's location):
    no leading ``/``, no ``..``, ``.`` or empty segment, no backslash, no scheme or drive, no control
    character."""
    parts = path.split("/")
    return not (
        not path
        or path.startswith("/")
        or "\\" in path
        or _CONTROL.search(path)
        or ":" in parts[0]
        or any(p in ("", ".", "..") for p in parts)
    )
