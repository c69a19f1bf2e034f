"""Safe on-disk primitives shared by every index component: no pickle, checksums, fsync.

Every component directory holds data files plus one JSON manifest that records a
``format`` name, a ``format_version`` and the SHA-256 of each data file. Loading verifies
the manifest and every checksum *before* any data file is handed to numpy or faiss, so a
truncated or tampered file raises :class:`IndexLoadError` naming it instead of crashing.

Nothing is trusted before it is checked: JSON is read from regular files only, at most
:data:`MAX_JSON_BYTES` and as deep as Python's recursion limit allows; a manifest's file
list holds plain relative names, each a regular file reached without a symbolic link,
checked before anything is opened, so a crafted list can neither read outside the index
nor tell what exists there, and a FIFO or a device never blocks a reader.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ragtools.indexes.errors import IndexLoadError, IndexVersionError
from ragtools.parsers.document import json_text

_CHUNK = 1 << 20
_SELF = "manifest_sha256"
MAX_JSON_BYTES = 1 << 30
"""Largest JSON file read (a manifest tracking a million source files is some 200 MB)."""


def _self_digest(manifest: Mapping[str, Any]) -> str:
    """SHA-256 of the manifest's canonical JSON without its own digest field."""
    body = {key: value for key, value in manifest.items() if key != _SELF}
    canonical = json_text(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _open_regular(path: str | Path) -> int:
    """A read descriptor of ``path`` if it is a regular file, else ``OSError``.

    ``O_NONBLOCK`` makes opening a FIFO return at once instead of waiting for a writer.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        msg = f"not a regular file: {path}"
        raise OSError(msg)
    return fd


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a regular file's bytes (``OSError`` for a FIFO, a device...)."""
    digest = hashlib.sha256()
    with open(_open_regular(path), "rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def fsync_dir(path: str | Path) -> None:
    """Flush a directory entry to disk so a rename or a new file survives a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json(path: str | Path, data: Any, *, indent: int | None = 1) -> None:
    """Write JSON (UTF-8, sorted keys; names that are not UTF-8 escaped) and fsync it.

    ``indent=None`` writes it on one line, for long lists (a vocabulary, document ids): the
    json module encodes those in C, several times faster than indented.
    """
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json_text(data, sort_keys=True, indent=indent))
        handle.flush()
        os.fsync(handle.fileno())


def read_bytes(path: str | Path) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_JSON_BYTES` (a JSON file read
    later), failures mapped to :class:`IndexLoadError` naming it."""
    try:
        with open(_open_regular(path), "rb") as handle:
            data = handle.read(MAX_JSON_BYTES + 1)
    except FileNotFoundError as exc:
        raise IndexLoadError(path, "file is missing") from exc
    except OSError as exc:
        raise IndexLoadError(path, f"not readable ({exc})") from exc
    if len(data) > MAX_JSON_BYTES:
        raise IndexLoadError(path, f"larger than {MAX_JSON_BYTES} bytes; not read")
    return data


def read_json(path: str | Path) -> Any:
    """Read JSON, mapping every failure to :class:`IndexLoadError` naming the file.

    Only a regular file of at most :data:`MAX_JSON_BYTES` is read; nesting deeper than the
    recursion limit is an error too.
    """
    data = read_bytes(path)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexLoadError(path, f"not readable JSON ({exc})") from exc
    except RecursionError as exc:
        raise IndexLoadError(path, "not readable JSON (nested too deep)") from exc


def listed_file(directory: Path, name: object, manifest: Path) -> Path:
    """``directory / name`` for a name of a manifest's file list, checked before any use.

    Raises:
        IndexLoadError: ``name`` is not a plain relative name (absolute, ``..``, empty
            parts, a backslash), a part of the path is a symbolic link, the file is not
            regular, or it is missing. Nothing outside ``directory`` is ever looked at.
    """
    parts = name.split("/") if isinstance(name, str) else []
    if not parts or "\\" in str(name) or any(p in ("", ".", "..") for p in parts):
        shown = repr(name)[:80]
        raise IndexLoadError(manifest, f"the file list names {shown}, not a plain relative name")
    path = directory
    for part in parts:
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except OSError as exc:
            raise IndexLoadError(path, "file listed in the manifest is missing") from exc
        if stat.S_ISLNK(mode):
            raise IndexLoadError(path, "is a symbolic link; index files never are")
    if not stat.S_ISREG(mode):
        raise IndexLoadError(path, "not a regular file")
    return path


def save_npy(path: str | Path, array: np.ndarray) -> None:
    """Save an array as ``.npy`` (never pickled) and fsync it."""
    with open(path, "wb") as handle:
        np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
        handle.flush()
        os.fsync(handle.fileno())


_NPY_LOAD_LOCK = threading.Lock()
"""Serialises ``np.load``: it parses each header with ``ast.literal_eval``, and CPython before
3.11.8 / 3.12.2 can raise ``SystemError: AST constructor recursion depth mismatch`` when
several threads build ASTs at once (python/cpython#106905). Seen with eight threads opening
one index; opening is rare next to searching, so the lock costs nothing that matters."""


def load_npy(path: str | Path, *, mmap: bool = False) -> np.ndarray:
    """Load a ``.npy`` file without pickle, optionally memory-mapped read-only.

    A mapped array is returned as a plain ndarray over the mapping (its ``base`` keeps the
    mapping open): every slice or gather of an ``np.memmap`` runs the subclass's Python
    ``__array_finalize__``, 17 calls in one BM25 query, which under a hybrid query's thread
    contention cost milliseconds.
    """
    try:
        with _NPY_LOAD_LOCK:
            array: np.ndarray = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
        return np.asarray(array) if mmap else array
    except FileNotFoundError as exc:
        raise IndexLoadError(path, "file is missing") from exc
    except (OSError, ValueError, EOFError) as exc:
        raise IndexLoadError(path, f"not a valid .npy array ({exc})") from exc


def write_manifest(
    directory: str | Path,
    name: str,
    *,
    fmt: str,
    version: int,
    files: Iterable[str],
    data: Mapping[str, Any],
    sealed: bool = False,
    indent: int | None = 1,
) -> dict[str, Any]:
    """Write ``directory/name`` recording the format, version, data and file checksums.

    The data files must already be written (and fsynced) in ``directory``. ``sealed`` adds
    a SHA-256 of the manifest itself, for a top-level manifest that nothing else checksums.
    ``indent=None`` writes one line (see :func:`write_json`), for a manifest as long as the
    list of its sources.
    """
    directory = Path(directory)
    manifest = dict(data)
    manifest["format"] = fmt
    manifest["format_version"] = version
    manifest["files"] = {f: sha256_file(directory / f) for f in sorted(files)}
    if sealed:
        manifest[_SELF] = _self_digest(manifest)
    write_json(directory / name, manifest, indent=indent)
    return manifest


def read_manifest(
    directory: str | Path,
    name: str,
    *,
    fmt: str,
    version: int,
    verify: bool = True,
    sealed: bool = False,
) -> dict[str, Any]:
    """Read and check a manifest written by :func:`write_manifest`.

    Raises:
        IndexLoadError: the manifest or a listed file is missing, unreadable, of another
            format, or fails its checksum (the message names the file).
        IndexVersionError: the manifest's ``format_version`` is newer than ``version``.
    """
    directory = Path(directory)
    path = directory / name
    manifest = read_json(path)
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        raise IndexLoadError(path, f"not a {fmt!r} manifest")
    found = manifest.get("format_version")
    if not isinstance(found, int) or found < 1:
        raise IndexLoadError(path, f"invalid format_version {found!r}")
    if found > version:
        msg = (
            f"format_version {found} is newer than this package reads ({version}); "
            "upgrade the package or rebuild the index"
        )
        raise IndexVersionError(path, msg)
    if sealed and manifest.get(_SELF) != _self_digest(manifest):
        msg = "checksum mismatch: the manifest is corrupt or was modified"
        raise IndexLoadError(path, msg)
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise IndexLoadError(path, "manifest lists no files")
    for fname in files:
        listed_file(directory, fname, path)
    if verify:
        for fname, expected in files.items():
            fpath = directory / fname
            try:
                digest = sha256_file(fpath)
            except OSError as exc:
                raise IndexLoadError(fpath, "file listed in the manifest is missing") from exc
            if digest != expected:
                msg = "checksum mismatch: the file is corrupt or was modified"
                raise IndexLoadError(fpath, msg)
    return manifest
