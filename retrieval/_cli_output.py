r"""What ``rag`` prints: logging set up for a terminal or a pipe, and one line per problem.

A command's results go to stdout; everything else (warnings, skipped and failed files,
progress bars) goes to stderr. Progress bars appear only when stderr is a terminal and
``--quiet`` is off; piped, each long phase prints a ``progress:`` line about every 30 s
instead (:mod:`parsers.progress`). Log records are written above the bars through
``tqdm.write`` rather than through them; both name ``rag`` flags, not Python arguments
(:mod:`retrieval._cli_messages`).
Third-party libraries are kept quiet unless ``--verbose``: the weight-loading
bar and load reports of transformers, the download bars of huggingface_hub, Python warnings
raised inside libraries, and faiss's messages about which CPU build it loaded.
``--verbose`` raises only this package's loggers to DEBUG (and lets the others speak at
their own levels).

File names and file content are data from whoever made the files (a cloned repository, a
downloaded archive): a name holding ESC can rewrite the terminal, one holding ``\r`` can
hide the line it is on. So every line ``rag`` prints goes through :func:`emit`, which
escapes C0 and C1 control characters and DEL with :func:`printable` (``\t``, ``\n``,
``\r``, else ``\u001b``: the spelling of JSON, so JSON output stays valid JSON meaning
the same), and log records are escaped by their formatter. Backslashes are left as they
are, so Windows paths stay readable; a name that spells an escape itself (``a\u001b``)
prints as a name holding the character would, as with git's quoted paths.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterable
from typing import Any

from ragtools.parsers import FileError
from ragtools.parsers.progress import logger as progress_logger
from ragtools.retrieval._cli_messages import cli_message

PACKAGE_LOGGER = "ragtools"

_QUIET_ENVIRONMENT = {
    "TRANSFORMERS_VERBOSITY": "error",  # no "Loading weights" bar, no load report
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",  # no fork warning from the Rust tokenizers
}


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT.get(char) or f"\\u{ord(char):04x}"


def printable(text: str) -> str:
    r"""``text`` as one safe line: each C0 or C1 control character and DEL escaped.

    Example:
        >>> printable("a\rb\x1b[2Jc.txt")
        'a\\rb\\u001b[2Jc.txt'
    """
    return _CONTROL.sub(_escape, text)


def emit(*lines: str, err: bool = False, flush: bool = False) -> None:
    r"""Print each of ``lines`` as one line, :func:`printable`, on stdout (stderr: ``err``).

    A multi-line text is passed split (``emit(*text.split("\n"))``): a line break inside
    one argument is data (a file name can hold one) and is escaped.
    """
    stream = sys.stderr if err else sys.stdout
    for line in lines:
        print(printable(line), file=stream, flush=flush)


class _Printable(logging.Formatter):
    """Escapes the message of a record (:func:`printable`) and each line of a traceback."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: Any) -> str:
        return "\n".join(map(printable, super().formatException(ei).split("\n")))

    def formatStack(self, stack_info: str) -> str:
        return "\n".join(map(printable, super().formatStack(stack_info).split("\n")))


class _AboveBars(logging.Handler):
    """Writes records with ``tqdm.write``, which clears a live progress bar, prints the
    line, and redraws the bar below it."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm import tqdm

            tqdm.write(cli_message(self.format(record)), file=sys.stderr)
        except Exception:
            self.handleError(record)


def configure(*, verbose: bool, quiet: bool) -> None:
    """Set up logging and the third-party switches for one ``rag`` run.

    Call it before the libraries are imported: transformers and huggingface_hub read their
    switches from the environment when they load. A switch the user set is left alone.
    """
    if not verbose:
        for name, value in _QUIET_ENVIRONMENT.items():
            os.environ.setdefault(name, value)
    handler = _AboveBars()
    handler.setFormatter(_Printable("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.ERROR if quiet else logging.WARNING)  # -q: other libraries' too
    logging.captureWarnings(True)
    ours = logging.getLogger(PACKAGE_LOGGER)
    ours.setLevel(logging.DEBUG if verbose else logging.ERROR if quiet else logging.WARNING)
    # Piped, the phases log their progress (parsers.progress): shown as "progress: ..."
    # lines, unless --quiet.
    progress = progress_logger
    progress_handler = _AboveBars()
    progress_handler.setFormatter(_Printable("progress: %(message)s"))
    progress.handlers[:] = [progress_handler]
    progress.propagate = False
    progress.setLevel(logging.ERROR if quiet else logging.INFO)
    if not verbose:  # libraries' own warnings (deprecations and the like) are not the user's
        logging.getLogger("py.warnings").setLevel(logging.ERROR)
        logging.getLogger("faiss").setLevel(logging.ERROR)


def show_progress(*, quiet: bool) -> bool | None:
    """The ``show_progress`` argument for the library: never when quiet, else on a terminal."""
    return False if quiet else None


def problem_lines(failures: Iterable[FileError], skipped: Iterable[tuple[str, str]]) -> list[str]:
    """One line per skipped or failed file: the path once, then why."""
    lines = [f"skipped {path}: {cli_message(reason)}" for path, reason in skipped]
    for failure in failures:
        why = failure.message
        prefix = f"{failure.path}: "
        if why.startswith(prefix):  # a ParseError names its file first: do not repeat it
            why = why[len(prefix) :]
        lines.append(f"failed {failure.path}: {cli_message(why)}")
    return lines


def print_problems(failures: Iterable[FileError], skipped: Iterable[tuple[str, str]]) -> None:
    """Print :func:`problem_lines` on stderr."""
    emit(*problem_lines(failures, skipped), err=True)


def emit_text(text: str) -> None:
    """Print a multi-line ``text`` (indented JSON, a Markdown report) on stdout, each line
    :func:`printable`. JSON escapes C0 characters itself but writes C1 and DEL raw; their
    ``\\u`` escapes keep it valid JSON."""
    emit(*text.split("\n"))
