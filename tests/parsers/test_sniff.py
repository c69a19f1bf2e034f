"""Content sniffing on real files: filetype's magic where it covers a case, ours elsewhere."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from ragtools.parsers import ConfigError
from ragtools.parsers.registry import HEAD_BYTES, is_html, is_ooxml, is_pdf, is_zip, resolve
from ragtools.parsers.text import looks_like_text


def _head(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(HEAD_BYTES)


@pytest.fixture(scope="module")
def office_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One small file of each Office format, written by the libraries the parsers read with."""
    docx = pytest.importorskip("docx")
    pptx = pytest.importorskip("pptx")
    openpyxl = pytest.importorskip("openpyxl")
    folder = tmp_path_factory.mktemp("office")
    document = docx.Document()
    document.add_paragraph("a paragraph")
    document.save(str(folder / "a.docx"))
    deck = pptx.Presentation()
    deck.slides.add_slide(deck.slide_layouts[1]).shapes.title.text = "a slide"
    deck.save(str(folder / "a.pptx"))
    workbook = openpyxl.Workbook()
    workbook.active["A1"] = "a cell"
    workbook.save(str(folder / "a.xlsx"))
    with zipfile.ZipFile(folder / "a.zip", "w") as archive:
        # stored, not deflated: the bytes ``word/`` and ``xl/`` stand in the head, as they do
        # in a zip of notes about Office files (the old ``prefix in head`` test took it for one)
        archive.writestr("readme.txt", "unpack word/ and xl/ from ppt/ decks")
    return {name: folder / f"a.{name}" for name in ("docx", "pptx", "xlsx", "zip")}


@pytest.mark.parametrize("kind", ["docx", "pptx", "xlsx"])
def test_each_office_format_is_told_apart(office_files: dict[str, Path], kind: str) -> None:
    head = _head(office_files[kind])
    assert is_zip(head)
    claims = {other: is_ooxml(other)(head) for other in ("docx", "pptx", "xlsx")}
    assert claims == {other: other == kind for other in claims}
    assert not (is_pdf(head) or is_html(head) or looks_like_text(head))


@pytest.mark.parametrize("kind", ["docx", "pptx", "xlsx"])
def test_office_file_without_or_with_a_wrong_suffix_goes_to_its_parser(
    office_files: dict[str, Path], kind: str
) -> None:
    head = _head(office_files[kind])
    for name in ("no_suffix", "wrong.txt", "wrong.html"):
        spec = resolve(Path(name), head)
        assert spec is not None and spec.name == kind, name


def test_a_plain_zip_is_no_office_file(office_files: dict[str, Path]) -> None:
    head = _head(office_files["zip"])
    assert is_zip(head)
    assert not any(is_ooxml(kind)(head) for kind in ("docx", "pptx", "xlsx"))
    assert not looks_like_text(head)
    assert resolve(Path("archive"), head) is None


def test_unknown_office_format_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'odt'"):
        is_ooxml("odt")


def test_every_shared_pdf_is_sniffed_as_pdf(pdf_dir: Path) -> None:
    pdfs = sorted(pdf_dir.glob("*.pdf"))
    assert len(pdfs) > 10
    missed = [p.name for p in pdfs if not is_pdf(_head(p))]
    assert missed == []
    spec = resolve(Path("no_suffix"), _head(pdfs[0]))
    assert spec is not None and spec.name == "pdf"


def test_pdf_after_leading_junk_is_still_a_pdf(pdf_dir: Path) -> None:
    """The case filetype does not cover (it wants ``%PDF`` at byte 0): kept by hand."""
    data = b"Content-Type: application/pdf\r\n\r\n" + (pdf_dir / "multilang.pdf").read_bytes()
    assert is_pdf(data[:HEAD_BYTES])
    assert not is_pdf(b"x" * 1024 + b"%PDF-1.4")  # past the first KiB it is not a header


@pytest.mark.parametrize(
    ("head", "text"),
    [
        (b"plain words\n", True),
        ("café".encode("latin-1"), True),
        ("UTF-16 with a BOM".encode("utf-16"), True),
        (b"\x00\x01binary", False),
        (b"<!DOCTYPE html><html><body>x</body></html>", False),
        ("<html><body>x</body></html>".encode("utf-16"), False),
    ],
)
def test_text_sniffing_by_hand(head: bytes, text: bool) -> None:
    """NUL bytes, BOMs and HTML: filetype claims no text format, so these stay ours."""
    assert looks_like_text(head) is text
