"""The real ``rag`` entry point: update, build over an index, versions, rollback, selection,
links leaving the sources, and escaped output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from ragtools.indexes.writer import IndexWriter
from ragtools.parsers import Document
from ragtools.parsers.selection import LEAVES_ROOT

RAG = Path(sys.executable).with_name("rag")


def rag(
    *args: str, check: bool = True, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "RAG_PDF_PASSWORD"}
    environment.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})})
    proc = subprocess.run(
        [str(RAG), *args],
        capture_output=True,
        text=True,
        env=environment,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        timeout=600,
        check=False,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"rag {args} failed ({proc.returncode}): {proc.stderr}")
    return proc


def corpus(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "bees.txt").write_text("Honey bees dance to show where the flowers are.")
    (root / "tides.md").write_text("# Tides\n\nThe moon's gravity raises the ocean tides.")
    (root / "volcano.txt").write_text("Lava flows from an erupting volcano.")
    return root


def live(index: Path) -> str:
    return (index / "CURRENT").read_text().strip()


def sources_of(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [Path(h["chunk"]["metadata"]["source"]).name for h in json.loads(proc.stdout)]


def test_update_reports_exactly_the_added_changed_and_removed_files(tmp_path: Path) -> None:
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    rag("build", str(docs), "--out", str(index), "--no-vector")
    (docs / "bees.txt").write_text("Honey bees dance; wasps do not.")
    (docs / "comets.txt").write_text("Comets grow tails near the sun.")
    (docs / "volcano.txt").unlink()
    proc = rag("update", str(index))
    head, *rows = proc.stdout.strip().splitlines()
    assert head == (
        f"updated {index}: 1 added, 1 changed, 1 removed, 1 unchanged (0 skipped, 0 failed)"
    )
    assert rows == [
        f"  added   {docs.resolve() / 'comets.txt'}",
        f"  changed {docs.resolve() / 'bees.txt'}",
        f"  removed {docs.resolve() / 'volcano.txt'}",
    ]
    found = rag("search", str(index), "comet tails", "--mode", "keyword", "--json")
    assert sources_of(found)[0] == "comets.txt"
    again = rag("update", str(index))
    assert again.stdout == f"{index} is up to date: 3 unchanged (0 skipped, 0 failed)\n"


def test_build_over_an_index_of_other_sources_changes_nothing(tmp_path: Path) -> None:
    docs, other, index = corpus(tmp_path / "docs"), corpus(tmp_path / "other"), tmp_path / "i"
    rag("build", str(docs), "--out", str(index), "--no-vector")
    before = (live(index), sorted(p.name for p in (index / "versions").iterdir()))
    proc = rag("build", str(other), "--out", str(index), "--no-vector", check=False)
    assert proc.returncode == 2
    assert "Nothing was changed" in proc.stderr and "--force" in proc.stderr
    assert (live(index), sorted(p.name for p in (index / "versions").iterdir())) == before
    changed = rag("build", str(docs), "--out", str(index), "--chunk-size", "500", check=False)
    assert changed.returncode == 2 and "chunk_size 1000 (asked: 500)" in changed.stderr
    same = rag("build", str(docs), "--out", str(index), "--no-vector")
    assert same.stdout.startswith(f"{index} is up to date: 3 unchanged")
    forced = rag("build", str(other), "--out", str(index), "--no-vector", "--force")
    assert forced.stdout.startswith(f"built {index}: 3 chunks from 3 files")
    assert json.loads(rag("info", str(index), "--json").stdout)["sources"] == [str(other.resolve())]


def test_rollback_brings_back_the_old_results(tmp_path: Path) -> None:
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    rag("build", str(docs), "--out", str(index), "--no-vector")
    first = live(index)
    old = rag("search", str(index), "lava volcano", "--mode", "keyword", "--json")
    (docs / "volcano.txt").unlink()
    rag("update", str(index))
    gone = rag("search", str(index), "lava volcano", "--mode", "keyword", "--json")
    assert "volcano.txt" not in sources_of(gone)
    listing = rag("versions", str(index)).stdout.splitlines()
    assert listing[0].startswith(f"  {first}  ") and "3 files, 3 chunks" in listing[0]
    assert listing[1].startswith("* v-000002  ") and "2 files, 2 chunks" in listing[1]
    proc = rag("rollback", str(index))
    assert proc.stdout.strip() == f"rolled back {index}: {first} is live (was v-000002)"
    back = rag("search", str(index), "lava volcano", "--mode", "keyword", "--json")
    assert back.stdout == old.stdout
    missing = rag("rollback", str(index), "v-000009", check=False)
    assert missing.returncode == 2 and "no version 'v-000009'" in missing.stderr


def test_versions_and_rollback_of_a_sharded_index(tmp_path: Path) -> None:
    """#32: every version once listed "manifest.json: file is missing"; rollback failed."""
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    rag("build", str(docs), "--out", str(index), "--no-vector", "--shards", "4")
    old = rag("search", str(index), "lava volcano", "--mode", "keyword", "--json")
    (docs / "volcano.txt").unlink()
    rag("update", str(index))
    listing = rag("versions", str(index)).stdout.splitlines()
    assert listing[0].startswith("  v-000001  ") and "3 files, 3 chunks" in listing[0]
    assert listing[1].startswith("* v-000002  ") and "2 files, 2 chunks" in listing[1]
    assert "missing" not in "".join(listing)
    proc = rag("rollback", str(index))
    assert proc.stdout.strip() == f"rolled back {index}: v-000001 is live (was v-000002)"
    back = rag("search", str(index), "lava volcano", "--mode", "keyword", "--json")
    assert back.stdout == old.stdout
    rows = json.loads(rag("versions", str(index), "--json").stdout)
    assert [(r["version"], r["live"], "error" in r) for r in rows] == [
        ("v-000001", True, False),
        ("v-000002", False, False),
    ]


def test_how_many_versions_are_kept_is_a_setting(tmp_path: Path) -> None:
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    rag("build", str(docs), "--out", str(index), "--no-vector", "--keep-versions", "3")
    for text in ("one", "two", "three"):
        (docs / "bees.txt").write_text(f"Honey bees, edit {text}.")
        rag("update", str(index))
    rows = json.loads(rag("versions", str(index), "--json").stdout)
    assert [r["version"] for r in rows] == ["v-000002", "v-000003", "v-000004"]
    assert [r["live"] for r in rows] == [False, False, True]


def test_gitignored_files_caches_and_images_are_skipped_not_failed(tmp_path: Path) -> None:
    docs, index = corpus(tmp_path / "code"), tmp_path / "index"
    (docs / ".gitignore").write_text("build/\n*.log\n")
    (docs / "build").mkdir()
    (docs / "build" / "out.txt").write_text("generated")
    (docs / "debug.log").write_text("log line")
    (docs / "__pycache__").mkdir()
    (docs / "__pycache__" / "m.cpython-312.pyc").write_bytes(b"\xcb\r\r\n\x00\x00\x00\x00" * 8)
    (docs / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 10)
    proc = rag("build", str(docs), "--out", str(index), "--no-vector")
    assert proc.stdout.strip() == f"built {index}: 3 chunks from 3 files (5 skipped, 0 failed)"
    root = docs.resolve()
    assert proc.stderr.splitlines() == [
        f"skipped {root / '.gitignore'}: hidden file",
        f"skipped {root / '__pycache__'}: Python bytecode cache",
        f"skipped {root / 'build'}: ignored by {root / '.gitignore'}",
        f"skipped {root / 'debug.log'}: ignored by {root / '.gitignore'}",
        f"skipped {root / 'logo.png'}: image (png): not text, and no parser reads it",
    ]
    every = rag("build", str(docs), "--out", str(tmp_path / "all"), "--no-vector", "--no-gitignore")
    assert "5 chunks from 5 files" in every.stdout
    only = rag(
        "build", str(docs), "--out", str(tmp_path / "md"), "--no-vector", "--include", "*.md"
    )
    assert only.stdout.startswith(f"built {tmp_path / 'md'}: 1 chunks from 1 files")


def test_failed_files_print_once_with_the_path_once(tmp_path: Path, pdf_dir: Path) -> None:
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    shutil.copyfile(pdf_dir / "aes-256-r6.pdf", docs / "locked.pdf")
    proc = rag("build", str(docs), "--out", str(index), "--no-vector")
    assert "(0 skipped, 1 failed)" in proc.stdout
    locked = str(docs.resolve() / "locked.pdf")
    lines = [line for line in proc.stderr.splitlines() if "locked.pdf" in line]
    assert len(lines) == 1 and lines[0].startswith(f"failed {locked}: ")
    assert lines[0].count("locked.pdf") == 1 and "password" in lines[0]
    opened = rag("update", str(index), "--password", "usersecret")
    assert "1 changed" not in opened.stdout and "(0 skipped, 0 failed)" in opened.stdout
    by_env = rag(
        "build",
        str(docs),
        "--out",
        str(tmp_path / "env"),
        "--no-vector",
        env={"RAG_PDF_PASSWORD": "usersecret"},
    )
    assert "(0 skipped, 0 failed)" in by_env.stdout


def test_conventions_version_help_global_options_json5(tmp_path: Path) -> None:
    assert rag("--version").stdout.strip() == f"rag {version('ragtools')}"
    help_text = " ".join(rag("build", "--help").stdout.split())  # as read, not as wrapped
    assert "(default: 1000)" in help_text and "(default: 200)" in help_text
    assert "(default: $RAG_PDF_PASSWORD)" in help_text
    secret = rag("build", "--help", env={"RAG_PDF_PASSWORD": "hunter2"}).stdout
    assert "hunter2" not in secret
    assert "(default: 5)" in rag("search", "--help").stdout
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    rag("build", str(docs), "--out", str(index), "--no-vector", "--quiet")
    after = rag("info", str(index), "--verbose", "--json")  # a global option after the command
    assert json.loads(after.stdout)["counts"]["chunks"] == 3
    proc = rag(
        "search", str(index), "moon tides", "--mode", "keyword", "--json",
        "--filter", "{source: {$nin: ['x']}, title: 'Tides'}",  # JSON5: unquoted, single quotes
    )  # fmt: skip
    assert sources_of(proc) == ["tides.md"]


def test_info_is_a_short_human_summary(tmp_path: Path) -> None:
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    rag("build", str(docs), "--out", str(index), "--no-vector")
    lines = rag("info", str(index)).stdout.splitlines()
    labels = [line.split()[0] for line in lines]
    assert labels == [
        "index", "created", "files", "chunks", "vectors", "segments", "model", "settings", "bm25",
        "sources", "selection", "size", "versions",
    ]  # fmt: skip
    summary = dict(line.split(None, 1) for line in lines)
    assert summary["files"] == "3 (0 skipped, 0 failed)"
    assert summary["chunks"] == "3 from 3 documents"
    assert summary["model"] == "none (keyword only)"
    assert summary["versions"] == "v-000001"
    assert summary["size"].endswith("kB")


def test_many_queries_from_stdin_give_json_lines(tmp_path: Path) -> None:
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    rag("build", str(docs), "--out", str(index), "--no-vector")
    queries = 'moon tides\n\n{"id": "q2", "query": "lava"}\n'
    proc = rag(
        "search", str(index), "--queries", "-", "--mode", "keyword", "-k", "1", stdin=queries
    )
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [a["query"] for a in answers] == ["moon tides", "lava"]
    assert answers[1]["id"] == "q2"
    assert [Path(a["hits"][0]["chunk"]["metadata"]["source"]).name for a in answers] == [
        "tides.md",
        "volcano.txt",
    ]
    both = rag("search", str(index), "q", "--queries", "-", check=False, stdin="x\n")
    assert both.returncode == 2 and "not both" in both.stderr


def test_serve_says_when_it_is_ready(tmp_path: Path) -> None:
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    rag("build", str(docs), "--out", str(index), "--no-vector")
    proc = rag("serve", str(index), "--name", "search_docs")  # stdin closed: the client left
    assert proc.stdout == ""  # the protocol channel stays clean
    assert "rag: ready: serving MCP over stdio (1 index)" in proc.stderr.splitlines()


@pytest.mark.slow
def test_piped_output_has_no_progress_bars_or_load_reports(tmp_path: Path) -> None:
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    proc = rag("build", str(docs), "--out", str(index))
    assert proc.stderr == ""
    assert proc.stdout == f"built {index}: 3 chunks from 3 files (0 skipped, 0 failed)\n"
    search = rag("search", str(index), "insects dancing", "-k", "1")
    assert search.stderr == "" and "bees.txt" in search.stdout
    verbose = rag("search", str(index), "insects dancing", "-k", "1", "--verbose")
    assert "INFO ragtools.indexes.dense.onnx_encoder: embedding with ONNX Runtime" in verbose.stderr
    assert "faiss" not in verbose.stderr  # only this package's loggers are raised


@pytest.mark.slow
def test_a_terminal_gets_labelled_progress_bars(tmp_path: Path) -> None:
    import fcntl
    import pty
    import struct
    import termios

    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    for n in range(40):  # enough chunks for several embedding steps
        (docs / f"note{n}.txt").write_text(f"Note {n}. " + "Bees and tides and lava. " * 40)
    primary, secondary = pty.openpty()
    size = struct.pack("HHHH", 24, 100, 0, 0)  # a new pty is 0x0, where tqdm draws nothing
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, size)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen(
        [str(RAG), "build", str(docs), "--out", str(index), "--chunk-size", "200",
         "--chunk-overlap", "20"],
        stdout=subprocess.DEVNULL, stderr=secondary, stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    os.close(secondary)
    chunks = []
    while True:  # read while it runs: a full terminal buffer would block the writer
        try:
            data = os.read(primary, 65536)
        except OSError:  # EIO: the other end is closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(primary)
    proc.wait(timeout=600)
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, screen
    assert "parsing" in screen and "embedding" in screen
    assert "Loading weights" not in screen and "Batches" not in screen


def test_the_precision_is_a_setting_of_the_build(tmp_path: Path) -> None:
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    rag("build", str(docs), "--out", str(index), "--no-vector", "--precision", "int8")
    manifest = json.loads(rag("info", str(index), "--json").stdout)
    assert manifest["settings"]["precision"] == "int8"
    again = rag(
        "build", str(docs), "--out", str(index), "--no-vector", "--precision", "fp32", check=False
    )
    assert again.returncode != 0 and "precision 'int8' (asked: 'fp32')" in again.stderr
    bad = rag("build", str(docs), "--out", str(index), "--precision", "int4", check=False)
    assert bad.returncode == 2 and "invalid choice: 'int4'" in bad.stderr


def test_links_leaving_the_sources_are_skipped_unless_follow_links(tmp_path: Path) -> None:
    docs, index = corpus(tmp_path / "docs"), tmp_path / "index"
    outside = tmp_path / "outside"
    (outside / "more").mkdir(parents=True)
    (outside / "secret.txt").write_text("Plutonium handling notes, private.")
    (outside / "more" / "far.txt").write_text("Glaciers carve fjords slowly.")
    (docs / "key.txt").symlink_to(outside / "secret.txt")
    (docs / "more").symlink_to(outside / "more")
    (docs / "inner.txt").symlink_to(docs / "bees.txt")  # inside: followed as any file
    root = docs.resolve()
    built = rag("build", str(docs), "--out", str(index), "--no-vector")
    assert "4 chunks from 4 files (2 skipped, 0 failed)" in built.stdout
    assert built.stderr.splitlines() == [
        f"skipped {root / 'key.txt'}: {LEAVES_ROOT}",
        f"skipped {root / 'more'}: {LEAVES_ROOT}",
    ]
    missing = rag("search", str(index), "plutonium", "--mode", "keyword")
    assert missing.stdout.strip() == "no results"
    again = rag("update", str(index))  # the recorded selection: still not followed
    assert "is up to date" in again.stdout and "(2 skipped, 0 failed)" in again.stdout
    followed = rag("update", str(index), "--follow-links")
    assert followed.stdout.splitlines()[1:] == [
        f"  added   {root / 'key.txt'}",
        f"  added   {root / 'more' / 'far.txt'}",
    ]
    found = rag("search", str(index), "plutonium", "--mode", "keyword", "--json")
    assert sources_of(found) == ["key.txt"]
    kept = rag("update", str(index))  # recorded now: nothing removed
    assert "is up to date: 6 unchanged" in kept.stdout
    info = json.loads(rag("info", str(index), "--json").stdout)
    assert info["selection"]["follow_links"] is True
    back = rag("update", str(index), "--no-follow-links")
    assert "2 removed" in back.stdout
    fresh = rag("build", str(docs), "--out", str(tmp_path / "all"), "--no-vector", "--follow-links")
    assert "6 chunks from 6 files (0 skipped, 0 failed)" in fresh.stdout


def raw_rag(*args: str) -> tuple[str, str]:
    """``rag``'s stdout and stderr exactly as written (no newline translation)."""
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        [str(RAG), *args], capture_output=True, env=environment, timeout=600, check=False
    )
    out, err = (os.fsdecode(stream) for stream in (proc.stdout, proc.stderr))
    assert proc.returncode == 0, err
    return out, err


def controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F]


def test_control_characters_in_names_and_text_are_printed_escaped(tmp_path: Path) -> None:
    docs, index = tmp_path / "docs\x1b[31m", tmp_path / "index"
    docs.mkdir()
    evil = "evil\r\t\x07\x1b[2J.txt"
    (docs / evil).write_text("Comets grow tails near the sun.")
    (docs / "empty\x1b[8m.txt").write_bytes(b"")
    outputs = [raw_rag("build", str(docs), "--out", str(index), "--no-vector")]
    (docs / "late\r.txt").write_text("Another comet arrives late.")
    outputs.append(update := raw_rag("update", str(index)))
    outputs.append(text := raw_rag("search", str(index), "comets tails", "--mode", "keyword"))
    outputs.append(as_json := raw_rag("search", str(index), "comets", "--json", "--mode", "bm25"))
    for command in (("versions",), ("versions", "--json"), ("info",), ("info", "--json")):
        outputs.append(raw_rag(command[0], str(index), *command[1:]))
    # parsers drop control characters from text; documents given to the library keep them
    told = Document(text="Comets \x1b]0;pwned\x07 grow \x9b tails.", metadata={"source": evil})
    IndexWriter.from_documents([told], tmp_path / "given", vector=False)
    outputs.append(given := raw_rag("search", str(tmp_path / "given"), "comets", "--mode", "bm25"))
    assert [controls(out + err) for out, err in outputs] == [[]] * len(outputs)
    root = str(docs.resolve()).replace("\x1b", "\\u001b")
    assert f"skipped {root}/empty\\u001b[8m.txt: empty file" in outputs[0][1]
    assert f"  added   {root}/late\\r.txt" in update[0]
    assert "evil\\r\\t\\u0007\\u001b[2J.txt" in text[0]
    assert "Comets \\u001b]0;pwned\\u0007 grow \\u009b tails." in given[0]
    hits = json.loads(as_json[0])  # still valid JSON, meaning the original characters
    assert evil in {h["chunk"]["metadata"]["source"] for h in hits}
