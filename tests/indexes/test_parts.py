"""Big record files parsed in parts: each worker process makes the documents and chunks of its
share of a CSV or JSON file into a spill of its own, which the build's spill adopts in order
(#38 item 8: a JSON of 10^6 records and a CSV of 500,000 rows must index within the bound).

The reference is the same build with the file taken whole in this process: the index on disk
is byte for byte the same, a bad file fails with the same message, and nothing of a failed
file's parts is left.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import multiprocessing
import os
import signal
import sys
import threading
import types
from collections.abc import Iterable
from pathlib import Path

import pytest

from ragtools.indexes import Index
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.store.chunks import read_chunks
from ragtools.indexes.store.spill import ChunkSpill, SpillParts
from ragtools.parsers import Document, _pool
from ragtools.parsers._budget import budget_message
from ragtools.parsers.loading import load_files

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


def _parts(monkeypatch: pytest.MonkeyPatch, workers: int = 3) -> None:
    """Every record file in ``workers`` parts, whatever its size and the machine's cores."""
    monkeypatch.setattr(_pool, "PARTS_MIN_BYTES", 1)
    monkeypatch.setattr(_pool, "MAX_PARTS", workers)
    monkeypatch.setattr(os, "cpu_count", lambda: workers)
    # Parts are made by forked workers, which a caller starts when it has a single thread:
    # a test process may hold idle threads of earlier tests (a search's pool).
    monkeypatch.setattr(_pool, "_mp_context", lambda: multiprocessing.get_context("fork"))


def _whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pool, "PARTS_MIN_BYTES", 1 << 62)


def _files(index: Path) -> dict[str, list[str]]:
    """The SHA-256 of every file of the index's segments, by its path below its segment (the
    segment names derive from the manifests, which hold the build time)."""
    found: dict[str, list[str]] = {}
    for path in sorted((index / "segments").rglob("*")):
        if path.is_file() and path.name != "manifest.json":
            below = path.relative_to(index / "segments").parts[1:]
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found.setdefault("/".join(below), []).append(digest)
    return {name: sorted(digests) for name, digests in found.items()}


def _corpus(folder: Path) -> Path:
    """Record files of every kind the parts cut differently, and a Markdown file."""
    folder.mkdir()
    rows = "".join(f'{n},"{WORDS[n % 9]} {n}, ""quoted""",{3 * n}\n' for n in range(2_000))
    (folder / "rows.csv").write_text("n,text,value\n" + rows, encoding="utf-8")
    beir = (
        json.dumps({"_id": f"d{n}", "title": f"Title {n}" if n % 4 else "", "text": f"body {n}"})
        for n in range(1_500)
    )
    (folder / "corpus.jsonl").write_text("\n".join(beir), encoding="utf-8")
    mixed: list[object] = [
        {"text": f"nested \ud800 record {n}", "meta": {"row": n, "tag": "x\udc80"}}
        for n in range(700)
    ]
    mixed[3] = {"text": ""}  # no text: skipped
    mixed[400] = "a string record is its text"
    (folder / "mixed.json").write_text(json.dumps(mixed), encoding="utf-8")  # \ud800 escapes
    same = [{"text": "the same text in every record"}] * 50
    (folder / "same.json").write_text(json.dumps(same), encoding="utf-8")
    (folder / "notes.md").write_text("# Notes\n\nbravo charlie, a Markdown file\n")
    return folder


@pytest.mark.parametrize("shards", [1, 2])
def test_an_index_built_from_record_files_in_parts_is_the_one_built_from_them_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, shards: int
) -> None:
    """Every file of every segment, and the warning of the file with lone surrogates."""
    src = _corpus(tmp_path / "src")
    _whole(monkeypatch)
    whole = Index.build([src], tmp_path / "whole", vector=False, shards=shards)
    _parts(monkeypatch)
    with caplog.at_level(logging.DEBUG, logger=_pool.__name__):
        parted = Index.build([src], tmp_path / "parted", vector=False, shards=shards)
    pools = [m.split() for m in caplog.messages if m.startswith("parsing in")]
    assert sum(int(words[-2]) for words in pools) == 12  # 4 record files (by shard) in 3 parts
    assert len(parted) == len(whole) > 4_000
    assert _files(tmp_path / "parted") == _files(tmp_path / "whole")
    mixed = f"{src / 'mixed.json'}: 1396 lone surrogates (not characters) replaced by U+FFFD"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [mixed] * 2  # once a build, the total of the parts
    for query in ("bravo 1234", "Title 7", "nested record 12", "the same text"):
        assert parted.keyword_search(query, 5) == whole.keyword_search(query, 5)


def _spill_load(
    files: Iterable[Path], tmp: Path, budget: float | None = 30.0
) -> tuple[list[tuple[str, str, str]], list[str]]:
    """The errors of a ``load_files`` into a build's spill, and the sources of the chunks it
    kept; no part's spill may be left."""
    staging = tmp / "staging"
    staging.mkdir()
    with ChunkSpill.of(staging, IndexSettings()) as spilled:
        paths = list(files)
        result = load_files(paths, sink=spilled, relative_to=tmp, time_budget=budget)
        spilled.write_chunks(tmp / "chunks.out", range(len(paths)))
    assert sorted(p.name for p in staging.iterdir()) == ["chunks.jsonl", "texts.txt", "tokens.txt"]
    errors = [(Path(e.path).name, e.error, e.message) for e in result.errors]
    return errors, sorted({c.source for c in read_chunks(tmp / "chunks.out")})


def _bad_records(folder: Path) -> list[Path]:
    folder.mkdir()
    records: list[object] = [{"text": f"record {n}"} for n in range(3_000)]
    records[1_200] = 17  # in the second part, and a later one in the third: the first fails
    records[2_500] = [1]  # the file, whichever part checks it
    bad = folder / "bad.json"
    bad.write_text(json.dumps(records), encoding="utf-8")
    beir = [json.dumps({"_id": f"d{n % 2_800}", "text": f"body {n}"}) for n in range(3_000)]
    twice = folder / "twice.jsonl"  # d0 again at line 2,801
    twice.write_text("\n".join(beir), encoding="utf-8")
    good = folder / "good.csv"
    good.write_text("n,text\n" + "".join(f"{n},row {n}\n" for n in range(3_000)))
    return [bad, good, twice]


def test_a_bad_record_fails_its_file_in_parts_as_it_fails_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every part reads and checks the whole file, so the first bad record, wherever it is,
    fails the file with the message of a whole parse, and the good file is kept."""
    files = _bad_records(tmp_path / "src")
    _whole(monkeypatch)
    (tmp_path / "a").mkdir()
    whole = _spill_load(files, tmp_path / "a")
    _parts(monkeypatch)
    (tmp_path / "b").mkdir()
    assert _spill_load(files, tmp_path / "b") == whole
    errors, sources = whole
    not_object = "record 1201 is a int; records must be objects or strings"
    twice = "duplicate _id 'd0' in records 1 and 2801; ids must be unique"
    assert errors == [
        ("bad.json", "ParseError", f"{files[0]}: {not_object}"),
        ("twice.jsonl", "ParseError", f"{files[2]}: {twice}"),
    ]
    assert sources == ["good.csv"]


def test_parts_over_the_time_budget_fail_their_file_with_the_budget_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _bad_records(tmp_path / "src")[1:2]
    _parts(monkeypatch, workers=2)
    monkeypatch.setattr(_pool, "file_budget", lambda seconds, size, name: 0.001)
    errors, sources = _spill_load(files, tmp_path, budget=0.001)
    assert errors == [("good.csv", "ParseError", f"{files[0]}: {budget_message(0.001)}")]
    assert sources == []


class _KillingParts(SpillParts):
    """A recipe whose worker of the first file's second part dies (a crash, or the kernel's
    out-of-memory killer) as it opens its spill."""

    def open(self, file: int, part: int) -> ChunkSpill:
        spill = super().open(file, part)
        if (file, part) == (0, 1):
            os.kill(os.getpid(), signal.SIGKILL)
        return spill


def test_a_part_whose_worker_dies_fails_its_file_alone_and_leaves_no_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _bad_records(tmp_path / "src")[1:2]
    small = tmp_path / "src" / "small.csv"
    small.write_text("n,text\n1,a small file\n")
    _parts(monkeypatch, workers=2)
    staging = tmp_path / "staging"
    staging.mkdir()
    with ChunkSpill.of(staging, IndexSettings()) as spilled:
        monkeypatch.setattr(ChunkSpill, "parts", _KillingParts(staging, IndexSettings()))
        result = load_files([*files, small], sink=spilled, relative_to=tmp_path)
        spilled.write_chunks(tmp_path / "chunks.out", range(2))
    (error,) = result.errors
    assert error.path == str(files[0])
    assert "the worker process parsing it died" in error.message
    assert [c.text for c in read_chunks(tmp_path / "chunks.out")] == ["n: 1\ntext: a small file"]
    assert sorted(p.name for p in staging.iterdir()) == ["chunks.jsonl", "texts.txt", "tokens.txt"]


class _FullDiskParts(SpillParts):
    def open(self, file: int, part: int) -> ChunkSpill:
        raise OSError(errno.ENOSPC, "No space left on device", str(self.path(file, part)))


def test_a_full_disk_in_a_part_stops_the_load_as_it_does_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's ``OSError`` travels back and is raised here, where the build turns a full
    disk into its named error (as for a file taken whole)."""
    files = _bad_records(tmp_path / "src")[1:2]
    _parts(monkeypatch, workers=2)
    staging = tmp_path / "staging"
    staging.mkdir()
    with ChunkSpill.of(staging, IndexSettings()) as spilled:
        monkeypatch.setattr(ChunkSpill, "parts", _FullDiskParts(staging, IndexSettings()))
        with pytest.raises(OSError) as raised:
            load_files(files, sink=spilled, relative_to=tmp_path)
    assert raised.value.errno == errno.ENOSPC
    assert raised.value.filename == str(staging / "part-0-0")


def test_a_spill_adopts_parts_as_if_it_had_taken_the_file(tmp_path: Path) -> None:
    """The parts' bytes in order, their rows by source, and each document's text once: one
    already taken from an earlier file is not stored again."""
    settings = IndexSettings(chunk_size=60, chunk_overlap=10)
    shared = Document(id="same", text="one text stored once, whichever file has it first")
    first = [Document(text=f"first file {n}. " * 5, metadata={"source": "a.md"}) for n in range(3)]
    second = [
        Document(text=f"second file {n}. " * 4, metadata={"source": "b.md"}) for n in range(7)
    ]
    second[4] = shared
    whole_dir, parted_dir = tmp_path / "whole", tmp_path / "parted"
    whole_dir.mkdir()
    parted_dir.mkdir()
    with ChunkSpill.of(whole_dir, settings) as whole, ChunkSpill.of(parted_dir, settings) as parted:
        for spill in (whole, parted):
            spill.take(0, [*first, shared])
        whole.take(1, second)
        states = []
        for part, share in enumerate((second[:2], second[2:5], second[5:])):
            with parted.parts.open(1, part) as spilled:
                spilled.take(1, share)
                states.append(spilled.state(1))
        parted.adopt(1, json.loads(json.dumps(states)))  # as they travel
        assert sorted(p.name for p in parted_dir.iterdir()) == [
            "chunks.jsonl",
            "texts.txt",
            "tokens.txt",
        ]
        for spill, out in ((whole, "whole.jsonl"), (parted, "parted.jsonl")):
            spill.write_chunks(tmp_path / out, range(2))
        assert list(parted.texts(range(2))) == list(whole.texts(range(2)))
        tokens = [
            [(b.tokens, b.lengths.tolist()) for b in spill.tokens(range(2), 4)]
            for spill in (whole, parted)
        ]
        assert tokens[0] == tokens[1]
        assert parted.files_rows(range(2)) == whole.files_rows(range(2))
        assert (parted.rows, parted.documents) == (whole.rows, whole.documents)
    assert read_chunks(tmp_path / "parted.jsonl") == read_chunks(tmp_path / "whole.jsonl")


def _main(monkeypatch: pytest.MonkeyPatch, file: str | None) -> None:
    """The caller's ``__main__``: a script's (``file``) or a notebook's (no file, no spec)."""
    main = types.ModuleType("__main__")
    if file is not None:
        main.__file__ = file
    monkeypatch.setitem(sys.modules, "__main__", main)


def test_a_script_with_threads_takes_a_big_record_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Workers would be spawned then, and a spawned child runs the script again, which a
    script without a ``__main__`` guard cannot take: the file is parsed in this process,
    as before parts existed."""
    files = _bad_records(tmp_path / "src")[1:2]
    monkeypatch.setattr(_pool, "PARTS_MIN_BYTES", 1)
    _main(monkeypatch, str(tmp_path / "script.py"))
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        with caplog.at_level(logging.DEBUG, logger=_pool.__name__):
            errors, sources = _spill_load(files, tmp_path)
    finally:
        stop.set()
        thread.join()
    assert (errors, sources) == ([], ["src/good.csv"])
    assert not [m for m in caplog.messages if m.startswith("parsing in")]


def test_a_notebook_with_threads_parses_a_big_record_file_in_spawned_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A notebook's ``__main__`` (a Jupyter kernel has threads) is not run again by a
    spawned child: its big record files are parsed in parts, by spawned workers, into the
    chunks a whole parse makes."""
    (tmp_path / "whole").mkdir()
    (tmp_path / "parted").mkdir()
    _whole(monkeypatch)
    whole = _spill_load(_bad_records(tmp_path / "whole" / "src")[1:2], tmp_path / "whole")
    monkeypatch.setattr(_pool, "PARTS_MIN_BYTES", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    _main(monkeypatch, None)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert _pool._mp_context().get_start_method() == "spawn"
        with caplog.at_level(logging.DEBUG, logger=_pool.__name__):
            parted = _spill_load(
                _bad_records(tmp_path / "parted" / "src")[1:2], tmp_path / "parted"
            )
    finally:
        stop.set()
        thread.join()
    assert parted == whole == ([], ["src/good.csv"])
    assert [m for m in caplog.messages if m.startswith("parsing in")]

    def chunks(tmp: Path) -> list[tuple[str, str, dict[str, object]]]:
        """Ids, texts and metadata but the file's path and time, which differ here."""
        return [
            (c.id, c.text, {k: v for k, v in c.metadata.items() if k not in ("path", "mtime")})
            for c in read_chunks(tmp / "chunks.out")
        ]

    assert chunks(tmp_path / "parted") == chunks(tmp_path / "whole")
