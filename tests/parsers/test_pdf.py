"""Every PDF of ../shared/pdfs behaves as its README table says."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ragtools import parsers
from ragtools.parsers import ParseError, PasswordRequiredError
from ragtools.parsers.pdf import format_pages

# file -> (pages expected, substrings that must be in the text)
TEXT_PDFS: dict[str, tuple[int, list[str]]] = {
    "tracemonkey.pdf": (14, ["Trace-based Just-in-Time"]),
    "multicolumn.pdf": (3, ["Two-Column Document"]),
    "002-trivial-libre-office-writer.pdf": (1, ["Lorem ipsum"]),
    "GeoBase_NHNC1_Data_Model_UML_EN.pdf": (19, ["National Hydro Network"]),
    "word365_structure.pdf": (1, ["Lorem ipsum", "Titre", "•"]),
    "2023-06-20-PV.pdf": (2, ["PROCÈS-VERBAL", "COMITÉ DE DÉMOLITION"]),
    "google-doc-document.pdf": (1, ["Beautiful is better than ugly."]),
    "federal-register-2020-17221.pdf": (15, ["FEDERAL REGISTER"]),
    "issue12823.pdf": (1, ["愿景", "知识库"]),
    "multilang.pdf": (1, ["Hello World", "مرحبا", "Привет", "世界", "こんにちは"]),
    "Seige_of_Vicksburg_Sample_OCR.pdf": (6, ["VICKSBURG"]),
    "scan-bad.pdf": (1, ["pdf.js"]),
    "zen_of_python_corrupted.pdf": (1, ["Beautiful is better than ugly"]),
}
SCANNED = ["skew.pdf", "c02-22.pdf", "linn.pdf"]
ENCRYPTED = {"libreoffice-writer-password.pdf": "openpassword", "aes-256-r6.pdf": "usersecret"}


@pytest.mark.parametrize("name", sorted(TEXT_PDFS))
def test_text_pdfs_give_one_document_per_page(pdf_dir: Path, name: str) -> None:
    pages, needles = TEXT_PDFS[name]
    path = pdf_dir / name
    docs = parsers.load(path)
    assert [d.metadata["page"] for d in docs] == list(range(1, pages + 1))
    for doc in docs:
        assert doc.metadata["source"] == path.name  # given absolute: the name
        assert doc.metadata["path"] == str(path.resolve())
        assert doc.metadata["file_type"] == "pdf"
        assert doc.metadata["page_label"] == str(doc.metadata["page"])
        assert doc.text == doc.text.strip() and doc.text
        assert "\ufffd" not in doc.text
        assert "\n\n\n" not in doc.text  # runs of blank lines collapsed
        assert all(line == line.rstrip() for line in doc.text.split("\n"))
    text = "\n".join(d.text for d in docs)
    for needle in needles:
        assert needle in text


def test_multilang_keeps_every_script(pdf_dir: Path) -> None:
    (doc,) = parsers.load(pdf_dir / "multilang.pdf")
    for needle in ["English", "Arabic", "Russian", "Thai", "Japanese"]:
        assert needle in doc.text
    assert any("\u0e00" <= ch <= "\u0e7f" for ch in doc.text)  # Thai letters


def test_title_comes_from_pdf_metadata(pdf_dir: Path) -> None:
    docs = parsers.load(pdf_dir / "google-doc-document.pdf")
    assert docs[0].metadata["title"] == "PDF Example Document"
    assert "title" not in parsers.load(pdf_dir / "multicolumn.pdf")[0].metadata


def test_ids_are_stable_and_distinct(pdf_dir: Path) -> None:
    first = [d.id for d in parsers.load(pdf_dir / "multicolumn.pdf")]
    second = [d.id for d in parsers.load(pdf_dir / "multicolumn.pdf")]
    assert first == second and len(set(first)) == 3


@pytest.mark.parametrize("name", SCANNED)
def test_scanned_pages_warn_and_give_nothing(
    pdf_dir: Path, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="parsers"):
        docs = parsers.load(pdf_dir / name)
    assert docs == []
    assert parsers.split(docs) == []
    warnings = [r.getMessage() for r in caplog.records if r.name == "ragtools.parsers.pdf"]
    assert len(warnings) == 1
    assert name in warnings[0] and "page(s) 1" in warnings[0]
    assert "no text layer" in warnings[0] and "OCR is out of scope" in warnings[0]


@pytest.mark.parametrize("name", sorted(ENCRYPTED))
def test_encrypted_without_password_names_file(pdf_dir: Path, name: str) -> None:
    with pytest.raises(PasswordRequiredError, match="password is needed") as info:
        parsers.load(pdf_dir / name)
    assert info.value.path == str(pdf_dir / name)
    assert name in str(info.value)


@pytest.mark.parametrize("name", sorted(ENCRYPTED))
def test_encrypted_with_wrong_password(pdf_dir: Path, name: str) -> None:
    with pytest.raises(PasswordRequiredError, match="wrong"):
        parsers.load(pdf_dir / name, password="not-the-password")


@pytest.mark.parametrize("name", sorted(ENCRYPTED))
def test_encrypted_with_password_gives_text(pdf_dir: Path, name: str) -> None:
    docs = parsers.load(pdf_dir / name, password=ENCRYPTED[name])
    assert len(docs) >= 1 and all(d.text for d in docs)
    assert docs[0].metadata["page"] == 1


def test_password_required_is_a_parse_error() -> None:
    assert issubclass(PasswordRequiredError, ParseError)


def test_invalid_pdf_is_a_parse_error_naming_it(pdf_dir: Path) -> None:
    path = pdf_dir / "invalid.pdf"
    with pytest.raises(ParseError, match=r"invalid\.pdf: not a readable PDF") as info:
        parsers.load(path)
    assert info.value.path == str(path)
    assert type(info.value) is ParseError


def test_truncated_pdf_as_string_path(pdf_dir: Path) -> None:
    source = str(pdf_dir / "scan-bad.pdf")
    (doc,) = parsers.load(source)
    assert doc.text == "pdf.js" and doc.metadata["source"] == "scan-bad.pdf"
    assert doc.metadata["path"] == str(Path(source).resolve())  # ../shared may be a link


@pytest.mark.slow
def test_geotopo_all_pages_and_ligatures(pdf_dir: Path) -> None:
    docs = parsers.load(pdf_dir / "GeoTopo-komprimiert.pdf")
    assert [d.metadata["page"] for d in docs] == list(range(1, 118))
    assert docs[0].metadata["page_label"] == "i"  # roman front matter labels are kept
    text = "\n".join(d.text for d in docs)
    assert "Auflage" in text
    assert not any(lig in text for lig in "ﬀﬁﬂﬃﬄ")
    assert docs[0].metadata["title"] == "Geometrie und Topologie"
    # The outline (bookmarks): each page carries the path of the last entry started by it.
    assert docs[0].metadata["headings"] == []
    assert docs[6].metadata["headings"] == [
        "1 Topologische Grundbegriffe",
        "1.1 Topologische Räume",
    ]
    assert docs[10].metadata["headings"][-1] == "1.2 Metrische Räume"


def test_a_pdf_without_outline_has_no_headings(pdf_dir: Path) -> None:
    assert "headings" not in parsers.load(pdf_dir / "google-doc-document.pdf")[0].metadata


def test_format_pages() -> None:
    assert format_pages([5, 1, 2, 3]) == "1-3, 5"
    assert format_pages([7]) == "7"
    assert format_pages([]) == ""
