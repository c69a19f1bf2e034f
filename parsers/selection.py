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
``build/`` a directory) with git's meaning, taken from git's own ``dir.c`` and ``wildmatch.c``
and checked against ``git check-ignore`` itself: a path's leading folders are decided first,
and a folder ignored ignores all below it (a ``!`` line cannot re-include a file there); at
each folder and at the path itself the last matching line wins.
An ignored or excluded directory is one skipped entry: it is not walked. A file named
explicitly (not a folder) is always taken.

**A build stays inside its root.** A symbolic link whose target lies inside the folder is
followed as any entry; one leaving it (``notes -> /etc``, ``key.txt -> ~/.ssh/id_rsa``) is
skipped with a reason unless ``Selection(follow_links=True)`` (``rag build --follow-links``):
git, ``tar`` and ``rsync`` too keep a link as a link by default, not what it points to.
A ``.gitignore`` that is a symbolic link is not read, as git (2.32 and later) does not.

**Patterns match in time linear in the path.** ``.gitignore`` files come with cloned
repositories, content the user does not control, and Python's backtracking ``re`` takes
exponential time on patterns such as ``*a*a*a…*b`` (what ``pathspec`` compiles them to by
default). Patterns are therefore translated here to RE2 (``google-re2``), an automaton with
no backtracking, after runs of three or more ``*`` are cut to
``**`` (git reads them so). Translating a pattern is itself superlinear in its length, so
a pattern longer than :data:`MAX_PATTERN_CHARS` is refused (:class:`ConfigError` for one
given to :class:`Selection` or a filter; a ``.gitignore`` line is left out with a
WARNING), and a ``.gitignore`` larger than :data:`MAX_IGNORE_BYTES` or with more than
:data:`MAX_IGNORE_PATTERNS` patterns is not applied (a WARNING), as git itself does past
100 MiB. A set of patterns too large for one RE2 automaton is matched as several. A path
of ``d`` parts is matched ``d`` times (each leading folder, as git does), so the cost is at
most its depth times its length.

pathspec, the library pip and black use, is not the matcher: its expression for a pattern
matches the path *or anything below it*, which loses which folder matched, and the
priorities it settles that with differ between its backends and from git (``!*``, ``a``,
``!a`` ignored the folder ``a/`` under RE2); its ``[!a]`` also matches a ``/``. It remains
the reference the tests compare with where it agrees with git.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import re2

from ragtools.parsers.errors import ConfigError

__all__ = [
    "BYTECODE_CACHE",
    "LEAVES_ROOT",
    "MAX_IGNORE_BYTES",
    "MAX_IGNORE_PATTERNS",
    "MAX_PATTERN_CHARS",
    "Patterns",
    "Selection",
    "compile_patterns",
    "select_files",
]

logger = logging.getLogger(__name__)

BYTECODE_CACHE = "__pycache__"
GITIGNORE = ".gitignore"

MAX_PATTERN_CHARS = 4096
"""Longest pattern accepted, after runs of ``*`` are cut: as long as the longest path Linux
takes (``PATH_MAX``), so no pattern a person writes comes near it, while translating a
pattern to a regular expression costs more than linear time in its length."""

MAX_IGNORE_BYTES = 1024 * 1024
"""A ``.gitignore`` larger than this is not applied (a WARNING says so): it is not read."""

MAX_IGNORE_PATTERNS = 2000
"""A ``.gitignore`` with more patterns than this is not applied (a WARNING says so). Real
ones have tens to a few hundred; every path below the file is matched against each of its
patterns, by one RE2 automaton while they fit in one (about this many pathological ones),
else by a few, each a scan of the path."""

LEAVES_ROOT = "symbolic link leaving the build root (pass --follow-links to follow it)"
"""Why a symbolic link whose target lies outside the folder being read is skipped."""

Skipped = tuple[str, str]

_STAR_RUN = re.compile(r"\\.|\*{3,}")


def _cut_stars(pattern: str) -> str:
    """``pattern`` with each run of three or more unescaped ``*`` cut to ``**``.

    git reads such a run as ``**`` (a whole path part: any depth) or as ``*`` (inside a
    part), and so does pathspec with ``**``; a run of thousands would otherwise become as
    many wildcards in the compiled expression.
    """
    return _STAR_RUN.sub(lambda m: m.group() if m.group().startswith("\\") else "**", pattern)


def _matchable(path: str) -> str:
    """``path`` as RE2 can take it: a name that is not UTF-8 (``caf\\xe9.txt``, held by Python
    as a lone surrogate) has each undecodable byte read as U+FFFD, one character, as ``?``
    sees it in git."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return path


_POSIX = {  # git's own ctype is ASCII-only ("sane_ctype"); so are these
    "alnum": ((48, 57), (65, 90), (97, 122)),
    "alpha": ((65, 90), (97, 122)),
    "blank": ((9, 9), (32, 32)),
    "cntrl": ((0, 31), (127, 127)),
    "digit": ((48, 57),),
    "graph": ((33, 126),),
    "lower": ((97, 122),),
    "print": ((32, 126),),
    "punct": ((33, 47), (58, 64), (91, 96), (123, 126)),
    "space": ((9, 13), (32, 32)),
    "upper": ((65, 90),),
    "xdigit": ((48, 57), (65, 70), (97, 102)),
}
_SLASH = ord("/")


class _NoMatch(Exception):
    """A pattern git reads but that matches no path (an unclosed ``[``, an unknown
    ``[:class:]``, a class of ``/`` alone)."""


def _bracket(glob: str, start: int) -> tuple[str, int]:
    """The RE2 class for the bracket expression at ``glob[start] == "["`` and the index past
    it, as git's ``wildmatch`` reads it: ``!`` or ``^`` negates, a first ``]`` is literal,
    ``\\`` escapes, ``a-z`` ranges, ``[:alpha:]`` classes; never ``/`` (``WM_PATHNAME``)."""
    at, end = start + 1, len(glob)
    negated = at < end and glob[at] in "!^"
    at += negated
    spans: list[tuple[int, int]] = []
    first = True
    while first or (at < end and glob[at] != "]"):
        first = False
        if at >= end:
            raise _NoMatch
        char = glob[at]
        if char == "\\":
            at += 1
            if at >= end:
                raise _NoMatch
            spans.append((ord(glob[at]), ord(glob[at])))
        elif char == "-" and spans and at + 1 < end and glob[at + 1] != "]":
            at += 1 + (glob[at + 1] == "\\")
            if at >= end:
                raise _NoMatch
            spans[-1] = (spans[-1][0], ord(glob[at]))
        elif glob.startswith("[:", at) and (close := glob.find(":]", at + 2)) != -1:
            name = glob[at + 2 : close]
            if name not in _POSIX:
                raise _NoMatch
            spans += _POSIX[name]
            at = close + 1
        else:
            spans.append((ord(char), ord(char)))
        at += 1
    if at >= end:
        raise _NoMatch
    kept = []  # a range over "/" is cut in two around it
    for low, high in spans:
        kept += [(a, b) for a, b in ((low, min(high, _SLASH - 1)), (max(low, _SLASH + 1), high))]
    kept = [(a, b) for a, b in kept if a <= b]
    if not kept and not negated:
        raise _NoMatch
    body = "".join(f"\\x{{{a:x}}}" + (f"-\\x{{{b:x}}}" if b > a else "") for a, b in kept)
    return ("[^/" if negated else "[") + body + "]", at + 1


def _translate(glob: str, basename: bool) -> str:
    """The RE2 expression of a wildmatch ``glob`` over a whole path (``basename``: over its
    last part, with any folders before it). ``*`` and ``?`` stay within a part; ``**`` as a
    whole part crosses parts (``**/`` any folders, a final ``/**`` anything below)."""
    out = ["(?:.*/)?"] if basename else []
    at, end = 0, len(glob)
    # git compares the literal beginning first and matches the rest as a pattern of its own,
    # where a "**" then starts the pattern ("b**/a" matches "ba"): so does this
    literal = next((n for n, char in enumerate(glob) if char in "*?[\\"), end)
    while at < end:
        char = glob[at]
        if char == "*":
            run = at
            while at < end and glob[at] == "*":
                at += 1
            whole = (run in (0, literal) or glob[run - 1] == "/") and (at == end or glob[at] == "/")
            if whole and at - run > 1 and not basename:
                if at == end:
                    out.append(".*")
                elif out[-1:] != ["(?:.*/)?"]:
                    out.append("(?:.*/)?")
                at += 1  # the "/" is in the expression
            else:
                out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            regex, at = _bracket(glob, at)
            out.append(regex)
            continue
        elif char == "\\":
            at += 1
            if at == end:
                msg = f"a lone trailing backslash in {glob!r}: escape it as \\\\"
                raise ValueError(msg)
            out.append(re2.escape(glob[at]))
        else:
            out.append(re2.escape(char))
        at += 1
    return "".join(out)


@dataclass(frozen=True)
class _Rule:
    """One pattern line, as git's ``dir.c`` parses it."""

    regex: str
    ignores: bool  # False for a "!" line, which re-includes
    folder_only: bool  # a trailing "/"


def _rule(line: str) -> _Rule | None:
    """The line as a rule, ``None`` for a comment, a blank line or a pattern matching nothing."""
    if line.startswith("#"):
        return None
    text = re.sub(r"(?<!\\)( +)$", "", line)  # git trims unescaped trailing spaces
    ignores = not text.startswith("!")
    text = text if ignores else text[1:]
    folder_only = text.endswith("/")
    text = text[:-1] if folder_only else text
    basename = "/" not in text  # "*.md": the last part, at any depth
    text = text if basename else text.removeprefix("/")
    if not text:
        return None
    try:
        return _Rule(_translate(text, basename), ignores, folder_only)
    except _NoMatch:
        return None


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    options.never_capture = True
    options.dot_nl = True  # a file name may hold a line break; git's * matches it
    return options


_OPTIONS = _options()


@dataclass(frozen=True)
class Patterns:
    """Compiled ``.gitignore``-style patterns (:func:`compile_patterns`), matched by RE2.

    :meth:`decide` follows git (``dir.c``): a path's leading folders are looked at first,
    outermost first, and one that a pattern ignores ignores everything below it (a file in
    an ignored folder cannot be re-included); else the path itself is decided. At each
    step the last pattern matching that very folder or file wins.

    Attributes:
        rules: the pattern lines kept, in file order.
        automata: RE2 sets over consecutive runs of ``rules``, each with the position of
            its first rule: one set, unless the patterns are too many for one automaton.
    """

    rules: tuple[_Rule, ...]
    automata: tuple[tuple[int, Any], ...]

    def match(self, path: str) -> bool:
        """True when ``path`` (``/``-separated, relative; a folder ends with ``/``) is ignored,
        or lies in an ignored folder."""
        return self.decide(path) is True

    def decide(self, path: str) -> bool | None:
        """``True`` ignored, ``False`` re-included by a ``!`` line, ``None`` no line matched.

        Each leading folder is matched on its own, so a path of ``d`` parts costs ``d``
        scans of at most its length, each linear: nothing backtracks.
        """
        text = _matchable(path)
        folder = text.endswith("/")
        text = text[:-1] if folder else text
        end = text.find("/")
        while end != -1:
            if self._last(text[:end], folder=True):
                return True
            end = text.find("/", end + 1)
        return self._last(text, folder=folder)

    def _last(self, text: str, *, folder: bool) -> bool | None:
        """Whether the last rule matching ``text`` itself ignores it (``None``: none does)."""
        found = [
            first + number
            for first, automaton in self.automata
            for number in automaton.Match(text) or ()
            if folder or not self.rules[first + number].folder_only
        ]
        return self.rules[max(found)].ignores if found else None


def compile_patterns(lines: Iterable[str], what: str) -> Patterns:
    """``.gitignore``-syntax ``lines`` compiled for matching in time linear in the path.

    Args:
        lines: the patterns (blank lines and ``#`` comments are no patterns).
        what: what they are, for messages (``"exclude pattern"``, ``"$glob at filter.path"``).

    Raises:
        ConfigError: a pattern longer than :data:`MAX_PATTERN_CHARS`, or one git cannot
            read (a lone trailing backslash).
    """
    cut = [_cut_stars(line) for line in lines]
    for line in cut:
        if len(line) > MAX_PATTERN_CHARS:
            msg = (
                f"{what} {line[:40]!r}... is {len(line)} characters long; patterns of at "
                f"most {MAX_PATTERN_CHARS} characters are matched (runs of * count as one)"
            )
            raise ConfigError(msg)
    try:
        rules = tuple(rule for rule in map(_rule, cut) if rule is not None)
        return Patterns(rules, tuple(_automata([rule.regex for rule in rules], 0)))
    except (ValueError, re2.error) as exc:
        msg = f"invalid {what} in {list(cut)!r} ({exc}); use .gitignore syntax"
        raise ConfigError(msg) from exc


def _automata(regexes: Sequence[str], first: int) -> list[tuple[int, Any]]:
    """RE2 sets over ``regexes`` (the first at position ``first``): one, or when that is too
    large for RE2's memory bound (some thousand pathological patterns), each half's."""
    if not regexes:
        return []
    automaton = re2.Set.FullMatchSet(_OPTIONS)
    for regex in regexes:
        automaton.Add(regex)
    try:
        automaton.Compile()
    except re2.error:
        if len(regexes) == 1:
            raise
        half = len(regexes) // 2
        return _automata(regexes[:half], first) + _automata(regexes[half:], first + half)
    return [(first, automaton)]


def _compile(patterns: Sequence[str], what: str) -> Patterns | None:
    if not patterns:
        return None
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip():
            msg = f"{what} patterns must be non-empty strings, got {pattern!r}"
            raise ConfigError(msg)
    return compile_patterns(patterns, f"{what} pattern")


@dataclass(frozen=True)
class Selection:
    """The rules :func:`select_files` applies inside a folder (recorded by index builds, so
    that an update selects the same files).

    Attributes:
        include: ``.gitignore``-style patterns; when given, only matching files are read.
        exclude: ``.gitignore``-style patterns of files and folders to skip.
        gitignore: honour ``.gitignore`` files.
        follow_links: follow symbolic links that leave the folder (by default they are
            skipped with a reason; links inside it are always followed).
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    gitignore: bool = True
    follow_links: bool = False

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
            "follow_links": self.follow_links,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Selection:
        """Rules read back from :meth:`to_json`; ``None`` (older manifests) is the default,
        and so is a missing ``follow_links`` (manifests written before it existed)."""
        if not data:
            return cls()
        return cls(
            include=tuple(data.get("include", ())),
            exclude=tuple(data.get("exclude", ())),
            gitignore=bool(data.get("gitignore", True)),
            follow_links=bool(data.get("follow_links", False)),
        )


@dataclass(frozen=True)
class _Ignore:
    """One ``.gitignore`` file: its folder (absolute, resolved) and its patterns."""

    base: str
    file: str
    patterns: Patterns


def _ignore_lines(path: Path) -> list[str] | None:
    """The lines of the ``.gitignore`` at ``path``, or ``None`` when it is not applied: not
    there, not a regular file (a symbolic link, as git, or a FIFO, which would block),
    unreadable, or larger than :data:`MAX_IGNORE_BYTES`."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > MAX_IGNORE_BYTES:
            logger.warning(
                "%s is not applied: %d bytes, over the %d a .gitignore may have",
                path,
                info.st_size,
                MAX_IGNORE_BYTES,
            )
            return None
        with open(path, "rb") as handle:
            data = handle.read(MAX_IGNORE_BYTES + 1)
    except OSError:
        return None
    lines = [_cut_stars(line) for line in data.decode("utf-8", "replace").splitlines()]
    count = sum(1 for line in lines if line.strip() and not line.startswith("#"))
    if count > MAX_IGNORE_PATTERNS:
        logger.warning(
            "%s is not applied: %d patterns, over the %d a .gitignore may have",
            path,
            count,
            MAX_IGNORE_PATTERNS,
        )
        return None
    for number, line in enumerate(lines, 1):
        if len(line) > MAX_PATTERN_CHARS:
            logger.warning(
                "%s, line %d is left out: %d characters, over the %d a pattern may have",
                path,
                number,
                len(line),
                MAX_PATTERN_CHARS,
            )
            lines[number - 1] = ""
    return lines


def _read_ignore(directory: Path, shown: Path) -> _Ignore | None:
    lines = _ignore_lines(directory / GITIGNORE)
    if lines is None:
        return None
    try:
        patterns = compile_patterns(lines, str(shown / GITIGNORE))
    except ConfigError:  # git ignores what it cannot parse; so do we
        return None
    return _Ignore(str(directory.resolve()), str(shown / GITIGNORE), patterns)


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
        decided = ignore.patterns.decide(relative + "/" if is_dir else relative)
        if decided is not None:
            return ignore.file if decided else None
    return None


def _excluded(patterns: Patterns | None, relative: str, is_dir: bool) -> bool:
    return patterns is not None and patterns.match(relative + "/" if is_dir else relative)


def _is_link(path: str) -> bool:
    """Whether ``path`` is a symbolic link, or cannot be looked at (gone since the folder was
    listed): one ``lstat``, where a plain file needs nothing else."""
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return True


def _leaves(path: str, root: str) -> bool:
    """True when ``path`` is a symbolic link whose target lies outside ``root`` (resolved)."""
    return os.path.islink(path) and not Path(os.path.realpath(path)).is_relative_to(root)


def select_files(
    root: str | os.PathLike[str], selection: Selection | None = None
) -> tuple[list[Path], list[Skipped]]:
    """The files to read under ``root`` and the entries skipped, each in sorted path order.

    Paths are ``root`` joined with the path relative to it, as given (not resolved). A
    ``root`` that is a file is returned alone.

    What the walk cannot read is among the files, so that reading it fails with the reason
    (:func:`walk_failure`) and is reported, never silently missed: a folder it cannot list
    (no permission; a path longer than the system takes, some 300 folders deep), a symbolic
    link loop, a link back to a folder above it (as ``find -L`` reports "file system loop").

    Returns:
        ``(files, skipped)``: ``skipped`` holds ``(path, reason)`` for every hidden,
        cached, ignored or excluded file or folder, every broken symbolic link, and every
        symbolic link leaving ``root`` (unless ``selection.follow_links``).
    """
    rules = selection or Selection()
    base = Path(os.fspath(root))
    if base.is_file():
        return [base], []
    if is_index_folder(base):
        return [], [(str(base), INDEX_FOLDER)]
    include = _compile(rules.include, "include")
    exclude = _compile(rules.exclude, "exclude")
    ignores = _enclosing_ignores(base) if rules.gitignore else []
    inside = None if rules.follow_links else os.path.realpath(base)
    files: list[tuple[str, Path]] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()

    def unlisted(error: OSError) -> None:  # a folder the walk cannot enter: a failure
        folder = base if error.filename is None else Path(os.fsdecode(error.filename))
        files.append((folder.relative_to(base).as_posix(), folder))

    for top, dirs, names in os.walk(base, onerror=unlisted, followlinks=True):
        here = Path(top)
        real = os.path.realpath(here)
        if real in seen:
            if Path(os.path.realpath(here.parent)).is_relative_to(real):  # back up the tree
                files.append((here.relative_to(base).as_posix(), here))  # a failure (find -L)
            else:
                skipped.append((str(here), READ_ALREADY))
            dirs[:] = []
            continue
        seen.add(real)
        if rules.gitignore:
            found = _read_ignore(here, here)
            if found is not None:  # applies below ``here`` only: _ignored_by checks the prefix
                ignores.append(found)
        at = here.relative_to(base).as_posix()
        kept = []
        for name in sorted(dirs):
            absolute = os.path.join(real, name)
            reason = _skip_reason(absolute, _join(at, name), True, ignores, exclude)
            if reason is None and inside is not None and _leaves(absolute, inside):
                reason = LEAVES_ROOT
            if reason is None:
                kept.append(name)
            else:
                skipped.append((str(here / name), reason))
        dirs[:] = kept  # os.walk descends only into these
        for name in names:
            path, relative, absolute = here / name, _join(at, name), os.path.join(real, name)
            reason = _skip_reason(absolute, relative, False, ignores, exclude)
            if reason is None and _is_link(absolute):  # a plain file needs no more looks
                if not os.path.exists(path) and not _unreachable(path):
                    reason = "broken symbolic link"
                elif inside is not None and _leaves(absolute, inside):
                    reason = LEAVES_ROOT
            if reason is not None:
                skipped.append((str(path), reason))
            elif include is None or include.match(relative):
                files.append((relative, path))
    files.sort(key=lambda item: item[0])
    skipped.sort()
    return [path for _, path in files], skipped


READ_ALREADY = "a symbolic link to a folder read already under another name"
"""Why a second way into one folder is skipped: its files are read once."""


def _unreachable(path: Path) -> bool:
    """Whether ``path`` exists but cannot be reached: a symbolic link loop, or a path longer
    than the system takes (a file 300 folders deep)."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno in (errno.ELOOP, errno.ENAMETOOLONG)
    return False


def walk_failure(path: Path) -> str | None:
    """Why ``path``, which :func:`select_files` returned among the files, cannot be read as
    one (``None`` for a file, or for a folder it can list, given as a file by a caller)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"a symbolic link loop ({exc.strerror}): nothing to read"
        if exc.errno == errno.ENAMETOOLONG:
            return (
                f"cannot be read ({exc.strerror}): the path is longer than the system takes; "
                "what lies below was not read (give a folder nearer to it as the source)"
            )
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None
    if os.path.islink(path) and Path(os.path.abspath(path)).is_relative_to(os.path.realpath(path)):
        return "a symbolic link to a folder above it (a loop): its files are read there"
    try:
        with os.scandir(path):
            pass
    except OSError as exc:
        return f"a folder that cannot be listed ({exc.strerror}): its files were not read"
    return None


def _join(directory: str, name: str) -> str:
    return name if directory == "." else f"{directory}/{name}"


INDEX_FOLDER = "an index folder (CURRENT and versions/): an index is never a source"
"""Why an index's own folder is skipped: ``rag build src --out src/idx`` put the index inside
its sources, and each ``rag update`` indexed the last version's ``chunks.jsonl`` again, so the
index grew without bound."""


def is_index_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an index's folder: a ``CURRENT`` pointer file beside ``versions/``
    (the layout of :mod:`ragtools.indexes.store.versions`, for a whole index and for each shard)."""
    return os.path.isfile(os.path.join(path, "CURRENT")) and os.path.isdir(
        os.path.join(path, "versions")
    )


def _skip_reason(
    absolute: str,
    relative: str,
    is_dir: bool,
    ignores: Sequence[_Ignore],
    exclude: Patterns | None,
) -> str | None:
    name = relative.rsplit("/", 1)[-1]
    if name.startswith("."):
        return "hidden directory" if is_dir else "hidden file"
    if is_dir and name == BYTECODE_CACHE:
        return "Python bytecode cache"
    if is_dir and is_index_folder(absolute):
        return INDEX_FOLDER
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
