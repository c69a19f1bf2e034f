"""Hostile input to the parsers: every crafted file is built here, small, in a tmp dir.

Each case ends in a ``ParseError`` naming the file (and the limit), or in a batch that
returns every good file and one entry per bad one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import signal
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ragtools.parsers import Document, ParseError, _pool, load, load_dir, office, registry
from ragtools.parsers.registry import register_parser, unregister_parser

DOCX = pytest.importorskip("docx")
OPENPYXL = pytest.importorskip("openpyxl")


def _good(root: Path) -> None:
    (root / "bees.txt").write_text("Honey bees dance to point at flowers.", encoding="utf-8")
    (root / "tides.md").write_text("# Tides\n\nThe moon raises the tides.", encoding="utf-8")


# ---- only regular files are read ----------------------------------------------------------


def test_load_refuses_a_fifo_and_a_link_to_dev_zero(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)  # reading it would block until a writer comes
    with pytest.raises(ParseError, match=r"pipe\.txt: not a regular file \(a FIFO\)"):
        load(fifo)
    zero = tmp_path / "zero.txt"
    zero.symlink_to("/dev/zero")  # reading it would never end
    with pytest.raises(ParseError, match=r"zero\.txt: not a regular file \(a character device\)"):
        load(zero)


def test_load_dir_skips_special_files_with_a_reason(tmp_path: Path) -> None:
    _good(tmp_path)
    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "zero.txt").symlink_to("/dev/zero")
    result = load_dir(tmp_path, workers=1)
    assert sorted(Path(d.source).name for d in result.documents) == ["bees.txt", "tides.md"]
    reasons = {Path(path).name: reason for path, reason in result.skipped}
    assert reasons == {
        "pipe.txt": "not a regular file (a FIFO); only regular files are read",
        "zero.txt": "not a regular file (a character device); only regular files are read",
    }


def test_an_unreadable_file_is_one_error_and_the_batch_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _good(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("no access", encoding="utf-8")
    real_open = os.open

    def denying_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) == str(secret):  # chmod 000 does not stop root, who runs CI
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", denying_open)
    result = load_dir(tmp_path, workers=1)
    assert len(result.documents) == 2
    assert [(Path(e.path).name, e.error) for e in result.errors] == [("secret.txt", "ParseError")]
    assert "Permission denied" in result.errors[0].message


# ---- a worker that dies, and the time budget ----------------------------------------------


def _fake_docx(monkeypatch: pytest.MonkeyPatch, parse: Any) -> None:
    """Make ``.docx`` files go to ``parse`` in the pool's workers (forked: they inherit it)."""
    spec = dataclasses.replace(registry.get_parser("docx"), fn=parse, sniff=None)
    monkeypatch.setitem(registry._BY_NAME, "docx", spec)
    monkeypatch.setitem(registry._BY_SUFFIX, ".docx", spec)
    monkeypatch.setattr(_pool, "_mp_context", lambda: multiprocessing.get_context("fork"))


def _text_or(action: str) -> Any:
    def parse(path: Path, *, source: str, password: str | None = None) -> list[Document]:
        if "bomb" in path.name:
            if action == "die":
                os._exit(3)  # as a worker killed for memory would
            signal.signal(signal.SIGALRM, signal.SIG_IGN)  # stuck where no timer reaches
            time.sleep(3600)
        return [Document(text=path.read_text(encoding="utf-8"), metadata={"source": source})]

    return parse


def test_a_dying_worker_fails_its_file_alone_and_is_not_retried_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_docx(monkeypatch, _text_or("die"))
    _good(tmp_path)
    for name in ("a.docx", "bomb.docx", "c.docx", "d.docx"):
        (tmp_path / name).write_text(f"text of {name}", encoding="utf-8")
    # Were the bomb parsed again in this process, os._exit would end the test run here.
    result = load_dir(tmp_path, workers=2)
    names = sorted(Path(d.source).name for d in result.documents)
    assert names == ["a.docx", "bees.txt", "c.docx", "d.docx", "tides.md"]
    assert [Path(e.path).name for e in result.errors] == ["bomb.docx"]
    assert "the worker process parsing it died" in result.errors[0].message


def test_a_worker_past_its_time_budget_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_docx(monkeypatch, _text_or("hang"))
    monkeypatch.setattr(_pool, "_GRACE", 0.5)
    for name in ("a.docx", "bomb.docx"):
        (tmp_path / name).write_text(f"text of {name}", encoding="utf-8")
    result = load_dir(tmp_path, workers=2, time_budget=0.5)
    assert [Path(d.source).name for d in result.documents] == ["a.docx"]
    assert [Path(e.path).name for e in result.errors] == ["bomb.docx"]
    assert "longer than the time budget of 0.5 s" in result.errors[0].message


def test_an_in_process_parse_past_its_time_budget_is_stopped(tmp_path: Path) -> None:
    @register_parser(".spin", name="test-spin")
    def spin(path: Path, *, source: str, password: str | None = None) -> list[Document]:
        while True:
            with contextlib.suppress(Exception):  # a library's broad except must not
                sum(range(1000))  # swallow the budget

    try:
        file = tmp_path / "forever.spin"
        file.write_text("x", encoding="utf-8")
        with pytest.raises(ParseError, match=r"forever\.spin: .*time budget of 0\.3 s"):
            load(file, time_budget=0.3)
        (tmp_path / "fine.txt").write_text("fine words", encoding="utf-8")
        result = load_dir(tmp_path, workers=1, time_budget=0.3)
        assert [Path(d.source).name for d in result.documents] == ["fine.txt"]
        assert [Path(e.path).name for e in result.errors] == ["forever.spin"]
    finally:
        unregister_parser("test-spin")


# ---- decompression bombs in Office packages -----------------------------------------------


def _docx(path: Path, text: str) -> None:
    document = DOCX.Document()
    document.add_paragraph(text)
    document.save(str(path))


def _rewrite_member(path: Path, name: str, data: bytes) -> None:
    """Replace one member of a zip package (written whole, as a bomb's maker would)."""
    with zipfile.ZipFile(path) as package:
        members = [(info, package.read(info)) for info in package.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        for info, payload in members:
            package.writestr(info.filename, data if info.filename == name else payload)


def test_declared_inflated_size_over_the_limit_is_refused_unopened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(office, "MAX_XML_BYTES", 256 * 1024)  # the real limit is 128 MiB
    bomb = tmp_path / "bomb.docx"
    _docx(bomb, "seed")
    padding = b"<!--" + b" " * (1024 * 1024) + b"-->"  # 1 MiB of XML, 1 KiB compressed
    _rewrite_member(bomb, "word/styles.xml", padding)
    assert bomb.stat().st_size < 64 * 1024
    with pytest.raises(ParseError, match=r"bomb\.docx: its XML members would inflate to \d+"):
        load(bomb)
    monkeypatch.setattr(office, "MAX_UNZIPPED_BYTES", 512 * 1024)
    monkeypatch.setattr(office, "MAX_XML_BYTES", 1 << 30)
    _rewrite_member(bomb, "word/styles.xml", b"<a/>")
    with zipfile.ZipFile(bomb, "a") as package:
        package.writestr("word/media/image1.png", bytes(1024 * 1024))
    with pytest.raises(ParseError, match=r"all members would inflate to \d+ bytes, over the limit"):
        load(bomb)


def test_a_member_that_lies_about_its_size_stops_at_the_declared_size(tmp_path: Path) -> None:
    liar = tmp_path / "liar.docx"
    _docx(liar, "seed")
    with zipfile.ZipFile(liar) as package:
        real = package.getinfo("word/document.xml").file_size
    data = bytearray(liar.read_bytes())
    # declare 100 bytes in the central directory entry of word/document.xml
    name = b"word/document.xml"
    central = data.find(b"PK\x01\x02")
    while data[central + 46 : central + 46 + len(name)] != name:
        central = data.find(b"PK\x01\x02", central + 4)
    data[central + 24 : central + 28] = (100).to_bytes(4, "little")
    liar.write_bytes(bytes(data))
    assert real > 100
    with pytest.raises(ParseError, match=r"liar\.docx: not a readable DOCX file"):
        load(liar)


def test_text_produced_is_capped_when_cells_repeat_one_string(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(office, "MAX_TEXT_CHARS", 100_000)  # the real cap is 20 million
    workbook = OPENPYXL.Workbook()
    sheet = workbook.active
    long = "spam " * 2_000  # 10,000 characters, stored once in the shared strings
    for row in range(1, 41):
        sheet.cell(row=row, column=1, value=long)
    bomb = tmp_path / "bomb.xlsx"
    workbook.save(str(bomb))
    assert bomb.stat().st_size < 64 * 1024
    with pytest.raises(ParseError, match=r"bomb\.xlsx: produced more than 100000 characters"):
        load(bomb)
