"""Which main-content extractor keeps an HTML page's headings and code and drops its furniture.

    python eval/compare_html_extractors.py [PAGE.html ...]

Without arguments it reads the real mdBook chapters of the Rust book and the texinfo pages
of libffi's manual where a Rust toolchain and libffi's documentation are installed (their
usual places below), else give pages as arguments. For each page and each extractor
(trafilatura, readability-lxml, jusText, inscriptis as they come; readability-lxml again
given the page as this package prepares it; this package's parser) it prints:

* ``furniture``: site furniture lines found in the output (mdBook's keyboard help and theme
  menu, texinfo's "Next: ... Up: ..." navigation line); lower is better;
* ``headings``: share of the page's ``<h1>``-``<h6>`` inside its main content that appear
  in the output;
* ``code``: share of its ``<pre>`` blocks that appear in the output byte for byte
  (indentation and blank lines kept).

jusText and inscriptis give plain text; readability-lxml gives the main HTML, rendered here
with beautifulsoup4's ``get_text`` so ``<pre>`` whitespace survives. Install the three
compared libraries first, one ``pip install readability-lxml justext inscriptis`` (they are
in no extra: resolved in one go with the package, pip's resolver stops on their two
spellings of lxml's ``html-clean`` extra).
"""

from __future__ import annotations

import argparse
import glob
import re
import statistics
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

from bs4 import BeautifulSoup

from ragtools.parsers.html import html_to_text

RUST_BOOK = "~/.rustup/toolchains/*/share/doc/rust/html/book/ch0[3-6]-0[1-3]-*.html"
LIBFFI = "/usr/share/doc/libffi*/html/*.html"
FURNITURE = re.compile(
    r"Press ← or →|Keyboard shortcuts|\bAyu\b|\bNavy\b|\bCoal\b|"
    r"(?:Next|Previous|Up): .*(?:Up:|\[Index\])"
)


def _trafilatura(markup: str) -> str:
    import trafilatura

    return trafilatura.extract(markup, include_formatting=True, favor_recall=True) or ""


def _readability(markup: str) -> str:
    from readability import Document

    summary = Document(markup).summary(html_partial=True)
    return BeautifulSoup(summary, "html.parser").get_text()


def _readability_prepared(markup: str) -> str:
    """readability-lxml given the page as ragtools prepares it for trafilatura, with the
    texinfo navigation filter applied to its output: the fair comparison."""
    from ragtools.parsers._html_content import _prepared, drop_navigation

    return drop_navigation(_readability(_prepared(markup)))


def _justext(markup: str) -> str:
    import justext

    paragraphs = justext.justext(markup.encode("utf-8"), justext.get_stoplist("English"))
    return "\n\n".join(p.text for p in paragraphs if not p.is_boilerplate)


def _inscriptis(markup: str) -> str:
    import inscriptis

    return str(inscriptis.get_text(markup))


def _ragtools(markup: str) -> str:
    return html_to_text(markup)[0]


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "trafilatura": _trafilatura,
    "readability-lxml": _readability,
    "readability-lxml (ragtools' preparation)": _readability_prepared,
    "justext": _justext,
    "inscriptis": _inscriptis,
    "ragtools (trafilatura XML)": _ragtools,
}


def _truth(markup: str) -> tuple[list[str], list[str]]:
    """Headings and code blocks of the page's main content (``<main>``, else the body
    without navigation)."""
    soup = BeautifulSoup(markup, "html.parser")
    for furniture in soup.select("nav, .header, .nav-panel, #help-container, #menu-bar"):
        furniture.decompose()
    main = soup.find("main") or soup.body or soup
    headings = [" ".join(h.get_text(" ").split()) for h in main.find_all(re.compile("^h[1-6]$"))]
    code = [pre.get_text().strip("\n") for pre in main.find_all("pre")]
    return [h for h in headings if h], [c for c in code if c.strip()]


def _scores(output: str, headings: list[str], code: list[str]) -> tuple[int, float, float]:
    # compared after NFKC, which the package applies to all text ("…" is "...")
    output = unicodedata.normalize("NFKC", output)
    headings = [unicodedata.normalize("NFKC", h) for h in headings]
    code = [unicodedata.normalize("NFKC", c) for c in code]
    flat = " ".join(output.split())
    kept_headings = sum(" ".join(h.split()) in flat for h in headings)
    kept_code = sum(block in output for block in code)
    return (
        len(FURNITURE.findall(output)),
        kept_headings / len(headings) if headings else 1.0,
        kept_code / len(code) if code else 1.0,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", type=Path)
    args = parser.parse_args(argv)
    pages = args.pages or [
        Path(p)
        for pattern in (RUST_BOOK, LIBFFI)
        for p in sorted(glob.glob(str(Path(pattern).expanduser())))
    ]
    if not pages:
        print("no pages: give HTML files as arguments", file=sys.stderr)
        return 2
    results: dict[str, list[tuple[int, float, float]]] = {name: [] for name in EXTRACTORS}
    for page in pages:
        markup = page.read_text(encoding="utf-8", errors="replace")
        headings, code = _truth(markup)
        for name, extract in EXTRACTORS.items():
            try:
                results[name].append(_scores(extract(markup), headings, code))
            except ImportError as exc:
                print(f"{name}: not installed ({exc}); pip install 'ragtools[eval]'")
                results[name] = []
                break
    print(f"{len(pages)} pages")
    print("| extractor | furniture lines (total) | headings kept | code blocks kept |")
    print("|---|---:|---:|---:|")
    for name, rows in results.items():
        if rows:
            furniture = sum(r[0] for r in rows)
            headings_kept = statistics.mean(r[1] for r in rows)
            code_kept = statistics.mean(r[2] for r in rows)
            print(f"| {name} | {furniture} | {headings_kept:.3f} | {code_kept:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
