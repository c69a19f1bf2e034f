"""``rag serve`` over a sharded index, in-process and from Ray actors, answers as one index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import ray
from mcp import Client

from ragtools.indexes.index import Index
from ragtools.retrieval.integrations.mcp import build_server
from tests.retrieval.test_mcp import docs, expected, run, text_of  # noqa: F401 (fixture)

QUERIES = ["honey bees dance", "moon gravity", "magma crust", "nothing matches this"]


@pytest.fixture(scope="module")
def indexes(docs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:  # noqa: F811
    root = tmp_path_factory.mktemp("mcp-shards")
    Index.build([docs], root / "one", vector=False)
    Index.build([docs], root / "many", vector=False, shards=2)
    return root / "one", root / "many"


def _answers(server: Any) -> list[tuple[str, Any]]:
    async def session() -> list[tuple[str, Any]]:
        async with Client(server) as client:
            name = (await client.list_tools()).tools[0].name
            out = []
            for query in QUERIES:
                result = await client.call_tool(name, {"query": query})
                out.append((text_of(result), result.structured_content))
            return out

    return run(session)


@pytest.mark.parametrize("on_ray", [False, True])
def test_sharded_index_served_like_one_index(indexes: tuple[Path, Path], on_ray: bool) -> None:
    one, many = indexes
    if on_ray:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        answers = _answers(build_server([many], names=["notes"], ray="" if on_ray else None))
    finally:
        if on_ray:
            ray.shutdown()
    for query, (content, structured) in zip(QUERIES, answers, strict=True):
        want_content, want_hits = expected(one, query)
        assert content == want_content and structured == {"hits": want_hits}
