"""load_dir(): a mixed tree, per-file errors, skips, order, and the process pool."""

from __future__ import annotations

import importlib
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from ragtools import parsers
from ragtools.parsers import ConfigError, Document, FileError, LoadResult, load_dir, register_parser
from ragtools.parsers.normalize import normalize_text
from ragtools.parsers.registry import unregister_parser

CHINESE = "检索增强生成系统需要正确解析中文文档。这一段文字使用GBK编码保存。"


def link(target: Path, path: Path) -> Path:
    """Copy shared data into the tree: a symbolic link to it would leave the folder, which
    :func:`load_dir` does not follow unless asked."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(target, path)
    return path


@pytest.fixture
def mixed_tree(tmp_path: Path, pdf_dir: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a_good.txt").write_text("A good plain text file.", encoding="utf-8")
    (root / "b_notes.md").write_text("# Notes\n\nMarkdown body.", encoding="utf-8")
    (root / "c_page.html").write_text(
        "<html><head><title>Page</title></head><body><p>HTML body.</p></body></html>"
    )
    (root / "d_zh_gbk.txt").write_bytes(CHINESE.encode("gbk"))
    link(pdf_dir / "002-trivial-libre-office-writer.pdf", root / "e_paper.pdf")
    link(pdf_dir / "invalid.pdf", root / "f_invalid.pdf")
    link(pdf_dir / "aes-256-r6.pdf", root / "g_locked.pdf")
    (root / "h_empty.txt").write_bytes(b"")
    (root / "i_garbage.txt").write_bytes(b"\x00\x01\x02\xff" * 100)
    (root / "j_image.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 10)
    (root / "k_big.txt").write_text("x" * 30000)
    (root / ".hidden.txt").write_text("hidden")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]")
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "sub" / "deeper" / "z_deep.txt").write_text("Deep text.")
    return root


def test_mixed_tree(mixed_tree: Path) -> None:
    result = load_dir(mixed_tree, max_bytes=20000, workers=1)
    assert isinstance(result, LoadResult)
    sources = [d.metadata["source"] for d in result.documents]
    root = str(mixed_tree)
    assert sources == [  # relative to the root, POSIX separators
        "a_good.txt",
        "b_notes.md",
        "c_page.html",
        "d_zh_gbk.txt",
        "e_paper.pdf",
        "sub/deeper/z_deep.txt",
    ]
    for document in result.documents:
        assert document.metadata["path"] == str((mixed_tree / document.source).resolve())
    assert [d.metadata["file_type"] for d in result.documents] == [
        "txt", "md", "html", "txt", "pdf", "txt"
    ]  # fmt: skip
    texts = {d.metadata["source"]: d.text for d in result.documents}
    assert texts["d_zh_gbk.txt"] == CHINESE  # GBK decoded correctly
    assert texts["b_notes.md"] == "# Notes\n\nMarkdown body."
    assert [(e.path, e.error) for e in result.errors] == [
        (f"{root}/f_invalid.pdf", "ParseError"),
        (f"{root}/g_locked.pdf", "PasswordRequiredError"),
        (f"{root}/i_garbage.txt", "ParseError"),
    ]
    assert texts["e_paper.pdf"].startswith("Lorem ipsum")
    assert "password is needed" in result.errors[1].message
    assert result.skipped == [
        (f"{root}/.git", "hidden directory"),
        (f"{root}/.hidden.txt", "hidden file"),
        (f"{root}/h_empty.txt", "empty file"),
        (f"{root}/j_image.bin", "image (png): not text, and no parser reads it"),
        (
            f"{root}/k_big.txt",
            "larger than max_bytes (30000 > 20000 bytes): not read; raise max_bytes",
        ),
    ]


def test_pattern_and_single_file(mixed_tree: Path) -> None:
    result = load_dir(mixed_tree, pattern="**/*.md")
    assert [d.metadata["source"] for d in result.documents] == ["b_notes.md"]
    assert result.errors == [] and result.skipped == []
    single = load_dir(mixed_tree / "a_good.txt")
    assert [d.text for d in single.documents] == ["A good plain text file."]
    assert [d.source for d in single.documents] == ["a_good.txt"]  # a single file: its name


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_dir(tmp_path / "nope")
    with pytest.raises(ConfigError, match="workers"):
        load_dir(tmp_path, workers=0)
    with pytest.raises(ConfigError, match="max_bytes"):
        load_dir(tmp_path, max_bytes=0)
    assert load_dir(tmp_path) == LoadResult([], [], [])


@pytest.mark.parametrize("shard_min_bytes", [None, 1])
def test_process_pool_matches_serial(
    tmp_path: Path,
    pdf_dir: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    shard_min_bytes: int | None,
) -> None:
    if shard_min_bytes is not None:  # every PDF split by pages over the two workers
        monkeypatch.setattr(importlib.import_module("ragtools.parsers._pool"), "SHARD_MIN_BYTES", 1)
    root = tmp_path / "pdfs"
    names = ["multicolumn.pdf", "multilang.pdf", "skew.pdf", "invalid.pdf", "scan-bad.pdf"]
    for name in names:
        link(pdf_dir / name, root / name)
    (root / "notes.txt").write_text("Parsed in the main process meanwhile.")
    calls: list[str] = []

    @register_parser(".custom", name="test.custom")
    def parse_custom(path: Path, *, source: str, password: str | None = None) -> list[Document]:
        calls.append(source)  # runs in this process: user parsers are never sent to workers
        return [Document(text="custom", metadata={"source": source})]

    (root / "x.custom").write_text("anything")
    try:
        serial = load_dir(root, workers=1)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="parsers"):
            pooled = load_dir(root, workers=2)
    finally:
        unregister_parser("test.custom")
    assert pooled == serial
    assert [d.id for d in pooled.documents] == [d.id for d in serial.documents]
    assert pooled.errors == [
        FileError(str(root / "invalid.pdf"), "ParseError", serial.errors[0].message)
    ]
    assert calls == [str(root / "x.custom")] * 2
    # The scanned page's warning, logged in a worker process, reaches the caller's logs.
    warnings = [r.getMessage() for r in caplog.records if r.name == "ragtools.parsers.pdf"]
    assert [w for w in warnings if "skew.pdf" in w and "no text layer on page(s) 1 " in w]
    assert len(warnings) == 1
    pages = [d.metadata["page"] for d in pooled.documents if "multicolumn" in d.source]
    assert pages == [1, 2, 3]


def test_progress_bar_on_request(mixed_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = load_dir(mixed_tree, pattern="*.md", show_progress=True)
    assert len(result.documents) == 1
    assert "parsing" in capsys.readouterr().err
    load_dir(mixed_tree, pattern="*.md", show_progress=False)
    assert capsys.readouterr().err == ""
    pooled = load_dir(mixed_tree, max_bytes=20000, workers=2, show_progress=True)
    assert pooled == load_dir(mixed_tree, max_bytes=20000, workers=1)
    assert "parsing" in capsys.readouterr().err


def test_multilingual_round_trip(tmp_path: Path) -> None:
    samples = {
        "zh": "检索增强生成。中文文本的分块测试！这是第三句话；还有第四句。",
        "ja": "日本語の文章です。検索のための段落を分割します！最後の文。",
        "ar": "مرحبا بالعالم. هذا نص عربي للاختبار! نهاية النص.",
    }
    for lang, text in samples.items():
        (tmp_path / f"{lang}.txt").write_text(text, encoding="utf-8")
        (tmp_path / f"{lang}.md").write_text(f"# {lang}\n\n{text}", encoding="utf-8")
        (tmp_path / f"{lang}.html").write_text(
            f"<html><head><title>{lang}</title></head><body><p>{text}</p></body></html>",
            encoding="utf-8",
        )
    result = load_dir(tmp_path)
    assert result.errors == [] and len(result.documents) == 9
    for doc in result.documents:
        lang = Path(doc.source).stem
        expected = normalize_text(samples[lang])
        assert expected in doc.text
        chunks = parsers.split([doc], chunk_size=12, chunk_overlap=4)
        assert len(chunks) > 1
        for chunk in chunks:
            assert doc.text[chunk.start : chunk.end] == chunk.text
        joined = "".join(ch for c in chunks for ch in c.text if not ch.isspace())
        for char in expected:
            assert char.isspace() or char in joined


def test_spawned_workers(tmp_path: Path, pdf_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start method used when the caller runs threads (and on macOS/Windows)."""
    import multiprocessing

    module = importlib.import_module("ragtools.parsers._pool")
    monkeypatch.setattr(module, "_mp_context", lambda: multiprocessing.get_context("spawn"))
    for name in ["multilang.pdf", "scan-bad.pdf", "invalid.pdf"]:
        link(pdf_dir / name, tmp_path / name)
    pooled = load_dir(tmp_path, workers=2)
    assert pooled == load_dir(tmp_path, workers=1)
    assert [e.path for e in pooled.errors] == [str(tmp_path / "invalid.pdf")]


# ---- the document policy (parsers.policy) -----------------------------------------------

MINIFIED = "function a(b){return b*2}var c=a(3);" * 40  # one line of 1,400 characters
UNKNOWN_BINARY = b"\x00\x01PROPRIETARY\x00" * 8


@pytest.fixture
def web_tree(tmp_path: Path) -> Path:
    """A site folder: documents beside stylesheets, scripts, maps, locks and images."""
    root = tmp_path / "site"
    (root / "js").mkdir(parents=True)
    (root / "guide.md").write_text("# Guide\n\nRead me.")
    (root / "theme.css").write_text("body { color: #333; }\n.nav { display: flex; }\n")
    (root / "js" / "termynal.js").write_text("// Animated terminal\nfunction type(line) {\n}\n")
    (root / "js" / "vendor.js").write_text(MINIFIED)  # minified, whatever its name
    (root / "js" / "app.min.js").write_text("var a = 1;\n")  # minified by its name
    (root / "js" / "app.js.map").write_text('{"version":3,"sources":["a.js"],"mappings":"AAAA"}')
    (root / "bundle.map").write_text('{"version": 3, "file": "b.js", "mappings": ";;AAAA"}')
    (root / "route.map").write_text("A text map of the office floor.\n")  # not a source map
    (root / "package-lock.json").write_text('{"name": "site", "lockfileVersion": 3}')
    (root / "poetry.lock").write_text('[[package]]\nname = "x"\n')
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 10)
    (root / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x01" * 64)
    (root / "data.bin").write_bytes(UNKNOWN_BINARY)
    return root


POLICY_SKIPS = {
    "bundle.map": "source map (map): skipped by default; an include pattern such as '*.map'"
    " indexes it",
    "data.bin": "binary file of unknown type (.bin): no parser reads it",
    "js/app.js.map": "source map (map): skipped by default; an include pattern such as '*.map'"
    " indexes it",
    "js/app.min.js": "minified JavaScript (js): skipped by default; an include pattern such as"
    " 'app.min.js' indexes it",
    "js/vendor.js": "minified JavaScript (js): skipped by default; an include pattern such as"
    " 'vendor.js' indexes it",
    "logo.png": "image (png): not text, and no parser reads it",
    "package-lock.json": "dependency lock file (package-lock.json): skipped by default; an include"
    " pattern such as 'package-lock.json' indexes it",
    "photo.jpg": "image (jpg): not text, and no parser reads it",
    "poetry.lock": "dependency lock file (poetry.lock): skipped by default; an include pattern"
    " such as 'poetry.lock' indexes it",
    "theme.css": "stylesheet (css): skipped by default; an include pattern such as '*.css'"
    " indexes it",
}


def test_policy_skips_what_is_not_a_document_with_a_reason(web_tree: Path) -> None:
    result = load_dir(web_tree, workers=1)
    assert result.errors == []
    assert sorted(d.source for d in result.documents) == [
        "guide.md", "js/termynal.js", "route.map"
    ]  # fmt: skip
    assert {Path(p).relative_to(web_tree).as_posix(): r for p, r in result.skipped} == POLICY_SKIPS


def test_an_include_pattern_names_a_skipped_file_and_it_is_indexed(web_tree: Path) -> None:
    rules = parsers.Selection(include=("*.css", "vendor.js", "*.md", "*.png"))
    result = load_dir(web_tree, workers=1, selection=rules)
    assert [d.source for d in result.documents] == ["guide.md", "js/vendor.js", "theme.css"]
    assert "color: #333" in result.documents[2].text
    assert [Path(p).name for p, _ in result.skipped] == ["logo.png"]  # no parser: still skipped
    everything = load_dir(web_tree, workers=1, selection=parsers.Selection(include=("*",)))
    assert len(everything.documents) == 10 and len(everything.skipped) == 3  # images, binary


def test_a_file_named_on_its_own_is_always_read(web_tree: Path) -> None:
    for name in ("theme.css", "js/vendor.js", "package-lock.json"):
        assert [d.source for d in load_dir(web_tree / name, workers=1).documents] == [
            Path(name).name
        ]
    assert parsers.load(web_tree / "js" / "vendor.js")[0].text == MINIFIED


def test_plan_files_decides_as_load_files_does(web_tree: Path, tmp_path: Path) -> None:
    from ragtools.parsers.loading import plan_files

    (web_tree / "shapes.svg").write_text('<svg><rect width="1" height="1"/></svg>')
    (web_tree / "flow.svg").write_text("<svg><text>Client</text></svg>")
    (web_tree / "empty.txt").write_text("")
    files = sorted(p for p in web_tree.rglob("*") if p.is_file())
    plan = plan_files(files)
    result = parsers.load_files(files, workers=1)
    assert plan.skipped == result.skipped
    assert ("shapes.svg", "SVG drawing without <title>, <desc> or <text>: no words to index") in [
        (Path(p).name, r) for p, r in plan.skipped
    ]
    parsed = {str(Path(str(d.metadata["path"]))) for d in result.documents}
    assert {path for path, _ in plan.parse} == parsed
    kinds = {Path(path).name: kind for path, kind in plan.parse}
    assert kinds["flow.svg"] == "svg" and kinds["guide.md"] == "md" and kinds["theme.css"] == "txt"


# ---- walk errors are failures, never silently missed (#38 item 8) ------------------------------


def deep_folder(root: Path, depth: int) -> Path:
    """``root`` with ``depth`` nested folders of 14-character names (past ``PATH_MAX`` at about
    300) and a file in the deepest, made through folder descriptors as no path reaches it."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("folder-0000000", dir_fd=fd)
            inner = os.open("folder-0000000", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        made = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
        os.write(made, b"text at the bottom of the tree\n")
        os.close(made)
    finally:
        os.close(fd)
    return root.joinpath(*["folder-0000000"] * depth)


def test_walk_errors_are_failures_naming_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path 300 folders deep, a link loop, a link up the tree and a folder that cannot be
    listed each end as an error naming them; the readable files are all loaded."""
    root = tmp_path / "tree"
    (root / "locked").mkdir(parents=True)
    (root / "locked" / "x.txt").write_text("never read\n")
    (root / "ok.txt").write_text("a readable file\n")
    (root / "self").symlink_to("self")
    (root / "sub").mkdir()
    (root / "sub" / "up").symlink_to("..")
    deep = deep_folder(root, 300)
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = load_dir(root, workers=1)
    assert [d.source for d in result.documents] == ["ok.txt"]
    errors = {e.path: e.message for e in result.errors}
    assert "a folder that cannot be listed (Permission denied)" in errors[str(root / "locked")]
    assert "a symbolic link loop" in errors[str(root / "self")]
    assert "folder above it (a loop)" in errors[str(root / "sub" / "up")]
    too_long = [path for path in errors if path.startswith(str(root / "folder-0000000"))]
    assert len(too_long) == 1 and Path(too_long[0]) in [deep, *deep.parents]
    assert "File name too long" in errors[too_long[0]]
    assert all(e.error == "ParseError" for e in result.errors)


def test_a_sink_gets_each_files_documents_and_the_log_counts_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With a sink, ``LoadResult.documents`` stays empty; the loader's log line still counts
    the documents the sink took (it read "loaded 0 documents" for every index build)."""
    from ragtools.parsers.loading import load_files

    class Keeper:
        def __init__(self) -> None:
            self.kept: dict[int, list[str]] = {}

        def take(self, file: int, documents: Any) -> None:
            self.kept[file] = [document.text for document in documents]

        def drop(self, file: int) -> None:
            self.kept.pop(file, None)

    files = []
    for name, text in (("a.md", "# One\n\nfirst words"), ("b.txt", "second words")):
        (tmp_path / name).write_text(text, encoding="utf-8")
        files.append(tmp_path / name)
    keeper = Keeper()
    with caplog.at_level(logging.INFO, logger="ragtools.parsers.loading"):
        result = load_files(files, workers=1, sink=keeper)
    assert result.documents == [] and result.errors == []
    assert sorted(keeper.kept) == [0, 1]
    assert keeper.kept[1] == ["second words"]
    assert "loaded 2 documents from 2 files" in caplog.text


def test_a_parsers_ids_follow_the_files_source_once_finished(tmp_path: Path) -> None:
    """Documents get the file's source and metadata once, when the loader finishes them: an
    id derived from whatever source the parser set (none, its own, the path as walked) is
    derived from the relative source, after lone surrogates are replaced; given ids stay."""

    @register_parser(".ids", name="test-ids")
    def ids(path: Path, *, source: str, password: str | None = None) -> list[Document]:
        return [
            Document(text="no source \ud800"),  # the default source, a lone surrogate
            Document(text="its own source", metadata={"source": "elsewhere"}),
            Document(text="as walked", metadata={"source": source, "page": 2}),
            Document(id="given-1", text="given \udc80", metadata={"source": source}),
        ]

    try:
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "a.ids").write_text("x", encoding="utf-8")
        result = load_dir(tmp_path, show_progress=False)
    finally:
        unregister_parser("test-ids")
    assert not result.errors
    assert result.replaced == 2
    expected = [
        ("no source \ufffd", None),
        ("its own source", None),
        ("as walked", 2),
        ("given \ufffd", None),
    ]
    assert [(d.text, d.metadata.get("page")) for d in result.documents] == expected
    for document in result.documents[:3]:
        again = Document(text=document.text, metadata={"source": "sub/a.ids", **document.metadata})
        assert document.metadata["source"] == "sub/a.ids"
        assert document.id == again.id
    assert result.documents[3].id == "given-1"
    assert result.documents[3].metadata["path"] == str(tmp_path / "sub" / "a.ids")


def test_record_ids_are_the_same_wherever_the_folder_sits(tmp_path: Path) -> None:
    """A record's id is derived from its file's relative source, its row and its text, as
    a page's is: the same record files, loaded from two places, give the same document
    and chunk ids (BEIR ``_id`` values are given and stay)."""
    first = tmp_path / "first" / "docs"
    (first / "sub").mkdir(parents=True)
    (first / "records.json").write_text('[{"text": "alpha one"}, "alpha one"]', encoding="utf-8")
    (first / "sub" / "rows.csv").write_text("title,body\nOne,alpha\nTwo,bravo\n", encoding="utf-8")
    (first / "beir.jsonl").write_text('{"_id": "d1", "text": "charlie"}\n', encoding="utf-8")
    second = tmp_path / "elsewhere" / "deeper" / "docs"
    shutil.copytree(first, second)

    def ids(root: Path) -> list[tuple[str, str]]:
        result = load_dir(root, show_progress=False)
        assert not result.errors
        return sorted((d.metadata["source"], d.id) for d in result.documents)  # type: ignore[misc]

    here, there = ids(first), ids(second)
    assert here == there
    assert len({doc_id for _, doc_id in here}) == 5  # the two "alpha one" rows differ
    assert ("beir.jsonl", "d1") in here
    document = next(d for d in load_dir(first, show_progress=False).documents if d.id != "d1")
    assert document.id == Document(text=document.text, metadata=document.metadata).id
