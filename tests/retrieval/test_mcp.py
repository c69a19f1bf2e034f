"""The MCP server: ``rag serve`` in a subprocess, driven by the MCP SDK's own client.

Oracle: the same retriever tool run in-process (``create_retriever_tool`` over
``HybridRetriever.from_index``), so the server must give exactly the content and the hits
the Python API gives. Indexes are keyword-only (fast, no model) except one slow test.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from ragtools.indexes.index import Index
from ragtools.parsers.errors import ConfigError, MissingDependencyError
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.integrations.mcp import LIST_TOOL, build_server, http_url, serve
from ragtools.retrieval.tools.retriever_tool import (
    MAX_QUERY_CHARS,
    RetrieverInput,
    create_retriever_tool,
)

RAG = Path(sys.executable).with_name("rag")
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
T = TypeVar("T")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mcp-docs")
    (root / "bees.txt").write_text(
        "Honey bees communicate the direction of flowers with a waggle dance.", encoding="utf-8"
    )
    (root / "tides.md").write_text(
        "# Tides\n\nThe moon's gravity raises tides in the oceans twice a day.", encoding="utf-8"
    )
    (root / "volcano.txt").write_text(
        "Volcanoes erupt when magma rises through cracks in the crust of the earth.",
        encoding="utf-8",
    )
    return root


@pytest.fixture(scope="module")
def index_path(docs: Path, pdf_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Keyword-only index over three text files and a one-page PDF (for page citations)."""
    out = tmp_path_factory.mktemp("mcp-kw") / "docs index"
    Index.build([docs, pdf_dir / "google-doc-document.pdf"], out, vector=False)
    return out


@pytest.fixture(scope="module")
def other_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mcp-other")
    (root / "notes.txt").write_text("Granite is an igneous rock rich in quartz.", encoding="utf-8")
    out = tmp_path_factory.mktemp("mcp-kw2") / "geology"
    Index.build([root], out, vector=False)
    return out


FILE_KEYS = ("path", "mtime", "size")


def expected(
    index_path: Path, query: str, keep: tuple[str, ...] = ()
) -> tuple[str, list[dict[str, Any]]]:
    """What the in-process retriever tool returns: (content, hits as JSON), the hits' chunk
    metadata without the file keys the server hides (all but ``keep``)."""
    retriever = HybridRetriever.from_index(Index.open(index_path), k=5)
    tool = create_retriever_tool(retriever, "search_docs", "Search the docs.")
    call = {"name": "search_docs", "args": {"query": query}, "id": "1", "type": "tool_call"}
    message = tool.invoke(call)
    hits = [hit.model_dump(mode="json") for hit in message.artifact]
    for hit in hits:
        for key in set(FILE_KEYS) - set(keep):
            del hit["chunk"]["metadata"][key]
    return message.content, hits


def no_directory_in(text: str, *folders: Path) -> bool:
    """True when ``text`` names none of ``folders`` (as given or resolved) nor any absolute
    POSIX path of theirs."""
    names = {str(f) for f in folders} | {str(f.resolve()) for f in folders}
    return not any(name in text for name in names)


def stdio_client(*args: str) -> Client:
    params = StdioServerParameters(command=str(RAG), args=["serve", *args], env=ENV)
    return Client(params, read_timeout_seconds=120)


def run(factory: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(factory(), timeout=300))


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


# --------------------------------------------------------------------------- stdio


def test_tools_schema_content_and_hits_over_stdio(index_path: Path, other_index: Path) -> None:
    query = "beautiful is better than ugly"

    async def session() -> tuple[Any, Any, Any]:
        async with stdio_client(str(index_path), str(other_index), "--name", "docs") as client:
            tools = await client.list_tools()
            result = await client.call_tool("docs", {"query": query})
            listing = await client.call_tool(LIST_TOOL, {})
            return tools, result, listing

    tools, result, listing = run(session)
    by_name = {tool.name: tool for tool in tools.tools}
    assert set(by_name) == {"docs", "search_geology", LIST_TOOL}
    for name in ("docs", "search_geology"):
        assert by_name[name].input_schema == RetrieverInput.model_json_schema()
        assert by_name[name].output_schema["required"] == ["hits"]
    assert "notes.txt" in by_name["search_geology"].description  # default names the sources

    content, hits = expected(index_path, query)
    assert not result.is_error
    assert text_of(result) == content
    assert result.structured_content == {"hits": hits}
    first = Hit.model_validate(result.structured_content["hits"][0])
    assert first.rank == 1 and first.score > 0 and "bm25" in first.scores
    assert first.chunk.source.endswith("google-doc-document.pdf")
    assert "google-doc-document.pdf, page 1" in text_of(result).splitlines()[0]

    described = listing.structured_content["indexes"]
    assert [entry["tool"] for entry in described] == ["docs", "search_geology"]
    summary = described[0]["summary"]
    assert summary["index"] == "docs index"
    assert summary["counts"] == Index.open(index_path).info()["counts"]
    assert summary["counts"]["files"] == 4
    assert summary["files"] == {
        "indexed": {"txt": 2, "md": 1, "pdf": 1},
        "skipped": {},
        "failed": {},
    }
    assert sorted(summary["sources"]) == sorted(
        Path(p).name for p in Index.open(index_path).sources
    )


def test_bad_arguments_are_tool_errors_and_the_server_stays_up(index_path: Path) -> None:
    bad_calls = {
        "missing": {},
        "extra": {"query": "bees", "k": 3},
        "too long": {"query": "x" * (MAX_QUERY_CHARS + 1)},
        "blank": {"query": "   "},
        "not a string": {"query": ["bees"]},
    }

    async def session() -> tuple[dict[str, Any], MCPError, list[Any]]:
        results, good = {}, []
        async with stdio_client(str(index_path), "--name", "docs") as client:
            for label, arguments in bad_calls.items():
                results[label] = await client.call_tool("docs", arguments)
                good.append(await client.call_tool("docs", {"query": "waggle dance"}))
            try:
                await client.call_tool("no_such_tool", {"query": "bees"})
            except MCPError as exc:
                unknown = exc
            good.append(await client.call_tool("docs", {"query": "waggle dance"}))
        return results, unknown, good

    results, unknown, good = run(session)
    assert all(result.is_error for result in results.values())
    assert "query: Field required" in text_of(results["missing"])
    assert "k: Extra inputs are not permitted" in text_of(results["extra"])
    too_long = text_of(results["too long"])
    assert f"at most {MAX_QUERY_CHARS} characters" in too_long
    assert f'"<search text, 1-{MAX_QUERY_CHARS} characters>"' in too_long
    assert "at least 1 character" in text_of(results["blank"])
    assert "query: Input should be a valid string" in text_of(results["not a string"])
    assert unknown.code == -32602 and "no_such_tool" in unknown.message
    assert "docs" in unknown.message  # names the tools that exist
    for result in good:
        assert not result.is_error
        assert result.structured_content["hits"][0]["chunk"]["metadata"]["source"].endswith(
            "bees.txt"
        )


def test_fifty_calls_from_five_concurrent_clients(index_path: Path) -> None:
    queries = ["waggle dance", "moon gravity tides", "magma crust", "beautiful ugly", "bees"]
    oracle = {query: expected(index_path, query) for query in queries}

    async def one_client(n: int) -> list[tuple[str, Any]]:
        async with stdio_client(str(index_path), "--name", "docs") as client:
            calls = [queries[(n + i) % len(queries)] for i in range(10)]
            results = await asyncio.gather(
                *(client.call_tool("docs", {"query": query}) for query in calls)
            )
            return list(zip(calls, results, strict=True))

    async def all_clients() -> list[list[tuple[str, Any]]]:
        return await asyncio.gather(*(one_client(n) for n in range(5)))

    outcomes = [pair for client in run(all_clients) for pair in client]
    assert len(outcomes) == 50
    for query, result in outcomes:
        content, hits = oracle[query]
        assert not result.is_error
        assert text_of(result) == content
        assert result.structured_content == {"hits": hits}


def test_stdout_carries_only_protocol_messages(index_path: Path) -> None:
    """Raw JSON-RPC over the pipe: every stdout line is a JSON-RPC message, logs go to stderr."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "docs", "arguments": {"query": "tides"}}},
    ]  # fmt: skip
    proc = subprocess.Popen(
        [str(RAG), "--verbose", "serve", str(index_path), "--name", "docs"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **ENV},
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    proc.stdin.flush()
    replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
    rest, stderr = proc.communicate(timeout=60)  # closing stdin ends the session
    assert proc.returncode == 0, stderr
    assert rest == ""
    assert [reply["id"] for reply in replies] == [1, 2]
    assert replies[0]["result"]["serverInfo"]["name"] == "ragtools"
    assert "tides.md" in replies[1]["result"]["content"][0]["text"]
    assert "serving" in stderr  # --verbose logging went to stderr


def test_a_missing_index_fails_with_one_line_and_silent_stdout(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    proc = subprocess.run(
        [str(RAG), "serve", str(missing)], capture_output=True, text=True, timeout=120,
        env={**os.environ, **ENV}, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert str(missing) in proc.stderr and proc.stderr.startswith("rag: error:")


# --------------------------------------------------------------------------- in process


def test_resources_and_default_names_in_process(index_path: Path) -> None:
    server = build_server([index_path], descriptions=["Project docs."])

    async def session() -> tuple[Any, Any, Any, MCPError]:
        async with Client(server) as client:
            tools = await client.list_tools()
            resources = await client.list_resources()
            read = await client.read_resource(resources.resources[0].uri)
            try:
                await client.read_resource("rag://index/elsewhere")
            except MCPError as exc:
                missing = exc
        return tools, resources, read, missing

    tools, resources, read, missing = run(session)
    search = tools.tools[0]
    assert search.name == "search_docs_index"  # "docs index" sanitised
    assert search.description == "Project docs."
    assert search.annotations.read_only_hint is True
    assert [r.uri for r in resources.resources] == ["rag://index/search_docs_index"]
    summary = json.loads(read.contents[0].text)
    assert summary["counts"] == Index.open(index_path).info()["counts"]
    assert summary["files"]["indexed"] == {"txt": 2, "md": 1, "pdf": 1}
    assert "elsewhere" in missing.message


def test_name_and_description_errors(index_path: Path, other_index: Path) -> None:
    with pytest.raises(ConfigError, match="invalid tool name 'bad name'"):
        build_server([index_path], names=["bad name"])
    with pytest.raises(ConfigError, match="got 2 names for 1 indexes"):
        build_server([index_path], names=["a", "b"])
    with pytest.raises(ConfigError, match="got 2 descriptions for 1 indexes"):
        build_server([index_path], descriptions=["a", "b"])
    with pytest.raises(ConfigError, match="duplicate tool names"):
        build_server([index_path, other_index], names=["same", "same"])
    with pytest.raises(ConfigError, match="reserved"):
        build_server([index_path], names=[LIST_TOOL])
    with pytest.raises(ConfigError, match="given twice"):
        build_server([index_path, index_path])
    with pytest.raises(ConfigError, match="no index given"):
        build_server([])


def test_missing_mcp_package_names_the_extra(
    index_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(MissingDependencyError, match=r"ragtools\[mcp\]"):
        build_server([index_path])


def test_default_names_that_clash_get_a_suffix(index_path: Path, tmp_path: Path) -> None:
    server = build_server([index_path, twin_of(tmp_path)])

    async def names() -> list[str]:
        async with Client(server) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    assert run(names) == ["search_docs_index", "search_docs_index_2", LIST_TOOL]


def twin_of(tmp_path: Path) -> Path:
    """A second index whose directory name sanitises to the same tool name."""
    root = tmp_path / "src"
    root.mkdir()
    (root / "a.txt").write_text("A twin index about honey.", encoding="utf-8")
    out = tmp_path / "docs_index"
    Index.build([root], out, vector=False)
    return out


# --------------------------------------------------------------------------- http


def test_non_loopback_hosts_are_refused(index_path: Path) -> None:
    for host in ("0.0.0.0", "192.168.1.10", "example.com", "::"):
        with pytest.raises(ConfigError, match="loopback only"):
            serve([index_path], transport="http", host=host)
    assert http_url("::1", 9000) == "http://[::1]:9000/mcp"
    with pytest.raises(ConfigError, match="port"):
        http_url("127.0.0.1", 70000)
    proc = subprocess.run(
        [str(RAG), "serve", str(index_path), "--http", "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=120, env={**os.environ, **ENV}, check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and "refusing to serve on '0.0.0.0'" in proc.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def http_server(index_path: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [str(RAG), "serve", str(index_path), "--name", "docs", "--http", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **ENV},
    )  # fmt: skip
    lines = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # "ready" only once the port takes connections
            lines.append(line.decode())
            if line.startswith(b"rag: ready"):
                break
        assert proc.poll() is None, "".join(lines)
        socket.create_connection(("127.0.0.1", port), timeout=5).close()  # no retry
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert out == b""  # nothing on stdout, even over HTTP
    assert f"serving MCP at http://127.0.0.1:{port}/mcp" in "".join(lines) + err.decode()


def test_http_port_in_use_is_a_config_error(index_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"cannot listen on http://127\.0\.0\.1:{port}/mcp"):
            serve([index_path], transport="http", port=port)


def test_streamable_http_on_loopback(http_server: str, index_path: Path) -> None:
    async def session() -> tuple[Any, Any]:
        async with Client(http_server, read_timeout_seconds=120) as client:
            tools = await client.list_tools()
            return tools, await client.call_tool("docs", {"query": "magma crust"})

    tools, result = run(session)
    assert [tool.name for tool in tools.tools] == ["docs", LIST_TOOL]
    content, hits = expected(index_path, "magma crust")
    assert text_of(result) == content and result.structured_content == {"hits": hits}


def test_no_directory_of_this_machine_reaches_the_model(
    docs: Path, pdf_dir: Path, tmp_path: Path
) -> None:
    """Search content, structured hits, list_indexes and the resource name no absolute path,
    mtime or size; files are counted by type; --show-metadata opts in by name."""
    folder = tmp_path / "site"
    (folder / "img").mkdir(parents=True)
    for name in ("bees.txt", "tides.md"):
        (folder / name).write_bytes((docs / name).read_bytes())
    for i in range(3):
        (folder / "img" / f"figure-{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    (folder / "bad.json").write_text('{"unclosed": ', encoding="utf-8")
    out = tmp_path / "site-index"
    Index.build([folder, pdf_dir / "google-doc-document.pdf"], out, vector=False)
    index = Index.open(out)
    assert len(index.skipped) == 3 and len(index.failures) == 1
    mtimes = {str(c.metadata["mtime"]) for c in index.chunks}

    def leaks(text: str) -> list[str]:
        """Directories of this machine anywhere, and the file keys as JSON keys."""
        found = [t for t in (str(folder), str(out), str(pdf_dir), str(tmp_path)) if t in text]
        return found + [key for key in FILE_KEYS if f'"{key}"' in text]

    async def session(*options: str) -> tuple[Any, Any, Any, Any]:
        async with stdio_client(str(out), "--name", "site", *options) as client:
            tools = await client.list_tools()
            result = await client.call_tool("site", {"query": "waggle dance of honey bees"})
            listing = await client.call_tool(LIST_TOOL, {})
            resource = await client.read_resource("rag://index/site")
            return tools, result, listing, resource

    tools, result, listing, resource = run(session)
    description = tools.tools[0].description
    assert "bees.txt" in description and ".png" not in description  # what is searchable
    content, hits = expected(out, "waggle dance of honey bees")
    assert text_of(result) == content and result.structured_content == {"hits": hits}
    assert "bees.txt" in content
    everything = [
        description,
        content,
        json.dumps(result.structured_content),
        text_of(listing),
        json.dumps(listing.structured_content),
        resource.contents[0].text,
    ]
    for text in everything:
        assert not leaks(text), (leaks(text), text[:400])
    assert not any(mtime in content for mtime in mtimes)
    summary = listing.structured_content["indexes"][0]["summary"]
    assert summary["files"] == {
        "indexed": {"md": 1, "pdf": 1, "txt": 1},
        "skipped": {"png": 3},
        "failed": {"json": 1},
    }
    assert sorted(summary["sources"]) == ["google-doc-document.pdf", "site"]
    assert len(text_of(listing)) < 4000  # a summary, however many files

    _, shown, _, _ = run(lambda: session("--show-metadata", "path"))
    path = shown.structured_content["hits"][0]["chunk"]["metadata"]["path"]
    assert path == str(folder / "bees.txt")
    assert "mtime" not in shown.structured_content["hits"][0]["chunk"]["metadata"]
    with pytest.raises(ConfigError, match=r"show_metadata names \['source'\]"):
        build_server([out], show_metadata=["source"])


# --------------------------------------------------------------------------- real model


@pytest.mark.slow
def test_full_hybrid_index_with_the_default_model(docs: Path, tmp_path: Path) -> None:
    out = tmp_path / "full"
    Index.build([docs], out)
    query = "how do bees tell where flowers are"

    async def session() -> Any:
        async with stdio_client(str(out), "--name", "docs") as client:
            return await client.call_tool("docs", {"query": query})

    result = run(session)
    assert not result.is_error
    top = result.structured_content["hits"][0]
    assert top["chunk"]["metadata"]["source"].endswith("bees.txt")
    assert {"bm25", "vector", "fused"} <= set(top["scores"])
    assert result.structured_content == {"hits": expected(out, query)[1]}


def test_every_request_line_gets_an_answer_over_stdio(index_path: Path) -> None:
    """#38: a query holding a lone surrogate (which a model can emit), or a list nested 200
    deep, got no reply at all. Written as raw JSON-RPC lines: the SDK's own client cannot
    even send a lone surrogate."""
    deep: Any = "bees"
    for _ in range(200):
        deep = [deep]
    envelope = {"jsonrpc": "2.0", "method": "tools/call"}
    lines = [
        json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}}
        ),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps(envelope | {"id": 2, "params": {"name": "docs", "arguments": {
            "query": "waggle \ud800 dance"}}}),
        json.dumps(envelope | {"id": 3, "params": {"name": "docs", "arguments": {
            "query": deep}}}),
        '{"jsonrpc": "2.0", "id": 4, "method": ' + "[" * 100_000,
        "not json at all",
        json.dumps(envelope | {"id": 5, "params": {"name": "docs", "arguments": {
            "query": "waggle dance"}}}),
    ]  # fmt: skip
    server = subprocess.Popen(
        [str(RAG), "serve", str(index_path), "--name", "docs"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, env=ENV,
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write("\n".join(lines) + "\n")
    server.stdin.flush()  # stdin stays open until the last answer: EOF ends the server
    replies = []
    try:
        while not any(reply.get("id") == 5 for reply in replies):
            line = server.stdout.readline()
            assert line, f"the server ended before answering every line: {replies}"
            replies.append(json.loads(line))
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    by_id = {reply.get("id"): reply for reply in replies}
    hits = by_id[2]["result"]["structuredContent"]["hits"]
    assert not by_id[2]["result"]["isError"] and hits[0]["chunk"]["metadata"]["source"].endswith(
        "bees.txt"
    )
    assert by_id[3]["error"]["code"] == -32602 and "32 levels" in by_id[3]["error"]["message"]
    assert by_id[4]["error"]["code"] == -32602  # 100,000 deep: answered, id still found
    assert by_id[None]["error"]["code"] == -32700  # not JSON: a parse error, id null
    assert not by_id[5]["result"]["isError"]  # the server stayed up
