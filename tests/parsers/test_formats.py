"""Text, Markdown, HTML, Office and record formats, sniffing and the parser registry."""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import pytest

from ragtools import parsers
from ragtools.parsers import Document, ParseError, register_parser
from ragtools.parsers.markdown import first_heading, parse_front_matter
from ragtools.parsers.records import load_records
from ragtools.parsers.registry import resolve, unregister_parser

CHINESE = "中文文本解析测试。这是一个用于检索的段落，包含常见的汉字和标点符号！"


FILE_KEYS = ("path", "file_type", "mtime", "size", "outline", "headings")


def own(doc: Document) -> dict[str, object]:
    """The metadata a parser chose: without the loader's file metadata and the outline,
    after checking that the loader's keys are there (``headings``: the outline's titles)."""
    outline = doc.metadata.get("outline")
    titles = [entry[2] for entry in outline] if isinstance(outline, list) else None
    assert doc.metadata.get("headings") == titles
    path = Path(str(doc.metadata["path"]))
    assert path.is_absolute() and doc.metadata["size"] == path.stat().st_size
    assert isinstance(doc.metadata["file_type"], str) and doc.metadata["mtime"]
    return {k: v for k, v in doc.metadata.items() if k not in FILE_KEYS}


def write(path: Path, data: str | bytes, encoding: str = "utf-8") -> Path:
    path.write_bytes(data if isinstance(data, bytes) else data.encode(encoding))
    return path


# ---- plain text and encodings -----------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "text"),
    [
        ("utf-8", "Grüße aus München — naïve café. " + CHINESE),
        ("utf-8-sig", "BOM first. Ünïcödé."),
        ("utf-16", "UTF-16 with its BOM: 中文 and Ελληνικά."),
        ("utf-16-be", None),
        ("latin-1", "Café crème brûlée à la française, naïve façade, déjà vu."),
        ("gbk", CHINESE),
        ("gbk", "你好，世界"),
    ],
)
def test_text_encodings_are_detected(tmp_path: Path, encoding: str, text: str | None) -> None:
    if text is None:  # UTF-16 BE with an explicit BOM
        text = "Big-endian UTF-16: 日本語。"
        data = b"\xfe\xff" + text.encode("utf-16-be")
    else:
        data = text.encode(encoding)
    (doc,) = parsers.load(write(tmp_path / "a.txt", data))
    assert doc.text == unicodedata.normalize("NFKC", text)  # full-width ！ folds to !


def test_text_is_normalised(tmp_path: Path) -> None:
    raw = "Auﬂage\t\tzwei \ufffd\r\n\r\n\r\n\r\nﬁnal   words\u00a0here\n\n\n"
    (doc,) = parsers.load(write(tmp_path / "n.txt", raw))
    assert doc.text == "Auflage\t\tzwei\n\nfinal   words here"  # layout kept, NFKC applied
    assert own(doc) == {"source": "n.txt"}  # an absolute path as given: its name


def test_source_is_the_path_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "a.txt", "hello")
    monkeypatch.chdir(tmp_path)
    (doc,) = parsers.load("./a.txt")
    assert doc.metadata["source"] == "./a.txt"


@pytest.mark.parametrize(
    "data",
    [
        bytes(range(256)) * 4,
        b"\x00\x01\x02binary\x00\xff\xfe" * 50,
        b"\x1b\x07\x02\x03\x04 ctrl \x05\x06" * 40,
    ],
)
def test_binary_as_text_is_a_parse_error(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(ParseError, match=r"g\.txt: .*(binary|not text)"):
        parsers.load(write(tmp_path / "g.txt", data))


def test_empty_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="empty file"):
        parsers.load(write(tmp_path / "e.txt", b""))
    with pytest.raises(ParseError, match="no such file"):
        parsers.load(tmp_path / "missing.txt")
    with pytest.raises(ParseError, match="is a directory"):
        parsers.load(tmp_path)


def test_whitespace_only_text_gives_no_document(tmp_path: Path) -> None:
    assert parsers.load(write(tmp_path / "w.txt", " \n\t\n ")) == []


# ---- Markdown ---------------------------------------------------------------------------

MARKDOWN = """---
title: "Retrieval notes"
tags: [rag, bm25]
year: 2024
draft: false
authors:
  - Ada
  - Grace
source: should-not-override
---
Intro line.

# First heading

Body text.
"""


def test_markdown_front_matter_and_headings(tmp_path: Path) -> None:
    path = write(tmp_path / "notes.md", MARKDOWN)
    (doc,) = parsers.load(path)
    assert own(doc) == {
        "source": path.name,
        "title": "Retrieval notes",
        "tags": ["rag", "bm25"],
        "year": 2024,
        "draft": False,
        "authors": ["Ada", "Grace"],
    }
    assert doc.text == "Intro line.\n\n# First heading\n\nBody text."


def test_markdown_title_is_the_first_heading(tmp_path: Path) -> None:
    text = "```\n# not a heading\n```\n\nSetext Title\n============\n\n## Later\n"
    (doc,) = parsers.load(write(tmp_path / "h.markdown", text))
    assert doc.metadata["title"] == "Setext Title"
    assert "# not a heading" in doc.text


def test_heading_attribute_lists_stay_out_of_titles_and_heading_paths(tmp_path: Path) -> None:
    """MkDocs sites (FastAPI's docs) write ``## Default values { #default-values }``: the
    anchor is markup for the site, not part of the title a citation shows."""
    text = (
        "# Query Parameters { #query-parameters }\n\nIntro.\n\n"
        '## Default values {#defaults .note data-x="1 2"}\n\nThe limit is 10.\n\n'
        "Use {braces}\n------------\n\nKept as written.\n"
    )
    (doc,) = parsers.load(write(tmp_path / "query.md", text))
    assert doc.metadata["title"] == "Query Parameters"
    assert doc.metadata["headings"] == ["Query Parameters", "Default values", "Use {braces}"]
    assert "{ #query-parameters }" in doc.text  # the text itself is kept as written
    assert first_heading("## Only {#anchor}\n") == "Only"


def test_front_matter_edge_cases() -> None:
    assert parse_front_matter("no front matter\n---\n") == ({}, "no front matter\n---\n")
    meta, body = parse_front_matter("---\nempty:\nlist: []\nurl: http://x.org/a:b\n---\nB")
    assert meta == {"empty": "", "list": [], "url": "http://x.org/a:b"} and body == "B"
    assert first_heading("plain\n\n### Deep ###\n") == "Deep"
    assert first_heading("no heading at all") is None


# ---- HTML -------------------------------------------------------------------------------

HTML = """<!DOCTYPE html>
<html><head><title>The  Page Title</title><style>body {color: red}</style>
<script>var hidden = "SCRIPT TEXT";</script></head>
<body><header>SITE HEADER</header><nav>MENU LINKS</nav>
<h1>Main heading</h1><p>First <b>bold</b> paragraph.</p><!-- a comment -->
<ul><li>item one</li><li>item two</li></ul>
<table><tr><td>cell a</td><td>cell b</td></tr></table>
<script>alert("more script")</script><noscript>NOSCRIPT</noscript>
<footer>FOOTER TEXT</footer></body></html>
"""


def test_html_title_kept_scripts_and_furniture_dropped(tmp_path: Path) -> None:
    path = write(tmp_path / "page.html", HTML)
    (doc,) = parsers.load(path)
    assert own(doc) == {"source": path.name, "title": "The Page Title"}
    assert (
        doc.text
        == "Main heading\n\nFirst bold paragraph.\n\n- item one\n- item two\n\ncell a | cell b"
    )
    for dropped in ["SCRIPT", "script", "MENU", "HEADER", "FOOTER", "comment", "color"]:
        assert dropped not in doc.text


def test_html_declared_charset(tmp_path: Path) -> None:
    markup = '<html><head><meta charset="gbk"></head><body><p>' + CHINESE + "</p></body></html>"
    (doc,) = parsers.load(write(tmp_path / "zh.htm", markup, encoding="gbk"))
    assert doc.text == unicodedata.normalize("NFKC", CHINESE)


# ---- Office -----------------------------------------------------------------------------


def test_docx(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = "Quarterly report"
    document.add_heading("Revenue", level=1)
    document.add_heading("By region", level=2)
    document.add_paragraph("Revenue grew by 12 percent.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Region", "Growth"
    table.cell(1, 0).text, table.cell(1, 1).text = "Europe", "9 %"
    document.add_paragraph("Closing remark.")
    path = tmp_path / "report.docx"
    document.save(str(path))
    (doc,) = parsers.load(path)
    assert own(doc) == {"source": path.name, "title": "Quarterly report"}
    expected = (
        "Revenue\n\nBy region\n\nRevenue grew by 12 percent.\n\nRegion | Growth\nEurope | 9 %"
        "\n\nClosing remark."
    )
    assert doc.text == expected
    (chunk,) = parsers.split([doc])
    assert chunk.metadata["headings"] == ["Revenue", "By region"]


def test_docx_merged_cells_are_read_once_per_row(tmp_path: Path) -> None:
    """A cell spanning columns is one cell of its row; a cell spanning rows is python-docx's
    ``row.cells``: its text in every row it covers."""
    import docx

    document = docx.Document()
    table = document.add_table(rows=2, cols=3)
    wide = table.cell(0, 0).merge(table.cell(0, 1))
    wide.text = "Region"
    tall = table.cell(0, 2).merge(table.cell(1, 2))
    tall.text = "Note"
    table.cell(1, 0).text, table.cell(1, 1).text = "Europe", "9 %"
    path = tmp_path / "merged.docx"
    document.save(str(path))
    (doc,) = parsers.load(path)
    assert doc.text == "Region | Note\nEurope | 9 % | Note"


def test_pptx_one_document_per_slide(tmp_path: Path) -> None:
    import pptx

    deck = pptx.Presentation()
    for title, body in [("Intro", "Why retrieval matters"), ("", ""), ("Results", "nDCG up")]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        if title:
            slide.shapes.title.text = title
            slide.placeholders[1].text = body
    deck.slides[2].notes_slide.notes_text_frame.text = "Speaker notes here"
    path = tmp_path / "talk.pptx"
    deck.save(str(path))
    docs = parsers.load(path)
    assert [d.metadata["page"] for d in docs] == [1, 3]  # the empty slide gives nothing
    assert docs[0].metadata["title"] == "Intro"
    assert docs[0].text == "Intro\n\nWhy retrieval matters"
    assert docs[1].text == "Results\n\nnDCG up\n\nSpeaker notes here"


def test_xlsx_one_document_per_sheet(tmp_path: Path) -> None:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Prices"
    sheet.append(["item", "price"])
    sheet.append(["apple", 1.5])
    sheet.append([None, None])
    workbook.create_sheet("Empty")
    other = workbook.create_sheet("Notes")
    other["B2"] = "remember the milk"
    path = tmp_path / "book.xlsx"
    workbook.save(str(path))
    docs = parsers.load(path)
    assert [d.metadata["sheet"] for d in docs] == ["Prices", "Notes"]
    assert docs[0].text == "item | price\napple | 1.5"
    assert docs[1].text == "remember the milk"


def test_office_without_extra_is_a_parse_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "x.docx", b"PK\x03\x04word/document.xml" + b"\x00" * 30)
    monkeypatch.setitem(sys.modules, "docx", None)
    with pytest.raises(ParseError, match=r"ragtools\[office\]"):
        parsers.load(path)


def test_damaged_docx_is_a_parse_error(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.docx", b"PK\x03\x04word/" + b"\x01" * 100)
    with pytest.raises(ParseError, match=r"bad\.docx: not a readable DOCX"):
        parsers.load(path)


# ---- records ----------------------------------------------------------------------------


def test_csv_rows_are_searchable_by_every_column(tmp_path: Path) -> None:
    text = "id;body;source\n1;The first row has text.;web\n2;;x\n;;\n"
    path = write(tmp_path / "r.csv", text)
    docs = parsers.load(path)
    assert len(docs) == 2  # the row without any cell is skipped
    assert docs[0].text == "id: 1\nbody: The first row has text.\nsource: web"
    assert docs[1].text == "id: 2\nsource: x"  # empty cells leave no line
    assert own(docs[0]) == {
        "source": path.name,
        "row": 1,
        "id": "1",
        "body": "The first row has text.",
        "record_source": "web",
        "title": "The first row has text.",  # the first column that is not numbers
    }
    assert "title" not in docs[1].metadata  # its title cell is empty
    assert [d.text for d in load_records(path, text_field="body")] == [docs[0].metadata["body"]]


@pytest.mark.parametrize(
    ("header", "title"),
    [("code,Name,limit", "Gamma"), ("code,limit,TITLE", "big"), ("code,limit,note", "g-1")],
)
def test_csv_title_column(tmp_path: Path, header: str, title: str) -> None:
    """The title column: one named title or name (any case), else the first that is not
    numbers, else the first."""
    cells = {"code": "g-1", "Name": "Gamma", "limit": "1000", "TITLE": "big", "note": "n"}
    row = ",".join(cells[name] for name in header.split(","))
    path = write(tmp_path / "t.csv", f"{header}\n{row}\n")
    assert parsers.load(path)[0].metadata["title"] == title
    numbers = write(tmp_path / "n.csv", "a,b\n1,2.5\n3,-4\n")
    assert [d.metadata["title"] for d in parsers.load(numbers)] == ["1", "3"]


def test_json_array_and_text_field(tmp_path: Path) -> None:
    records = [
        {"text": "alpha text", "n": 1, "tags": ["a"]},
        {"text": "beta text", "n": 2, "nested": {"k": None}},
        "a bare string record",
    ]
    path = write(tmp_path / "r.json", json.dumps(records))
    docs = parsers.load(path)
    assert [d.text for d in docs] == ["alpha text", "beta text", "a bare string record"]
    assert own(docs[0]) == {"source": path.name, "row": 1, "n": 1, "tags": ["a"]}
    assert docs[1].metadata["nested"] == {"k": None}
    assert len({d.id for d in docs}) == 3


def test_jsonl_first_long_field(tmp_path: Path) -> None:
    lines = [
        {"label": "x", "abstract": "A long abstract about dense retrieval methods."},
        {"label": "y", "abstract": "Another long abstract, about sparse retrieval."},
    ]
    path = write(tmp_path / "r.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
    docs = parsers.load(path)
    assert [d.text for d in docs] == [x["abstract"] for x in lines]
    assert own(docs[1]) == {"source": path.name, "row": 2, "label": "y"}
    chosen = load_records(path, text_field="label")
    assert [d.text for d in chosen] == ["x", "y"]
    with pytest.raises(ParseError, match="'nope' is in no record"):
        load_records(path, text_field="nope")


def test_invalid_jsonl_line_is_named(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.jsonl", '{"text": "ok"}\n{"text": broken}\n')
    with pytest.raises(ParseError, match="line 2"):
        parsers.load(path)


def test_beir_ids_and_titles(tmp_path: Path) -> None:
    lines = [
        {"_id": "doc-7", "title": "A title", "text": "Body one.", "metadata": {}},
        {"_id": "42", "title": "", "text": "Body two."},
    ]
    path = write(tmp_path / "corpus.jsonl", "\n".join(json.dumps(x) for x in lines))
    docs = parsers.load(path)
    assert [d.id for d in docs] == ["doc-7", "42"]
    assert docs[0].text == "A title\n\nBody one." and docs[0].metadata["title"] == "A title"
    assert docs[1].text == "Body two." and "title" not in docs[1].metadata


def test_beir_duplicate_id_is_an_error(tmp_path: Path) -> None:
    lines = [{"_id": "1", "text": "a"}, {"_id": "1", "text": "b"}]
    path = write(tmp_path / "corpus.jsonl", "\n".join(json.dumps(x) for x in lines))
    with pytest.raises(ParseError, match="duplicate _id '1'"):
        parsers.load(path)


def test_scifact_corpus(scifact_dir: Path) -> None:
    path = scifact_dir / "corpus.jsonl"
    docs = parsers.load(path)
    assert len(docs) == 5183
    with open(path, encoding="utf-8") as handle:
        raw = [json.loads(line) for line in handle]
    assert [d.id for d in docs] == [r["_id"] for r in raw]
    assert docs[0].metadata["title"] == raw[0]["title"].strip()
    assert docs[0].text.startswith(raw[0]["title"].strip() + "\n\n")


# ---- sniffing and the registry ----------------------------------------------------------


def test_pdf_saved_as_txt_and_without_suffix(pdf_dir: Path, tmp_path: Path) -> None:
    data = (pdf_dir / "google-doc-document.pdf").read_bytes()
    for name in ["looks-like.txt", "no_suffix"]:
        docs = parsers.load(write(tmp_path / name, data))
        assert docs[0].metadata["page"] == 1
        assert "Beautiful is better than ugly." in docs[0].text


def test_content_sniffing_without_suffix(tmp_path: Path) -> None:
    (doc,) = parsers.load(write(tmp_path / "page", HTML))
    assert doc.metadata["title"] == "The Page Title"
    docs = parsers.load(write(tmp_path / "data", json.dumps([{"text": "json record"}])))
    assert docs[0].text == "json record" and docs[0].metadata["row"] == 1
    (doc,) = parsers.load(write(tmp_path / "README", "just text"))
    assert doc.text == "just text"
    (doc,) = parsers.load(write(tmp_path / "page.txt", HTML))  # HTML saved as .txt
    assert "SCRIPT" not in doc.text


def test_broken_json_stays_a_json_error(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="invalid JSON"):
        parsers.load(write(tmp_path / "x.json", "this is not json"))


def test_unknown_binary_is_unsupported(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match=r"unsupported file type: image \(png\): not text"):
        parsers.load(write(tmp_path / "x.bin", b"\x89PNG\r\n\x1a\n\x00\x00\x00"))
    with pytest.raises(ParseError, match=r"binary file of unknown type \(\.dat\)"):
        parsers.load(write(tmp_path / "x.dat", b"\x00\x01\x02 proprietary\x00"))


def test_register_parser_by_suffix_and_sniff(tmp_path: Path) -> None:
    calls: list[str] = []

    @register_parser(".rec", sniff=lambda head: head.startswith(b"REC1"), name="test.rec")
    def parse_rec(path: Path, *, source: str, password: str | None = None) -> list[Document]:
        calls.append(source)
        lines = path.read_text().splitlines()[1:]
        return [
            Document(text=line, metadata={"source": source, "n": i}) for i, line in enumerate(lines)
        ]

    try:
        by_suffix = write(tmp_path / "a.rec", "REC1\nfirst\nsecond")
        docs = parsers.load(by_suffix)
        assert [d.text for d in docs] == ["first", "second"]
        assert own(docs[1]) == {"source": by_suffix.name, "n": 1}
        by_content = write(tmp_path / "b.dat", "REC1\nthird")
        assert [d.text for d in parsers.load(by_content)] == ["third"]
        assert calls == [str(by_suffix), str(by_content)]
    finally:
        unregister_parser("test.rec")


def test_registered_parser_failures_are_wrapped(tmp_path: Path) -> None:
    @register_parser(".boom", name="test.boom")
    def parse_boom(path: Path, *, source: str, password: str | None = None) -> list[Document]:
        raise KeyError("internal")

    @register_parser(".nosrc", name="test.nosrc")
    def parse_nosrc(path: Path, *, source: str, password: str | None = None) -> list[Document]:
        return [Document(text="no source given")]

    try:
        with pytest.raises(ParseError, match=r"test.boom parser failed \(KeyError"):
            parsers.load(write(tmp_path / "x.boom", "data"))
        (doc,) = parsers.load(write(tmp_path / "y.nosrc", "data"))
        assert doc.metadata["source"] == "y.nosrc"
        assert doc.metadata["file_type"] == "nosrc"
        assert doc.id == Document(text="no source given", metadata=doc.metadata).id
    finally:
        unregister_parser("test.boom")
        unregister_parser("test.nosrc")


def test_register_parser_rejects_bad_suffixes() -> None:
    with pytest.raises(parsers.ConfigError, match="'md'"):
        register_parser("md")
    with pytest.raises(parsers.ConfigError, match="at least one suffix"):
        register_parser()


def test_resolve_prefers_sniffed_magic(pdf_dir: Path) -> None:
    head = (pdf_dir / "multilang.pdf").read_bytes()[:4096]
    spec = resolve(Path("x.html"), head)
    assert spec is not None and spec.name == "pdf"


# ---- SVG, notebooks, configuration files (the document policy of parsers.policy) -------

DRAWIO_SVG = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">
<svg xmlns="http://www.w3.org/2000/svg" width="200" height="80">
  <title>Request flow</title>
  <desc>How a request &amp; its response travel</desc>
  <defs><style>.edge { stroke: #000; }</style></defs>
  <g><path d="M 10 20 L 30 40 C 50 60 70 80 90 100" fill="none"/>
    <switch>
      <foreignObject width="80" height="20"><div xmlns="http://www.w3.org/1999/xhtml">
        <div>Client</div></div></foreignObject>
      <text x="40" y="14">Client</text>
    </switch>
    <g><title>tooltip: the server</title></g>
    <text x="1" y="2"><tspan>Path</tspan><tspan>operation</tspan></text>
  </g>
</svg>
"""


def test_svg_gives_its_words_never_its_markup(tmp_path: Path) -> None:
    path = write(tmp_path / "flow.svg", DRAWIO_SVG)
    (doc,) = parsers.load(path)
    assert doc.text == (
        "Request flow\nHow a request & its response travel\nClient\n"
        "tooltip: the server\nPath operation"
    )  # the foreignObject copy of "Client" is not counted twice; tspans stay apart
    assert doc.metadata["title"] == "Request flow"  # the root's title, not the group's
    assert doc.metadata["file_type"] == "svg"


@pytest.mark.parametrize(
    ("markup", "words"),
    [
        (
            '<svg:svg xmlns:svg="http://www.w3.org/2000/svg"><svg:text>Prefixed</svg:text></svg:svg>',
            "Prefixed",
        ),
        ("\ufeff<!-- by hand -->\n<svg><text>Unclosed <tspan>at the end", "Unclosed at the end"),
        ('<svg viewBox="0 0 1 1"><text>Stray &amp; end</b></text></svg>', "Stray & end"),
    ],
)
def test_svg_words_from_odd_markup_and_without_a_suffix(
    tmp_path: Path, markup: str, words: str
) -> None:
    assert [d.text for d in parsers.load(write(tmp_path / "d.svg", markup))] == [words]
    assert [d.text for d in parsers.load(write(tmp_path / "drawing", markup))] == [words]


def test_svg_without_words_gives_no_document(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path / "shapes.svg", '<svg><path d="M0 0 L 1 1"/><text> </text></svg>')
    assert parsers.load(path) == []
    assert "shapes.svg: SVG without <title>, <desc> or <text>" in caplog.text


def notebook(cells: list[dict[str, object]], **extra: object) -> str:
    meta = {"language_info": {"name": "python"}, "kernelspec": {"language": "python"}}
    return json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, **extra})


def test_notebook_markdown_and_code_cells_without_outputs(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "markdown", "source": ["# Training a model\n", "\n", "Load the data."]},
        {
            "cell_type": "code",
            "execution_count": 3,
            "source": "# not a heading\nmodel.fit(x, y)",
            "outputs": [
                {"output_type": "stream", "text": ["Epoch 1/10 loss 0.93\n"]},
                {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo" * 50}},
            ],
        },
        {"cell_type": "raw", "source": "\\LaTeX only"},
        {"cell_type": "code", "source": [], "outputs": []},
        {"cell_type": "markdown", "source": "## Results\nAccuracy is fine."},
    ]
    (doc,) = parsers.load(write(tmp_path / "train.ipynb", notebook(cells)))
    assert doc.text == (
        "# Training a model\n\nLoad the data.\n\n```python\n# not a heading\nmodel.fit(x, y)\n```"
        "\n\n## Results\nAccuracy is fine."
    )
    assert doc.metadata["title"] == "Training a model"
    assert doc.metadata["headings"] == ["Training a model", "Results"]
    assert doc.metadata["file_type"] == "ipynb"
    chunks = parsers.split([doc], chunk_size=60, chunk_overlap=0)
    assert chunks[-1].metadata["headings"] == ["Training a model", "Results"]


def test_notebook_format_3_and_errors(tmp_path: Path) -> None:
    old = {"worksheets": [{"cells": [{"cell_type": "code", "input": ["print(1)"]}]}]}
    (doc,) = parsers.load(write(tmp_path / "old.ipynb", json.dumps(old)))
    assert doc.text == "```\nprint(1)\n```"
    with pytest.raises(ParseError, match=r"bad\.ipynb: invalid notebook JSON"):
        parsers.load(write(tmp_path / "bad.ipynb", '{"cells": ['))
    with pytest.raises(ParseError, match=r"other\.ipynb: not a Jupyter notebook: no 'cells'"):
        parsers.load(write(tmp_path / "other.ipynb", '{"text": "a record"}'))
    with pytest.raises(ParseError, match="the JSON is a list"):
        parsers.load(write(tmp_path / "list.ipynb", "[1, 2]"))


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("pyproject.toml", '[project]\nname = "demo"\n\n[[tool.mypy.overrides]]\nmodule = "x"\n'),
        ("setup.cfg", "[metadata]\nname = demo\n[options]\nzip_safe = False\n"),
        ("tox.ini", "[tox]\nenvlist = py311\n"),
        ("nginx.conf", "[server]\nlisten 80;\n"),
        ("settings", "[section]\nkey = value\n"),  # no suffix: by content
        ("cargo-workspace", "[[package]]\nname = 'a'\n"),
    ],
)
def test_configuration_files_are_text_not_json(tmp_path: Path, name: str, content: str) -> None:
    (doc,) = parsers.load(write(tmp_path / name, content))
    assert doc.text == content.strip()
    suffix = Path(name).suffix[1:]
    assert doc.metadata["file_type"] == (suffix or "txt")


@pytest.mark.parametrize(
    "content",
    ["[1, 2, 3]", '[\n  {"text": "a record"}\n]', "[[1], [2]]", '{"text": "x"}', "{}", "[true]"],
)
def test_json_without_a_suffix_is_still_json(tmp_path: Path, content: str) -> None:
    spec = resolve(tmp_path / "data", content.encode())
    assert spec is not None and spec.name == "json"


def test_rst_title_is_its_first_section_title(tmp_path: Path) -> None:
    text = "==========\nQuickstart\n==========\n\nIntro.\n\nInstall\n-------\n\npip install x\n"
    (doc,) = parsers.load(write(tmp_path / "quickstart.rst", text))
    assert doc.metadata["title"] == "Quickstart"
    assert doc.metadata["headings"] == ["Quickstart", "Install"]
