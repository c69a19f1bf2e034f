"""What the MCP stdio transport lets through: every request line gets an answer.

The SDK's stdio reader validates each line with pydantic-core; a line it cannot take (a
string holding a lone surrogate such as ``"trace \\ud800 compile"``, which a model can emit,
or arguments nested a few hundred levels deep) becomes an exception the session only logs,
so the client waits for a reply that never comes. :class:`CheckedLines` stands between stdin
and the SDK:

* a line whose JSON nests deeper than :data:`MAX_WIRE_NESTING` is answered at once with a
  JSON-RPC *invalid params* error naming the bound (checked by scanning the text, without
  recursion, so 100,000 levels cost one pass);
* a line that is not JSON at all is answered with a *parse error* (id ``null``, as JSON-RPC
  2.0 says for a request whose id cannot be read);
* lone surrogates are replaced by U+FFFD, as everywhere else in the package
  (:func:`ragtools.parsers.document.replace_surrogates`), so the search runs and answers;
* everything else passes unchanged.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from ragtools.parsers.document import replace_surrogates
from ragtools.parsers.nesting import MAX_NESTING, nesting_problem, text_too_deep

logger = logging.getLogger(__name__)

MAX_WIRE_NESTING = MAX_NESTING + 3
"""The package's one nesting bound for arguments, plus the three levels of the JSON-RPC
envelope around them (``{"params": {"arguments": {...}}}``)."""
PARSE_ERROR = -32700
INVALID_PARAMS = -32602

Refusal = tuple[Any, int, str]
"""``(request id, JSON-RPC error code, message)`` of a line answered without the server."""


def check_line(line: str) -> str | Refusal:
    """``line`` as the SDK should read it, or the error to answer it with."""
    if text_too_deep(line, MAX_WIRE_NESTING):
        return _request_id(line), INVALID_PARAMS, f"invalid params: {nesting_problem()}"
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None, PARSE_ERROR, "parse error: the line is not one JSON-RPC message"
    text, replaced = replace_surrogates(json.dumps(message, ensure_ascii=False))
    if replaced:
        logger.warning("replaced %d lone surrogates in a request by U+FFFD", replaced)
        return text
    return line


def _request_id(line: str) -> Any:
    """The ``id`` of a request too deep to parse whole: the value after the first ``"id"``
    key that holds a number or a string. Clients write the envelope's ``id`` before its
    ``params``, so this is that id; ``None`` (allowed by JSON-RPC) when none is found."""
    decoder = json.JSONDecoder()
    start = line.find('"id"')
    while start != -1:
        rest = line[start + 4 :].lstrip()
        if rest.startswith(":"):
            with contextlib.suppress(ValueError):
                value, _ = decoder.raw_decode(rest[1:].lstrip())
                if isinstance(value, int | str) and not isinstance(value, bool):
                    return value
        start = line.find('"id"', start + 4)
    return None


class CheckedLines:
    """Async lines of ``source`` after :func:`check_line`; refused lines go to ``answer``.

    ``answer`` is set once the transport's write stream exists (before the first line is
    read), so a refusal is written back on the same wire as the server's own replies.
    """

    def __init__(self, source: Any) -> None:
        self.source = source
        self.answer: Callable[[Refusal], Awaitable[None]] | None = None

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self.source:
            checked = check_line(line)
            if isinstance(checked, str):
                yield checked
            elif self.answer is not None:
                await self.answer(checked)
