"""Fakes shared by the tool tests: hits with source/page metadata and a recording retriever."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from ragtools.parsers.document import Chunk
from ragtools.retrieval.hit import Hit


def make_hits() -> list[Hit]:
    """Three hits: a PDF page, a chunk spanning two pages, an unpaged Markdown file."""
    chunks = [
        Chunk(doc_id="d1", text="Alpha text.", metadata={"source": "a.pdf", "page": 3}),
        Chunk(
            doc_id="d2",
            text="Beta text is longer.",
            metadata={"source": "b.pdf", "page_start": 4, "page_end": 5, "lang": "en"},
        ),
        Chunk(doc_id="d3", text="Gamma.", metadata={"source": "c.md"}),
    ]
    return [
        Hit(chunk=c, score=s, rank=r, scores={"bm25": s}, stage="bm25")
        for r, (c, s) in enumerate(zip(chunks, [3.5, 2.25, 1.0], strict=True), start=1)
    ]


class FakeRetriever:
    """Returns fixed hits (the first k) and records every call and its path."""

    def __init__(self, hits: Sequence[Hit]) -> None:
        self.hits = list(hits)
        self.calls: list[tuple[str, str, int | None]] = []

    def invoke(self, query: str, *, k: int | None = None, filter: Any = None) -> list[Hit]:
        self.calls.append(("invoke", query, k))
        return self.hits[:k] if k else list(self.hits)

    async def ainvoke(self, query: str, *, k: int | None = None, filter: Any = None) -> list[Hit]:
        await asyncio.sleep(0)
        self.calls.append(("ainvoke", query, k))
        return self.hits[:k] if k else list(self.hits)

    def batch(
        self, queries: Sequence[str], *, k: int | None = None, filter: Any = None
    ) -> list[list[Hit]]:
        return [self.invoke(q, k=k) for q in queries]


@pytest.fixture
def hits() -> list[Hit]:
    return make_hits()


@pytest.fixture
def retriever(hits: list[Hit]) -> FakeRetriever:
    return FakeRetriever(hits)
