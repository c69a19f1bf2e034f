"""Qwen-Agent's file tools over real PDFs: retrieval, doc_parser, simple_doc_parser.

The vector half uses the deterministic FakeEmbedder (no model to load); token budgets are
counted with the bundled MiniLM tokenizer and checked against ``transformers``' own count.
"""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from transformers import AutoTokenizer

from ragtools.indexes.dense.embed import SentenceTransformerEmbedder
from ragtools.indexes.dense.model_dir import default_model_path
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.tools import ToolsNode, create_retriever_tool, get_tool, make_tool_call
from ragtools.retrieval.tools.budget import embedder_counter, fit_blocks, token_counter
from ragtools.retrieval.tools.parse_cache import ParseCache
from ragtools.retrieval.tools.qwen import DocParser, Retrieval, SimpleDocParser
from ragtools.retrieval.tools.retriever_tool import format_hit
from tests.conftest import every_cell_workbook, headings_docx, parse_workers, wait_until
from tests.retrieval.tools.conftest import FakeRetriever

PDFS = (Path(__file__).resolve().parents[4] / "shared" / "pdfs").resolve()  # ../shared: a link?
ZEN = str(PDFS / "google-doc-document.pdf")  # 1 page: "Beautiful is better than ugly."
COLUMNS = str(PDFS / "multicolumn.pdf")  # 3 pages of a two-column article


@pytest.fixture(scope="module")
def reference_tokens() -> Any:
    """Token counts by ``transformers`` (an independent path to the same vocabulary)."""
    tokenizer = AutoTokenizer.from_pretrained(str(default_model_path()))
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False))


def _retrieval(tmp_path: Path, **config: Any) -> Retrieval:
    tool = get_tool(
        "retrieval",
        embedder=FakeEmbedder(dim=64),
        cache_dir=str(tmp_path),
        roots=[PDFS, tmp_path],
        **config,
    )
    assert isinstance(tool, Retrieval)
    return tool


def _assert_whole_hits(content: str, hits: list[Hit]) -> int:
    """``content`` is the first n hits rendered whole; returns n (>= 1)."""
    blocks = content.split("\n\n[")
    rendered = [format_hit(hit) for hit in hits]
    assert content == "\n\n".join(rendered[: len(blocks)])
    return len(blocks)


class TestAgentLoop:
    def test_three_calls_in_order_and_no_second_parse(
        self, tmp_path: Path, reference_tokens: Any
    ) -> None:
        retrieval = _retrieval(tmp_path, max_ref_token=800)
        node = ToolsNode([retrieval])
        files = [ZEN, COLUMNS]
        calls = [
            make_tool_call(
                "retrieval", {"query": "Beautiful is better than ugly", "files": files}, id="a"
            ),
            make_tool_call(
                "retrieval", {"query": "two-column document abstract", "files": files}, id="b"
            ),
            make_tool_call(
                "retrieval", {"query": "anything", "files": [str(PDFS / "nope.pdf")]}, id="c"
            ),
        ]
        first, second, missing = node.invoke(calls)
        assert [m.tool_call_id for m in (first, second, missing)] == ["a", "b", "c"]
        assert [m.status for m in (first, second, missing)] == ["success", "success", "error"]
        # files given as absolute paths are cited by name: no directory reaches the model
        assert first.content.startswith(f"[1] {Path(ZEN).name}, page 1 (chunk ")
        assert str(PDFS) not in first.content + second.content
        assert "Beautiful is better than ugly." in first.content
        assert f"] {Path(COLUMNS).name}, page " in second.content
        for message in (first, second):
            assert reference_tokens(message.content) <= 800
            shown = _assert_whole_hits(message.content, message.artifact)
            assert 1 <= shown < len(message.artifact)  # the budget, not the hits, ended it
        assert "nope.pdf" in missing.content and "no such file" in missing.content
        assert retrieval.parse_cache.parses == 2  # each real file once, in the first call

        again = node.invoke(calls[:2])
        assert [m.content for m in again] == [first.content, second.content]
        assert retrieval.parse_cache.parses == 2  # nothing parsed again

    def test_a_new_tool_over_the_same_cache_parses_nothing(self, tmp_path: Path) -> None:
        query = {"query": "Beautiful is better than ugly", "files": [ZEN]}
        before = _retrieval(tmp_path).call(query)
        fresh = _retrieval(tmp_path)
        assert fresh.call(query) == before
        assert fresh.parse_cache.parses == 0


class TestRetrievalTool:
    def test_files_keyword_and_budget_in_tokens(
        self, tmp_path: Path, reference_tokens: Any
    ) -> None:
        retrieval = _retrieval(tmp_path, max_ref_token=120, rag_searchers=["keyword_search"])
        content = retrieval.call({"query": "lorem ipsum dolor"}, files=[COLUMNS])
        assert 0 < reference_tokens(content) <= 120
        assert content.startswith(f"[1] {Path(COLUMNS).name}")

    def test_budget_larger_keeps_more_whole_hits(self, tmp_path: Path) -> None:
        query = {"query": "lorem ipsum dolor sit amet", "files": [COLUMNS]}
        chunks = {"chunk_size": 500, "chunk_overlap": 50}
        small = _retrieval(tmp_path, max_ref_token=400, **chunks).call(query)
        large = _retrieval(tmp_path, max_ref_token=3000, **chunks).call(query)
        assert not small.endswith("…")  # whole hits only
        assert large.startswith(small + "\n\n[") and len(large) > len(small)

    @pytest.mark.parametrize(
        "searchers",
        [["front_page_search"], ["vector_search"], ["keyword_search", "front_page_search"]],
    )
    def test_searchers(self, tmp_path: Path, searchers: list[str]) -> None:
        retrieval = _retrieval(tmp_path, rag_searchers=searchers)
        hits = retrieval.search("lorem ipsum", [ZEN, COLUMNS])
        assert hits and all(isinstance(hit, Hit) for hit in hits)
        if searchers == ["front_page_search"]:  # each document's opening chunk
            assert {hit.chunk.metadata["path"] for hit in hits} == {ZEN, COLUMNS}

    @pytest.mark.parametrize(
        "config",
        [{"rag_searchers": ["web_search"]}, {"rag_searchers": []}, {"max_ref_token": 0}, {"k": 0}],
    )
    def test_bad_config_is_a_config_error(self, tmp_path: Path, config: dict[str, Any]) -> None:
        with pytest.raises(ConfigError):
            _retrieval(tmp_path, **config)

    @pytest.mark.parametrize(
        ("arguments", "expected"),
        [
            ({"query": "x"}, "needs files"),
            ({"query": "x", "files": ["https://example.com/a.pdf"]}, "only local files"),
            ({"query": "x", "files": [str(PDFS / "invalid.pdf")]}, "invalid.pdf"),
            ({"query": "x", "files": [str(PDFS / "skew.pdf")]}, "skew.pdf"),
        ],
    )
    def test_file_errors_reach_the_model(
        self, tmp_path: Path, arguments: dict[str, Any], expected: str
    ) -> None:
        message = _retrieval(tmp_path).invoke(make_tool_call("retrieval", arguments, id="e"))
        assert message.status == "error" and expected in message.content


class TestParsers:
    def test_simple_doc_parser_text(self, tmp_path: Path) -> None:
        parser = SimpleDocParser(cache_dir=str(tmp_path), roots=[PDFS])
        text = parser.call({"url": ZEN})
        assert text.startswith("Example document\nBeautiful is better than ugly.")
        parser = get_tool("simple_doc_parser", cache_dir=str(tmp_path), roots=[PDFS])
        assert parser.call(f"url={ZEN}") == text

    def test_doc_parser_chunks_with_tokens(self, tmp_path: Path, reference_tokens: Any) -> None:
        parser = DocParser(cache_dir=str(tmp_path), chunk_size=400, chunk_overlap=0, roots=[PDFS])
        rows = json.loads(parser.call({"url": COLUMNS}))
        assert len(rows) > 3 and {row["metadata"]["page"] for row in rows} == {1, 2, 3}
        assert all(row["token"] == reference_tokens(row["content"]) for row in rows)
        message = parser.invoke(make_tool_call("doc_parser", {"url": COLUMNS}, id="d"))
        assert [chunk.text for chunk in message.artifact] == [row["content"] for row in rows]


class TestParseCache:
    def test_keyed_by_content_path_and_settings(self, tmp_path: Path) -> None:
        copy = tmp_path / "zen.pdf"
        copy.write_bytes(Path(ZEN).read_bytes())
        cache = ParseCache(tmp_path / "cache")
        first = cache.load(copy)
        assert cache.load(copy) == first and (cache.parses, cache.hits) == (1, 1)
        assert cache.key(copy) != cache.key(ZEN)  # same bytes, another source
        assert ParseCache(tmp_path / "cache", settings={"ocr": True}).key(copy) != cache.key(copy)
        copy.write_bytes(Path(COLUMNS).read_bytes())  # edited in place: parsed again
        assert cache.load(copy)[0].text != first[0].text and cache.parses == 2
        assert not list((tmp_path / "cache").glob("*.tmp"))

    def test_damaged_entry_is_parsed_again(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        cache = ParseCache(tmp_path)
        documents = cache.load(ZEN)
        entry = tmp_path / f"{cache.key(ZEN)}.json"
        entry.write_text(entry.read_text()[:50])
        assert ParseCache(tmp_path).load(ZEN) == documents
        assert "unreadable parse cache entry" in caplog.text

    def test_shared_between_processes(self, tmp_path: Path) -> None:
        script = (
            "import sys\n"
            "from ragtools.retrieval.tools.parse_cache import ParseCache\n"
            "cache = ParseCache(sys.argv[1])\n"
            "print(len(cache.load(sys.argv[2])), cache.parses)\n"
        )
        runs = [
            subprocess.Popen(
                [sys.executable, "-c", script, str(tmp_path), COLUMNS],
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        outputs = [run.communicate()[0].split() for run in runs]
        assert all(run.returncode == 0 for run in runs)
        assert {pages for pages, _ in outputs} == {"3"}
        cache = ParseCache(tmp_path)
        assert len(cache.load(COLUMNS)) == 3 and cache.parses == 0  # the entry is whole
        assert len(list(tmp_path.glob("*.json"))) == 1


class TestBudget:
    def test_whole_blocks_and_a_shortened_first_one(self) -> None:
        def words(text: str) -> int:
            return len(text.split())

        blocks = ["one two three", "four five", "six seven eight nine"]
        assert fit_blocks(blocks, 5, words, " ") == ["one two three", "four five"]
        assert fit_blocks(blocks, 4, words, " ") == ["one two three"]
        [short] = fit_blocks(blocks, 2, words, " ")
        assert short.endswith("…") and words(short) <= 2 and "one two three".startswith(short[:-1])
        with pytest.raises(ConfigError):
            fit_blocks(blocks, 0, words)

    def test_token_counter_forms(self, reference_tokens: Any) -> None:
        text = "Beautiful is better than ugly; 深圳 tokenises too."
        assert token_counter()(text) == reference_tokens(text)
        assert token_counter(str(default_model_path()))(text) == reference_tokens(text)
        assert token_counter(len)(text) == len(text)
        with pytest.raises(ConfigError, match="tokenizer"):
            token_counter("no/such/tokenizer-anywhere")

    def test_embedder_counter(self, reference_tokens: Any) -> None:
        def split_words(text: str, add_special_tokens: bool = True) -> list[str]:
            return text.split()

        embedder = SimpleNamespace(
            model=SimpleNamespace(tokenizer=SimpleNamespace(encode=split_words))
        )
        assert embedder_counter(embedder)("a b c") == 3
        text = "Readability counts."
        assert embedder_counter(FakeEmbedder())(text) == reference_tokens(text)  # no tokenizer

    @pytest.mark.slow
    def test_embedder_counter_of_the_real_model(self, reference_tokens: Any) -> None:
        text = "Although practicality beats purity; 深圳."
        assert embedder_counter(SentenceTransformerEmbedder())(text) == reference_tokens(text)

    def test_create_retriever_tool_max_content_tokens(
        self, retriever: FakeRetriever, reference_tokens: Any
    ) -> None:
        rendered = [format_hit(hit) for hit in retriever.hits]
        budget = reference_tokens("\n\n".join(rendered[:2]))
        docs = create_retriever_tool(retriever, "docs", "Search.", max_content_tokens=budget)
        content, artifact = docs.run_with_artifact({"query": "q"})
        assert content == "\n\n".join(rendered[:2]) and artifact == retriever.hits
        with pytest.raises(ConfigError, match="max_content_tokens"):
            create_retriever_tool(retriever, "docs", "Search.", max_content_tokens=0)


class TestHostileFiles:
    """Issue #38: a file tool inside a ``ToolsNode`` runs in a thread, where no timer can stop
    a parser; the parse runs in a worker process that is killed at its budget, at its memory
    bound, or when the node stops waiting."""

    @staticmethod
    def _invoke_in_thread(node: ToolsNode, call: Any, **options: Any) -> Any:
        with ThreadPoolExecutor(1) as pool:  # an application's thread, as an agent server's
            return pool.submit(node.invoke, [call], **options).result()[0]

    def _parse_in_node(self, file: Path, **options: Any) -> Any:
        """The file tool's answer for ``file`` under ``ToolsNode(timeout=300)``."""
        tool = get_tool("simple_doc_parser", roots=[file.parent], **options)
        call = make_tool_call("simple_doc_parser", {"url": str(file)})
        return self._invoke_in_thread(ToolsNode([tool], timeout=300), call)

    def test_a_workbook_declaring_every_cell_is_read_at_once(self, tmp_path: Path) -> None:
        """It ran past 120 s under ``ToolsNode(timeout=300)``; its declared range is no
        longer trusted, so the call answers with the two cells it holds."""
        message = self._parse_in_node(every_cell_workbook(tmp_path / "wide.xlsx"))
        assert message.status == "success"
        assert "first\nlast" in message.content

    def test_a_slow_file_ends_at_the_parse_budget(self, tmp_path: Path) -> None:
        slow = headings_docx(tmp_path / "slow.docx", 300_000)  # seconds of python-docx
        before = parse_workers()
        message = self._parse_in_node(slow, time_budget=2)
        assert message.status == "error"
        assert "slow.docx: parsing took longer than the time budget of " in message.content
        assert parse_workers() <= before

    @pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
    def test_a_node_timeout_stops_the_parse(self, tmp_path: Path, mode: str) -> None:
        """The node answers at its timeout, and the parse behind it stops too: no worker
        process and no tool thread are left running."""
        bomb = headings_docx(tmp_path / "slow.docx", 300_000)  # seconds of python-docx
        tool = get_tool("retrieval", roots=[tmp_path], cache_dir=str(tmp_path), time_budget=600)
        node = ToolsNode([tool], timeout=2)
        call = make_tool_call("retrieval", {"query": "first", "files": [str(bomb)]})
        before = parse_workers()
        if mode == "invoke":
            message = self._invoke_in_thread(node, call)
        else:
            message = asyncio.run(node.ainvoke([call]))[0]
        assert message.status == "error"
        assert "did not finish within its timeout of 2 s" in message.content
        assert wait_until(lambda: parse_workers() <= before)
        assert wait_until(
            lambda: not any(t.name.startswith("tool-") for t in threading.enumerate())
        )

    @pytest.mark.stress
    def test_a_200_mb_text_file_stops_when_the_node_stops_waiting(self, tmp_path: Path) -> None:
        """The issue's 200 MB text file parsed on after the node's timeout had answered and
        reached 1.48 GB. Now the node answers at its timeout, the worker parsing the file is
        killed then, and this process grows by far less than the file's gigabyte."""
        big = tmp_path / "big.txt"
        line = b"lorem ipsum dolor sit amet, consectetur adipiscing elit\n"
        with big.open("wb") as handle:
            for _ in range(200):
                handle.write(line * 18_000)  # 1 MB
        tool = get_tool("simple_doc_parser", roots=[tmp_path], max_bytes=300 * 1024 * 1024)
        node = ToolsNode([tool], timeout=5)  # parsing it takes some 30 s
        before = parse_workers()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        message = self._invoke_in_thread(
            node, make_tool_call("simple_doc_parser", {"url": str(big)})
        )
        assert message.status == "error"
        assert "did not finish within its timeout of 5 s" in message.content
        assert wait_until(lambda: parse_workers() <= before, seconds=5)
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - peak < 1 << 30
