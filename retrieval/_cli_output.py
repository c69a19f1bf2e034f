"""What ``rag`` prints: logging set up for a terminal or a pipe, and one line per problem.

A command's results go to stdout; everything else (warnings, skipped and failed files,
progress bars) goes to stderr. Progress bars appear only when stderr is a terminal and
``--quiet`` is off; log records are written above them through ``tqdm.write`` rather than
through them; both name ``rag`` flags, not Python arguments (:mod:`retrieval._cli_messages`).
Third-party libraries are kept quiet unless ``--verbose``: the weight-loading
bar and load reports of transformers, the download bars of huggingface_hub, Python warnings
raised inside libraries, and faiss's messages about which CPU build it loaded.
``--verbose`` raises only this package's loggers to DEBUG (and lets the others speak at
their own levels).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable

from ragtools.parsers import FileError
from ragtools.retrieval._cli_messages import cli_message

PACKAGE_LOGGER = "ragtools"

_QUIET_ENVIRONMENT = {
    "TRANSFORMERS_VERBOSITY": "error",  # no "Loading weights" bar, no load report
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",  # no fork warning from the Rust tokenizers
}


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
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.captureWarnings(True)
    ours = logging.getLogger(PACKAGE_LOGGER)
    ours.setLevel(logging.DEBUG if verbose else logging.ERROR if quiet else logging.WARNING)
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
    for line in problem_lines(failures, skipped):
        print(line, file=sys.stderr)
