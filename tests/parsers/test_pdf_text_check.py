"""Text that is not text: CID fonts without a Unicode map, garbage pages and blank pages.

The PDFs are written here byte by byte: a Type0 font in ``Identity-H`` encoding whose CID font
names an Adobe collection in ``/CIDSystemInfo`` and has no ``/ToUnicode`` map, drawing 2-byte
CIDs. The CIDs of the Japanese characters come from pdfminer.six's own Adobe-Japan1 table, so
the expected text is the reference, not a guess.
"""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfReader, PdfWriter

from ragtools import parsers
from ragtools.parsers import load_dir, pdf
from ragtools.parsers.normalize import normalize_text
from ragtools.parsers.pdf_text_check import looks_garbled

pytest.importorskip("pdfminer")
from pdfminer.cmapdb import CMapDB

JAPANESE = "日本語の検索テスト"
KANA = "ありがとうございます"
#: Glyph ids of a subset font: under the Identity ordering no CMap maps them to anything.
GLYPH_IDS = [0x120, 0x5A3, 0x9E7, 0x2B1, 0x733, 0xC41, 0x188, 0x6F2, 0x3D5, 0xAA0, 0x411, 0x829]


def japan1_cids(text: str) -> list[int]:
    """Each character's smallest Adobe-Japan1 CID, from pdfminer.six's to-Unicode table."""
    cids: dict[str, int] = {}
    for cid, char in sorted(CMapDB.get_unicode_map("Adobe-Japan1").cid2unichr.items()):
        cids.setdefault(char, cid)
    return [cids[char] for char in text]


def cid_font_pdf(pages: list[tuple[str, list[int]]], *, shared: bool = False) -> bytes:
    """A PDF whose pages each draw CIDs in a CID font of the ordering given, without ToUnicode.

    With ``shared``, every page draws the first page's content stream with its font.
    """
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>"}
    kids = []
    for number, (ordering, cids) in enumerate(pages):
        page, content, font, cid_font, descriptor = range(3 + 5 * number, 8 + 5 * number)
        kids.append(f"{page} 0 R")
        drawn = (4, 5) if shared else (content, font)  # the first page's, or its own
        objects[page] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] "
            f"/Resources << /Font << /F1 {drawn[1]} 0 R >> >> /Contents {drawn[0]} 0 R >>"
        ).encode()
        stream = f"BT /F1 24 Tf 72 700 Td <{''.join(f'{c:04X}' for c in cids)}> Tj ET".encode()
        objects[content] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
        objects[font] = (
            f"<< /Type /Font /Subtype /Type0 /BaseFont /KozMinPr6N-Regular "
            f"/Encoding /Identity-H /DescendantFonts [{cid_font} 0 R] >>"
        ).encode()
        objects[cid_font] = (
            f"<< /Type /Font /Subtype /CIDFontType0 /BaseFont /KozMinPr6N-Regular "
            f"/CIDSystemInfo << /Registry (Adobe) /Ordering ({ordering}) /Supplement 6 >> "
            f"/FontDescriptor {descriptor} 0 R /DW 1000 >>"
        ).encode()
        objects[descriptor] = (
            b"<< /Type /FontDescriptor /FontName /KozMinPr6N-Regular /Flags 4 "
            b"/FontBBox [0 -120 1000 880] /ItalicAngle 0 /Ascent 880 /Descent -120 "
            b"/CapHeight 740 /StemV 80 >>"
        )
    objects[2] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (number, objects[number])
    xref, size = len(out), max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    out += b"".join(b"%010d 00000 n \n" % offsets[number] for number in range(1, size))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def _pypdf_texts(path: Path) -> list[str]:
    return [normalize_text(page.extract_text()) for page in PdfReader(path).pages]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ragtools.parsers.pdf"]


# ---- the fallback ---------------------------------------------------------------------


def test_a_japan1_cid_font_without_tounicode_yields_its_japanese_text(tmp_path: Path) -> None:
    path = tmp_path / "slides.pdf"
    path.write_bytes(cid_font_pdf([("Japan1", japan1_cids(JAPANESE))]))
    (pypdf_text,) = _pypdf_texts(path)
    assert pypdf_text != JAPANESE and looks_garbled(pypdf_text)  # what pypdf alone gives
    (doc,) = parsers.load(path)
    assert doc.text == JAPANESE
    assert doc.metadata["page"] == 1


def test_kana_that_pypdf_reads_as_greek_is_caught_by_its_font(tmp_path: Path) -> None:
    # Hiragana CIDs fall on Greek code points: the text alone passes for Greek words, the font
    # (Japan1 collection, no ToUnicode) shows it is not.
    path = tmp_path / "kana.pdf"
    path.write_bytes(cid_font_pdf([("Japan1", japan1_cids(KANA))]))
    (pypdf_text,) = _pypdf_texts(path)
    assert pypdf_text != KANA
    assert [doc.text for doc in parsers.load(path)] == [KANA]


def test_a_page_of_true_garbage_warns_and_indexes_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "deck.pdf"
    pages = [("Japan1", japan1_cids(JAPANESE)), ("Identity", GLYPH_IDS)]
    path.write_bytes(cid_font_pdf(pages))
    with caplog.at_level(logging.WARNING, logger="ragtools.parsers"):
        result = load_dir(tmp_path, workers=1)
    assert [(d.metadata["page"], d.text) for d in result.documents] == [(1, JAPANESE)]
    assert [chunk.metadata["page"] for chunk in parsers.split(result.documents)] == [1]
    assert result.errors == []
    (warning,) = _warnings(caplog)
    assert str(path) in warning and "page(s) 2 give only garbage" in warning


def test_pages_split_over_workers_report_garbage_and_blank_pages_alike(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importlib.import_module("ragtools.parsers._pool"), "SHARD_MIN_BYTES", 1)
    pages = [("Japan1", japan1_cids(JAPANESE)), ("Identity", GLYPH_IDS)] * 2
    (tmp_path / "deck.pdf").write_bytes(cid_font_pdf(pages))
    serial = load_dir(tmp_path, workers=1)
    with caplog.at_level(logging.WARNING, logger="ragtools.parsers"):
        pooled = load_dir(tmp_path, workers=2)
    assert pooled == serial
    assert [(d.metadata["page"], d.text) for d in pooled.documents] == [
        (1, JAPANESE),
        (3, JAPANESE),
    ]
    assert [w for w in _warnings(caplog) if "page(s) 2, 4 give only garbage" in w]


def test_pages_drawing_one_garbled_stream_are_reread_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    requested: list[list[int]] = []
    reread = pdf.pdfminer_pages

    def counted(path: Path, indexes: Any, password: str | None) -> Any:
        requested.append(sorted(indexes))
        return reread(path, indexes, password)

    monkeypatch.setattr(pdf, "pdfminer_pages", counted)
    path = tmp_path / "shared.pdf"
    path.write_bytes(cid_font_pdf([("Japan1", japan1_cids(JAPANESE))] * 20, shared=True))
    documents = parsers.load(path)
    assert [(d.metadata["page"], d.text) for d in documents] == [
        (page, JAPANESE) for page in range(1, 21)
    ]
    assert requested == [[0]]


def test_without_pdfminer_the_page_is_skipped_with_the_extra_to_install(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pdfminer.high_level", None)  # import fails
    path = tmp_path / "slides.pdf"
    path.write_bytes(cid_font_pdf([("Japan1", japan1_cids(JAPANESE))]))
    with caplog.at_level(logging.WARNING, logger="ragtools.parsers"):
        assert parsers.load(path) == []
    first, second = _warnings(caplog)
    assert str(path) in first and 'pip install "ragtools[cjk]"' in first
    assert "page(s) 1 give only garbage" in second


# ---- blank pages ------------------------------------------------------------------------


def test_a_blank_page_is_called_blank_not_scanned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    writer = PdfWriter()
    writer.add_blank_page(width=595, height=842)
    path = tmp_path / "blank.pdf"
    with path.open("wb") as handle:
        writer.write(handle)
    with caplog.at_level(logging.WARNING, logger="ragtools.parsers"):
        assert parsers.load(path) == []
    assert _warnings(caplog) == [f"{path}: page(s) 1 are blank"]


# ---- the garbage test itself ------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "English: Hello World\nArabic: مرحبا بالعالم\nRussian: Привет, мир\n"
        "Chinese: 你好世界\nJapanese: こんにちは世界\nGreek: Γειά σου Κόσμε\nHebrew: שלום עולם",
        "Die Wellenfunktion ψ und die Energie E = ħω, mit α ≈ 1/137.",
        "Pythonで検索エンジンを作る: BM25とFAISSの比較 (2024年版)",
        "Tiếng Việt có dấu: Việt Nam, Hà Nội, Thành phố Hồ Chí Minh.",
        "हिन्दी भारत की राजभाषा है और देवनागरी लिपि में लिखी जाती है।",
        "42 — 3.14 — 2024-06-01",
    ],
)
def test_real_text_in_many_scripts_is_not_garbage(text: str) -> None:
    assert not looks_garbled(normalize_text(text))


@pytest.mark.parametrize(
    "text",
    [
        "".join(chr(cid) for cid in japan1_cids(JAPANESE)),
        "".join(chr(gid) for gid in GLYPH_IDS),
        "(cid:288)(cid:1443)(cid:2535)(cid:689) (cid:1843)(cid:3137)",
        "\ue000\ue001\ue002\ue003 \ufffd\ufffd",
    ],
)
def test_glyph_ids_read_as_code_points_are_garbage(text: str) -> None:
    assert looks_garbled(normalize_text(text))


def test_no_page_of_the_shared_real_pdfs_looks_garbled(pdf_dir: Path) -> None:
    readable = [p for p in sorted(pdf_dir.glob("*.pdf")) if p.name not in {"invalid.pdf"}]
    checked = 0
    for path in readable:
        reader = PdfReader(path, strict=False)
        if reader.is_encrypted:
            continue
        for page in reader.pages:
            text = normalize_text(page.extract_text() or "")
            assert not looks_garbled(text), (path.name, text[:80])
            checked += bool(text)
    assert checked > 150  # the real pages with text (tracemonkey, GeoTopo, multilang, ...)
