"""What in a folder is a document: the decision per file type, and the reason for each skip.

A documentation or project folder holds files that are text to a computer but not prose to
a reader. Indexed as text, they drown the documents: in FastAPI's docs, SVG markup made
72% of the chunks. The policy, decided by suffix and by content (the first bytes, with the
``filetype`` package for binary formats), follows what people already rely on:

========================  ===============================================================
file                      what happens
========================  ===============================================================
Markdown, reST, text,     a document (reST and Markdown headings give ``headings``)
TOML/INI/CFG/conf,
code, HTML, PDF, Office
SVG                       its ``<title>``/``<desc>``/``<text>`` only (:mod:`parsers.svg`);
                          a drawing without them is skipped: "no words"
``.ipynb``                Markdown and code cells, outputs dropped (:mod:`parsers.notebook`)
CSV/TSV                   one document per row, every column searchable
                          (:mod:`parsers.records`)
images, audio, video,     skipped: "image (png): not text" (named by ``filetype``)
archives, fonts
CSS, minified JS/CSS,     skipped by default, **includable**: a file an include pattern
source maps, lock files   names is indexed (see below)
========================  ===============================================================

Why these defaults. LlamaIndex's ``SimpleDirectoryReader`` reads every file it has no
reader for as text, which is how SVG and CSS ended up in the index. Haystack routes files
by MIME type and drops what it has no converter for (images, CSS, JS). ripgrep searches
all text but ignores what ``.gitignore`` says and has ``-g`` globs that override its
ignore rules; GitHub's linguist (its "generated" and "vendored" rules) marks minified
files (JS or CSS whose lines average more than 110 characters), source maps and lock files
(``package-lock.json``, ``yarn.lock``, ``Cargo.lock``...) as machine-written, hidden from
diffs and language statistics. Machine-written files answer no question a person asks in
words, so they are skipped unless asked for; code that people write (JavaScript that is not
minified, Python, shell) stays: its comments and names are searched.

Two steps, each used alike by :func:`parsers.load_dir`, index builds and updates and
``rag build --dry-run`` (so a dry run lists what a build does):

1. :func:`select_documents`, after a folder is walked: the includable skips above. It
   needs the include patterns: a file that one of them matches is not skipped (as
   ripgrep's ``-g``, an include pattern overrides the default, so ``'*.css'`` indexes
   stylesheets and ``'*'`` every file a parser reads). A file given by name, not found in a
   folder, is never skipped here: naming it is asking for it.
2. :func:`content_skip`, for every file about to be parsed: no parser (named by
   ``filetype`` when it knows the format), or an SVG without words.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import filetype

from ragtools.parsers.registry import HEAD_BYTES, ParserSpec
from ragtools.parsers.selection import Selection, compile_patterns
from ragtools.parsers.svg import svg_words

__all__ = [
    "LOCK_FILES",
    "MINIFIED_LINE_CHARS",
    "content_skip",
    "default_skip",
    "select_documents",
    "type_label",
]

#: Lines of a minified file average more than this many characters (linguist's threshold).
MINIFIED_LINE_CHARS = 110

#: Dependency lock files of the common package managers: machine-written, never prose.
LOCK_FILES = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "cargo.lock",
        "poetry.lock",
        "pipfile.lock",
        "pdm.lock",
        "uv.lock",
        "composer.lock",
        "gemfile.lock",
        "podfile.lock",
        "mix.lock",
        "flake.lock",
        "go.sum",
        "packages.lock.json",
        "gradle.lockfile",
    }
)
_STYLESHEETS = frozenset({".css", ".scss", ".sass", ".less"})
_SCRIPTS = frozenset({".js", ".mjs", ".cjs"})
_SOURCE_MAP = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d|"mappings"\s*:')
_SKIP_HINT = "skipped by default; an include pattern such as {pattern!r} indexes it"


def type_label(path: str | os.PathLike[str]) -> str:
    """A file's type as listings show it: its lower-case suffix without the dot (``"png"``),
    or ``"no suffix"``."""
    suffix = Path(os.fspath(path)).suffix.lower()
    return suffix[1:] if len(suffix) > 1 else "no suffix"


def _mean_line_length(head: bytes) -> float:
    lines = head.splitlines() or [b""]
    return sum(len(line) for line in lines) / len(lines)


def default_skip(path: Path, head: bytes) -> str | None:
    """Why ``path`` (whose first bytes are ``head``) is not a document by default, or
    ``None``: stylesheets, minified scripts, source maps and lock files (module docstring).
    """
    name = path.name.lower()
    suffix = path.suffix.lower()
    if name in LOCK_FILES or suffix == ".lock":
        return f"dependency lock file ({name}): {_SKIP_HINT.format(pattern=path.name)}"
    if suffix == ".map" and (name.endswith((".js.map", ".css.map")) or _SOURCE_MAP.search(head)):
        return f"source map (map): {_SKIP_HINT.format(pattern='*.map')}"
    minified = ".min." in name or _mean_line_length(head) > MINIFIED_LINE_CHARS
    if suffix in _SCRIPTS and minified:
        what = f"minified JavaScript ({suffix[1:]})"
        return f"{what}: {_SKIP_HINT.format(pattern=path.name)}"
    if suffix in _STYLESHEETS:
        what = f"{'minified ' if minified else ''}stylesheet ({suffix[1:]})"
        return f"{what}: {_SKIP_HINT.format(pattern='*' + suffix)}"
    return None


def _head(path: Path) -> bytes | None:
    try:
        with path.open("rb") as handle:
            return handle.read(HEAD_BYTES)
    except OSError:
        return None  # unreadable: the parse step reports it as a failure


def _could_skip(path: Path) -> bool:
    name, suffix = path.name.lower(), path.suffix.lower()
    return name in LOCK_FILES or suffix in _STYLESHEETS | _SCRIPTS | {".map", ".lock"}


def select_documents(
    root: Path, files: Sequence[Path], selection: Selection | None
) -> tuple[list[Path], list[tuple[str, str]]]:
    """Step 1 of the module docstring: the files of a walked folder that are documents by
    default or named by an include pattern, and the ``(path, reason)`` of the others.

    Args:
        root: the folder walked (include patterns match paths relative to it).
        files: what :func:`parsers.selection.select_files` found under it.
        selection: the rules of the walk; its include patterns override the defaults.
    """
    include = selection.include if selection is not None else ()
    named = compile_patterns(include, "include pattern") if include else None
    kept: list[Path] = []
    skipped: list[tuple[str, str]] = []
    for file in files:
        reason = None
        if _could_skip(file):
            relative = os.path.relpath(file, root).replace(os.sep, "/")
            if named is None or not named.match(relative):
                head = _head(file)
                reason = None if head is None else default_skip(file, head)
        if reason is None:
            kept.append(file)
        else:
            skipped.append((str(file), reason))
    return kept, skipped


#: ``filetype``'s families of formats, most specific first, with the word a reason uses.
_FAMILIES = (
    ("image", filetype.image_match),
    ("video", filetype.video_match),
    ("audio", filetype.audio_match),
    ("font", filetype.font_match),
    ("document", filetype.document_match),
    ("archive", filetype.archive_match),
    ("binary file", filetype.application_match),
)


def _not_text(head: bytes) -> str | None:
    for what, match in _FAMILIES:
        kind = match(head)
        if kind is not None:
            return f"{what} ({kind.extension}): not text, and no parser reads it"
    return None


def content_skip(file: Path, head: bytes, spec: ParserSpec | None) -> str | None:
    """Step 2 of the module docstring: why ``file`` is skipped rather than parsed by
    ``spec`` (the parser dispatch chose, ``None`` for none), or ``None`` to parse it."""
    if spec is None:
        known = _not_text(head)
        if known is not None:
            return known
        what = "binary file" if b"\x00" in head else "file"
        return f"{what} of unknown type ({file.suffix or 'no suffix'}): no parser reads it"
    if spec.name == "svg":
        data = head if len(head) < HEAD_BYTES else file.read_bytes()
        if not svg_words(data, str(file))[0]:
            return "SVG drawing without <title>, <desc> or <text>: no words to index"
    return None
