"""Listing, sizing and deleting lake files through fsspec (local and S3), in parallel and never through links."""

from __future__ import annotations

import datetime as dt
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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


Listed = tuple[str, int, dt.datetime | float | None]  # (path key, size, modified: a time or a POSIX timestamp)


LOCAL_BATCH = 10_000  # listed local files handed on at a time: a directory of a million files stays flat


def _scan_local(path: str, dirs: list[str], *, strict: bool, sizes: bool) -> Iterator[list[Listed]]:
    """Regular files directly in a local directory, in batches, links skipped (what fsspec's `ls` keeps of it);
    its subdirectories go to `dirs`. An error lists nothing more, as fsspec's `walk` omits it, or raises when
    `strict` (its `ls`). Without `sizes` no file is stat'ed: size -1 (`complete` stats it)."""
    files: list[Listed] = []
    try:
        with os.scandir(path) as it:
            for e in it:
                try:
                    if e.is_symlink():
                        continue
                    if e.is_dir(follow_symlinks=False):
                        dirs.append(e.path)
                    elif not e.is_file(follow_symlinks=False):
                        continue
                    elif not sizes:
                        files.append((e.path, -1, None))
                    else:
                        st = e.stat(follow_symlinks=False)
                        files.append((e.path, st.st_size, st.st_mtime))
                except FileNotFoundError:
                    continue
                if len(files) >= LOCAL_BATCH:
                    yield files
                    files = []
    except FileNotFoundError:
        return
    except OSError as exc:
        if strict:
            raise StorageError(f"cannot list {path}: {exc}") from exc
        return
    if files:
        yield files


def _iter_local(base: str, sizes: bool) -> Iterator[list[Listed]]:
    """`iter_files` for a local absolute directory: `os.scandir` one directory at a time (links never followed),
    at most one `lstat` per file, no dict per file; the root and schema levels must list (as fsspec's `ls`), deeper
    directories that cannot are left out (as its `find`)."""
    todo = [(base.rstrip("/") or "/", 0)]
    while todo:
        path, depth = todo.pop()
        dirs: list[str] = []
        yield from _scan_local(path, dirs, strict=depth < PREFIX_DEPTH, sizes=sizes)
        todo += [(d, depth + 1) for d in dirs]


def _iter_fsspec(fs: AbstractFileSystem, base: str, workers: int) -> Iterator[list[Listed]]:
    """`iter_files` through fsspec (S3, and local edge cases): one listing per prefix level, in parallel."""
    level = [base.rstrip("/") or "/"]
    for depth in range(PREFIX_DEPTH + 1):
        recursive = depth == PREFIX_DEPTH
        def listing(p: str, r: bool = recursive) -> list[dict[str, Any]]:
            return _entries(fs, p, recursive=r)

        batches = _parallel(listing, level, workers)
        next_level: list[str] = []
        for batch in batches:
            found: dict[str, Listed] = {}
            for info in batch:
                name = path_key(str(info.get("name", "")))
                if info.get("islink") or not (name + "/").startswith(base):
                    continue
                kind = info.get("type")
                if kind == "directory":
                    if not recursive and name.rstrip("/") + "/" != base:
                        next_level.append(name)
                elif kind == "file":
                    found[name] = (name, int(info.get("size") or 0), _modified(info))
            yield list(found.values())
        level = sorted(set(next_level))
        if not level:
            break


def iter_files(
    root: str, storage_options: Mapping[str, Any] | None = None, *, workers: int = WORKERS, sizes: bool = True
) -> Iterator[list[Listed]]:
    """Every regular file under `root` as `(path key, size, modified)` tuples, a batch per listed prefix, unsorted
    (`listed_time` turns `modified` into a time; `spell` the key into a path): root and schema levels listed one
    directory at a time, each deeper prefix (table directory) recursively, in parallel. Symbolic links (to files
    or directories) are skipped, so nothing outside `root` is ever listed. Without `sizes`, local files are not
    stat'ed (size -1, `complete` stats the few a caller keeps)."""
    base = path_key(ensure_dir(root))
    proto, _ = split_protocol(root)
    if proto == "file" and "://" not in root and base.startswith("/") and os.path.isdir(base):
        return _iter_local(base, sizes)
    fs = filesystem(root, storage_options)
    fs.invalidate_cache()  # fsspec instances are shared and cache listings; we need what is there now
    return _iter_fsspec(fs, base, workers)


def complete(item: Listed) -> Listed | None:
    """A listed file with its size and time (stat'ed now when listed without), or None when it is gone since."""
    if item[1] >= 0:
        return item
    try:
        st = os.stat(item[0], follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot stat {item[0]}: {exc}") from exc
    return item[0], st.st_size, st.st_mtime


def listed_time(modified: dt.datetime | float | None) -> dt.datetime | None:
    """A listed file's modification time (UTC)."""
    if isinstance(modified, float | int):
        return dt.datetime.fromtimestamp(float(modified), dt.UTC)
    return modified


def spell(root: str, key: str) -> str:
    """A listed path key spelled as the lake spells paths under `root`: `/abs/…` or `s3://bucket/…`."""
    return _spell(root, key)


def list_files(
    root: str, storage_options: Mapping[str, Any] | None = None, *, workers: int = WORKERS
) -> list[ListedFile]:
    """Every regular file under `root` (see `iter_files`), sorted by path."""
    unique: dict[str, ListedFile] = {}
    for batch in iter_files(root, storage_options, workers=workers):
        for key, size, modified in batch:
            path = _spell(root, key)
            unique[path] = ListedFile(path, size, listed_time(modified))
    return [unique[k] for k in sorted(unique)]


class PathGuard:
    """`unsafe_reason` for many paths below one root: each directory's real path is resolved once."""

    def __init__(self, root: str, protected: Iterable[str] = ()) -> None:
        self.base = path_key(ensure_dir(root))
        self.protected = {path_key(p) for p in protected}
        self._real_root: str | None = None
        self._dirs: dict[str, bool] = {}  # local directory → it resolves below the real root

    def _inside(self, directory: str) -> bool:
        inside = self._dirs.get(directory)
        if inside is None:
            if self._real_root is None:
                self._real_root = os.path.realpath(self.base).rstrip("/")
            real_dir = os.path.realpath(directory)
            inside = self._dirs[directory] = real_dir == self._real_root or real_dir.startswith(self._real_root + "/")
        return inside

    def reason(self, path: str, *, regular: bool = False) -> str | None:
        """Why deleting `path` would be unsafe, or None; `regular`: just listed as a regular file (not a link)."""
        return self.key_reason(path_key(path), local=split_protocol(path)[0] == "file", regular=regular)

    def key_reason(self, key: str, *, local: bool, regular: bool = False) -> str | None:
        """`reason` for a path key (`path_key`), local or not."""
        if not key.startswith(self.base) or "/../" in key or key.endswith("/.."):
            return "outside the data path"
        if key in self.protected:
            return "protected (the catalog file)"
        if local:
            if not regular and os.path.islink(key):
                return "a symbolic link"
            if not self._inside(key[:key.rfind("/")] or "/"):  # os.path.dirname, for a file's key
                return "outside the data path (through a link)"
        return None


def unsafe_reason(path: str, root: str, protected: Iterable[str] = ()) -> str | None:
    """Why deleting `path` would be unsafe (outside `root`, a link, a protected file), or None."""
    return PathGuard(root, protected).reason(path)


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


LIST_MIN = 8  # a remote directory holding this many of a batch's paths is listed once instead of stat'ed per file


class SizeProbe:
    """Sizes of many files, batch by batch: one `os.stat` per local file (no thread, no future, no dict); remote
    files from one listing per directory (`ls(detail=True)`), per-file `info` in parallel only where a directory
    holds few of them or cannot be listed."""

    def __init__(self, storage_options: Mapping[str, Any] | None = None, *, workers: int = WORKERS) -> None:
        self.storage_options = storage_options
        self.workers = workers
        self._listed: dict[tuple[str, str], dict[str, int] | None] = {}  # (protocol, directory) → name → size

    def sizes(self, paths: Sequence[str]) -> list[int | None]:
        """Size of each file, None when it does not exist (or is a directory), as `file_sizes` says."""
        out: list[int | None] = [None] * len(paths)
        remote: dict[str, list[int]] = {}  # protocol → positions
        for i, p in enumerate(paths):
            if p.startswith("/"):
                out[i] = _local_size(p)
            else:
                remote.setdefault(split_protocol(p)[0], []).append(i)
        for positions in remote.values():
            self._remote([paths[i] for i in positions], positions, out)
        return out

    def _remote(self, paths: list[str], positions: list[int], out: list[int | None]) -> None:
        proto = split_protocol(paths[0])[0]
        by_dir: dict[str, list[int]] = {}
        single: list[int] = []  # indexes into paths
        for j, p in enumerate(paths):
            rest = split_protocol(p)[1]
            if proto == "file" or "//" in rest or rest.endswith("/") or "/" not in rest:
                single.append(j)  # relative local paths and odd spellings: fsspec's own `info`
            else:
                by_dir.setdefault(rest.rpartition("/")[0], []).append(j)
        fs = None
        for directory, members in by_dir.items():
            key = (proto, directory)
            if key not in self._listed and len(members) < LIST_MIN:
                single += members
                continue
            if key not in self._listed:
                fs = fs or filesystem(paths[0], self.storage_options)
                self._listed[key] = _listing_sizes(fs, directory)
            listing = self._listed[key]
            if listing is None:
                single += members
                continue
            for j in members:
                out[positions[j]] = listing.get(split_protocol(paths[j])[1].rpartition("/")[2])
        if single:
            found = file_sizes([paths[j] for j in single], self.storage_options, workers=self.workers)
            for j in single:
                out[positions[j]] = found[paths[j]]


def _local_size(path: str) -> int | None:
    """`_size` for an absolute local path: one `stat` (through a link, as fsspec's `info`)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot stat {path}: {exc}") from exc
    return None if stat.S_ISDIR(st.st_mode) else st.st_size


def _listing_sizes(fs: AbstractFileSystem, directory: str) -> dict[str, int] | None:
    """File name → size of a remote directory's files (an absent name is no file: missing or a directory), or None
    when it cannot be listed (its files are then asked one by one)."""
    try:
        fs.invalidate_cache(directory)
        entries = fs.ls(directory, detail=True)
    except FileNotFoundError:
        return {}
    except OSError:
        return None
    out: dict[str, int] = {}
    for info in entries:
        if info.get("type") == "file":
            out[str(info.get("name", "")).rstrip("/").rpartition("/")[2]] = int(info.get("size") or 0)
    return out


def delete_files(
    paths: Sequence[str], storage_options: Mapping[str, Any] | None = None, *, workers: int = WORKERS
) -> dict[str, str | None]:
    """Delete files in parallel: per path None when deleted (or already gone), else the error text."""
    return _each_path(paths, storage_options, workers, _remove)
