"""Stream locations on any pyarrow filesystem (a local directory by default)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

import pyarrow.fs as pafs


@dataclass(frozen=True)
class StoredFile:
    """A file under a stream's location: its path relative to the location, size and age."""

    path: str
    size: int
    mtime_ns: int


def resolve(location: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and the path within it of a location URI or absolute local path."""
    fs, path = pafs.FileSystem.from_uri(location)
    return fs, path.rstrip("/")


def join(location: str, *parts: str) -> str:
    """``location`` with relative ``parts`` appended."""
    return "/".join([location.rstrip("/"), *parts])


def uri_of(location: str) -> str:
    """An absolute URI of a location or file (``file://`` for a local path), as Iceberg names files."""
    return f"file://{location}" if location.startswith("/") else location


def _list_local(root: str) -> list[StoredFile]:
    # pyarrow's recursive listing follows symlinked directories (out of the location, or round a
    # loop); a location's files are the regular files really below it, so symlinks are skipped.
    found = []
    for directory, _dirs, names in os.walk(root, followlinks=False):
        for name in names:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                relative = os.path.relpath(path, root).replace(os.sep, "/")
                found.append(StoredFile(relative, info.st_size, info.st_mtime_ns))
    return found


def list_files(location: str) -> list[StoredFile]:
    """Every regular file below ``location`` (none if it does not exist); on a local filesystem,
    none reached through a symlink."""
    fs, root = resolve(location)
    if isinstance(fs, pafs.LocalFileSystem):
        return _list_local(root)
    infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    return [
        StoredFile(i.path[len(root) + 1 :], i.size or 0, i.mtime_ns or 0) for i in infos if i.type == pafs.FileType.File
    ]


def delete_tree(location: str) -> None:
    """Remove ``location`` and everything below it, if it exists."""
    fs, root = resolve(location)
    if fs.get_file_info(root).type != pafs.FileType.NotFound:
        fs.delete_dir(root)


def delete_files(location: str, paths: list[str]) -> None:
    """Remove files given relative to ``location``."""
    fs, root = resolve(location)
    for path in paths:
        fs.delete_file(f"{root}/{path}")
