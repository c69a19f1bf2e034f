"""``rag``'s output helpers: log lines above progress bars, one line per problem, escaped."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tqdm import tqdm

from ragtools.parsers import FileError
from ragtools.parsers import progress as progress_module
from ragtools.retrieval import _cli_output, cli
from ragtools.retrieval._cli_output import (
    configure,
    emit_text,
    print_problems,
    printable,
    problem_lines,
)
from tests.retrieval.test_cli import make_real_folder


@pytest.fixture
def restored_logging(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in _cli_output._QUIET_ENVIRONMENT:  # monkeypatch puts them back afterwards
        monkeypatch.delenv(name, raising=False)
    root, ours = logging.getLogger(), logging.getLogger(_cli_output.PACKAGE_LOGGER)
    saved = (root.handlers[:], root.level, ours.level)
    shown = _cli_output.progress_logger
    saved_progress = (shown.handlers[:], shown.propagate, shown.level)
    yield
    root.handlers[:], root.level = saved[0], saved[1]
    ours.setLevel(saved[2])
    shown.handlers[:], shown.propagate = saved_progress[0], saved_progress[1]
    shown.setLevel(saved_progress[2])
    logging.captureWarnings(False)
    for name in ("py.warnings", "faiss"):
        logging.getLogger(name).setLevel(logging.NOTSET)


def test_a_warning_is_printed_above_a_live_bar_not_through_it(
    restored_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(verbose=False, quiet=False)
    with tqdm(total=2, desc="parsing", file=sys.stderr) as bar:
        bar.update()
        logging.getLogger("ragtools.parsers.pdf").warning("page 3 has no text")
        bar.update()
    lines = capsys.readouterr().err.split("\n")
    warned = [line for line in lines if "page 3 has no text" in line]
    assert len(warned) == 1
    assert warned[0].split("\r")[-1] == "WARNING ragtools.parsers.pdf: page 3 has no text"


def test_levels_verbose_raises_only_this_package(restored_logging: None) -> None:
    configure(verbose=True, quiet=False)
    assert logging.getLogger("ragtools.indexes").getEffectiveLevel() == logging.DEBUG
    assert logging.getLogger("faiss.loader").getEffectiveLevel() == logging.WARNING
    configure(verbose=False, quiet=True)
    assert logging.getLogger("ragtools.indexes").getEffectiveLevel() == logging.ERROR
    assert logging.getLogger("faiss.loader").getEffectiveLevel() == logging.ERROR


def test_problem_lines_name_the_path_once() -> None:
    failed = FileError("/d/x.pdf", "PasswordRequiredError", "/d/x.pdf: a password is needed")
    assert problem_lines([failed], [("/d/.git", "hidden directory")]) == [
        "skipped /d/.git: hidden directory",
        "failed /d/x.pdf: a password is needed",
    ]


@pytest.mark.parametrize(
    ("library", "command_line"),
    [
        (
            "a.pdf: the PDF is encrypted: a password is needed; pass password=...",
            "a.pdf: the PDF is encrypted: a password is needed; pass --password PASSWORD",
        ),
        (
            "no string field to take the text from; pass text_field= to load_records",
            "no string field to take the text from; give each record a string field with its "
            "text (such as 'text')",
        ),
        ("precision='int8' needs ONNX Runtime", "--precision int8 needs ONNX Runtime"),
        ("or model=None for the bundled model", "or no --model for the bundled model"),
        ("chunk_size=0 is too small", "--chunk-size 0 is too small"),
        ("a filter {'page': 3} and a password", "a filter {'page': 3} and a password"),
    ],
)
def test_messages_name_flags_on_the_command_line(library: str, command_line: str) -> None:
    from ragtools.retrieval._cli_messages import cli_message

    assert cli_message(library) == command_line
    failure = FileError(path="docs/x.pdf", error="ParseError", message=library)
    assert problem_lines([failure], []) == [f"failed docs/x.pdf: {command_line}"]


HOSTILE = "a\rb\tc\x07d\x1b[2Je\x7ff\x9bg\nh.txt"
ESCAPED = "a\\rb\\tc\\u0007d\\u001b[2Je\\u007ff\\u009bg\\nh.txt"


def test_printable_escapes_c0_c1_and_del_only() -> None:
    assert printable(HOSTILE) == ESCAPED
    kept = "Grüße, 中文, C:\\docs\\a.txt, «»"  # printable text and backslashes stay as they are
    assert printable(kept) == kept
    every = "".join(map(chr, range(0x00, 0xA0)))
    assert not [c for c in printable(every) if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F]


def test_escaped_json_is_valid_and_means_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    value = {"source": HOSTILE, "rows": [1, 2]}
    emit_text(json.dumps(value, indent=2, ensure_ascii=False))
    out = capsys.readouterr().out
    assert "\x9b" not in out and "\x7f" not in out
    assert json.loads(out) == value


def test_problem_lines_and_log_records_are_printed_escaped(
    restored_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(verbose=False, quiet=False)
    print_problems([FileError(f"/d/{HOSTILE}", "ParseError", "bad")], [(f"/d/{HOSTILE}", "x")])
    logging.getLogger("ragtools.parsers.pdf").warning("page 3 of %s has no text", HOSTILE)
    try:
        raise ValueError(HOSTILE)
    except ValueError:
        logging.getLogger("ragtools.indexes").exception("failed")
    err = capsys.readouterr().err
    assert f"skipped /d/{ESCAPED}: x\n" in err and f"failed /d/{ESCAPED}: bad\n" in err
    assert f"WARNING ragtools.parsers.pdf: page 3 of {ESCAPED} has no text\n" in err
    lines = ESCAPED.replace("\\n", "\n")  # a traceback keeps its lines; each is escaped
    assert f"ValueError: {lines}" in err
    assert not [c for c in err if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F]


def test_a_piped_build_prints_progress_lines_each_interval(
    restored_logging: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A piped build of the real folder, with the 30 s interval shortened to 0 (a line at
    every step), prints progress lines on stderr for each phase; ``-q`` prints none."""
    monkeypatch.setattr(progress_module, "LOG_INTERVAL", 0.0)
    folder = make_real_folder(tmp_path / "project")
    assert cli.main(["build", str(folder), "--out", str(tmp_path / "i"), "--no-vector"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"built {tmp_path / 'i'}: 17 chunks from 9 files")
    shown = [line for line in err.splitlines() if line.startswith("progress: ")]
    assert "progress: parsing: 0/9 files (0%), 0.0 files/s" in shown
    assert any(line.startswith("progress: parsing: 9/9 files (100%), ") for line in shown)
    assert any(line.startswith("progress: parsing: done, 9 files in ") for line in shown)
    assert any(line.startswith("progress: indexing: 17/17 chunks (100%), ") for line in shown)
    assert "\r" not in err
    assert cli.main(["-q", "build", str(folder), "--out", str(tmp_path / "q"), "--no-vector"]) == 0
    assert capsys.readouterr() == ("", "")


def test_a_piped_eval_prints_progress_lines_for_its_queries(
    restored_logging: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``rag eval`` printed nothing for 35 minutes when piped (#36)."""
    from tests.retrieval.evaluation.test_beir import write_dataset
    from tests.retrieval.evaluation.test_eval_command import CORPUS, QRELS, QUERIES

    monkeypatch.setattr(progress_module, "LOG_INTERVAL", 0.0)
    data = write_dataset(tmp_path / "tiny", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    args = ["eval", "--dataset", str(data), "--out", str(tmp_path / "out"), "--retrievers", "bm25"]
    assert cli.main(args) == 0
    shown = [line for line in capsys.readouterr().err.splitlines() if line.startswith("progress:")]
    assert any(line.startswith("progress: queries: 5/5 queries (100%), ") for line in shown)
    assert any(line.startswith("progress: indexing: 7/7 chunks (100%), ") for line in shown)
