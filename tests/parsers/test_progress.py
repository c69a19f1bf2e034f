"""Progress of a phase: a tqdm bar on a terminal, log records about every interval when piped."""

from __future__ import annotations

import logging
import time

import pytest

from ragtools.parsers import progress as progress_module
from ragtools.parsers.progress import counter, default_progress, progress, progress_line

LOGGER = "ragtools.progress"


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


@pytest.fixture
def piped(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """stderr is not a terminal (pytest captures it) and progress records are wanted."""
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    caplog.set_level(logging.INFO, logger=LOGGER)


def test_the_default_interval_is_thirty_seconds() -> None:
    assert progress_module.LOG_INTERVAL == 30.0


def test_piped_work_shorter_than_the_interval_logs_and_prints_nothing(
    piped: None, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    assert list(progress(range(50), total=50, desc="parsing", unit="files")) == list(range(50))
    with counter(96, desc="embedding", unit="chunks") as advance:
        for _ in range(3):
            advance(32)
    assert lines(caplog) == []
    assert capsys.readouterr() == ("", "")


def test_piped_work_logs_done_total_rate_and_eta_each_interval(
    piped: None,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress_module, "LOG_INTERVAL", 0.0)  # a line at the start and every step
    with counter(96, desc="embedding", unit="chunks") as advance:
        for _ in range(3):
            advance(32)
    logged = lines(caplog)
    assert [line.split(",")[0] for line in logged] == [
        "embedding: 0/96 chunks (0%)",
        "embedding: 32/96 chunks (33%)",
        "embedding: 64/96 chunks (67%)",
        "embedding: 96/96 chunks (100%)",
        "embedding: done",
    ]
    assert all(" chunks/s" in line for line in logged)
    assert all(", ETA " in line for line in logged[1:-1])
    assert logged[-1].startswith("embedding: done, 96 chunks in 00:00, ")
    assert capsys.readouterr() == ("", "")  # library code prints nothing


def test_a_line_waits_for_the_interval_then_comes_at_the_next_step(
    piped: None, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_module, "LOG_INTERVAL", 0.2)
    items = progress(range(3), total=3, desc="queries", unit="queries")
    assert next(items) == 0
    assert lines(caplog) == []  # the first step came before the interval was over
    time.sleep(0.25)
    assert next(items) == 1  # counted when the second item is asked for
    assert next(items) == 2
    assert [line.split(",")[0] for line in lines(caplog)] == ["queries: 1/3 queries (33%)"]
    assert list(items) == []
    assert lines(caplog)[-1].startswith("queries: done, 3 queries in 00:00")


def test_false_and_a_quiet_context_silence_every_phase(
    piped: None,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress_module, "LOG_INTERVAL", 0.0)
    assert list(progress([1, 2], total=2, desc="parsing", show_progress=False)) == [1, 2]
    with default_progress(False):
        list(progress([1, 2], total=2, desc="parsing"))
        with counter(2, desc="embedding", unit="chunks") as advance:
            advance(2)
        assert not progress_module.should_show(None)
        assert progress_module.should_show(True)  # an explicit argument still wins
    assert lines(caplog) == []
    assert capsys.readouterr() == ("", "")


def test_nobody_listening_means_no_counter_at_all(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    assert progress_module._bar(10, "parsing", "files", None) is None


def test_a_bar_on_request_shows_rate_in_the_phase_unit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with counter(64, desc="embedding", unit="chunks", show_progress=True) as advance:
        advance(32)
        advance(32)
    err = capsys.readouterr().err  # drawn at once, redrawn at most every 0.1 s
    assert "embedding:   0%|" in err and "0/64" in err and "chunks/s]" in err


def test_a_terminal_gets_bars_without_asking(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert list(progress(range(3), total=3, desc="parsing", unit="files")) == [0, 1, 2]
    err = capsys.readouterr().err
    assert "parsing:   0%|" in err and "0/3" in err and "files/s]" in err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("parsing", 120, 400, 30.0, 4.0, "files"),
            "parsing: 120/400 files (30%), 4.0 files/s, ETA 01:10",
        ),
        (
            ("queries", 10, 40, 5.0, None, "queries"),
            "queries: 10/40 queries (25%), 2.0 queries/s, ETA 00:15",
        ),
        (("reading", 7, None, 2.0, None, "rows"), "reading: 7 rows, 3.5 rows/s"),
        (("parsing", 0, 10, 0.0, None, "files"), "parsing: 0/10 files (0%), 0.0 files/s"),
    ],
)
def test_progress_line(
    args: tuple[str, int, int | None, float, float | None, str], expected: str
) -> None:
    assert progress_line(*args) == expected
