"""Stored text says what the document says: layout kept, PDF line-break hyphens joined,
HTML site furniture dropped, headings as chunk metadata (issue 18)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtools import parsers
from ragtools.parsers import Document
from ragtools.parsers.dehyphenate import dehyphenate
from ragtools.parsers.outline import heading_path, markdown_outline, section_bounds
from ragtools.parsers.pdf import extract_pages

CODE = """```python
def search(index, query):
    hits = index.search(query)
    for hit in hits:
        if hit.score > 0:
            print(hit.chunk.text)
```"""

MARKDOWN = f"""# Guide

Intro to the guide.

## Install

### From source

Clone the repository, then run:

{CODE}

    indented code block
        keeps its indentation

## Use

Search with `rag search`.
"""


def test_markdown_code_block_kept_exactly_with_heading_path(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(MARKDOWN, encoding="utf-8")
    documents = parsers.load(path)
    assert documents[0].metadata["headings"] == ["Guide", "Install", "From source", "Use"]
    chunks = parsers.split(documents, chunk_size=400, chunk_overlap=0)
    with_code = [c for c in chunks if "def search" in c.text]
    assert len(with_code) == 1
    assert CODE in with_code[0].text
    assert "    indented code block\n        keeps its indentation" in with_code[0].text
    assert with_code[0].metadata["headings"] == ["Guide", "Install", "From source"]
    assert [c.metadata["headings"] for c in chunks] == [
        ["Guide"],
        ["Guide", "Install", "From source"],  # "## Install" alone joins its first subsection
        ["Guide", "Use"],
    ]
    for chunk in chunks:
        assert documents[0].text[chunk.start : chunk.end] == chunk.text
        assert "outline" not in chunk.metadata
        assert chunk.metadata["file_type"] == "md"
        assert chunk.metadata["size"] == path.stat().st_size
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(chunk.metadata["mtime"]))


def test_outline_helpers() -> None:
    text = "Title\n=====\n\nBody.\n\n```\n# not a heading\n```\n\nSub\n---\n\nMore."
    outline = markdown_outline(text)
    assert outline == [[0, 1, "Title"], [text.index("Sub"), 2, "Sub"]]
    assert heading_path(outline, len(text) - 1) == ["Title", "Sub"]
    assert section_bounds(text, outline) == [(0, text.index("Sub")), (text.index("Sub"), len(text))]


PDF_BREAK = re.compile(r"\w-\n\w|\w- \w")
#: Hyphenated compounds of the two papers that a wrapped line must not lose.
COMPOUNDS = {
    "tracemonkey.pdf": [
        "Trace-based",
        "Just-in-Time",
        "floating-point",
        "stop-the-world",
        "type-unstable",
        "register-carried",
        "math-spectral-norm",
        "interpreter-to-trace",
        "IEEE-754",
    ],
    "multicolumn.pdf": ["Two-Column"],
}


@pytest.mark.parametrize("name", sorted(COMPOUNDS))
def test_pdf_line_break_hyphens_joined_compounds_kept(pdf_dir: Path, name: str) -> None:
    path = pdf_dir / name
    before = sum(len(PDF_BREAK.findall(d.text)) for d in extract_pages(path, name, None).documents)
    documents = parsers.load(path)
    after = sum(len(PDF_BREAK.findall(d.text)) for d in documents)
    assert before >= 20  # the papers are justified: many words wrap
    assert after <= before / 10
    text = "\n".join(d.text for d in documents)
    for compound in COMPOUNDS[name]:
        assert compound in text
    if name == "tracemonkey.pdf":  # the words the issue saw split in search output
        for word in ("Collaboration", "Interestingly"):
            assert word in text


def test_dehyphenate_rules() -> None:
    pages = [
        "a se-\nquence, the state-of-\nthe-art and Hewlett-\nPackard; GPT-\n4 wins.",
        "Another sequence. A well-known fact: well-\nknown.",
    ]
    assert dehyphenate(pages) == [
        "a sequence,\nthe state-of-the-art\nand Hewlett-Packard;\nGPT-4\nwins.",
        "Another sequence. A well-known fact: well-known.",
    ]


MDBOOK = """<!DOCTYPE HTML>
<html lang="en" class="light sidebar-visible" dir="ltr">
<head>
<meta charset="UTF-8">
<title>Control Flow - The Example Book</title>
<link rel="stylesheet" href="css/chrome.css">
<script src="toc.js"></script>
</head>
<body>
<div id="body-container">
  <div id="help-container">
    <div id="help-popup">
      <h2 class="help-title">Keyboard shortcuts</h2>
      <div>
        <p>Press <kbd>←</kbd> or <kbd>→</kbd> to navigate between chapters</p>
        <p>Press <kbd>S</kbd> or <kbd>/</kbd> to search in the book</p>
        <p>Press <kbd>?</kbd> to show this help</p>
        <p>Press <kbd>Esc</kbd> to hide this help</p>
      </div>
    </div>
  </div>
  <nav id="sidebar" class="sidebar" aria-label="Table of contents">
    <div class="sidebar-scrollbox">
      <ol class="chapter">
        <li class="chapter-item"><a href="intro.html"><strong>1.</strong> Introduction</a></li>
        <li class="chapter-item"><a href="install.html"><strong>2.</strong> Installation</a></li>
        <li class="chapter-item"><a href="variables.html"><strong>3.</strong> Variables</a></li>
        <li class="chapter-item"><a href="control-flow.html" class="active">
          <strong>4.</strong> Control Flow</a></li>
        <li class="chapter-item"><a href="ownership.html"><strong>5.</strong> Ownership</a></li>
      </ol>
    </div>
  </nav>
  <div id="page-wrapper" class="page-wrapper">
    <div class="page">
      <div id="menu-bar" class="menu-bar sticky">
        <div class="left-buttons">
          <button id="theme-toggle" class="icon-button" type="button" title="Change theme">
            <i class="fa fa-paint-brush"></i></button>
          <ul id="theme-list" class="theme-popup" aria-label="Themes" role="menu">
            <li role="none"><button role="menuitem" class="theme" id="light">Light</button></li>
            <li role="none"><button role="menuitem" class="theme" id="rust">Rust</button></li>
            <li role="none"><button role="menuitem" class="theme" id="coal">Coal</button></li>
            <li role="none"><button role="menuitem" class="theme" id="navy">Navy</button></li>
            <li role="none"><button role="menuitem" class="theme" id="ayu">Ayu</button></li>
          </ul>
        </div>
        <h1 class="menu-title">The Example Book</h1>
        <div class="right-buttons"><a href="print.html" title="Print this book">Print</a></div>
      </div>
      <div id="content" class="content">
        <main>
<h1 id="control-flow"><a class="header" href="#control-flow">Control Flow</a></h1>
<p>Deciding whether or not to run some code depending on whether a condition is true is a
basic building block of every programming language. The most common constructs that let
you control the flow of execution are conditional expressions and loops.</p>
<h2 id="if-expressions"><a class="header" href="#if-expressions">Conditional expressions</a></h2>
<p>A conditional expression lets you branch your code depending on a condition. Create a
new project called <em>branches</em> and put the following in its main file:</p>
<pre><code class="language-rust">fn main() {
    let number = 3;

    if number &lt; 5 {
        println!("condition was true");
    } else {
        println!("condition was false");
    }
}
</code></pre>
<figure class="listing" id="listing-4-1">
<span class="file-name">Filename: src/main.rs</span>
<pre><code class="language-rust">fn main() {
    let condition = true;
    let number = if condition { 5 } else { 6 };
}</code></pre>
<figcaption>Listing 4-1: Assigning the result of an expression</figcaption>
</figure>
<p>All conditional expressions start with the keyword, followed by a condition. The block
of code to run when the condition holds comes right after it, in curly brackets.</p>
        </main>
        <nav class="nav-wrapper" aria-label="Page navigation">
          <a rel="prev" href="variables.html" class="mobile-nav-chapters previous">Previous</a>
          <a rel="next" href="ownership.html" class="mobile-nav-chapters next">Next</a>
        </nav>
      </div>
    </div>
  </div>
</div>
<script src="book.js"></script>
</body>
</html>
"""

FURNITURE = ["Press", "Keyboard shortcuts", "Ayu", "Navy", "Coal", "Installation", "Ownership"]


def test_mdbook_page_first_chunk_is_the_chapter(tmp_path: Path) -> None:
    path = tmp_path / "control-flow.html"
    path.write_text(MDBOOK, encoding="utf-8")
    (document,) = parsers.load(path)
    chunks = parsers.split([document], chunk_size=500, chunk_overlap=0)
    assert chunks[0].text.startswith("Control Flow\n\nDeciding whether or not to run some code")
    for word in FURNITURE:
        assert word not in document.text
    code = "fn main() {\n    let number = 3;\n\n    if number < 5 {\n        println!"
    assert code in document.text
    assert any(code in chunk.text for chunk in chunks)
    listing = "fn main() {\n    let condition = true;\n    let number = if condition"
    assert listing in document.text  # a listing in a <figure> is kept
    assert chunks[-1].metadata["headings"] == ["Control Flow", "Conditional expressions"]
    assert document.metadata["title"] == "Control Flow - The Example Book"


TEXINFO = """<!DOCTYPE html>
<html>
<head><title>The Basics (libexample)</title>
<meta name="Generator" content="makeinfo"></head>
<body lang="en">
<div class="section" id="The-Basics">
<div class="header">
<p>
Next: <a href="Simple-Example.html" accesskey="n" rel="next">Simple Example</a>, Previous:
<a href="Intro.html" accesskey="p" rel="prev">Intro</a>, Up: <a href="Using.html"
accesskey="u" rel="up">Using libexample</a> &nbsp; [<a href="Index.html" title="Index"
rel="index">Index</a>]</p>
</div>
<hr>
<h3 class="section">2.1 The Basics</h3>
<p>The library assumes that you have a pointer to the function you wish to call and that
you know the number and types of arguments to pass it.</p>
<p>The first thing you must do is create an interface object that matches the signature
of the function you wish to call.</p>
<div class="example">
<pre class="example">ffi_cif cif;
if (ffi_prep_cif (&amp;cif, abi, 0, type, NULL) == FFI_OK)
  {
    size_t size = type-&gt;size;
  }
</pre></div>
<hr>
<div class="header">
<p>
Next: <a href="Simple-Example.html" accesskey="n" rel="next">Simple Example</a>, Up:
<a href="Using.html" accesskey="u" rel="up">Using libexample</a> &nbsp; [<a
href="Index.html" title="Index" rel="index">Index</a>]</p>
</div>
</div>
</body>
</html>
"""


def test_texinfo_page_loses_its_navigation_lines(tmp_path: Path) -> None:
    path = tmp_path / "The-Basics.html"
    path.write_text(TEXINFO, encoding="utf-8")
    (document,) = parsers.load(path)
    for furniture in ("Next:", "Previous:", "Up:", "[Index]"):
        assert furniture not in document.text
    assert document.text.startswith("2.1 The Basics\n\nThe library assumes")
    example = "if (ffi_prep_cif (&cif, abi, 0, type, NULL) == FFI_OK)\n  {\n    size_t size"
    assert example in document.text  # a bare <pre> keeps its layout
    (chunk,) = parsers.split([document])
    assert chunk.metadata["headings"] == ["2.1 The Basics"]


def test_blank_between_inline_elements_is_kept(tmp_path: Path) -> None:
    """trafilatura drops a blank tail after an inline element; words must not fuse."""
    path = tmp_path / "deftypefn.html"
    path.write_text(
        "<html><body><h2>Calls</h2><p>The library assumes that you know the number and types "
        "of the arguments of the function you wish to call.</p><dl><dt><span>Function: </span>"
        "<code>ffi_status</code> <strong>ffi_prep_cif</strong> <code>(ffi_cif *<var>cif</var>, "
        "ffi_abi <var>abi</var>)</code></dt><dd><p>Prepare a call with <em>emphasis</em> "
        "<strong>bold</strong>\n<i>italic</i> words.</p></dd></dl>"
        "<pre><b>int</b> <i>x</i>;</pre></body></html>",
        encoding="utf-8",
    )
    (document,) = parsers.load(path)
    assert "ffi_status ffi_prep_cif (ffi_cif *cif, ffi_abi abi)" in document.text
    assert "Prepare a call with emphasis bold italic words." in document.text
    assert "int x;" in document.text  # inside <pre> nothing moves


RST = """=====
Guide
=====

Intro to the guide.

Install
-------

From source
~~~~~~~~~~~

Clone it, then::

    pip install .
        --no-deps

Use
---

Search with rag.
"""


def test_rst_sections_give_heading_paths_and_code_layout(tmp_path: Path) -> None:
    path = tmp_path / "guide.rst"
    path.write_text(RST, encoding="utf-8")
    documents = parsers.load(path)
    assert documents[0].metadata["file_type"] == "rst"
    chunks = parsers.split(documents, chunk_size=300, chunk_overlap=0)
    code = [c for c in chunks if "pip install" in c.text]
    assert len(code) == 1 and "    pip install .\n        --no-deps" in code[0].text
    assert code[0].metadata["headings"] == ["Guide", "Install", "From source"]
    assert chunks[-1].metadata["headings"] == ["Guide", "Use"]


_LINES = st.lists(
    st.one_of(
        st.sampled_from(["# A", "## B", "### C", "", "```", "    code", "Title", "====="]),
        st.text(alphabet="ab \t.", max_size=30),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=_LINES, size=st.integers(2, 80))
def test_sections_keep_offsets_and_never_straddle(lines: list[str], size: int) -> None:
    from ragtools.parsers.normalize import normalize_text

    text = normalize_text("\n".join(lines))
    outline = markdown_outline(text)
    document = Document(text=text, metadata={"outline": outline})
    chunks = parsers.split([document], chunk_size=size, chunk_overlap=size // 3)
    bounds = section_bounds(text, outline)
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert any(start <= chunk.start and chunk.end <= end for start, end in bounds)
        assert chunk.metadata["headings"] == heading_path(outline, chunk.end - 1)
        assert "outline" not in chunk.metadata
    covered = set().union(*(range(c.start, c.end) for c in chunks)) if chunks else set()
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())
