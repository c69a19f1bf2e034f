"""Hostile arguments: deep filters and undecodable bytes end in one line, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.filters import MAX_FILTER_DEPTH, compile_filter

RAG = Path(sys.executable).with_name("rag")
CAFE = b"caf\xe9.txt"  # a Latin-1 file name: not UTF-8


def rag(*args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        [os.fsencode(RAG), *args], capture_output=True, env=env, timeout=600, check=False
    )


def _nested_not(depth: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"page": 1}
    for _ in range(depth):
        spec = {"$not": spec}
    return spec


def test_filter_nesting_past_the_limit_is_a_config_error() -> None:
    compile_filter(_nested_not(MAX_FILTER_DEPTH - 1))  # within the limit: fine
    with pytest.raises(ConfigError, match=f"nested more than {MAX_FILTER_DEPTH} levels"):
        compile_filter(_nested_not(5_000))


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    docs = root / "docs"
    docs.mkdir()
    (docs / "bees.txt").write_text("Honey bees dance to point at flowers.", encoding="utf-8")
    (docs / os.fsdecode(CAFE)).write_text("Espresso is brewed under pressure.", encoding="utf-8")
    out = root / "index"
    proc = rag("build", str(docs), "--out", str(out), "--no-vector")
    assert proc.returncode == 0, proc.stderr
    assert b"2 chunks from 2 files (0 skipped, 0 failed)" in proc.stdout
    return out


def test_a_filter_nested_330_deep_is_one_line(index: Path) -> None:
    spec = json.dumps(_nested_not(330))
    proc = rag("search", str(index), "bees", "--mode", "keyword", "--filter", spec)
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1
    # JSON5's recursive parser gives up first; either way one line naming the nesting limit
    assert lines[0] == "rag: error: --filter is nested too deep (at most 32 levels)"


def test_an_undecodable_query_byte_is_replaced(index: Path) -> None:
    proc = rag("search", str(index), b"bees \xff", "--json")  # hybrid mode, the default
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["chunk"]["metadata"]["source"].endswith("bees.txt")


def test_a_source_name_that_is_not_utf8_is_printed(index: Path) -> None:
    proc = rag("search", str(index), "espresso", "--mode", "keyword", "--json")
    assert proc.returncode == 0, proc.stderr
    source = json.loads(proc.stdout)[0]["chunk"]["metadata"]["source"]
    assert os.fsencode(source).endswith(CAFE)  # the escape reads back to the same name
    proc = rag("search", str(index), "espresso", "--mode", "keyword")
    assert proc.returncode == 0 and b"caf\\udce9.txt" in proc.stdout


def test_an_mcp_result_naming_a_source_that_is_not_utf8_serialises(index: Path) -> None:
    pytest.importorskip("mcp")
    from ragtools.indexes.index import Index
    from ragtools.retrieval.integrations.mcp import _result
    from ragtools.retrieval.keyword import KeywordRetriever
    from ragtools.retrieval.tools.retriever_tool import format_hits

    hits = KeywordRetriever(Index.open(index), k=1).invoke("espresso")
    assert os.fsencode(hits[0].chunk.source).endswith(CAFE)
    result = _result(format_hits(hits), {"hits": [h.model_dump(mode="json") for h in hits]})
    wire = json.loads(result.model_dump_json(by_alias=True, exclude_none=True))
    assert wire["content"][0]["text"].count("caf\\udce9.txt") == 1
    assert wire["structuredContent"]["hits"][0]["chunk"]["metadata"]["source"].endswith(
        "caf\\udce9.txt"
    )


def test_an_undecodable_filter_byte_is_replaced(index: Path) -> None:
    spec = b'{"source": "caf\xe9.txt"}'  # the bytes of the Latin-1 name, as a shell passes them
    proc = rag("search", str(index), "espresso", "--mode", "keyword", "--json", "--filter", spec)
    assert proc.returncode == 0 and proc.stderr == b""
    # replaced by U+FFFD, so it names no stored source (those keep their escapes) and matches none
    assert json.loads(proc.stdout) == []


# ---- nesting: one bound, checked before anything recurses ------------------------------------

DEEP = 100_000


def _deep_list(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _deep_json(depth: int) -> str:
    return '{"query": "bees", "k": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("strict_json", [False, True])
def test_json_string_arguments_nested_100000_deep_are_a_tool_input_error(
    strict_json: bool,
) -> None:
    from ragtools.parsers.nesting import MAX_NESTING
    from ragtools.retrieval.errors import ToolInputError
    from ragtools.retrieval.tools.params import parse_arguments

    problem = f"Invalid arguments: objects and lists nested more than {MAX_NESTING} levels deep"
    with pytest.raises(ToolInputError, match=problem):
        parse_arguments(_deep_json(DEEP), strict_json=strict_json)
    with pytest.raises(ToolInputError, match=problem):  # just past the bound
        parse_arguments(_deep_json(MAX_NESTING), strict_json=strict_json)
    # at the bound (the object is level 1), and brackets in strings and comments do not count
    fits = _deep_json(MAX_NESTING - 1)
    assert parse_arguments(fits, strict_json=strict_json)["query"] == "bees"
    quoted = '{"query": "' + "[{" * 1000 + "\", 'q2': '\\'[[[[', /* [[[[ */ }"
    if not strict_json:
        assert parse_arguments(quoted)["query"] == "[{" * 1000


def test_dict_arguments_nested_deep_name_the_argument() -> None:
    from ragtools.retrieval.errors import ToolInputError
    from ragtools.retrieval.tools import tool
    from ragtools.retrieval.tools.params import parse_arguments, verify_arguments

    with pytest.raises(ToolInputError, match=r"Invalid argument 'k': objects and lists nested"):
        parse_arguments({"query": "bees", "k": _deep_list(DEEP)})
    with pytest.raises(ToolInputError, match=r"Invalid argument 'k': objects and lists nested"):
        verify_arguments({"query": "bees", "k": _deep_list(DEEP)}, {"type": "object"})

    @tool
    def search(query: str, k: int = 3) -> str:
        """Search.

        Args:
            query: what to look for.
            k: how many.
        """
        return query

    call = {"name": "search", "args": {"query": _deep_list(DEEP)}, "id": "1", "type": "tool_call"}
    with pytest.raises(ToolInputError, match=r"Invalid argument 'query': objects and lists"):
        search.invoke(call)
    cyclic: list[Any] = []
    cyclic.append(cyclic)  # a value that contains itself is cut at the bound, not walked forever
    with pytest.raises(ToolInputError, match=r"Invalid argument 'k'"):
        search.invoke({"query": "bees", "k": cyclic})
    assert search.invoke({"query": "bees", "k": 2}) == "bees"


def test_a_python_filter_nested_10000_deep_is_a_config_error_before_any_recursion(
    tmp_path: Path,
) -> None:
    """Through a retriever the filter's source paths are resolved (recursively) before it
    is compiled; the bound is checked first."""
    from ragtools.indexes.index import Index
    from ragtools.indexes.testing import FakeEmbedder
    from ragtools.retrieval import HybridRetriever

    (tmp_path / "bees.txt").write_text("Honey bees dance.", encoding="utf-8")
    hybrid = HybridRetriever.from_index(
        Index.build([tmp_path / "bees.txt"], tmp_path / "index", embedder=FakeEmbedder())
    )
    with pytest.raises(ConfigError, match=f"nested more than {MAX_FILTER_DEPTH} levels deep"):
        hybrid.invoke("bees", filter=_nested_not(10_000))
    with pytest.raises(ConfigError, match=f"nested more than {MAX_FILTER_DEPTH} levels deep"):
        hybrid.invoke("bees", filter=_nested_not(40))  # the documented error at 30-100 levels
    # within the bound it is evaluated: 31 negations of page == 1 keep a text without pages
    assert len(hybrid.invoke("bees", filter=_nested_not(MAX_FILTER_DEPTH - 1))) == 1


def test_a_deep_line_of_a_queries_file_names_the_file_line_and_limit(tmp_path: Path) -> None:
    from ragtools.retrieval._cli_args import read_queries

    queries = tmp_path / "queries.jsonl"
    deep = '{"query": "bees", "ids": ' + "[" * DEEP + "]" * DEEP + "}"
    queries.write_text('{"query": "fine"}\nplain text\n' + deep + "\n", encoding="utf-8")
    records = read_queries(str(queries))
    assert [next(records)["query"], next(records)["query"]] == ["fine", "plain text"]
    with pytest.raises(ConfigError, match=r"queries\.jsonl, line 3: objects and lists nested"):
        next(records)


def test_deep_json_in_beir_queries_is_a_parse_error_naming_the_line(tmp_path: Path) -> None:
    from ragtools.parsers.errors import ParseError
    from ragtools.retrieval.evaluation.beir import load_queries

    line = '{"_id": "q2", "text": "bees", "metadata": ' + "[" * DEEP + "]" * DEEP + "}"
    (tmp_path / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "fine"}\n' + line + "\n", encoding="utf-8"
    )
    with pytest.raises(ParseError, match=r"queries\.jsonl: line 2: objects and lists nested"):
        load_queries(tmp_path)


def test_a_query_list_nested_100000_deep_is_refused_by_name(tmp_path: Path) -> None:
    from ragtools.indexes.index import Index
    from ragtools.indexes.testing import FakeEmbedder
    from ragtools.retrieval import HybridRetriever, create_retriever_tool
    from ragtools.retrieval.errors import ToolInputError

    (tmp_path / "bees.txt").write_text("Honey bees dance.", encoding="utf-8")
    hybrid = HybridRetriever.from_index(
        Index.build([tmp_path / "bees.txt"], tmp_path / "index", embedder=FakeEmbedder())
    )
    with pytest.raises(ConfigError, match="query must be a string, got list"):
        hybrid.batch(_deep_list(DEEP))
    search = create_retriever_tool(hybrid, "search", "Search the notes.")
    # the retriever tool handles ToolInputError (handle_tool_error=True): the model reads it
    call = {"name": "search", "args": {"query": _deep_list(DEEP)}, "id": "1", "type": "tool_call"}
    message = search.invoke(call)
    assert message.status == "error"
    assert message.content == (
        "Invalid argument 'query': objects and lists nested more than 32 levels deep "
        "(the limit); send flatter values"
    )
    strict = create_retriever_tool(hybrid, "search", "Search.", handle_tool_error=False)
    with pytest.raises(ToolInputError, match=r"Invalid argument 'query': objects and lists"):
        strict.invoke({"query": _deep_list(DEEP)})


# ---- lone surrogates in queries ---------------------------------------------------------------


def test_a_query_with_a_lone_surrogate_reaches_the_embedder_replaced(tmp_path: Path) -> None:
    """Hugging Face tokenizers raise ``TypeError`` on a lone surrogate; retrievers replace it
    (and the embedder's own encode path does too, for texts given directly)."""
    from ragtools.indexes.index import Index
    from ragtools.indexes.testing import FakeEmbedder
    from ragtools.retrieval import HybridRetriever

    class StrictEmbedder(FakeEmbedder):
        def embed_query(self, text: str) -> Any:
            text.encode("utf-8")  # what a tokenizer does first; raises on "\ud800"
            return super().embed_query(text)

    (tmp_path / "trace.txt").write_text("trace the compile step", encoding="utf-8")
    embedder = StrictEmbedder()
    index = Index.build([tmp_path / "trace.txt"], tmp_path / "index", embedder=embedder)
    hybrid = HybridRetriever.from_index(index)
    hits = hybrid.invoke("trace \ud800 compile")
    assert [h.chunk.text for h in hits] == ["trace the compile step"]
    assert [h.chunk.text for h in hybrid.batch(["\udc00compile"])[0]] == ["trace the compile step"]


def test_rag_build_of_a_record_with_a_lone_surrogate_succeeds_and_says_so(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.jsonl").write_text('{"text": "trace \\ud800 compile"}\n', encoding="utf-8")
    proc = rag("build", str(docs), "--out", str(tmp_path / "index"), "--no-vector")
    assert proc.returncode == 0, proc.stderr  # was a UnicodeEncodeError traceback
    assert b"1 chunks from 1 files" in proc.stdout
    assert b"(0 skipped, 0 failed, 1 lone surrogates replaced by U+FFFD)" in proc.stdout
    assert b"notes.jsonl: 1 lone surrogates (not characters) replaced by U+FFFD" in proc.stderr
    proc = rag("search", str(tmp_path / "index"), "trace", "--json")
    assert json.loads(proc.stdout)[0]["chunk"]["text"] == "trace \ufffd compile"


@pytest.mark.slow
def test_the_bundled_model_is_never_handed_a_lone_surrogate(tmp_path: Path) -> None:
    """The issue's case with the real tokenizer, which raised ``TypeError`` on "\\ud800"."""
    from ragtools.indexes.index import Index
    from ragtools.retrieval import HybridRetriever

    (tmp_path / "trace.txt").write_text("trace the compile step", encoding="utf-8")
    index = Index.build([tmp_path / "trace.txt"], tmp_path / "index")
    hits = HybridRetriever.from_index(index).invoke("trace \ud800 compile")
    assert [h.chunk.text for h in hits] == ["trace the compile step"]
    vectors = index.embedder.embed_documents(["trace \ud800 compile", "trace \ufffd compile"])
    assert vectors.shape[0] == 2 and bool((vectors[0] == vectors[1]).all())


# ---- long queries -----------------------------------------------------------------------------


def test_rag_search_queries_from_dev_zero_is_one_line(index: Path) -> None:
    """It reached 2.6 GB, then a ``MemoryError`` traceback."""
    from ragtools.parsers.text import MAX_LINE_BYTES

    proc = rag("search", str(index), "--queries", "/dev/zero", "--mode", "keyword")
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1
    assert lines[0].startswith(f"rag: error: /dev/zero: line 1 is longer than {MAX_LINE_BYTES}")


def test_a_100_mb_query_line_is_refused_after_reading_one_line_cap(tmp_path: Path) -> None:
    """A 100 MB query line took 1.6 GB; reading stops at the line cap."""
    import tracemalloc

    from ragtools.parsers.errors import ParseError
    from ragtools.parsers.text import MAX_LINE_BYTES
    from ragtools.retrieval._cli_args import read_queries

    queries = tmp_path / "queries.txt"
    with queries.open("wb") as handle:
        handle.write(b"bees\nhoney ")
        handle.truncate(100 * 1024 * 1024)  # one line of 100 MB (sparse: no disk used)
    records = read_queries(str(queries))
    assert next(records) == {"query": "bees"}
    tracemalloc.start()
    try:
        with pytest.raises(
            ParseError, match=rf"queries\.txt: line 2 is longer than {MAX_LINE_BYTES}"
        ):
            next(records)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_LINE_BYTES  # a few line caps, not the 100 MB line


def test_a_query_over_the_longest_names_the_file_line_and_limit(
    index: Path, tmp_path: Path
) -> None:
    from ragtools.retrieval.query_text import LONGEST_QUERY

    queries = tmp_path / "queries.jsonl"
    long = json.dumps({"id": "q2", "query": "bees " * (LONGEST_QUERY // 5 + 1)})
    queries.write_text("bees\n" + long + "\n", encoding="utf-8")
    proc = rag("search", str(index), "--queries", str(queries), "--mode", "keyword", "-k", "1")
    assert proc.returncode == 2
    assert proc.stdout.decode().count('"hits"') == 1  # the first query was answered
    assert proc.stderr.decode().splitlines() == [
        f"rag: error: {queries}, line 2: the query is {LONGEST_QUERY + 5} characters long, "
        f"over the limit of {LONGEST_QUERY} (retrieval.query_text.LONGEST_QUERY); search "
        "with its key sentences instead"
    ]


def test_every_retriever_refuses_a_query_over_the_longest(tmp_path: Path) -> None:
    from ragtools.indexes.index import Index
    from ragtools.indexes.testing import FakeEmbedder
    from ragtools.retrieval import HybridRetriever
    from ragtools.retrieval.keyword import KeywordRetriever
    from ragtools.retrieval.query_text import LONGEST_QUERY
    from ragtools.retrieval.vector import VectorRetriever

    (tmp_path / "bees.txt").write_text("Honey bees dance.", encoding="utf-8")
    index = Index.build([tmp_path / "bees.txt"], tmp_path / "index", embedder=FakeEmbedder())
    longest = "bees " * (LONGEST_QUERY // 5)
    assert len(longest) == LONGEST_QUERY
    for retriever in (
        KeywordRetriever(index),
        VectorRetriever(index),
        HybridRetriever.from_index(index),
    ):
        assert [h.chunk.text for h in retriever.invoke(longest)] == ["Honey bees dance."]
        with pytest.raises(ConfigError, match=f"query is {LONGEST_QUERY + 1} characters long"):
            retriever.invoke(longest + "s")


def test_a_file_tool_quotes_little_of_a_query_over_its_bound(tmp_path: Path) -> None:
    from ragtools.indexes.testing import FakeEmbedder
    from ragtools.retrieval.tools import get_tool, make_tool_call
    from ragtools.retrieval.tools.retriever_tool import MAX_QUERY_CHARS

    (tmp_path / "bees.txt").write_text("Honey bees dance.", encoding="utf-8")
    tool = get_tool(
        "retrieval", roots=[tmp_path], cache_dir=str(tmp_path / "cache"), embedder=FakeEmbedder()
    )
    query = "bees " * 200_000  # a megabyte
    call = make_tool_call("retrieval", {"query": query, "files": [str(tmp_path / "bees.txt")]})
    message = tool.invoke(call)
    assert message.status == "error"
    assert message.content.startswith("Invalid value for parameter query: 'bees bees")
    assert message.content.endswith("bees ' is too long")
    assert len(message.content) < 600
    fine = {"query": "bees " * (MAX_QUERY_CHARS // 5 - 1), "files": [str(tmp_path / "bees.txt")]}
    assert "Honey bees dance." in tool.invoke(make_tool_call("retrieval", fine)).content
