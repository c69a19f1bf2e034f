"""The real ``rag`` console script, run in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragtools.indexes.index import Index
from ragtools.indexes.keyword.bm25 import BM25Index
from ragtools.indexes.testing import live_segment
from ragtools.parsers import Chunk

RAG = Path(sys.executable).with_name("rag")


def rag(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        [str(RAG), *args], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"rag {args} failed ({proc.returncode}): {proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    (root / "bees.txt").write_text(
        "Honey bees communicate the direction of flowers with a waggle dance.", encoding="utf-8"
    )
    (root / "tides.md").write_text(
        "# Tides\n\nThe moon's gravity raises tides in the oceans twice a day.", encoding="utf-8"
    )
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n% nothing else\n")
    return root


@pytest.fixture(scope="module")
def keyword_index(docs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kw") / "index"
    proc = rag("build", str(docs), "--out", str(out), "--no-vector")
    assert "2 chunks from 3 files (0 skipped, 1 failed)" in proc.stdout
    assert "broken.pdf" in proc.stderr
    return out


def test_keyword_search_json(keyword_index: Path) -> None:
    proc = rag("search", str(keyword_index), "why do tides happen", "--mode", "keyword", "--json")
    hits = json.loads(proc.stdout)
    assert hits[0]["chunk"]["metadata"]["source"].endswith("tides.md")
    assert hits[0]["rank"] == 1 and "bm25" in hits[0]["scores"]


def test_search_with_filter_and_text_output(keyword_index: Path) -> None:
    spec = json.dumps({"source": {"$nin": [str(Path("x"))]}})
    proc = rag("search", str(keyword_index), "bees dance", "--mode", "keyword", "--filter", spec)
    assert "bees.txt" in proc.stdout.splitlines()[0]


def test_hybrid_on_a_keyword_only_index_says_so(keyword_index: Path) -> None:
    """By default a search uses the halves the index has, quietly; asked for hybrid, a
    keyword-only index answers by keyword and says so (#36: it fell back silently)."""
    proc = rag("search", str(keyword_index), "moon gravity", "--json")
    assert json.loads(proc.stdout)[0]["chunk"]["metadata"]["source"].endswith("tides.md")
    assert proc.stderr == ""
    asked = rag("search", str(keyword_index), "moon gravity", "--json", "--mode", "hybrid")
    assert json.loads(asked.stdout)[0]["chunk"] == json.loads(proc.stdout)[0]["chunk"]
    assert asked.stderr.splitlines() == [
        f"WARNING ragtools.retrieval.hybrid: hybrid search on {keyword_index} is keyword search "
        "only: the index has no vector half (built with --no-vector)"
    ]


def test_plain_search_output_shows_the_heading_path(real_index: Path) -> None:
    """#36: only the retriever tool's citations had it."""
    proc = rag("search", str(real_index), "axolotl", "--mode", "keyword", "-k", "1")
    assert proc.stdout.splitlines()[0].endswith("  docs/quickstart.rst › Quickstart")


def test_info(keyword_index: Path) -> None:
    info = json.loads(rag("info", str(keyword_index), "--json").stdout)
    assert info["counts"]["chunks"] == 2
    assert info["format"] == "ragtools-version"
    assert info["counts"]["segments"] == 1 and info["counts"]["deleted_rows"] == 0
    assert info["settings"]["vector"] is False
    assert info["settings"]["bm25"] == {}  # the defaults, which info spells out:
    assert info["bm25"] == BM25Index().params


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("search", "/no/such/index", "q"), "/no/such/index"),
        (("info", "/no/such/index"), "/no/such/index"),
        (("build", "/no/such/docs", "--out", "/tmp/never-built"), "/no/such/docs"),
        (("build", "/no/such/docs"), "rag build needs --out INDEX"),
        (("build", "/no/such/docs", "--dry-run"), "/no/such/docs"),
    ],
)
def test_errors_are_one_line_and_exit_2(args: tuple[str, ...], needle: str) -> None:
    proc = rag(*args, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("rag: error:")


def test_messages_name_flags_not_python_arguments(pdf_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "locked.pdf").write_bytes((pdf_dir / "libreoffice-writer-password.pdf").read_bytes())
    (folder / "notes.txt").write_text("Notes on encrypted papers.", encoding="utf-8")
    proc = rag("build", str(folder), "--out", str(tmp_path / "index"), "--no-vector")
    failed = [line for line in proc.stderr.splitlines() if "locked.pdf" in line]
    assert len(failed) == 1 and "pass --password PASSWORD" in failed[0], proc.stderr
    assert "password=" not in proc.stderr


def test_bad_filter_and_bad_option(keyword_index: Path) -> None:
    proc = rag("search", str(keyword_index), "q", "--filter", "{nope", check=False)
    assert proc.returncode == 2 and "--filter is not valid JSON" in proc.stderr
    proc = rag("search", str(keyword_index), "q", "--filter", '{"page": {"$near": 1}}', check=False)
    assert proc.returncode == 2 and "$near" in proc.stderr
    proc = rag("search", str(keyword_index), "q", "--mode", "psychic", check=False)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_verbose_adds_a_traceback() -> None:
    proc = rag("--verbose", "info", "/no/such/index", check=False)
    assert proc.returncode == 2 and "Traceback" in proc.stderr


def test_damaged_index_is_reported(keyword_index: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(keyword_index, copy)
    store = live_segment(copy) / "chunks.jsonl"
    store.write_text(store.read_text() + "tampered\n")
    proc = rag("search", str(copy), "bees", "--mode", "keyword", check=False)
    assert proc.returncode == 2 and "chunks.jsonl" in proc.stderr and "checksum" in proc.stderr


@pytest.mark.slow
def test_build_and_hybrid_search_with_the_default_model(docs: Path, tmp_path: Path) -> None:
    out = tmp_path / "index"
    rag("build", str(docs), "--out", str(out), "--chunk-size", "400", "--chunk-overlap", "40")
    hits = json.loads(rag("search", str(out), "insects that dance", "--json", "-k", "2").stdout)
    assert hits[0]["chunk"]["metadata"]["source"].endswith("bees.txt")
    assert {"fused", "vector"} <= set(hits[0]["scores"])
    info = json.loads(rag("info", str(out), "--json").stdout)
    assert info["embedder"]["model_id"].endswith("all-MiniLM-L6-v2")
    assert info["embedder"]["dim"] == 384


def test_eval_and_build_index_the_same_beir_text(tmp_path: Path) -> None:
    """``rag eval`` and ``rag build corpus.jsonl`` read a BEIR corpus through one loader: the
    same chunk ids, texts (NFKC, whitespace) and metadata (the title the boost reads)."""
    data = tmp_path / "tiny"
    (data / "qrels").mkdir(parents=True)
    corpus = [
        {
            "_id": "d1",
            "title": "The \ufb01sh  title",
            "text": "Scienti\ufb01c\u00a0text\r\n\r\n\r\nend\t.",
        },
        {
            "_id": "d2",
            "title": "",
            "text": "  \uff21\uff22 full-width bees  ",
            "metadata": {"y": 1},
        },
        {"_id": "d3", "title": "Tides", "text": "The moon\u2019s gravity raises tides."},
    ]
    lines = [json.dumps(record) for record in corpus]
    (data / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    query = {"_id": "q1", "text": "scientific fish"}
    (data / "queries.jsonl").write_text(json.dumps(query) + "\n", encoding="utf-8")
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    out = tmp_path / "eval-out"
    rag("eval", "--dataset", str(data), "--retrievers", "bm25", "--out", str(out))
    built = tmp_path / "built"
    options = ("--no-vector", "--chunk-size", "12000", "--chunk-overlap", "0")
    rag("build", str(data / "corpus.jsonl"), "--out", str(built), *options)

    evaluated, indexed = Index.open(out / "index").chunks, Index.open(built).chunks
    assert (
        [c.text for c in evaluated]
        == [c.text for c in indexed]
        == [
            "The fish  title\n\nScientific text\n\nend\t.",  # NFKC, layout kept
            "AB full-width bees",
            "Tides\n\nThe moon\u2019s gravity raises tides.",
        ]
    )
    file_keys = {"source", "path", "file_type", "mtime", "size"}  # the loader's, about the file

    def described(chunk: Chunk) -> tuple[str, str, dict[str, object]]:
        kept = {k: v for k, v in chunk.metadata.items() if k not in file_keys}
        return chunk.id, chunk.doc_id, kept

    assert [described(c) for c in evaluated] == [described(c) for c in indexed]
    assert indexed[0].metadata["source"] == "corpus.jsonl"  # a single file: its name
    assert [c.doc_id for c in evaluated] == ["d1", "d2", "d3"]
    assert evaluated[0].metadata["title"] == "The fish  title"


def test_search_accepts_the_eval_names_and_their_aliases(keyword_index: Path) -> None:
    """rag search --mode and rag eval --retrievers share names; bm25 is keyword's alias."""
    keyword = rag("search", str(keyword_index), "tides", "--mode", "keyword", "--json").stdout
    assert rag("search", str(keyword_index), "tides", "--mode", "bm25", "--json").stdout == keyword


def test_serve_runs_blas_single_threaded_once_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    from threadpoolctl import threadpool_info, threadpool_limits

    from ragtools.retrieval import cli
    from ragtools.retrieval.integrations import mcp

    seen: list[int] = []

    def fake_serve(paths: list[str], *, on_ready: object, **options: object) -> None:
        assert callable(on_ready)
        on_ready()
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")

    monkeypatch.setattr(mcp, "serve", fake_serve)
    with threadpool_limits(limits=None):  # gives this process its BLAS threads back after
        assert cli.main(["serve", "some-index"]) == 0
    assert seen and set(seen) == {1}


# ---- a real folder: the document policy end to end (#36) --------------------------------

DRAWIO = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg">'
    "<title>Request lifecycle</title>"
    + '<path d="M 10 20 L 30 40 C 50 60 70 80 90 100" stroke="#000"/>'
    * 300
    + "<switch><foreignObject><div>dispatcher</div></foreignObject>"
    "<text>dispatcher</text></switch></svg>"
)
MINIFIED_JS = "!function(e){var t={};function n(r){return t[r]}n.m=e}([]);" * 50
NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "source": ["# Notebook tutorial\n", "The narwhal example."]},
        {
            "cell_type": "code",
            "source": ["narwhal_count = 3\n", "print(narwhal_count)"],
            "outputs": [{"output_type": "stream", "text": ["outputonlymarker 3\n"]}],
        },
    ],
    "metadata": {"language_info": {"name": "python"}},
    "nbformat": 4,
}
PLANS = "name,limit,comment\n" + "".join(f"plan-{n},{n * 250},tier {n}\n" for n in range(1, 9))
RST = """Quickstart
==========

The axolotl server starts in one line.

Install
-------

Run the installer.
"""

#: What a build of the folder indexes: a word of each text type and the file it must find.
SEARCHABLE = {
    "quokka": "docs/index.md",
    "dispatcher": "docs/img/flow.svg",
    "zeppelin": "pyproject.toml",
    "walrus": "setup.cfg",
    "platypus": "tox.ini",
    "narwhal": "docs/tutorial.ipynb",
    "axolotl": "docs/quickstart.rst",
    "highlightTermynal": "docs/js/custom.js",
    "limit 1000": "data/plans.csv",
}
#: What it skips, each with the start of its reason.
SKIPPED = {
    "docs/img/logo.png": "image (png): not text",
    "docs/img/shapes.svg": "SVG drawing without <title>, <desc> or <text>",
    "docs/css/theme.css": "stylesheet (css): skipped by default",
    "docs/js/bundle.min.js": "minified JavaScript (js): skipped by default",
    "docs/js/bundle.min.js.map": "source map (map): skipped by default",
    "package-lock.json": "dependency lock file (package-lock.json)",
}


def make_real_folder(root: Path) -> Path:
    """A project as users have one: Markdown with SVG and PNG images, JS/CSS, TOML/INI/CFG,
    a notebook, a reST page and a CSV with numbers in its second column."""
    files: dict[str, str | bytes] = {
        "docs/index.md": "# Home\n\nThe quokka framework.\n\n![flow](img/flow.svg)\n"
        "![logo](img/logo.png)\n",
        "docs/img/flow.svg": DRAWIO,
        "docs/img/shapes.svg": '<svg xmlns="http://www.w3.org/2000/svg">'
        + '<rect x="1" y="2" width="3" height="4" fill="#abc"/>' * 50
        + "</svg>",
        "docs/img/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
        "docs/css/theme.css": ".md-typeset { color: #ff0000; margin: 0 auto; }\n",
        "docs/js/custom.js": "// Start the terminal animation.\nfunction highlightTermynal() {\n"
        "  return document.querySelectorAll('.termy');\n}\n",
        "docs/js/bundle.min.js": MINIFIED_JS,
        "docs/js/bundle.min.js.map": '{"version":3,"sources":["a.js"],"mappings":"AAAA,CAAC"}',
        "docs/tutorial.ipynb": json.dumps(NOTEBOOK),
        "docs/quickstart.rst": RST,
        "pyproject.toml": '[project]\nname = "zeppelin-docs"\nversion = "1.0"\n',
        "setup.cfg": "[metadata]\nname = walrus\n",
        "tox.ini": "[tox]\nenvlist = platypus\n",
        "package-lock.json": '{"name": "site", "lockfileVersion": 3}',
        "data/plans.csv": PLANS,
    }
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def dry_run_listing(stdout: str) -> tuple[dict[str, str], dict[str, str]]:
    """``rag build --dry-run``'s listing: ``{path: type}`` to index, ``{path: reason}`` skipped."""
    indexed: dict[str, str] = {}
    skipped: dict[str, str] = {}
    verb = kind = reason = ""
    for line in stdout.splitlines()[1:]:
        if line.startswith("  "):
            if verb == "index":
                indexed[line.strip()] = kind
            elif verb == "skip":
                skipped[line.strip()] = reason
            continue
        verb, rest = line.split(" ", 1)
        kind, _, reason = rest.partition(": ")
        kind = kind.split(" (")[0]
    return indexed, skipped


@pytest.fixture(scope="module")
def real_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_real_folder(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="module")
def real_index(real_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("built") / "index"
    rag("build", str(real_folder), "--out", str(out), "--no-vector")
    return out


def test_no_chunk_holds_markup_styles_or_minified_code(real_index: Path) -> None:
    chunks = Index.open(real_index).chunks
    text = "\n".join(chunk.text for chunk in chunks)
    for needle in ("<svg", "<path", "stroke=", "#ff0000", "md-typeset", "!function", "mappings",
                   "lockfileVersion", "outputonlymarker", "IHDR"):  # fmt: skip
        assert needle not in text, needle
    sources = {str(chunk.metadata["source"]) for chunk in chunks}
    assert sources == set(SEARCHABLE.values())


@pytest.mark.parametrize(("query", "source"), SEARCHABLE.items())
def test_every_text_type_is_searchable(real_index: Path, query: str, source: str) -> None:
    proc = rag("search", str(real_index), query, "--mode", "keyword", "-k", "1", "--json")
    (hit,) = json.loads(proc.stdout)
    assert hit["chunk"]["metadata"]["source"] == source
    if source.endswith(".csv"):
        assert hit["chunk"]["metadata"]["title"] == "plan-4"
        assert "limit: 1000" in hit["chunk"]["text"]


def test_titles_and_headings_of_the_new_types(real_index: Path) -> None:
    by_source = {str(c.metadata["source"]): c for c in Index.open(real_index).chunks}
    assert by_source["docs/img/flow.svg"].metadata["title"] == "Request lifecycle"
    assert by_source["docs/img/flow.svg"].text == "Request lifecycle\ndispatcher"
    assert by_source["docs/tutorial.ipynb"].metadata["title"] == "Notebook tutorial"
    assert "```python\nnarwhal_count = 3" in by_source["docs/tutorial.ipynb"].text
    assert by_source["docs/quickstart.rst"].metadata["title"] == "Quickstart"
    assert by_source["docs/quickstart.rst"].metadata["headings"] == ["Quickstart", "Install"]


def test_dry_run_matches_what_the_build_does(real_folder: Path, real_index: Path) -> None:
    proc = rag("build", str(real_folder), "--dry-run")
    indexed, skipped = dry_run_listing(proc.stdout)
    assert proc.stdout.splitlines()[0] == (
        f"dry run (nothing written): {len(SEARCHABLE)} files would be indexed, "
        f"{len(SKIPPED)} skipped, 0 would fail"
    )
    index = Index.open(real_index)
    assert set(indexed) == {str(c.metadata["source"]) for c in index.chunks}
    assert indexed["docs/tutorial.ipynb"] == "ipynb" and indexed["docs/img/flow.svg"] == "svg"
    root = real_folder.resolve()
    built = {Path(path).relative_to(root).as_posix(): why for path, why in index.skipped}
    assert built == skipped
    assert set(skipped) == set(SKIPPED)
    for path, start in SKIPPED.items():
        assert skipped[path].startswith(start), (path, skipped[path])
    assert "skip png (1 file): image (png): not text, and no parser reads it" in proc.stdout
    assert not list(real_folder.rglob("manifest.json"))  # a dry run writes nothing


def test_library_build_and_plan_agree_with_the_command(real_folder: Path, tmp_path: Path) -> None:
    from ragtools.indexes.sources import plan_sources

    index = Index.build([real_folder], tmp_path / "lib", vector=False)
    plan = plan_sources([real_folder])
    root = real_folder.resolve()
    assert {Path(p).relative_to(root).as_posix() for p, _ in plan.parse} == set(SEARCHABLE.values())
    assert plan.skipped == index.skipped and plan.errors == [] and index.failures == []
    assert {str(c.metadata["source"]) for c in index.chunks} == set(SEARCHABLE.values())


def test_an_include_pattern_indexes_what_the_policy_skips(real_folder: Path) -> None:
    proc = rag("build", str(real_folder), "--dry-run", "--include", "*.css", "--include", "*.md")
    indexed, skipped = dry_run_listing(proc.stdout)
    assert indexed == {"docs/css/theme.css": "txt", "docs/index.md": "md"}
    assert skipped == {}


def test_when_every_file_fails_the_reasons_are_printed(tmp_path: Path) -> None:
    root = tmp_path / "nothing"
    root.mkdir()
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 10)
    (root / "broken.json").write_text('{"text": unquoted}')
    (root / "blank.svg").write_text('<svg><circle r="3"/></svg>')
    (root / "blank.md").write_text("---\ntitle: only front matter\n---\n")
    proc = rag("build", str(root), "--out", str(tmp_path / "i"), "--no-vector", "-q", check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    root = root.resolve()
    assert proc.stderr.splitlines() == [
        f"skipped {root / 'blank.svg'}: SVG drawing without <title>, <desc> or <text>: "
        "no words to index",
        f"skipped {root / 'logo.png'}: image (png): not text, and no parser reads it",
        f"failed {root / 'broken.json'}: invalid JSON (Expecting value: line 1 column 10 (char 9))",
        f"no text in {root / 'blank.md'}",
        f"rag: error: {tmp_path / 'i'}: no text to index (all sources empty, unreadable or "
        "without text)",
    ]


def test_bad_settings_are_one_line_naming_the_setting_and_value(tmp_path: Path) -> None:
    """#38: ``--chunk-size 0`` printed pydantic's multi-line dump."""
    (tmp_path / "a.md").write_text("hello world text")
    proc = rag("build", str(tmp_path / "a.md"), "--out", str(tmp_path / "i"), "--chunk-size", "0",
               "--no-vector", check=False)  # fmt: skip
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "chunk_size: Input should be greater than or equal to 1 (got 0)" in proc.stderr
    assert "pydantic" not in proc.stderr


def test_build_with_context_keeps_stored_text(docs: Path, tmp_path: Path) -> None:
    out = tmp_path / "ctx"
    rag("build", str(docs), "--out", str(out), "--no-vector", "--context")
    with Index.open(out) as index:
        assert index.settings.context
        tides = next(c for c in index.chunks if c.metadata["source"] == "tides.md")
        assert tides.text.startswith("# Tides")  # the stored text is the file's
    proc = rag("search", str(out), "tides", "--mode", "keyword", "--json")
    assert json.loads(proc.stdout)[0]["chunk"]["text"] == tides.text
    differs = rag("build", str(docs), "--out", str(out), "--no-vector", check=False)
    assert differs.returncode != 0 and "context True (asked: False)" in differs.stderr


def test_tune_refuses_an_index_without_the_vector_half(keyword_index: Path, tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "tides"}\n')
    (tmp_path / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\ttides.md\t1\n")
    proc = rag("tune", str(keyword_index), "--dataset", str(tmp_path), check=False)
    assert proc.returncode != 0
    assert "no vector half (built with --no-vector)" in proc.stderr


# ---- output: quiet, piped and on a terminal (#36 item 3) --------------------------------


def test_quiet_prints_nothing_on_success(real_folder: Path, tmp_path: Path) -> None:
    """The real folder skips six files: ``-q`` names none of them, nor any summary."""
    folder = make_real_folder(tmp_path / "project")
    out = str(tmp_path / "index")
    steps: list[tuple[str, ...]] = [
        ("build", str(folder), "--out", out, "--no-vector", "-q"),
        ("-q", "update", out),  # nothing changed: no version either
        ("update", out, "--quiet"),
    ]
    for args in steps:
        proc = rag(*args)
        assert (proc.stdout, proc.stderr) == ("", ""), args
    versions = rag("versions", out).stdout
    assert len(versions.splitlines()) == 1 and "v-000001" in versions
    (folder / "docs" / "index.md").write_text("# Home\n\nThe quokka framework, renamed.\n")
    for args in [
        ("update", out, "-q"),
        ("rollback", out, "-q"),
        ("rollback", out, "v-000001", "-q"),
    ]:
        proc = rag(*args)
        assert (proc.stdout, proc.stderr) == ("", ""), args
    assert rag("update", out).stdout.startswith(f"updated {out}: 0 added, 1 changed")


def test_quiet_still_prints_failed_files(docs: Path, tmp_path: Path) -> None:
    proc = rag("build", str(docs), "--out", str(tmp_path / "i"), "--no-vector", "-q")
    assert proc.stdout == ""
    assert [line.split(":")[0] for line in proc.stderr.splitlines()] == [
        f"failed {docs.resolve() / 'broken.pdf'}"
    ]


def on_a_terminal(*args: str) -> str:
    """What ``rag args`` shows on a pseudo-terminal (stdout and stderr both on it)."""
    import fcntl
    import pty
    import struct
    import termios

    primary, secondary = pty.openpty()
    # a terminal of 24 rows and 120 columns: a new pseudo-terminal has 0 columns, where tqdm
    # draws nothing
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with subprocess.Popen(
        [str(RAG), *args], stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary, env=env
    ) as proc:
        os.close(secondary)
        shown = b""
        while True:
            try:
                data = os.read(primary, 65536)
            except OSError:  # EIO: the terminal's other end closed
                break
            if not data:
                break
            shown += data
        assert proc.wait(timeout=600) == 0, shown
    os.close(primary)
    return shown.decode("utf-8", "replace")


def test_a_terminal_shows_one_bar_per_phase(real_folder: Path, tmp_path: Path) -> None:
    shown = on_a_terminal("build", str(real_folder), "--out", str(tmp_path / "i"), "--no-vector")
    assert "parsing:   0%|" in shown and "/9 [" in shown and "files/s]" in shown
    assert "indexing:   0%|" in shown and "chunks/s]" in shown
    assert "progress:" not in shown  # no log lines where bars are drawn
    assert "built " in shown


@pytest.mark.slow
def test_a_terminal_shows_the_embedding_phase_in_chunks(real_folder: Path, tmp_path: Path) -> None:
    shown = on_a_terminal("build", str(real_folder), "--out", str(tmp_path / "i"))
    assert "embedding:   0%|" in shown and "/17 [" in shown and "chunks/s]" in shown
    quiet = on_a_terminal("build", str(real_folder), "--out", str(tmp_path / "q"), "-q")
    assert quiet == ""
