"""Serve built indexes as retriever tools over the Model Context Protocol (MCP).

``rag serve INDEX...`` (or :func:`serve`) hands indexes to any MCP host (Claude Desktop, an
IDE agent, ...) with the same results as the Python tool layer:

* one tool per index (``search_<dirname>`` unless named) whose input schema is exactly
  ``RetrieverInput.model_json_schema()``. A call returns the retriever tool's *content* (hits
  with citations) as text and its *artifact* as structured content
  ``{"hits": [hit.model_dump(mode="json"), ...]}``, declared by an output schema;
* a ``list_indexes`` tool and a ``rag://index/<tool name>`` resource per index giving a
  summary of it (:func:`~retrieval.integrations._mcp_indexes.index_summary`: counts, files
  counted by type, build settings).

Hosts hand structured content and resources to the model as readily as text, so no result
carries a directory of this machine: the hits' chunk metadata leaves out the file's
absolute ``path``, ``mtime`` and ``size`` (:data:`~retrieval.integrations._hits.FILE_KEYS`;
``show_metadata=`` / ``rag serve --show-metadata KEY`` names those to keep), the content
cites relative sources, and the summaries count files instead of listing their paths.

Choices: the SDK's low-level ``Server`` (mcp 2.x), because ``MCPServer`` derives schemas from
Python signatures while ours is fixed and the tools exist only once the indexes are open.
Read-only: each index is opened once at start and no handler takes a path, so nothing but the
given indexes (and, for a vector half, the embedding model) is ever read, and nothing written.
Mistakes a model can fix (missing, extra or too-long arguments, a ``ToolInputError``) come
back as results with ``isError`` and a message saying what to change; an unknown tool or
resource is a JSON-RPC error; no request stops the server. Streamable HTTP listens on
loopback only (no authentication), with the SDK's DNS-rebinding protection. Over stdio,
stdout carries only the protocol: indexes open with ``sys.stdout`` sent to stderr, and while
serving the SDK points file descriptor 1 at stderr; every request line gets an answer, even
one the SDK cannot read (:mod:`~retrieval.integrations._mcp_wire`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from ragtools.parsers.document import strict_utf8
from ragtools.parsers.errors import ConfigError, RetrievalError
from ragtools.parsers.optional import require
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.integrations._hits import hidden_file_keys, without_keys
from ragtools.retrieval.integrations._mcp_indexes import Served, open_all
from ragtools.retrieval.integrations._mcp_wire import CheckedLines, Refusal

if TYPE_CHECKING:
    from mcp import types as mt
    from mcp.server import Server, ServerRequestContext

__all__ = ["DEFAULT_K", "LIST_TOOL", "RESOURCE_PREFIX", "build_server", "http_url", "serve"]

logger = logging.getLogger(__name__)

DEFAULT_K = 5
"""Hits per call: the ``rag search`` default; the tool's content budget bounds the text."""
LIST_TOOL = "list_indexes"
"""Name of the tool describing every served index (reserved: no index may take it)."""
RESOURCE_PREFIX = "rag://index/"
"""Resource URI prefix; the index's tool name follows it."""
_INVALID_PARAMS = -32602  # JSON-RPC "invalid params": MCP's code for an unknown tool
_RESOURCE_NOT_FOUND = -32002  # MCP's code for an unknown resource URI
_LOOPBACK_NAMES = ("localhost",)


class _SearchOutput(BaseModel):
    """The structured content of a search call (its JSON schema is the output schema)."""

    hits: list[Hit]


# --------------------------------------------------------------------------- handlers


def _argument_error(name: str, exc: ValidationError, schema: dict[str, Any]) -> str:
    details = "; ".join(
        f"{'.'.join(str(part) for part in err['loc']) or 'arguments'}: {err['msg']}"
        for err in exc.errors()
    )
    bound = schema.get("properties", {}).get("query", {}).get("maxLength")
    expected = f"1-{bound}" if bound else "at least 1"
    return (
        f"invalid arguments for tool {name!r}: {details}. "
        f'Call it with exactly {{"query": "<search text, {expected} characters>"}}.'
    )


def _result(text: str, structured: dict[str, Any] | None = None) -> mt.CallToolResult:
    from mcp import types as mt

    content: list[mt.ContentBlock] = [mt.TextContent(text=strict_utf8(text))]
    if structured is None:
        return mt.CallToolResult(content=content, is_error=True)
    # a source name that is not UTF-8 would make the whole response fail to serialise
    return mt.CallToolResult(content=content, structured_content=strict_utf8(structured))


async def _search(
    entry: Served, arguments: dict[str, Any], hidden: Sequence[str]
) -> mt.CallToolResult:
    from ragtools.retrieval.tools.messages import make_tool_call
    from ragtools.retrieval.tools.retriever_tool import RetrieverInput

    try:
        valid = RetrieverInput.model_validate(arguments)
    except ValidationError as exc:
        logger.info("tool %r rejected arguments: %s", entry.name, exc.errors())
        return _result(_argument_error(entry.name, exc, RetrieverInput.model_json_schema()))
    try:
        output = await entry.tool.aexecute(make_tool_call(entry.name, valid.model_dump()))
    except RetrievalError as exc:
        logger.info("tool %r failed: %s", entry.name, exc)
        return _result(f"{entry.name} failed: {exc}")
    except Exception as exc:  # a bug: report it to the client and keep serving
        logger.exception("tool %r raised", entry.name)
        return _result(f"{entry.name} failed with an internal error ({type(exc).__name__})")
    content = output.content
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    if output.status == "error":
        return _result(text)
    hits = [without_keys(hit, hidden).model_dump(mode="json") for hit in output.artifact or []]
    return _result(text, {"hits": hits})


def _tools(entries: Sequence[Served]) -> list[mt.Tool]:
    from mcp import types as mt

    from ragtools.retrieval.tools.retriever_tool import RetrieverInput

    read_only = mt.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    output_schema = _SearchOutput.model_json_schema(mode="serialization")
    tools = [
        mt.Tool(
            name=e.name,
            description=e.description,
            input_schema=RetrieverInput.model_json_schema(),
            output_schema=output_schema,
            annotations=read_only,
        )
        for e in entries
    ]
    listing = mt.Tool(
        name=LIST_TOOL,
        description=(
            "List the indexes this server searches: for each, its search tool's name, "
            "description, sources, chunk counts, files counted by type and build settings."
        ),
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        output_schema={
            "type": "object",
            "properties": {"indexes": {"type": "array", "items": {"type": "object"}}},
            "required": ["indexes"],
        },
        annotations=read_only,
    )
    return [*tools, listing]


def _make_server(
    entries: Sequence[Served], version: str, hidden: Sequence[str] = ()
) -> Server[Any]:
    from mcp import types as mt
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    by_name = {e.name: e for e in entries}
    tools = _tools(entries)
    listing = {
        "indexes": [
            {"tool": e.name, "description": e.description, "uri": RESOURCE_PREFIX + e.name}
            | {"summary": e.summary}
            for e in entries
        ]
    }

    async def list_tools(
        ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult:
        arguments = params.arguments or {}
        if params.name == LIST_TOOL:
            if arguments:
                return _result(f"{LIST_TOOL} takes no arguments, got {sorted(arguments)}")
            return _result(json.dumps(listing, ensure_ascii=False, indent=2), listing)
        entry = by_name.get(params.name)
        if entry is None:
            known = ", ".join([*by_name, LIST_TOOL])
            msg = f"unknown tool {params.name!r}; this server has: {known}"
            raise MCPError(code=_INVALID_PARAMS, message=msg)
        return await _search(entry, arguments, hidden)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourcesResult:
        resources = [
            mt.Resource(
                uri=RESOURCE_PREFIX + e.name,
                name=e.name,
                description=f"A summary of the index behind tool {e.name!r}",
                mime_type="application/json",
            )
            for e in entries
        ]
        return mt.ListResourcesResult(resources=resources)

    async def read_resource(
        ctx: ServerRequestContext[Any], params: mt.ReadResourceRequestParams
    ) -> mt.ReadResourceResult:
        uri = str(params.uri)
        entry = by_name.get(uri[len(RESOURCE_PREFIX) :] if uri.startswith(RESOURCE_PREFIX) else "")
        if entry is None:
            msg = f"unknown resource {uri!r}; this server has {RESOURCE_PREFIX}<tool name> for: "
            raise MCPError(code=_RESOURCE_NOT_FOUND, message=msg + ", ".join(by_name))
        text = json.dumps(entry.summary, ensure_ascii=False, indent=2)
        contents: list[mt.TextResourceContents | mt.BlobResourceContents] = [
            mt.TextResourceContents(uri=uri, mime_type="application/json", text=text)
        ]
        return mt.ReadResourceResult(contents=contents)

    return Server(
        "ragtools",
        version=version,
        instructions=(
            f"Retriever tools over local document indexes ({', '.join(by_name)}). Call a search "
            f'tool with {{"query": "..."}} and cite the sources shown with each passage; '
            f"{LIST_TOOL} describes every index."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


# --------------------------------------------------------------------------- public API


def build_server(
    index_paths: Sequence[str | Path],
    *,
    names: Sequence[str] | None = None,
    descriptions: Sequence[str] | None = None,
    ray: str | None = None,
    show_metadata: Sequence[str] = (),
) -> Server[Any]:
    """Open the indexes and return an MCP low-level ``mcp.server.Server`` serving them.

    Args:
        index_paths: index directories built with ``rag build`` / :meth:`Index.build`.
        names: tool names, matched to ``index_paths`` in order (the rest default to
            ``search_<dirname>``); 1-64 characters of ``[A-Za-z0-9_-]``.
        descriptions: tool descriptions, matched in order (default: one naming the index,
            its source files and counts).
        ray: serve sharded indexes from Ray actors, on this cluster address (``""``: the
            cluster this process joined, or a new local one); ``None``: in-process.
        show_metadata: file keys (``path``, ``mtime``, ``size``) kept in the hits' metadata;
            by default none (see the module docstring).

    Returns:
        The SDK server; run it with a transport (as :func:`serve` does), or connect to it
        in-process with ``mcp.Client(server)``.

    Raises:
        ConfigError: no index, an index given twice, too many names or descriptions, an
            invalid, reserved or duplicate name, or another key in ``show_metadata``.
        IndexLoadError: an index is missing or damaged (the file is named).
        MissingDependencyError: the ``mcp`` package is not installed.

    Example:
        >>> server = build_server(["my-index"], names=["search_docs"])  # doctest: +SKIP
    """
    require("mcp", "mcp")
    from importlib.metadata import PackageNotFoundError, version

    hidden = hidden_file_keys(show_metadata)

    with contextlib.redirect_stdout(sys.stderr):  # stdout may be the stdio wire
        entries = open_all(
            index_paths, names, descriptions, k=DEFAULT_K, reserved=LIST_TOOL, ray=ray
        )
    try:
        package_version = version("ragtools")
    except PackageNotFoundError:
        package_version = "0+unknown"
    return _make_server(entries, package_version, hidden)


def http_url(host: str, port: int) -> str:
    """The Streamable HTTP endpoint for ``host``/``port``, after checking both.

    Raises:
        ConfigError: ``host`` is not a loopback address or ``port`` is not in 1-65535.
    """
    try:
        loopback = host in _LOOPBACK_NAMES or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        msg = (
            f"refusing to serve on {host!r}: the MCP server has no authentication and listens "
            "on loopback only; use 127.0.0.1, ::1 or localhost"
        )
        raise ConfigError(msg)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        msg = f"port must be an integer in 1-65535, got {port!r}"
        raise ConfigError(msg)
    return f"http://{_bracketed(host)}:{port}/mcp"


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def serve(
    index_paths: Sequence[str | Path],
    *,
    names: Sequence[str] | None = None,
    descriptions: Sequence[str] | None = None,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    ray: str | None = None,
    on_ready: Callable[[], None] | None = None,
    show_metadata: Sequence[str] = (),
) -> None:
    """Serve the indexes over MCP until the client disconnects (stdio) or interrupted (http).

    Args:
        index_paths: index directories (see :func:`build_server`).
        names: tool names matched to the indexes in order.
        descriptions: tool descriptions matched to the indexes in order.
        transport: ``"stdio"`` (launched by an MCP host; stdout carries only the protocol)
            or ``"http"`` (Streamable HTTP at ``http://host:port/mcp``).
        host: loopback address for ``"http"``.
        port: TCP port for ``"http"``.
        ray: see :func:`build_server`.
        on_ready: called once the indexes are open, the model warmed up and (``"http"``)
            the port bound, so a client may connect at once (``rag serve`` prints its
            "ready" line there).
        show_metadata: see :func:`build_server`.

    Raises:
        ConfigError: an unknown transport, a non-loopback host, a bad port, or any
            :func:`build_server` argument error.
        IndexLoadError: an index is missing or damaged.
    """
    if transport not in ("stdio", "http"):
        msg = f"unknown transport {transport!r}; use 'stdio' or 'http'"
        raise ConfigError(msg)
    if transport == "http":
        http_url(host, port)
    server = build_server(
        index_paths, names=names, descriptions=descriptions, ray=ray, show_metadata=show_metadata
    )
    ready = on_ready or (lambda: None)
    if transport == "stdio":
        ready()
        _run_stdio(server)
    else:
        _run_http(server, host, port, ready)


def _run_stdio(server: Server[Any]) -> None:
    import io

    import anyio
    from mcp import types as mt
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    async def run() -> None:
        # stdin through CheckedLines, so a line the SDK cannot read still gets an answer
        stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        lines = CheckedLines(anyio.wrap_file(stdin))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]

            async def answer(refusal: Refusal) -> None:
                request_id, code, message = refusal
                error = mt.ErrorData(code=code, message=message)
                reply = mt.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
                await write_stream.send(SessionMessage(reply))

            lines.answer = answer
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


def _run_http(server: Server[Any], host: str, port: int, ready: Callable[[], None]) -> None:
    import socket

    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = list(dict.fromkeys(["127.0.0.1", "localhost", "[::1]", _bracketed(host)]))
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in hosts],
        allowed_origins=[f"http://{h}:*" for h in hosts],
    )
    app = server.streamable_http_app(host=host, transport_security=security)
    logger.info("serving MCP over Streamable HTTP at %s", http_url(host, port))
    # log_config=None: uvicorn logs through the handlers the caller set up (stderr), never stdout.
    config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level="warning")
    # Bound here, not by uvicorn: a taken port is a ConfigError (uvicorn would exit the
    # process), and "ready" is said only once a client can connect.
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        msg = f"cannot listen on {http_url(host, port)}: {exc.strerror or exc}"
        raise ConfigError(msg) from exc
    sock.listen(socket.SOMAXCONN)
    ready()
    uvicorn.Server(config).run(sockets=[sock])
