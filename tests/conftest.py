"""Shared fixtures: paths to the shared reference data and a tiny checked-in corpus."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


def _shared(sub: str) -> Path:
    path = SHARED / sub
    if not path.exists():
        msg = f"reference data {path} is missing: clone the project next to ../shared"
        raise FileNotFoundError(msg)
    return path


@pytest.fixture(scope="session")
def pdf_dir() -> Path:
    """../shared/pdfs: real PDFs with the behaviour expected in their README."""
    return _shared("pdfs")


@pytest.fixture(scope="session")
def scifact_dir() -> Path:
    """../shared/data/scifact: BEIR SciFact."""
    return _shared("data/scifact")


@pytest.fixture(scope="session", autouse=True)
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Exported ONNX models go to one folder per test session (``RAGTOOLS_CACHE_DIR``, which
    subprocesses inherit), never to the user's cache. pytest-xdist's workers share the run's
    folder, so the model is exported once per run (exporters of one key wait on its lock)."""
    with pytest.MonkeyPatch.context() as mp:
        if os.environ.get("PYTEST_XDIST_WORKER"):
            path = tmp_path_factory.getbasetemp().parent / "ragtools-cache"
            path.mkdir(exist_ok=True)
        else:
            path = tmp_path_factory.mktemp("ragtools-cache")
        mp.setenv("RAGTOOLS_CACHE_DIR", str(path))
        yield path


_SPREADSHEET = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_RELATIONSHIPS = "http://schemas.openxmlformats.org/package/2006/relationships"
_OFFICE_RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def every_cell_workbook(path: Path) -> Path:
    """A 1.5 KB XLSX whose one sheet declares ``A1:XFD1048576`` (every cell Excel allows) and
    holds two: a reader that trusts the declared range walks 17 billion empty cells. Zipped
    by hand, as an attacker would write it."""
    return workbook_of(
        path,
        '<dimension ref="A1:XFD1048576"/><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>first</t></is></c></row>'
        '<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>last</t></is></c></row>'
        "</sheetData>",
    )


def far_cells_workbook(path: Path, rows: int) -> Path:
    """An XLSX of ``rows`` rows, each holding one cell in the last column (``XFD``): a reader
    makes each row 16,384 cells wide, so a few kilobytes take seconds to read (a file that
    is slow to parse, honestly, whatever range it declares)."""
    cells = "".join(
        f'<row r="{n}"><c r="XFD{n}" t="inlineStr"><is><t>x</t></is></c></row>'
        for n in range(1, rows + 1)
    )
    return workbook_of(path, f"<sheetData>{cells}</sheetData>")


def headings_docx(path: Path, count: int) -> Path:
    """A DOCX of ``count`` one-line paragraphs styled ``Heading 1`` to ``Heading 3`` (made
    from python-docx's own blank document): 300,000 take python-docx many seconds, a
    genuine file that is slow to parse."""
    import io
    import zipfile

    import docx

    blank = io.BytesIO()
    docx.Document().save(blank)
    template = zipfile.ZipFile(io.BytesIO(blank.getvalue()))
    xml = template.read("word/document.xml").decode()
    at = xml.index("<w:body>") + len("<w:body>")
    heading = '<w:p><w:pPr><w:pStyle w:val="Heading{}"/></w:pPr><w:r><w:t>Part {}</w:t></w:r></w:p>'
    body = "".join(heading.format(1 + n % 3, n) for n in range(count))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for item in template.infolist():
            data = xml[:at] + body + xml[at:] if item.filename == "word/document.xml" else None
            out.writestr(item, data if data is not None else template.read(item.filename))
    return path


def workbook_of(path: Path, sheet: str) -> Path:
    """An XLSX whose one worksheet's content is ``sheet``, zipped by hand."""
    import zipfile

    types = "http://schemas.openxmlformats.org/package/2006/content-types"
    main = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    parts = {
        "[Content_Types].xml": (
            f'<Types xmlns="{types}"><Default Extension="rels" ContentType="application/'
            'vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" '
            'ContentType="application/xml"/><Override PartName="/xl/workbook.xml" '
            f'ContentType="{main}.sheet.main+xml"/><Override PartName="/xl/worksheets/'
            f'sheet1.xml" ContentType="{main}.worksheet+xml"/></Types>'
        ),
        "_rels/.rels": (
            f'<Relationships xmlns="{_RELATIONSHIPS}"><Relationship Id="rId1" Type="'
            f'{_OFFICE_RELATIONSHIPS}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
        ),
        "xl/workbook.xml": (
            f'<workbook xmlns="{_SPREADSHEET}" xmlns:r="{_OFFICE_RELATIONSHIPS}"><sheets>'
            '<sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": (
            f'<Relationships xmlns="{_RELATIONSHIPS}"><Relationship Id="rId1" Type="'
            f'{_OFFICE_RELATIONSHIPS}/worksheet" Target="worksheets/sheet1.xml"/>'
            "</Relationships>"
        ),
        "xl/worksheets/sheet1.xml": f'<worksheet xmlns="{_SPREADSHEET}">{sheet}</worksheet>',
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        for name, xml in parts.items():
            package.writestr(name, '<?xml version="1.0" encoding="UTF-8"?>' + xml)
    return path


def parse_workers() -> set[int]:
    """Process ids of this process's live ``multiprocessing`` children (parse workers)."""
    import multiprocessing

    return {child.pid for child in multiprocessing.active_children() if child.pid is not None}


def wait_until(condition: Callable[[], bool], seconds: float = 20.0) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass; whether it held."""
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _utf8(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under pytest-xdist, reports travel to the controller as UTF-8 (execnet), and a file
    name that is not UTF-8 (kept as lone surrogates, as the hostile-name tests make) in a
    captured log or a failure would stop the run with an internal error: such text is
    escaped (``\\udce9``) in the report, as ``sys.stderr`` would print it."""
    outcome = yield
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    report = outcome.get_result()
    report.sections = [(title, _utf8(text)) for title, text in report.sections]
    if report.longrepr is not None and _utf8(text := str(report.longrepr)) != text:
        report.longrepr = _utf8(text)


_CONFIGURED_LOGGERS = ("", "ragtools", "ragtools.progress", "py.warnings", "faiss")
"""The loggers ``rag``'s ``configure`` sets up for its run (handlers, levels, propagation)."""


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    """A test that runs ``rag`` in this process leaves logging as it found it: the CLI sets
    up handlers for its one run, and a later test of the same process (another file, under
    pytest-xdist) would otherwise see its progress lines printed to stderr."""
    import logging
    import warnings

    saved = [
        (logger, logger.handlers[:], logger.level, logger.propagate)
        for logger in map(logging.getLogger, _CONFIGURED_LOGGERS)
    ]
    showwarning = warnings.showwarning
    yield
    for logger, handlers, level, propagate in saved:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate
    if warnings.showwarning is not showwarning:
        logging.captureWarnings(False)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files holding slow or stress tests run first (each file's tests keep their order):
    with the suite spread over workers file by file, the longest files (a clean clone's
    install, the crash loops) then start at once instead of ending the run alone."""
    long_files = {
        item.path
        for item in items
        if item.get_closest_marker("slow") or item.get_closest_marker("stress")
    }
    items.sort(key=lambda item: item.path not in long_files)
