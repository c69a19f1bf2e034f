"""Full-size hostile files: how long each takes to parse, and the peak memory, one per process.

    python eval/bench_bombs.py [--only NAME] [--keep DIR]

Each bomb is generated in a temporary folder (a few MB on disk, gigabytes once inflated)
and parsed with ``parsers.load`` in a fresh process; the acceptance of issue #23 is at most
30 s and 1 GB each, ending in a ``ParseError`` or a bounded document. Unit tests build the
same shapes at a small scale with the limits lowered; this script shows the real limits at
work on the real sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' builders of crafted files

from tests.parsers.test_hostile import shared_stream_pdf  # noqa: E402

MB = 1024 * 1024

PARSE = """
import json, resource, sys, time
from ragtools.parsers import ParseError, load
start = time.perf_counter()
try:
    docs = load(sys.argv[1])
    outcome = f"ok: {len(docs)} documents, {sum(len(d.text) for d in docs)} characters"
except ParseError as exc:
    outcome = "ParseError: " + str(exc)[len(sys.argv[1]) + 2 :][:110]
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
print(json.dumps({"seconds": round(seconds, 1), "peak_rss_mb": round(peak), "outcome": outcome}))
"""


def _base(kind: str, folder: Path) -> dict[str, bytes]:
    """The members of a minimal real package of ``kind`` (made by the office libraries)."""
    path = folder / f"base.{kind}"
    if kind == "docx":
        import docx

        document = docx.Document()
        document.add_paragraph("seed")
        document.save(str(path))
    elif kind == "pptx":
        import pptx

        deck = pptx.Presentation()
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = "seed"
        deck.save(str(path))
    else:
        import openpyxl

        workbook = openpyxl.Workbook()
        workbook.active["A1"] = "seed"
        workbook.save(str(path))
    with zipfile.ZipFile(path) as package:
        return {info.filename: package.read(info) for info in package.infolist()}


def _package(path: Path, members: dict[str, bytes], name: str, stream: Iterator[bytes]) -> None:
    """Write ``members`` with member ``name`` streamed from ``stream`` (never in memory)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as package:
        for member, data in members.items():
            if member != name:
                package.writestr(member, data)
        with package.open(name, "w", force_zip64=True) as handle:
            for block in stream:
                handle.write(block)


def _repeat(head: bytes, unit: bytes, count: int, tail: bytes) -> Iterator[bytes]:
    yield head
    block = unit * max(1, MB // len(unit))
    per_block = len(block) // len(unit)
    for _ in range(count // per_block):
        yield block
    yield unit * (count % per_block)
    yield tail


_W = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_DOCX_HEAD = (
    b"<?xml version='1.0' encoding='UTF-8' standalone='yes'?><w:document " + _W + b"><w:body>"
)
_DOCX_TAIL = b"</w:body></w:document>"
_S = b'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'


def docx_text_node(folder: Path, size: int) -> Path:
    """One paragraph whose text node is ``size`` bytes."""
    path = folder / f"text-node-{size // MB}MB.docx"
    head = _DOCX_HEAD + b"<w:p><w:r><w:t>"
    stream = _repeat(head, b"a", size, b"</w:t></w:r></w:p>" + _DOCX_TAIL)
    _package(path, _base("docx", folder), "word/document.xml", stream)
    return path


def docx_paragraphs(folder: Path, size: int) -> Path:
    """``size`` bytes of tiny paragraphs: millions of XML elements."""
    path = folder / f"paragraphs-{size // MB}MB.docx"
    unit = b"<w:p><w:r><w:t>ab</w:t></w:r></w:p>"
    stream = _repeat(_DOCX_HEAD, unit, size // len(unit), _DOCX_TAIL)
    _package(path, _base("docx", folder), "word/document.xml", stream)
    return path


def pptx_text_node(folder: Path, size: int) -> Path:
    """The slide title's text node is ``size`` bytes."""
    path = folder / f"slide-text-{size // MB}MB.pptx"
    members = _base("pptx", folder)
    slide = members["ppt/slides/slide1.xml"]
    start = slide.index(b"seed")
    _package(
        path,
        members,
        "ppt/slides/slide1.xml",
        _repeat(slide[:start], b"a", size, slide[start + 4 :]),
    )
    return path


def xlsx_sheet(folder: Path, size: int) -> Path:
    """A sheet of ``size`` bytes of numeric cells (the 1 GB XLSX of the audit)."""
    path = folder / f"sheet-{size // MB}MB.xlsx"
    unit = b'<row><c t="n"><v>1</v></c></row>'
    head = b"<?xml version='1.0' encoding='UTF-8'?><worksheet " + _S + b"><sheetData>"
    stream = _repeat(head, unit, size // len(unit), b"</sheetData></worksheet>")
    _package(path, _base("xlsx", folder), "xl/worksheets/sheet1.xml", stream)
    return path


def xlsx_shared(folder: Path, cells: int) -> Path:
    """One 30,000-character shared string referenced by ``cells`` cells."""
    path = folder / f"shared-string-{cells}-cells.xlsx"
    members = _base("xlsx", folder)
    members["xl/sharedStrings.xml"] = (
        b"<?xml version='1.0' encoding='UTF-8'?><sst " + _S + b' count="1" uniqueCount="1">'
        b"<si><t>" + b"spam " * 6000 + b"</t></si></sst>"
    )
    types = members["[Content_Types].xml"]
    if b"sharedStrings" not in types:
        override = (
            b'<Override PartName="/xl/sharedStrings.xml" ContentType="application/'
            b'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
        )
        members["[Content_Types].xml"] = types.replace(b"</Types>", override + b"</Types>")
        rels = members["xl/_rels/workbook.xml.rels"]
        rel = (
            b'<Relationship Id="rIdS" Type="http://schemas.openxmlformats.org/officeDocument/'
            b'2006/relationships/sharedStrings" Target="sharedStrings.xml"/>'
        )
        members["xl/_rels/workbook.xml.rels"] = rels.replace(
            b"</Relationships>", rel + b"</Relationships>"
        )
    unit = b'<row><c t="s"><v>0</v></c></row>'
    head = b"<?xml version='1.0' encoding='UTF-8'?><worksheet " + _S + b"><sheetData>"
    stream = _repeat(head, unit, cells, b"</sheetData></worksheet>")
    _package(path, members, "xl/worksheets/sheet1.xml", stream)
    return path


def pdf_shared_stream(folder: Path, size: int, pages: int) -> Path:
    """``pages`` pages drawing one content stream of ``size`` bytes of text operators."""
    path = folder / f"shared-{size // MB}MB-stream-{pages}-pages.pdf"
    line = b"BT /F1 9 Tf 72 720 Td (words drawn again and again on the page) Tj ET\n"
    shared_stream_pdf(path, pages, line * (size // len(line)))
    return path


def html_tree(folder: Path, wide: int, deep: int) -> Path:
    """``wide`` sibling paragraphs and ``deep`` nested divisions (the audit's quadratic cases)."""
    path = folder / f"tree-{wide}-wide-{deep}-deep.html"
    body = "<p>x</p>" * wide + "<div>" * deep + "z" + "</div>" * deep
    path.write_text(f"<html><body>{body}</body></html>", encoding="utf-8")
    return path


def cid_pdf(folder: Path, pages: int) -> Path:
    """``pages`` pages in a Japan1 CID font without ToUnicode: every page re-read by pdfminer."""
    from tests.parsers.test_pdf_text_check import JAPANESE, cid_font_pdf, japan1_cids

    path = folder / f"cid-font-{pages}-pages.pdf"
    path.write_bytes(cid_font_pdf([("Japan1", japan1_cids(JAPANESE * 20))] * pages))
    return path


BOMBS: dict[str, Callable[[Path], Path]] = {
    "html-40000-wide": lambda f: html_tree(f, 40_000, 0),
    "html-200000-deep": lambda f: html_tree(f, 0, 200_000),
    "pdf-cid-font-200-pages": lambda f: cid_pdf(f, 200),
    "pdf-4MB-stream-shared-by-20-pages": lambda f: pdf_shared_stream(f, 4 * MB, 20),
    "xlsx-1GB-sheet": lambda f: xlsx_sheet(f, 1024 * MB),
    "xlsx-1M-shared-cells": lambda f: xlsx_shared(f, 1_000_000),
    "docx-1GB-text-node": lambda f: docx_text_node(f, 1024 * MB),
    "docx-30MB-text-node": lambda f: docx_text_node(f, 30 * MB),
    "docx-120MB-of-paragraphs": lambda f: docx_paragraphs(f, 120 * MB),
    "docx-30MB-of-paragraphs": lambda f: docx_paragraphs(f, 30 * MB),
    "pptx-1GB-text-node": lambda f: pptx_text_node(f, 1024 * MB),
    "pptx-30MB-text-node": lambda f: pptx_text_node(f, 30 * MB),
}


def _parse(path: Path) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", PARSE, str(path)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return {"outcome": f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"}
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run one bomb by name")
    parser.add_argument("--keep", type=Path, help="write the bombs here and keep them")
    args = parser.parse_args()
    names = [args.only] if args.only else list(BOMBS)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            path = BOMBS[name](folder)
            row = {"bomb": name, "file_bytes": os.path.getsize(path), **_parse(path)}
            print(json.dumps(row), flush=True)
            if args.keep is None:
                path.unlink()


if __name__ == "__main__":
    main()
