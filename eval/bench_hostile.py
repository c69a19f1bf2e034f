"""Issue #38's hostile inputs about time and memory, at full size, through the calls users make.

    python eval/bench_hostile.py [--only NAME ...] [--dir DIR] [--timeout SECONDS]

Each input is generated in a temporary folder and run in a fresh process the way the issue
ran it: ``rag build SRC --out IDX --no-vector`` for a build (every source folder also holds
one small good file, so a line shows whether the rest of the build survived), the agents'
file tool inside a ``ToolsNode`` (called from an application thread) for a tool,
``parsers.load`` for a load, ``rag search`` for a search, ``Index.build`` from a caller
with threads and no ``__main__`` file for a notebook. One JSON line per input: wall
seconds, the peak resident memory of the child process and its descendants (``wait4``'s
``ru_maxrss``, in MiB), that peak over the ``baseline`` line's (an interpreter that builds a
one-file index), and the outcome (the result, or the named error's first words).

The acceptance of #38 is a named error or a correct result in at most 30 s and 1 GB extra
resident memory each. Unit tests build the same shapes small with the limits lowered
(``tests/parsers/test_hostile.py``, ``tests/indexes/test_sources.py``); this script shows the
real limits at work on the real sizes. Issue #23's bombs (decompression, quadratic trees)
are ``eval/bench_bombs.py``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' builders of crafted files

from tests.conftest import every_cell_workbook, headings_docx  # noqa: E402

MB = 1024 * 1024
RAG = [sys.executable, "-m", "ragtools.retrieval.cli"]
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]

LOAD = """
import sys
from ragtools.parsers import ParseError, load
try:
    docs = load(sys.argv[1])
    print(f"ok: {len(docs)} documents, {sum(len(d.text) for d in docs)} characters")
except ParseError as exc:
    print("ParseError: " + str(exc)[len(sys.argv[1]) + 2 :])
"""

TOOL = """
import json, multiprocessing, sys, time
from concurrent.futures import ThreadPoolExecutor
from ragtools.retrieval.tools import ToolsNode, get_tool, make_tool_call
path, timeout, options = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
tool = get_tool("simple_doc_parser", roots=[path.rsplit("/", 1)[0]], **options)
node = ToolsNode([tool], timeout=timeout)
with ThreadPoolExecutor(1) as pool:  # an application's thread, as an agent server's
    call = make_tool_call("simple_doc_parser", {"url": path})
    message = pool.submit(node.invoke, [call]).result()[0]
time.sleep(1.0)  # a parse that outlived the answer would still be running now
left = len(multiprocessing.active_children())
content = " ".join(str(message.content)[:400].split())  # (never the whole text: memory)
text = content[content.find(":") + 1 :].strip() if message.status == "error" else content
print(f"{message.status} ({left} workers left, {len(message.content)} characters): {text}")
"""

NOTEBOOK = """
import sys, threading
from ragtools.indexes import Index
stop = threading.Event()
threading.Thread(target=stop.wait, daemon=True).start()  # a Jupyter kernel's threads
index = Index.build([sys.argv[1]], sys.argv[2], vector=False, show_progress=False)
stop.set()
row = index.keyword_search("bravo 1", 1)[0][0]
print(f"built {len(index)} chunks; 'bravo 1' finds {index.chunks[row].text!r}")
"""


@dataclass(frozen=True)
class Case:
    """One input: ``make(folder)`` writes it and returns the command to run on it."""

    name: str
    make: Callable[[Path], list[str]]


def _build(src: Path, folder: Path, *extra: str) -> list[str]:
    (src / "good.md").write_text("# Kept\n\nthe good file survives\n", encoding="utf-8")
    return [*RAG, "build", str(src), "--out", str(folder / "idx"), "--no-vector", *extra]


def _src(folder: Path) -> Path:
    src = folder / "src"
    src.mkdir(parents=True, exist_ok=True)
    return src


def baseline(folder: Path) -> list[str]:
    return _build(_src(folder), folder)


def html_attributes(folder: Path) -> list[str]:
    """One element with 500,000 attributes (lxml: past 60 s in the issue)."""
    src = _src(folder)
    attributes = " ".join(f'a{n}="v"' for n in range(500_000))
    page = f"<html><body><div {attributes}>the text</div></body></html>"
    (src / "attributes.html").write_text(page, encoding="utf-8")
    return _build(src, folder)


def _repeated(path: Path, unit: bytes, size: int, end: bytes = b"") -> Path:
    """A file of ``unit`` repeated to about ``size`` bytes (a megabyte at a time), then ``end``."""
    block = unit * (MB // len(unit))
    with path.open("wb") as out:
        for _ in range(size // len(block)):
            out.write(block)
        out.write(end)
    return path


def _line(path: Path, size: int) -> Path:
    """One line of ``size`` bytes or so."""
    return _repeated(path, b"lorem ipsum dolor sit amet ", size, b"\n")


def line_200mb_build(folder: Path) -> list[str]:
    """A 200 MB single line in a build: over ``max_bytes`` (100 MiB), skipped unread."""
    src = _src(folder)
    _line(src / "line.txt", 200 * MB)
    return _build(src, folder)


def line_200mb_load(folder: Path) -> list[str]:
    """The same file through ``parsers.load``: its size policy refuses it too."""
    return [sys.executable, "-c", LOAD, str(_line(folder / "line.txt", 200 * MB))]


def line_90mb_build(folder: Path) -> list[str]:
    """A 90 MB single line, which ``max_bytes`` admits: the line cap decides."""
    src = _src(folder)
    _line(src / "line.txt", 90 * MB)
    return _build(src, folder)


def csv_cr_only(folder: Path) -> list[str]:
    """A CSV of 500,000 rows ended by lone CRs (60 s at 793 MB in the issue)."""
    src = _src(folder)
    rows = (f"{n},{WORDS[n % 9]} {n},{3 * n}\r" for n in range(500_000))
    (src / "cr.csv").write_text("n,text,value\r" + "".join(rows), encoding="utf-8", newline="")
    return _build(src, folder)


def xlsx_every_cell_tool(folder: Path) -> list[str]:
    """A 1.5 KB XLSX declaring ``A1:XFD1048576``, through the file tool in a ``ToolsNode``
    (past 120 s under ``ToolsNode(timeout=300)`` in the issue)."""
    bomb = every_cell_workbook(folder / "wide.xlsx")
    return [sys.executable, "-c", TOOL, str(bomb), "300", "{}"]


def _text(path: Path, size: int) -> Path:
    """Lines of prose, ``size`` bytes or so."""
    return _repeated(path, b"lorem ipsum dolor sit amet, consectetur adipiscing elit\n", size)


def text_200mb_tool(folder: Path) -> list[str]:
    """A 200 MB text file through the file tool under ``ToolsNode(timeout=40)``, default
    ``max_bytes``."""
    big = _text(folder / "big.txt", 200 * MB)
    return [sys.executable, "-c", TOOL, str(big), "40", "{}"]


def text_200mb_tool_admitted(folder: Path) -> list[str]:
    """The same with ``max_bytes`` raised to admit it (the issue's run: 1.48 GB, still parsing
    after the node's 40 s answer)."""
    big = _text(folder / "big.txt", 200 * MB)
    return [sys.executable, "-c", TOOL, str(big), "40", json.dumps({"max_bytes": 300 * MB})]


def json_records(folder: Path) -> list[str]:
    """JSON of 10^6 records (19 MB): valid, must be indexed."""
    src = _src(folder)
    with open(src / "records.json", "w", encoding="utf-8") as out:
        out.write("[")
        out.write(",".join(f'{{"t":"{WORDS[n % 9]} {n}"}}' for n in range(1_000_000)))
        out.write("]")
    return _build(src, folder)


def json_records_notebook(folder: Path) -> list[str]:
    """The same through ``Index.build`` from a caller with threads and no ``__main__``
    file, as in a notebook (``python -c`` here)."""
    json_records(folder)
    return [sys.executable, "-c", NOTEBOOK, str(folder / "src"), str(folder / "idx")]


def csv_rows(folder: Path) -> list[str]:
    """A 9 MB CSV (500,000 rows): valid, must be indexed."""
    src = _src(folder)
    rows = (f"{n},{WORDS[n % 9]} {n}\n" for n in range(500_000))
    (src / "rows.csv").write_text("n,text\n" + "".join(rows), encoding="utf-8")
    return _build(src, folder)


def docx_headings(folder: Path) -> list[str]:
    """A DOCX of 300,000 headings: valid, must be indexed or refused by name."""
    src = _src(folder)
    headings_docx(src / "headings.docx", 300_000)
    return _build(src, folder)


def _gitignore(folder: Path, stars: int) -> list[str]:
    src = _src(folder)
    (src / ".gitignore").write_text("*" * stars + "a\n", encoding="utf-8")
    (src / ("b" * 60 + ".txt")).write_text("a file the pattern keeps\n", encoding="utf-8")
    (src / "ignored.data").write_text("a file the pattern ignores\n", encoding="utf-8")
    return _build(src, folder)


def _search_index(folder: Path) -> Path:
    """A small index whose sources have long names of ``a`` (what a backtracking glob
    chews on), built in this process's child."""
    src = _src(folder)
    for n in range(50):
        (src / f"{'a' * 60}{n}.txt").write_text(f"alpha document {n}\n", encoding="utf-8")
    index = folder / "idx"
    subprocess.run([*RAG, "-q", "build", str(src), "--out", str(index), "--no-vector"], check=True)
    return index


def _glob(folder: Path, pattern: str) -> list[str]:
    index = _search_index(folder)
    where = json.dumps({"source": {"$glob": pattern}})
    return [*RAG, "search", str(index), "alpha", "--mode", "keyword", "--filter", where]


def sparse_40gb(folder: Path) -> list[str]:
    """A 40 GB sparse file beside the sources: skipped as too large without reading it
    (the issue's build hashed it in full: 174 s)."""
    src = _src(folder)
    with open(src / "huge.txt", "wb") as out:
        out.truncate(40 * 1024 * MB)
    return _build(src, folder)


def queries_dev_zero(folder: Path) -> list[str]:
    """``rag search --queries /dev/zero`` (2.6 GB, then a ``MemoryError`` in the issue)."""
    index = _search_index(folder)
    return [*RAG, "search", str(index), "--queries", "/dev/zero", "--mode", "keyword"]


def query_line_100mb(folder: Path) -> list[str]:
    """A 100 MB query line in a ``--queries`` file (1.6 GB in the issue)."""
    index = _search_index(folder)
    queries = _line(folder / "queries.txt", 100 * MB)
    return [*RAG, "search", str(index), "--queries", str(queries), "--mode", "keyword"]


CASES = [
    Case("baseline", baseline),
    Case("html-500000-attributes (build)", html_attributes),
    Case("line-200MB (build)", line_200mb_build),
    Case("line-200MB (load)", line_200mb_load),
    Case("line-90MB (build)", line_90mb_build),
    Case("csv-cr-only-500000-rows (build)", csv_cr_only),
    Case("xlsx-A1:XFD1048576 (tool, node timeout 300)", xlsx_every_cell_tool),
    Case("text-200MB (tool, node timeout 40)", text_200mb_tool),
    Case("text-200MB max_bytes=300MB (tool, node timeout 40)", text_200mb_tool_admitted),
    Case("json-10^6-records (build)", json_records),
    Case("json-10^6-records (Index.build, notebook: threads)", json_records_notebook),
    Case("csv-9MB-500000-rows (build)", csv_rows),
    Case("docx-300000-headings (build)", docx_headings),
    Case("gitignore-16-stars-a (build)", lambda f: _gitignore(f, 16)),
    Case("gitignore-3000-stars-a (build)", lambda f: _gitignore(f, 3000)),
    Case("glob-*a*25-b (search)", lambda f: _glob(f, "*a" * 25 + "b")),
    Case("glob-5000-stars-x (search)", lambda f: _glob(f, "*" * 5000 + "x")),
    Case("sparse-40GB (build)", sparse_40gb),
    Case("queries-/dev/zero (search)", queries_dev_zero),
    Case("query-line-100MB (search)", query_line_100mb),
]


def _outcome(returncode: int, stdout: str, stderr: str) -> str:
    """The result line (last line of stdout), or the error's first words (stderr)."""
    out = [line.strip() for line in stdout.splitlines() if line.strip()]
    err = [line.strip() for line in stderr.splitlines() if line.strip()]
    failed = [line for line in err if line.startswith("failed")]
    failed += [line for line in err if "failed" in line.lower() or "error" in line.lower()]
    if returncode == 0:
        result = out[-1] if out else "(no output)"
        return (result + (" | " + failed[0] if failed else ""))[:300]
    return f"exit {returncode}: " + (err[-1] if err else out[-1] if out else "")[:300]


def _tail(output: IO[bytes]) -> str:
    """The last 64 KiB a child wrote: reading more would grow this process, and every child
    started after it would inherit that peak (see :func:`_make`)."""
    output.seek(max(0, output.seek(0, os.SEEK_END) - 65536))
    return output.read().decode(errors="replace")


def run(command: list[str], timeout: float) -> tuple[float, int, str]:
    """Run ``command`` in a process group of its own; seconds, peak MiB, outcome."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, start_new_session=True)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                os.killpg(child.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.05)
        seconds = time.perf_counter() - start
        stdout, stderr = _tail(out), _tail(err)
    code = os.waitstatus_to_exitcode(status)
    if seconds > timeout:
        outcome = f"killed by the bench at {timeout:g} s"
    else:
        outcome = _outcome(code, stdout, stderr)
    return round(seconds, 1), round(usage.ru_maxrss / 1024), outcome  # KiB on Linux


def _make(name: str, folder: Path) -> list[str]:
    """Write input ``name`` in a process of its own: a child inherits its parent's peak
    resident memory through ``fork`` and ``exec``, so a parent that had built a 100 MB
    string would be counted in every child after it."""
    done = subprocess.run(
        [sys.executable, __file__, "--make", name, str(folder)],
        capture_output=True,
        text=True,
        check=True,
    )
    command: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return command


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="run these inputs (substrings of names)")
    parser.add_argument("--dir", type=Path, help="write each input under DIR (then deleted)")
    parser.add_argument("--timeout", type=float, default=600.0, help="kill a child after this")
    parser.add_argument("--make", nargs=2, metavar=("NAME", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    by_name = {case.name: case for case in CASES}
    if args.make:
        print(json.dumps(by_name[args.make[0]].make(Path(args.make[1]))))
        return
    wanted = args.only or []
    cases = [
        c for c in CASES if not wanted or c.name == "baseline" or any(o in c.name for o in wanted)
    ]
    print(json.dumps({"load_average": [round(x, 2) for x in os.getloadavg()]}), flush=True)
    base = 0
    for case in cases:
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            seconds, peak, outcome = run(_make(case.name, Path(tmp)), args.timeout)
        base = peak if case.name == "baseline" else base
        row = {"input": case.name, "seconds": seconds, "peak_rss_mb": peak}
        print(json.dumps({**row, "extra_rss_mb": peak - base, "outcome": outcome}), flush=True)
    print(json.dumps({"load_average": [round(x, 2) for x in os.getloadavg()]}), flush=True)


if __name__ == "__main__":
    main()
