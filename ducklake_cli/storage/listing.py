"""Listing, sizing and deleting lake files through fsspec (local and S3), in parallel and never through links."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ducklake_cli.errors import StorageError
from ducklake_cli.storage.files import ensure_dir, filesystem, split_protocol

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

WORKERS = 16  # parallel listings/deletes: S3 round trips dominate, local calls are cheap either way
PREFIX_DEPTH = 2  # list root and schema directories one level at a time, then each table directory recursively

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class ListedFile:
    """A regular file found under the data path (links are never listed)."""

    path: str  # spelled as the lake spells paths: `/abs/…` or `s3://bucket/…`
    size: int
    modified: dt.datetime | None


def path_key(path: str) -> str:
    """A path without protocol or repeated slashes, for comparing catalog paths with listed ones."""
    _, rest = split_protocol(path)
    while "//" in rest:
        rest = rest.replace("//", "/")
    return rest


def _parallel(fn: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    if len(items) <= 1 or workers <= 1:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(fn, items))


def _modified(info: Mapping[str, Any]) -> dt.datetime | None:
    for key in ("LastModified", "last_modified", "mtime", "updated", "modified"):
        value = info.get(key)
        if isinstance(value, dt.datetime):
            return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        if isinstance(value, int | float):
            return dt.datetime.fromtimestamp(float(value), dt.UTC)
    return None


def _spell(root: str, name: str) -> str:
    proto, _ = split_protocol(root)
    return name if proto == "file" and "://" not in root else f"{root.split('://', 1)[0]}://{name}"


def _entries(fs: AbstractFileSystem, path: str, *, recursive: bool) -> list[dict[str, Any]]:
    try:
        if recursive:
            found = fs.find(path, detail=True, withdirs=False)
            return list(found.values()) if isinstance(found, dict) else []
        return list(fs.ls(path, detail=True))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"cannot list {path}: {exc}") from exc


def list_files(
    root: str, storage_options: Mapping[str, Any] | None = None, *, workers: int = WORKERS
) -> list[ListedFile]:
    """Every regular file under `root`: root and schema levels listed one directory at a time, each deeper
    prefix (table directory) listed recursively, in parallel. Symbolic links (to files or directories) are
    skipped, so nothing outside `root` is ever listed."""
    fs = filesystem(root, storage_options)
    fs.invalidate_cache()  # fsspec instances are shared and cache listings; we need what is there now
    base = path_key(ensure_dir(root))
    out: list[ListedFile] = []
    level = [base.rstrip("/") or "/"]
    for depth in range(PREFIX_DEPTH + 1):
        recursive = depth == PREFIX_DEPTH
        def listing(p: str, r: bool = recursive) -> list[dict[str, Any]]:
            return _entries(fs, p, recursive=r)

        batches = _parallel(listing, level, workers)
        next_level: list[str] = []
        for batch in batches:
            for info in batch:
                name = path_key(str(info.get("name", "")))
                if info.get("islink") or not (name + "/").startswith(base):
                    continue
                kind = info.get("type")
                if kind == "directory":
                    if not recursive and name.rstrip("/") + "/" != base:
                        next_level.append(name)
                elif kind == "file":
                    out.append(ListedFile(_spell(root, name), int(info.get("size") or 0), _modified(info)))
        level = sorted(set(next_level))
        if not level:
            break
    unique = {f.path: f for f in out}
    return [unique[k] for k in sorted(unique)]


def unsafe_reason(path: str, root: str, protected: Iterable[str] = ()) -> str | None:
    """Why deleting `path` would be unsafe (outside `root`, a link, a protected file), or None."""
    key, base = path_key(path), path_key(ensure_dir(root))
    if not key.startswith(base) or "/../" in key or key.endswith("/.."):
        return "outside the data path"
    if any(key == path_key(p) for p in protected):
        return "protected (the catalog file)"
    proto, _ = split_protocol(path)
    if proto == "file":
        local = key
        if os.path.islink(local):
            return "a symbolic link"
        real_root = os.path.realpath(base).rstrip("/")
        real_dir = os.path.realpath(os.path.dirname(local))
        if real_dir != real_root and not real_dir.startswith(real_root + "/"):
            return "outside the data path (through a link)"
    return None


def _each_path(paths: Sequence[str], storage_options: Mapping[str, Any] | None, workers: int,
               action: Callable[[AbstractFileSystem, str], R]) -> dict[str, R | None]:
    """`action(fs, path)` for every path in parallel; None for a path whose file does not exist."""
    if not paths:
        return {}
    fs = filesystem(paths[0], storage_options)

    def run(p: str) -> R | None:
        try:
            return action(fs, p)
        except FileNotFoundError:
            return None

    return dict(zip(paths, _parallel(run, list(paths), workers), strict=True))


def _size(fs: AbstractFileSystem, p: str) -> int | None:
    try:
        info = fs.info(p)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StorageError(f"cannot stat {p}: {exc}") from exc
    return None if info.get("type") == "directory" else int(info.get("size") or 0)


def _remove(fs: AbstractFileSystem, p: str) -> str | None:
    try:
        fs.rm_file(p)
    except FileNotFoundError:
        raise
    except OSError as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def file_sizes(
    paths: Sequence[str], storage_options: Mapping[str, Any] | None = None, *, workers: int = WORKERS
) -> dict[str, int | None]:
    """Size of each file, None when it does not exist (stat calls in parallel)."""
    return _each_path(paths, storage_options, workers, _size)


def delete_files(
    paths: Sequence[str], storage_options: Mapping[str, Any] | None = None, *, workers: int = WORKERS
) -> dict[str, str | None]:
    """Delete files in parallel: per path None when deleted (or already gone), else the error text."""
    return _each_path(paths, storage_options, workers, _remove)
