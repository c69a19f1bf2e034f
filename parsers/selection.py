"""Which files of a source folder are read: hidden entries, caches, ``.gitignore``, patterns.

A folder given to :func:`parsers.load_dir` or to an index build holds more than documents:
version-control metadata, bytecode caches, build output. :func:`select_files` walks a folder
and keeps the files worth reading; everything it leaves out is reported as *skipped*, with a
reason, never as a failure:

* hidden files and directories (a name starting with ``.``);
* ``__pycache__`` directories (compiled Python, never text);
* whatever the ``.gitignore`` files say, as git reads them: the folder's own and its
  sub-folders' files, and those of the enclosing git work tree above it (a deeper file's
  patterns win, ``!`` re-includes). ``Selection(gitignore=False)`` turns this off;
* ``exclude`` patterns; and, when ``include`` patterns are given, only files matching one of
  them are candidates (the others are not reported: they were never asked for).

Patterns use the ``.gitignore`` syntax (``*.md`` at any depth, ``docs/*.md`` under ``docs``,
``build/`` a directory), matched with ``pathspec``, the library pip and black use for it.
An ignored or excluded directory is one skipped entry: it is not walked. A file named
explicitly (not a folder) is always taken.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pathspec

from ragtools.parsers.errors import ConfigError

__all__ = ["BYTECODE_CACHE", "Selection", "select_files"]

BYTECODE_CACHE = "__pycache__"
GITIGNORE = ".gitignore"

Skipped = tuple[str, str]


def _compile(patterns: Sequence[str], what: str) -> pathspec.GitIgnoreSpec | None:
    if not patterns:
        return None
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip():
            msg = f"{what} patterns must be non-empty strings, got {pattern!r}"
            raise ConfigError(msg)
    try:
        return pathspec.GitIgnoreSpec.from_lines(patterns)
    except (ValueError, TypeError) as exc:
        msg = f"invalid {what} pattern in {list(patterns)!r} ({exc}); use .gitignore syntax"
        raise ConfigError(msg) from exc


@dataclass(frozen=True)
class Selection:
    """The rules :func:`select_files` applies inside a folder (recorded by index builds, so
    that an update selects the same files).

    Attributes:
        include: ``.gitignore``-style patterns; when given, only matching files are read.
        exclude: ``.gitignore``-style patterns of files and folders to skip.
        gitignore: honour ``.gitignore`` files.
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    gitignore: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "include", tuple(self.include))
        object.__setattr__(self, "exclude", tuple(self.exclude))
        _compile(self.include, "include")  # fail early, naming the bad pattern
        _compile(self.exclude, "exclude")

    def to_json(self) -> dict[str, Any]:
        """The rules as JSON (for an index manifest)."""
        return {
            "include": list(self.include),
            "exclude": list(self.exclude),
            "gitignore": self.gitignore,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Selection:
        """Rules read back from :meth:`to_json`; ``None`` (older manifests) is the default."""
        if not data:
            return cls()
        return cls(
            include=tuple(data.get("include", ())),
            exclude=tuple(data.get("exclude", ())),
            gitignore=bool(data.get("gitignore", True)),
        )


@dataclass(frozen=True)
class _Ignore:
    """One ``.gitignore`` file: its folder (absolute, resolved) and its patterns."""

    base: str
    file: str
    spec: pathspec.GitIgnoreSpec


def _read_ignore(directory: Path, shown: Path) -> _Ignore | None:
    path = directory / GITIGNORE
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, TypeError):  # git ignores what it cannot parse; so do we
        return None
    return _Ignore(str(directory.resolve()), str(shown / GITIGNORE), spec)


def _enclosing_ignores(root: Path) -> list[_Ignore]:
    """The ``.gitignore`` files of the git work tree above ``root``, outermost first."""
    resolved = root.resolve()
    if (resolved / ".git").exists():
        return []  # the top of its own work tree: nothing above counts
    chain: list[Path] = []
    for parent in resolved.parents:
        chain.append(parent)
        if (parent / ".git").exists():
            break
    else:
        return []  # not inside a work tree: only the folder's own files count
    found = [_read_ignore(p, p) for p in reversed(chain)]
    return [i for i in found if i is not None]


def _ignored_by(ignores: Sequence[_Ignore], absolute: str, is_dir: bool) -> str | None:
    """The ``.gitignore`` that ignores ``absolute`` (the deepest deciding file wins)."""
    for ignore in reversed(ignores):
        if not absolute.startswith(ignore.base + os.sep):
            continue
        relative = absolute[len(ignore.base) + 1 :].replace(os.sep, "/")
        result = ignore.spec.check_file(relative + "/" if is_dir else relative)
        if result.include is not None:
            return ignore.file if result.include else None
    return None


def _excluded(spec: pathspec.GitIgnoreSpec | None, relative: str, is_dir: bool) -> bool:
    return spec is not None and spec.match_file(relative + "/" if is_dir else relative)


def select_files(
    root: str | os.PathLike[str], selection: Selection | None = None
) -> tuple[list[Path], list[Skipped]]:
    """The files to read under ``root`` and the entries skipped, each in sorted path order.

    Paths are ``root`` joined with the path relative to it, as given (not resolved). A
    ``root`` that is a file is returned alone.

    Returns:
        ``(files, skipped)``: ``skipped`` holds ``(path, reason)`` for every hidden,
        cached, ignored or excluded file or folder, and every broken symbolic link.
    """
    rules = selection or Selection()
    base = Path(os.fspath(root))
    if base.is_file():
        return [base], []
    include = _compile(rules.include, "include")
    exclude = _compile(rules.exclude, "exclude")
    ignores = _enclosing_ignores(base) if rules.gitignore else []
    files: list[tuple[str, Path]] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for top, dirs, names in os.walk(base, followlinks=True):
        here = Path(top)
        real = os.path.realpath(here)
        if real in seen:  # a symbolic link back up the tree
            dirs[:] = []
            continue
        seen.add(real)
        if rules.gitignore and (here / GITIGNORE).is_file():
            found = _read_ignore(here, here)
            if found is not None:  # applies below ``here`` only: _ignored_by checks the prefix
                ignores.append(found)
        at = here.relative_to(base).as_posix()
        kept = []
        for name in sorted(dirs):
            reason = _skip_reason(os.path.join(real, name), _join(at, name), True, ignores, exclude)
            if reason is None:
                kept.append(name)
            else:
                skipped.append((str(here / name), reason))
        dirs[:] = kept  # os.walk descends only into these
        for name in names:
            path, relative = here / name, _join(at, name)
            reason = _skip_reason(os.path.join(real, name), relative, False, ignores, exclude)
            if reason is not None:
                skipped.append((str(path), reason))
            elif not path.exists():
                skipped.append((str(path), "broken symbolic link"))
            elif include is None or include.match_file(relative):
                files.append((relative, path))
    files.sort(key=lambda item: item[0])
    skipped.sort()
    return [path for _, path in files], skipped


def _join(directory: str, name: str) -> str:
    return name if directory == "." else f"{directory}/{name}"


def _skip_reason(
    absolute: str,
    relative: str,
    is_dir: bool,
    ignores: Sequence[_Ignore],
    exclude: pathspec.GitIgnoreSpec | None,
) -> str | None:
    name = relative.rsplit("/", 1)[-1]
    if name.startswith("."):
        return "hidden directory" if is_dir else "hidden file"
    if is_dir and name == BYTECODE_CACHE:
        return "Python bytecode cache"
    if _excluded(exclude, relative, is_dir):
        return "excluded by pattern"
    by = _ignored_by(ignores, absolute, is_dir)
    return None if by is None else f"ignored by {by}"


def expand(roots: Iterable[Path], selection: Selection | None) -> tuple[list[Path], list[Skipped]]:
    """:func:`select_files` over several roots, files de-duplicated, both lists sorted."""
    files: set[Path] = set()
    skipped: list[Skipped] = []
    for root in roots:
        found, left = select_files(root, selection)
        files.update(found)
        skipped += left
    return sorted(files), sorted(set(skipped))


_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(mode: int) -> str | None:
    """What a non-regular, non-directory file is (``"a FIFO"``), or ``None``.

    Only regular files are opened: reading a FIFO blocks until a writer comes, and a
    device such as ``/dev/zero`` never ends.
    """
    return next((kind for test, kind in _SPECIAL if test(mode)), None)


def not_regular(kind: str) -> str:
    """Why a special file is skipped."""
    return f"not a regular file ({kind}); only regular files are read"


def special_path(path: Path) -> str | None:
    """:func:`special_kind` of the file at ``path`` (``None`` when it cannot be read)."""
    try:
        return special_kind(path.stat().st_mode)
    except OSError:
        return None
