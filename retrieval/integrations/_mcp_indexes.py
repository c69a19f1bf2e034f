"""Naming and opening the indexes the MCP server serves (:mod:`.mcp` without the protocol).

Kept apart from :mod:`ragtools.retrieval.integrations.mcp` along its one seam that needs no
``mcp`` SDK: turning index directories into
:class:`Served` entries (validated, unique tool names; default descriptions; each index
opened once, its embedding model warmed up, its summary made). The protocol side
(tools, handlers, transports) stays in :mod:`.mcp`, which passes in the hits per call and the
reserved listing tool name, so this module imports nothing from it.

An index's summary (:func:`index_summary`: what ``list_indexes`` and the index's resource
return) is what a model needs to choose an index, and nothing about the machine it runs
on: counts, build settings, and the files counted by type (indexed, skipped, failed), not
listed one by one, which for a documentation folder is tens of kilobytes of image paths.
It holds no absolute path: sources and a local model directory appear by their names.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any

from ragtools.parsers.errors import ConfigError

if TYPE_CHECKING:
    from ragtools.indexes.index import Index
    from ragtools.retrieval.tools.base import BaseTool

logger = logging.getLogger(__name__)

_MAX_NAME = 64  # the longest tool name the major model APIs accept
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Served:
    """One index as served: its tool, the tool's name and description, its summary."""

    name: str
    description: str
    summary: dict[str, Any]
    tool: BaseTool


# --------------------------------------------------------------------------- naming


def _default_name(path: Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", path.name).strip("_") or "index"
    return f"search_{stem}"[:_MAX_NAME]


def _tool_names(paths: Sequence[Path], names: Sequence[str] | None, reserved: str) -> list[str]:
    """Given names first (validated, unique); defaults fill the rest, suffixed if taken."""
    given = list(names or [])
    if len(given) > len(paths):
        msg = f"got {len(given)} names for {len(paths)} indexes; give at most one name per index"
        raise ConfigError(msg)
    for name in given:
        if not _NAME_RE.match(name):
            msg = f"invalid tool name {name!r}: use 1-{_MAX_NAME} characters of [A-Za-z0-9_-]"
            raise ConfigError(msg)
        if name == reserved:
            msg = f"tool name {reserved!r} is reserved for the index listing; pick another"
            raise ConfigError(msg)
    duplicates = sorted({name for name in given if given.count(name) > 1})
    if duplicates:
        msg = f"duplicate tool names {duplicates}; give every index its own --name"
        raise ConfigError(msg)
    result = list(given)
    taken = {*given, reserved}
    for path in paths[len(given) :]:
        base = _default_name(path)
        name, n = base, 1
        while name in taken:
            n += 1
            suffix = f"_{n}"
            name = base[: _MAX_NAME - len(suffix)] + suffix
        taken.add(name)
        result.append(name)
    return result


def _default_description(path: Path, index: Index) -> str:
    files = sorted({PureWindowsPath(f).name for f in _indexed_files(index)})
    shown = ", ".join(files[:8]) + (f" and {len(files) - 8} more" if len(files) > 8 else "")
    counts = index.manifest.get("counts") or {}
    halves = (("keyword", index.bm25), ("vector", index.vector))
    kinds = [half for half, part in halves if part is not None]
    return (
        f"Search the '{path.name}' index ({counts.get('chunks', len(index.chunks))} passages"
        f"{' from ' + shown if shown else ''}; {' + '.join(kinds)} search). Returns the most "
        "relevant passages, each with a citation (source file, page). Input: a natural-language "
        "query."
    )


# --------------------------------------------------------------------------- opening


def open_all(
    index_paths: Sequence[str | Path],
    names: Sequence[str] | None,
    descriptions: Sequence[str] | None,
    *,
    k: int,
    reserved: str,
    ray: str | None = None,
) -> list[Served]:
    """Open every index once and make its retriever tool (``k`` hits a call).

    ``reserved`` is the tool name no index may take (the server's listing tool); with
    ``ray`` (an address, ``""`` for a local cluster) sharded indexes are served from Ray
    actors (:func:`indexes.ray_shards.serve_on_ray`).
    """
    from ragtools.indexes.index import Index
    from ragtools.retrieval.names import retriever_for
    from ragtools.retrieval.tools.retriever_tool import create_retriever_tool

    paths = [Path(p).expanduser().resolve() for p in index_paths]
    if not paths:
        msg = "no index given; pass at least one index directory (built with `rag build`)"
        raise ConfigError(msg)
    if len(set(paths)) != len(paths):
        msg = f"an index is given twice in {[str(p) for p in paths]}; give each index once"
        raise ConfigError(msg)
    texts = list(descriptions or [])
    if len(texts) > len(paths):
        msg = f"got {len(texts)} descriptions for {len(paths)} indexes; give at most one each"
        raise ConfigError(msg)
    tool_names = _tool_names(paths, names, reserved)
    served = []
    for i, (path, name) in enumerate(zip(paths, tool_names, strict=True)):
        index = Index.open(path)
        if ray is not None:
            _serve_on_ray(index, ray)
        if index.vector is not None:  # load the model now: a slow or failing first call is worse
            index.embedder.embed_query("warm-up")
        retriever = retriever_for(index, "hybrid", k=k)
        description = texts[i] if i < len(texts) else _default_description(path, index)
        tool = create_retriever_tool(retriever, name, description)
        served.append(Served(name, description, index_summary(index), tool))
        logger.info("serving %s as tool %r (%d chunks)", path, name, len(index))
    return served


def _serve_on_ray(index: Any, address: str) -> None:
    from ragtools.indexes.ray_shards import serve_on_ray

    serve_on_ray(index, address or None)


# --------------------------------------------------------------------------- summary


def index_summary(index: Index) -> dict[str, Any]:
    """What a model is told about an index (see the module docstring): JSON values only.

    ``files`` counts the tracked files by type (their suffix, ``""`` for none) as
    ``indexed``, ``skipped`` (a reason to leave them out, e.g. images) and ``failed``
    (unreadable); ``counts`` and the settings are those of :meth:`Index.info`.
    """
    info = index.info()
    summary = {
        "index": index.path.name,
        "created": info.get("created"),
        "package_version": info.get("package_version"),
        "counts": info.get("counts"),
        "files": {
            "indexed": _by_type(_indexed_files(index)),
            "skipped": _by_type(path for path, _ in index.skipped),
            "failed": _by_type(failure.path for failure in index.failures),
        },
        "sources": [_name(source) for source in index.sources],
        "selection": info.get("selection"),
        "settings": _without_directories(info.get("settings")),
        "bm25": info.get("bm25"),
        "embedder": _without_directories(info.get("embedder")),
    }
    if isinstance(info.get("shards"), list):
        summary["shards"] = len(info["shards"])
    safe: dict[str, Any] = json.loads(json.dumps(summary, ensure_ascii=False, default=str))
    return safe


def _indexed_files(index: Index) -> list[str]:
    """The tracked files that were read: neither skipped nor failed."""
    left_out = {path for path, _ in index.skipped} | {f.path for f in index.failures}
    return [path for path in index.fingerprints if path not in left_out]


def _by_type(paths: Iterable[str]) -> dict[str, int]:
    """How many of ``paths`` have each suffix (lowercase, without the dot), most first."""
    counts = Counter(PureWindowsPath(path).suffix.lower().lstrip(".") for path in paths)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _is_absolute(text: str) -> bool:
    return PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute()


def _name(text: str) -> str:
    """An absolute path's last part; any other text as it is."""
    return PureWindowsPath(text).name if _is_absolute(text) else text


def _without_directories(value: Any) -> Any:
    """Settings as JSON with every absolute path replaced by its name (a model directory
    given to ``--model`` as a path is named by its folder), so none reaches a model."""
    if isinstance(value, dict):
        return {str(key): _without_directories(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_directories(item) for item in value]
    if isinstance(value, str):
        return _name(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)
