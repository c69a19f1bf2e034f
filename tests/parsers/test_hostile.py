"""Hostile input to the parsers: every crafted file is built here, small, in a tmp dir.

Each case ends in a ``ParseError`` naming the file (and the limit), or in a batch that
returns every good file and one entry per bad one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import re
import signal
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from ragtools.parsers import Document, ParseError, _budget, _pool, load, load_dir, office, registry
from ragtools.parsers.loading import load_isolated
from ragtools.parsers.registry import register_parser, unregister_parser
from ragtools.parsers.selection import LEAVES_ROOT, Selection

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
    result = load_dir(tmp_path, workers=1, selection=Selection(follow_links=True))
    assert sorted(Path(d.source).name for d in result.documents) == ["bees.txt", "tides.md"]
    reasons = {Path(path).name: reason for path, reason in result.skipped}
    assert reasons == {
        "pipe.txt": "not a regular file (a FIFO); only regular files are read",
        "zero.txt": "not a regular file (a character device); only regular files are read",
    }
    unfollowed = {Path(path).name: why for path, why in load_dir(tmp_path, workers=1).skipped}
    assert unfollowed["zero.txt"] == LEAVES_ROOT  # by default /dev is never reached


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


def _fake_docx(monkeypatch: pytest.MonkeyPatch, parse: Any, kind: str = "docx") -> None:
    """Make ``.docx`` (or ``kind``) files go to ``parse`` in the pool's workers (forked: they
    inherit it)."""
    spec = dataclasses.replace(registry.get_parser(kind), fn=parse, sniff=None)
    monkeypatch.setitem(registry._BY_NAME, kind, spec)
    monkeypatch.setitem(registry._BY_SUFFIX, f".{kind}", spec)
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


def test_a_large_light_file_stuck_where_no_timer_reaches_is_killed_in_its_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#38 item 8: light formats were parsed in the calling process, where a parser inside C
    code (lxml on an HTML of 500,000 attributes: past 60 s) outlived the budget."""
    _fake_docx(monkeypatch, _text_or("hang"), kind="html")
    monkeypatch.setattr(_pool, "_GRACE", 0.5)
    monkeypatch.setattr(_pool, "GUARD_MIN_BYTES", 1000)
    (tmp_path / "bomb.html").write_text("<p>" + "x " * 1000 + "</p>", encoding="utf-8")
    (tmp_path / "small.html").write_text("<p>a small page</p>", encoding="utf-8")
    result = load_dir(tmp_path, time_budget=0.5)
    assert [Path(d.source).name for d in result.documents] == ["small.html"]
    assert [Path(e.path).name for e in result.errors] == ["bomb.html"]
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


def test_a_large_plain_text_file_gets_the_flat_budget_not_one_scaled_by_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#38 item 8: budgets grew with the file (a second per 256 KiB), so a hostile 8 MB text
    file stuck in its parser ran 32 s before its named error. Plain text parses at several
    megabytes a second, so its budget stays flat: the error comes at ``time_budget``."""

    def spin(path: Path, *, source: str, password: str | None = None) -> list[Document]:
        while True:
            sum(range(1000))

    spec = dataclasses.replace(registry.get_parser("text"), fn=spin)
    monkeypatch.setitem(registry._BY_NAME, "text", spec)
    monkeypatch.setitem(registry._BY_SUFFIX, ".txt", spec)
    big = tmp_path / "big.txt"
    big.write_text("words and more words\n" * 400_000, encoding="utf-8")  # 8.4 MB
    with pytest.raises(ParseError, match=r"big\.txt: .*time budget of 0\.3 s"):
        load(big, time_budget=0.3)


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
    monkeypatch.setattr(_budget, "MAX_TEXT_CHARS", 100_000)  # the real cap is 20 million
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


# ---- one folder with every kind of bad file --------------------------------------------------


#: The good files of the hostile folder: each gives documents, bounded.
HOSTILE_FOLDER_GOOD = [
    b"bees.txt",
    b"caf\xe9.txt",
    b"deck.pdf",
    b"shared.pdf",
    b"tides.md",
    b"tree.html",
]


def _hostile_folder(root: Path) -> list[str]:
    """Good files (:data:`HOSTILE_FOLDER_GOOD`) and one of each bad kind; returns the bad
    files' names."""
    from tests.parsers.test_pdf_text_check import GLYPH_IDS, JAPANESE, cid_font_pdf, japan1_cids

    _good(root)
    wide, deep = 4_000, 3_000
    tree = "<p>x</p>" * wide + "<div>" * deep + "z" + "</div>" * deep
    (root / "tree.html").write_text(f"<html><body>{tree}</body></html>", encoding="utf-8")
    shared_stream_pdf(root / "shared.pdf", 20, b"BT /F1 12 Tf 72 720 Td (Shared words) Tj ET")
    # a Japanese page in a CID font without ToUnicode, then a page of unmappable glyph ids
    deck = [("Japan1", japan1_cids(JAPANESE)), ("Identity", GLYPH_IDS)]
    (root / "deck.pdf").write_bytes(cid_font_pdf(deck))
    os.mkfifo(root / "pipe.txt")
    (root / "zero.txt").symlink_to("/dev/zero")
    (root / "empty.txt").write_bytes(b"")
    (root / os.fsdecode(b"caf\xe9.txt")).write_text("Espresso under pressure.", encoding="utf-8")
    liar = root / "liar.docx"
    _docx(liar, "seed")
    _rewrite_member(liar, "word/styles.xml", b"<!--" + b" " * (1024 * 1024) + b"-->")
    workbook = OPENPYXL.Workbook()
    for row in range(1, 41):
        workbook.active.cell(row=row, column=1, value="spam " * 2_000)
    workbook.save(str(root / "cells.xlsx"))
    return ["cells.xlsx", "empty.txt", "liar.docx", "pipe.txt", "zero.txt"]


def test_a_folder_of_hostile_files_returns_every_good_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(office, "MAX_XML_BYTES", 256 * 1024)
    monkeypatch.setattr(_budget, "MAX_TEXT_CHARS", 100_000)
    bad = _hostile_folder(tmp_path)
    result = load_dir(tmp_path, workers=1)
    good = sorted({os.fsencode(Path(d.source).name) for d in result.documents})
    assert good == HOSTILE_FOLDER_GOOD
    deck = [(d.metadata["page"], d.text) for d in result.documents if d.source.endswith("deck.pdf")]
    assert deck == [(1, "日本語の検索テスト")]  # the garbage page gives nothing
    failed = [Path(e.path).name for e in result.errors] + [Path(p).name for p, _ in result.skipped]
    assert sorted(failed) == bad


# ---- HTML however wide or deep ----------------------------------------------------------------


def test_an_element_with_too_many_attributes_is_refused_before_parsing(tmp_path: Path) -> None:
    """#38 item 8: an HTML of 500,000 attributes ran past 60 s inside lxml (its time grows
    faster than the square of an element's attributes). A linear scan refuses it by name,
    in a fraction of the budget, and the rest of the batch is kept."""
    from ragtools.parsers.html import MAX_ATTRIBUTES

    bomb = tmp_path / "attributes.html"
    attributes = " ".join(f'a{n}="v"' for n in range(500_000))
    bomb.write_text(f"<html><body>\n<div {attributes}>the text</div></body></html>")
    _good(tmp_path)
    with pytest.raises(ParseError, match=r"attributes\.html: line 2: an element has 500000 attr"):
        load(bomb)
    result = load_dir(tmp_path)
    assert sorted(Path(d.source).name for d in result.documents) == ["bees.txt", "tides.md"]
    assert [Path(e.path).name for e in result.errors] == ["attributes.html"]
    assert f"more than {MAX_ATTRIBUTES} (parsers.html.MAX_ATTRIBUTES)" in result.errors[0].message
    # at the bound it parses: quoted values with spaces and "=" count as one attribute each,
    # and bare attributes count too
    many = " ".join(f'a{n}="x = y z"' for n in range(MAX_ATTRIBUTES - 2))
    page = tmp_path / "many.html"
    page.write_text(f"<html><body><p {many} hidden b=1>kept text</p></body></html>")
    assert load(page)[0].text == "kept text"
    page.write_text(f"<html><body><p {many} hidden b=1 c>kept text</p></body></html>")
    with pytest.raises(ParseError, match=f"has {MAX_ATTRIBUTES + 1} attributes"):
        load(page)


def test_html_text_is_collected_without_per_node_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linear however wide or deep: no sibling scan (``Tag.index``) or subtree walk
    (``_last_descendant``) per node, the quadratic steps of inserting separators."""
    from bs4.element import PageElement, Tag

    from ragtools.parsers.html import html_to_text

    calls = {"index": 0, "last": 0}
    index, last = Tag.index, PageElement._last_descendant

    def counted_index(self: Any, *args: Any) -> Any:
        calls["index"] += 1
        return index(self, *args)

    def counted_last(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls["last"] += 1
        return last(self, *args, **kwargs)

    monkeypatch.setattr(Tag, "index", counted_index)
    monkeypatch.setattr(PageElement, "_last_descendant", counted_last)
    # the whole-body rendering with bs4, used when trafilatura finds no main content
    monkeypatch.setattr("ragtools.parsers.html.main_content_blocks", lambda markup: None)
    wide, deep = 4_000, 3_000
    markup = (
        "<html><head><title>T</title></head><body>"
        + "<p>x <b>y</b></p>" * wide
        + "<div>" * deep
        + "z"
        + "</div>" * deep
        + "<table><tr><td>a</td><td>b</td></tr></table><ul><li>1</li><li>2</li></ul>"
        + "<!-- a comment --></body></html>"
    )
    text, title, _ = html_to_text(markup)
    assert text == "\n\n".join(["x y"] * wide + ["z", "a b", "1\n2"]) and title == "T"
    assert calls["index"] == 0 and calls["last"] < 10  # a few, whatever the tree's size


# ---- a PDF whose pages share one content stream ----------------------------------------------


def shared_stream_pdf(path: Path, pages: int, operations: bytes, last: bytes | None = None) -> None:
    """A PDF of ``pages`` pages that all draw the one (compressed) content stream, or, given
    ``last``, all but the last page, which draws ``last``."""
    font = 5 + pages

    def page(contents: int) -> bytes:
        return (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {contents} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>"
        ).encode()

    def stream(data: bytes) -> bytes:
        packed = zlib.compress(data, 9)
        return b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (
            len(packed),
            packed,
        )

    kids = " ".join(f"{5 + i} 0 R" for i in range(pages))
    last_page = page(3) if last is None else page(4)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        stream(operations),
        stream(last if last is not None else b""),
        *[page(3)] * (pages - 1),
        last_page,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))


def test_pages_sharing_one_content_stream_are_interpreted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pypdf import PageObject

    calls = [0]
    extract = PageObject.extract_text

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return extract(self, *args, **kwargs)

    monkeypatch.setattr(PageObject, "extract_text", counted)
    path = tmp_path / "shared.pdf"
    shared_stream_pdf(path, 20, b"BT /F1 12 Tf 72 720 Td (The same words on every page) Tj ET")
    documents = load(path)
    assert [d.metadata["page"] for d in documents] == list(range(1, 21))
    assert {d.text for d in documents} == {"The same words on every page"}
    assert calls[0] == 1


@pytest.mark.parametrize("workers", [1, 2])
def test_pages_drawing_more_text_than_the_limit_are_a_parse_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A small PDF whose one stream is drawn by every page must not grow into gigabytes of
    text: the pages' text counts against the per-file limit, whole, across workers too."""
    monkeypatch.setattr(_budget, "MAX_TEXT_CHARS", 500)  # the real cap is 20 million
    monkeypatch.setattr(_pool, "SHARD_MIN_BYTES", 0)  # split this small PDF by pages
    path = tmp_path / "shared.pdf"
    shared_stream_pdf(path, 20, b"BT /F1 12 Tf 72 720 Td (The same words on every page) Tj ET")
    result = load_dir(tmp_path, workers=workers)
    assert result.documents == []
    (failure,) = result.errors
    assert failure.error == "ParseError"
    assert "produced more than 500 characters of text" in failure.message


#: A content stream that inflates past pypdf's 75 MB limit (from some 80 KB).
_INFLATING = b"BT /F1 12 Tf 72 720 Td (bomb) Tj ET\n" + b" " * 80_000_000


@pytest.mark.parametrize("workers", [1, 2])
def test_a_pdf_over_pypdfs_limits_says_so_not_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """pypdf's ``LimitReachedError`` read "the PDF is damaged"; the message names the limit,
    in one process and when the file's pages are split over workers."""
    monkeypatch.setattr(_pool, "SHARD_MIN_BYTES", 0)  # split this small PDF by pages
    path = tmp_path / "bomb.pdf"
    shared_stream_pdf(path, 2, _INFLATING)
    assert path.stat().st_size < 200_000
    expected = (
        "no page could be read; page 1: stopped at one of pypdf's safety limits (Limit "
        "reached while decompressing"
    )
    if workers == 1:
        with pytest.raises(ParseError, match=re.escape(f"bomb.pdf: {expected}")):
            load(path)
    (failure,) = load_dir(tmp_path, workers=workers).errors
    assert failure.message.startswith(f"{path}: {expected}")
    assert "damaged" not in failure.message


def test_a_page_over_pypdfs_limits_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "half.pdf"
    shared_stream_pdf(path, 2, b"BT /F1 12 Tf 72 720 Td (Honey bees dance) Tj ET", _INFLATING)
    with caplog.at_level("WARNING", logger="ragtools.parsers.pdf"):
        documents = load(path)
    assert [(d.metadata["page"], d.text) for d in documents] == [(1, "Honey bees dance")]
    (warning,) = caplog.records
    assert warning.getMessage().startswith(
        f"{path}: page(s) 2 stopped at one of pypdf's safety limits (Limit reached while "
    )
    assert warning.getMessage().endswith("; those pages are skipped")


def test_docx_paragraph_styles_are_looked_up_once_not_per_paragraph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """python-docx scans every style for each paragraph without one; a file of a million
    tiny paragraphs took minutes. The parser reads the style names once."""
    from docx.styles.styles import Styles

    calls = [0]
    default = Styles.default

    def counted(self: Any, *args: Any) -> Any:
        calls[0] += 1
        return default(self, *args)

    monkeypatch.setattr(Styles, "default", counted)
    document = DOCX.Document()
    document.add_heading("Results", level=1)
    for number in range(300):
        document.add_paragraph(f"line {number}")
    path = tmp_path / "many.docx"
    document.save(path)
    (parsed,) = load(path)
    assert parsed.text.startswith("Results\n\nline 0\n\nline 1")
    assert parsed.metadata["headings"] == ["Results"]
    assert calls[0] <= 1


def test_docx_paragraph_text_is_python_docxs(tmp_path: Path) -> None:
    """The parser reads a paragraph's text parts with one compiled XPath; the text must be
    python-docx's own ``paragraph.text`` (tabs, breaks, hyphens, hyperlink runs)."""
    from docx.enum.text import WD_BREAK
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    from ragtools.parsers.normalize import normalize_text

    document = DOCX.Document()
    paragraph = document.add_paragraph("Name:")
    paragraph.add_run().add_tab()
    paragraph.add_run("Ada").add_break()
    paragraph.add_run("second line")
    paragraph.add_run().add_break(WD_BREAK.PAGE)
    run = paragraph.add_run("non")
    run._r.append(OxmlElement("w:noBreakHyphen"))
    run._r.append(OxmlElement("w:t"))
    run._r[-1].text = "breaking, see "
    link = OxmlElement("w:hyperlink")
    link.set(qn("r:id"), "rId99")
    inner = OxmlElement("w:r")
    inner.append(OxmlElement("w:t"))
    inner[-1].text = "the manual"
    link.append(inner)
    paragraph._p.append(link)
    paragraph.add_run(" today.")
    document.add_paragraph("Plain second paragraph.")
    path = tmp_path / "parts.docx"
    document.save(path)
    expected = [p.text for p in DOCX.Document(path).paragraphs]
    assert "the manual" in expected[0] and "\t" in expected[0] and "non-breaking" in expected[0]
    (parsed,) = load(path)
    assert parsed.text == "\n\n".join(normalize_text(text.strip()) for text in expected)


# ---- bounds: file size, line length, nesting, lone surrogates ------------------------------

GIB = 1024**3


def _sparse(path: Path, head: bytes, size: int) -> Path:
    """``head``, then zeros up to ``size`` bytes that take no disk space (a sparse file)."""
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size)
    return path


def _peak_bytes(action: Any) -> int:
    """The Python heap's peak while ``action`` runs (reading a file into memory shows)."""
    import tracemalloc

    tracemalloc.start()
    try:
        action()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_load_refuses_a_sparse_2gb_file_from_its_size_without_reading_it(tmp_path: Path) -> None:
    huge = _sparse(tmp_path / "huge.txt", b"one line", 2 * GIB)

    def refused() -> None:
        with pytest.raises(
            ParseError,
            match=rf"huge\.txt: larger than max_bytes \({2 * GIB} > {100 * 1024**2} bytes\)",
        ):
            load(huge)

    assert _peak_bytes(refused) < 16 * 1024**2


def test_load_dir_skips_a_sparse_2gb_file_with_the_limit_as_reason(tmp_path: Path) -> None:
    _good(tmp_path)
    _sparse(tmp_path / "huge.txt", b"one line", 2 * GIB)
    result = load_dir(tmp_path, workers=1)
    assert sorted(Path(d.source).name for d in result.documents) == ["bees.txt", "tides.md"]
    reason = f"larger than max_bytes ({2 * GIB} > {100 * 1024**2} bytes): not read; raise max_bytes"
    assert result.skipped == [(str(tmp_path / "huge.txt"), reason)]


def test_a_line_over_the_cap_is_refused_after_reading_little_more(tmp_path: Path) -> None:
    """Raising ``max_bytes`` lets the 2 GB file be read, but its one line stops that at
    ``MAX_LINE_BYTES``: memory stays a few blocks past the cap, not gigabytes."""
    from ragtools.parsers.text import MAX_LINE_BYTES

    huge = _sparse(tmp_path / "huge.txt", b"one line", 2 * GIB)

    def refused() -> None:
        with pytest.raises(ParseError, match=rf"huge\.txt: line 1 is longer than {MAX_LINE_BYTES}"):
            load(huge, max_bytes=4 * GIB)

    assert _peak_bytes(refused) < 2 * MAX_LINE_BYTES


@pytest.mark.parametrize("suffix", [".txt", ".md", ".csv", ".jsonl"])
def test_every_line_oriented_format_has_the_line_cap(tmp_path: Path, suffix: str) -> None:
    from ragtools.parsers.text import MAX_LINE_BYTES

    size = 3 + MAX_LINE_BYTES + 2  # "ok\n", then one line a byte over the cap (plus its end)
    file = _sparse(tmp_path / f"long{suffix}", b"ok\n", size - 1)
    with open(file, "ab") as handle:
        handle.write(b"\n")
    with pytest.raises(ParseError, match=rf"long\{suffix}: line 2 is longer than {MAX_LINE_BYTES}"):
        load(file)


@pytest.mark.parametrize(
    ("data", "longest_ok"),
    [
        (b"abcd\nefghij\nk", 6),  # the longest line straddles the first block boundary
        (b"abcdefghij", 10),  # no line end at all
        (b"ab\r\ncdefg\rhi\n", 5),  # CRLF and a lone CR end lines too
        (b"\n\n\n", 0),
    ],
)
def test_read_lines_finds_the_longest_line_across_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, longest_ok: int
) -> None:
    from ragtools.parsers import text

    monkeypatch.setattr(text, "_BLOCK", 4)
    file = tmp_path / "lines.txt"
    file.write_bytes(data)
    assert text.read_lines(file, "lines.txt", limit=longest_ok) == data
    if longest_ok:
        with pytest.raises(ParseError, match=f"lines.txt: line .* longer than {longest_ok - 1}"):
            text.read_lines(file, "lines.txt", limit=longest_ok - 1)


@pytest.mark.parametrize(
    ("data", "longest_ok"),
    [
        (b"abcd\nefghij\nk", 6),
        (b"abcdefghij", 10),  # no line end at all
        (b"ab\ncdefg\n", 5),
        (b"\n\n\n", 0),
    ],
)
def test_iter_lines_streams_lines_and_stops_at_the_first_too_long(
    data: bytes, longest_ok: int
) -> None:
    import io

    from ragtools.parsers.text import iter_lines

    assert list(iter_lines(io.BytesIO(data), "q.txt", limit=longest_ok)) == data.splitlines(True)
    if longest_ok:
        with pytest.raises(ParseError, match=f"q.txt: line .* longer than {longest_ok - 1}"):
            list(iter_lines(io.BytesIO(data), "q.txt", limit=longest_ok - 1))


def test_html_and_json_documents_are_not_line_capped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Minified markup and JSON exports are one line by design: only the file bound applies."""
    from ragtools.parsers import text

    monkeypatch.setattr(text, "MAX_LINE_BYTES", 64)
    page = tmp_path / "page.html"
    page.write_text("<html><body>" + "<p>words here</p>" * 20 + "</body></html>")
    records = tmp_path / "records.json"
    records.write_text('[{"text": "' + "long text " * 20 + '"}]')
    assert load(page)[0].text.startswith("words here")
    assert load(records)[0].text.startswith("long text")
    records.rename(tmp_path / "records.jsonl")  # the same line in JSON Lines is capped
    with pytest.raises(ParseError, match=r"records\.jsonl: line 1 is longer than 64 bytes"):
        load(tmp_path / "records.jsonl")


def _deep_record(depth: int) -> str:
    return '{"text": "deep", "extra": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("name", ["deep.jsonl", "deep.json"])
def test_a_record_nested_past_the_limit_is_a_parse_error(tmp_path: Path, name: str) -> None:
    from ragtools.parsers.nesting import MAX_NESTING
    from ragtools.parsers.records import load_beir_corpus

    file = tmp_path / name
    file.write_text(_deep_record(100_000) + "\n", encoding="utf-8")
    where = "line 1" if name.endswith("l") else "the JSON"
    problem = f"{where}: objects and lists nested more than {MAX_NESTING} levels deep"
    with pytest.raises(ParseError, match=rf"deep\.jsonl?: {problem}"):
        load(file)
    with pytest.raises(ParseError, match=rf"deep\.jsonl?: {problem}"):
        load_beir_corpus(file)
    # past the limit but within json's own recursion: refused by the same bound
    file.write_text(_deep_record(MAX_NESTING), encoding="utf-8")
    label = "line 1" if name.endswith("l") else "record 1"
    with pytest.raises(ParseError, match=f"{label}: objects and lists nested more than"):
        load(file)
    file.write_text(_deep_record(MAX_NESTING - 2), encoding="utf-8")  # record + field: fits
    assert [d.text for d in load(file)] == ["deep"]


def test_lone_surrogates_are_replaced_at_the_parser_boundary_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    name = os.fsdecode(b"r\xe9cords.jsonl")  # a file name that is not UTF-8: kept exactly
    (tmp_path / name).write_text(
        '{"text": "trace \\ud800 compile", "tag": "a\\udc00", "\\ud801key": ["\\ud802"]}\n'
        '{"text": "clean line"}\n',
        encoding="utf-8",
    )
    _good(tmp_path)
    documents = load(tmp_path / name)
    assert [d.text for d in documents] == ["trace \ufffd compile", "clean line"]
    assert documents[0].metadata["tag"] == "a\ufffd"
    assert documents[0].metadata["\ufffdkey"] == ["\ufffd"]
    assert documents[0].source.encode("utf-8", "surrogateescape").endswith(b"r\xe9cords.jsonl")
    assert "4 lone surrogates (not characters) replaced by U+FFFD" in caplog.text
    result = load_dir(tmp_path, workers=1)
    assert result.replaced == 4
    texts = {d.text for d in result.documents}
    assert "trace \ufffd compile" in texts and "Honey bees dance to point at flowers." in texts
    for document in result.documents:  # every document can now be written as UTF-8
        document.text.encode("utf-8")


def test_a_clean_document_is_passed_through_unchanged() -> None:
    from ragtools.parsers.document import document_without_surrogates

    document = Document(text="plain text", metadata={"source": "a.txt", "tags": ["x"]})
    assert document_without_surrogates(document) == (document, 0)
    given = Document(id="q1", text="a\ud800", metadata={"source": "b\udce9.txt"})
    clean, count = document_without_surrogates(given, keep=frozenset({"source"}))
    assert (clean.id, clean.text, clean.source, count) == ("q1", "a\ufffd", "b\udce9.txt", 1)


def test_a_beir_corpus_gets_the_same_replacement_as_load(tmp_path: Path) -> None:
    """``rag eval`` reads its corpus with ``load_beir_corpus``: the same text as ``rag build``."""
    from ragtools.parsers.records import load_beir_corpus

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "d1", "title": "T\\ud800", "text": "body \\udfff"}\n')
    (document,) = load_beir_corpus(corpus)
    assert (document.id, document.text) == ("d1", "T\ufffd\n\nbody \ufffd")
    assert document.metadata["title"] == "T\ufffd"
    assert [(d.id, d.text, d.metadata["title"]) for d in load(corpus)] == [
        ("d1", document.text, "T\ufffd")
    ]


# ---- parsing in a killable worker, from any thread -------------------------------------------


def _in_thread(action: Any) -> Any:
    """``action()`` in another thread (where no timer can interrupt a parser); its result or
    its exception."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(action).result()


def test_a_workbook_declaring_every_cell_reads_the_cells_it_holds_in_a_thread_too(
    tmp_path: Path,
) -> None:
    """#38 item 4: a 1.5 KB XLSX declaring ``A1:XFD1048576`` ran past 120 s in a thread,
    where no timer stops a parser. The declared range is no longer trusted: its two cells
    are read at once, in process and in an isolated worker."""
    from tests.conftest import every_cell_workbook

    bomb = every_cell_workbook(tmp_path / "wide.xlsx")
    assert [d.text for d in _in_thread(lambda: load(bomb))] == ["first\nlast"]
    assert _in_thread(lambda: load_isolated(bomb)) == load(bomb)


def test_a_slow_file_is_stopped_at_its_budget_in_a_thread(tmp_path: Path) -> None:
    """In-process, only the main thread has a timer. The worker of ``load_isolated`` is
    killed at the budget whatever the calling thread."""
    from tests.conftest import headings_docx, parse_workers

    slow = headings_docx(tmp_path / "slow.docx", 300_000)  # seconds of python-docx
    before = parse_workers()
    with pytest.raises(ParseError, match=r"slow\.docx: parsing took longer than the time budget"):
        _in_thread(lambda: load_isolated(slow, time_budget=1))
    assert parse_workers() <= before  # the worker is gone when the call returns


def test_a_sheet_is_read_as_it_is_not_as_it_declares_and_its_size_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows are read as the sheet holds them, so a declared range too small loses nothing;
    what a few kilobytes can still imply is a ParseError naming its limit: a row numbered
    past Excel's 1,048,576 (10^11 empty rows before it), or rows each as wide as one far
    cell (16,384 cells a row)."""
    from tests.conftest import far_cells_workbook, workbook_of

    def cell(ref: str, text: str) -> str:
        return f'<c r="{ref}" t="inlineStr"><is><t>{text}</t></is></c>'

    small = workbook_of(
        tmp_path / "small.xlsx",
        f'<dimension ref="A1:A1"/><sheetData><row r="1">{cell("A1", "a")}</row>'
        f'<row r="5">{cell("C5", "c")}{cell("E5", "e")}</row></sheetData>',
    )
    assert [d.text for d in load(small)] == ["a\nc | e"]
    far = workbook_of(
        tmp_path / "far.xlsx",
        f'<sheetData><row r="1">{cell("A1", "a")}</row>'
        f'<row r="100000000000">{cell("A100000000000", "z")}</row></sheetData>',
    )
    with pytest.raises(ParseError, match=r"far\.xlsx: sheet 'Sheet1' has more than 1048576 rows"):
        load(far)
    monkeypatch.setattr(office, "MAX_CELLS", 1_000_000)
    wide = far_cells_workbook(tmp_path / "wide.xlsx", 100)  # 1,638,400 cells
    with pytest.raises(ParseError, match=r"wide\.xlsx: .* past 1000000 cells .*MAX_CELLS"):
        load(wide)
    assert [d.text for d in load(far_cells_workbook(wide, 50))] == ["\n".join(["x"] * 50)]


def test_a_parse_past_its_memory_limit_is_a_parse_error_naming_it(tmp_path: Path) -> None:

    line = b"lorem ipsum dolor sit amet, consectetur adipiscing elit\n"
    small, big = tmp_path / "small.txt", tmp_path / "big.txt"
    small.write_bytes(line * 1000)
    big.write_bytes(line * 800_000)  # 45 MB: read, joined and decoded, over 128 MiB
    limit = 128 * 1024 * 1024
    assert _in_thread(lambda: load_isolated(small, memory_limit=limit)) == load(small)
    with pytest.raises(ParseError, match=rf"big\.txt: .*more than the memory limit of {limit}"):
        _in_thread(lambda: load_isolated(big, memory_limit=limit))


def test_a_cancelled_parse_stops_its_worker_at_once(tmp_path: Path) -> None:
    import threading

    from ragtools.parsers._pool import ABANDONED
    from tests.conftest import headings_docx, parse_workers

    bomb = headings_docx(tmp_path / "slow.docx", 300_000)  # seconds of python-docx
    gave_up = threading.Event()
    threading.Timer(2.0, gave_up.set).start()
    before = parse_workers()
    with pytest.raises(ParseError, match=rf"slow\.docx: {re.escape(ABANDONED)}"):
        _in_thread(lambda: load_isolated(bomb, time_budget=None, cancelled=gave_up.is_set))
    assert parse_workers() <= before


def test_load_isolated_gives_what_load_gives(pdf_dir: Path, tmp_path: Path) -> None:
    from ragtools.parsers import PasswordRequiredError

    notes = tmp_path / "notes.md"
    notes.write_text("# Tides\n\nThe moon pulls the sea. Café ﬁne.\n", encoding="utf-8")
    for file in (pdf_dir / "google-doc-document.pdf", notes):
        assert load_isolated(file) == load(file)
    locked = pdf_dir / "libreoffice-writer-password.pdf"
    with pytest.raises(PasswordRequiredError) as raised:
        load_isolated(locked)
    with pytest.raises(PasswordRequiredError) as expected:
        load(locked)
    assert str(raised.value) == str(expected.value)
    assert load_isolated(locked, password="openpassword") == load(locked, password="openpassword")


def test_a_docx_of_300000_headings_ends_in_a_result_or_a_named_error(tmp_path: Path) -> None:
    """#38 item 8: a DOCX with 300,000 headings could not be indexed at all. Within a budget
    it ends, in one process and in an isolated worker, as documents or a named ParseError."""
    from tests.conftest import headings_docx

    pytest.importorskip("docx")
    path = headings_docx(tmp_path / "headings.docx", 300_000)
    for loader in (load, load_isolated):
        try:
            (document,) = loader(path, time_budget=5)
        except ParseError as exc:
            assert "longer than the time budget of" in str(exc)  # 5 s, and the size's
        else:
            assert document.text.count("Part ") == 300_000


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped raise
def test_a_budget_raise_dropped_by_a_gc_callback_is_raised_again(tmp_path: Path) -> None:
    """The budget's signal can land in a garbage-collector callback (Hypothesis installs
    one), where Python reports the exception as unraisable and drops it; the parse went on
    and its file was kept. The expired budget raises again until the parse stops."""
    import gc

    entered: list[str] = []

    def collecting(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            entered.append(phase)
            time.sleep(0.4)  # the budget runs out here, inside the callback

    @register_parser(".slow", name="test-slow-gc")
    def slow(path: Path, *, source: str, password: str | None = None) -> list[Document]:
        gc.collect()  # the budget's first raise is dropped inside the callback
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            sum(range(1000))
        return [Document(text="finished", metadata={"source": source})]

    gc.callbacks.append(collecting)
    try:
        file = tmp_path / "slow.slow"
        file.write_text("x", encoding="utf-8")
        with pytest.raises(ParseError, match=r"slow\.slow: .*time budget of 0\.2 s"):
            load(file, time_budget=0.2)
        assert entered
    finally:
        gc.callbacks.remove(collecting)
        unregister_parser("test-slow-gc")
