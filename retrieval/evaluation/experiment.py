"""A BEIR experiment end to end: index the corpus (or reuse it), run retrievers, report.

This is the engine behind ``rag eval`` and ``eval/beir.py``. The corpus is indexed with one
chunk per document (``EVAL_CHUNK_SIZE`` is above SciFact's longest document, 10,126
characters), as the published BEIR figures are document-level. The index is reused when its
manifest records the same documents and settings, and its embedding cache makes a rebuild
after a settings change cheap. The documents come from the parsers' BEIR loader, the one
``rag build corpus.jsonl`` uses, so the index holds the text a user's index would.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragtools.indexes.dense.embed import Embedder
from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.index import Index
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.store.versions import is_index_root
from ragtools.parsers.document import Document
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.base import Retriever
from ragtools.retrieval.evaluation.beir import BeirDataset, corpus_documents, load_beir
from ragtools.retrieval.evaluation.metrics import DEFAULT_K_VALUES, Run, average, per_query
from ragtools.retrieval.evaluation.provenance import collect_provenance
from ragtools.retrieval.evaluation.report import REQUIRED_METRICS, build_report, write_report
from ragtools.retrieval.evaluation.runner import run_retriever
from ragtools.retrieval.evaluation.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_ci
from ragtools.retrieval.names import RETRIEVER_NAMES, canonical_retriever, retriever_for

__all__ = [
    "DEFAULT_DEPTH",
    "EVAL_CHUNK_SIZE",
    "RETRIEVER_NAMES",
    "make_retrievers",
    "open_or_build",
    "run_eval",
]

logger = logging.getLogger(__name__)

EVAL_CHUNK_SIZE = 12_000
DEFAULT_DEPTH = 1000
"""Documents per query in a run, as trec_eval's and BEIR's @1000 measures need."""
_NEEDS_VECTOR = {"vector", "hybrid", "hybrid_rrf"}


def _fingerprint(documents: Sequence[Document], settings: IndexSettings) -> str:
    """Documents, settings and the BM25 parameters they resolve to: an index built before a
    default (or the corpus loader's normalisation) changed is rebuilt rather than measured
    with the old one. ``source`` is left out so that moving the dataset keeps the index, and
    ``keep_versions`` because it changes what is kept on disk, not what the index holds."""
    digest = hashlib.sha256()
    for document in documents:
        metadata = {k: v for k, v in document.metadata.items() if k != "source"}
        record = [document.id, document.text, metadata]
        digest.update(json.dumps(record, sort_keys=True, ensure_ascii=False).encode())
        digest.update(b"\n")
    content = settings.model_dump(mode="json", exclude={"keep_versions"})  # changes no row
    digest.update(json.dumps(content, sort_keys=True).encode())
    if settings.keyword:
        resolved = settings.new_bm25().params
        digest.update(json.dumps(resolved, sort_keys=True).encode())
    return digest.hexdigest()


def open_or_build(
    dataset: BeirDataset,
    index_dir: str | Path,
    *,
    vector: bool = True,
    model: str | None = None,
    precision: str | None = None,
    embedder: Embedder | None = None,
    show_progress: bool | None = None,
    shards: int | None = None,
) -> Index:
    """Open ``index_dir`` if it indexes this corpus with these settings (and as many
    ``shards``; ``None``: one bundle), else (re)build it."""
    settings = IndexSettings.checked(
        {"chunk_size": EVAL_CHUNK_SIZE, "chunk_overlap": 0, "vector": vector}
        | {"model": model}
        | ({} if precision is None else {"precision": precision})
    )
    documents = corpus_documents(dataset)
    fingerprint = _fingerprint(documents, settings)
    if is_index_root(index_dir):
        try:
            index = Index.open(index_dir, embedder=embedder)
            same_shards = len(getattr(index, "shards", ())) == (shards or 0)
            if index.meta.get("corpus_fingerprint") == fingerprint and same_shards:
                logger.info("reusing index %s", index_dir)
                return index
        except IndexLoadError as exc:
            logger.warning("rebuilding %s: %s", index_dir, exc)
    started = time.perf_counter()
    index = Index.from_documents(
        documents,
        index_dir,
        settings=settings,
        embedder=embedder,
        show_progress=show_progress,
        meta={"corpus_fingerprint": fingerprint, "dataset": dataset.name},
        shards=shards,
    )
    logger.info("indexed %d documents in %.1fs", len(index.chunks), time.perf_counter() - started)
    return index


def make_retrievers(
    index: Index, names: Sequence[str], **hybrid_options: Any
) -> dict[str, Retriever]:
    """Retrievers by name through :func:`~retrieval.names.retriever_for`: ``keyword``
    (alias ``bm25``), ``vector``, ``hybrid`` (tuned default fusion, or ``hybrid_options``),
    ``hybrid_rrf`` (plain RRF, equal weights) and ``front_page``.

    Raises:
        ConfigError: an unknown name, listing the valid ones.
    """
    return {
        canonical_retriever(name): retriever_for(
            index, name, **(hybrid_options if canonical_retriever(name) == "hybrid" else {})
        )
        for name in names
    }


def run_eval(
    dataset_dir: str | Path,
    *,
    split: str = "test",
    retrievers: Sequence[str] = ("keyword", "vector", "hybrid"),
    out: str | Path,
    index_dir: str | Path | None = None,
    max_queries: int | None = None,
    model: str | None = None,
    precision: str | None = None,
    depth: int = DEFAULT_DEPTH,
    show_progress: bool | None = None,
    hybrid_options: Mapping[str, Any] | None = None,
    shards: int | None = None,
) -> dict[str, Any]:
    """Evaluate ``retrievers`` on a BEIR dataset and write the report into ``out``.

    Args:
        dataset_dir: the BEIR folder.
        split: the qrels split evaluated.
        retrievers: names of :data:`RETRIEVER_NAMES` or their aliases (``bm25``).
        out: the report directory.
        index_dir: where the index is (re)built; ``out/index`` by default.
        max_queries: evaluate only the first queries (by id), for a quick look.
        model: the embedding model (name or path); the bundled default otherwise.
        precision: the model's precision (:attr:`IndexSettings.precision`); ``None``: the
            default for this CPU.
        depth: documents retrieved per query; metrics are reported at the cut-offs of
            :data:`DEFAULT_K_VALUES` no deeper than this.
        show_progress: progress bars; ``None``: on a terminal only, log records elsewhere
            (:mod:`parsers.progress`).
        hybrid_options: keyword arguments for the ``hybrid`` retriever.

    Returns:
        The report (also written as ``report.json``, ``report.md``, ``report.png``,
        ``runs/NAME.trec`` and ``runs/NAME.per_query.jsonl``).
    """
    names = list(dict.fromkeys(canonical_retriever(name) for name in retrievers))
    unknown = [name for name in names if name not in RETRIEVER_NAMES]
    if unknown or not names:
        msg = f"unknown retriever(s) {', '.join(unknown)}; choose from {', '.join(RETRIEVER_NAMES)}"
        raise ConfigError(msg)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        msg = f"depth must be an integer >= 1, got {depth!r}"
        raise ConfigError(msg)
    started_at = datetime.now(timezone.utc)
    dataset = load_beir(dataset_dir, split)
    queries: Mapping[str, str] = dataset.queries
    if max_queries is not None:
        queries = dict(sorted(queries.items())[:max_queries])
    out = Path(out)
    clock = time.perf_counter()
    index = open_or_build(
        dataset,
        index_dir or out / "index",
        vector=bool(_NEEDS_VECTOR & set(names)),
        model=model,
        precision=precision,
        show_progress=show_progress,
        shards=shards,
    )
    seconds: dict[str, Any] = {"index": time.perf_counter() - clock, "retrieve": {}, "score": 0.0}
    cutoffs = [k for k in DEFAULT_K_VALUES if k <= depth]
    qrels = {qid: dataset.qrels[qid] for qid in queries}
    results: dict[str, dict[str, Any]] = {}
    runs: dict[str, Run] = {}
    rows: dict[str, dict[str, dict[str, float]]] = {}
    for name, retriever in make_retrievers(index, names, **(hybrid_options or {})).items():
        clock = time.perf_counter()
        result = run_retriever(
            retriever, queries, k=depth, overfetch=1.0, show_progress=show_progress
        )
        seconds["retrieve"][name] = time.perf_counter() - clock
        clock = time.perf_counter()
        rows[name] = per_query(qrels, result.run, cutoffs)
        results[name] = {
            **average(rows[name]),
            "ci95": _intervals(rows[name]),
            "latency_ms": result.latency_summary(),
        }
        seconds["score"] += time.perf_counter() - clock
        runs[name] = result.run
        logger.info("%s: nDCG@10 %.4f", name, results[name].get("nDCG@10", float("nan")))
    provenance = collect_provenance(
        dataset_name=dataset.name,
        split=split,
        dataset_dir=dataset_dir,
        dataset_files=("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"),
        num_queries=len(queries),
        started_at=started_at,
        seconds=seconds,
        settings={
            "retrievers": names,
            "depth": depth,
            "cutoffs": cutoffs,
            "max_queries": max_queries,
            "missing_queries": "zero",
            "chunk_size": EVAL_CHUNK_SIZE,
            "hybrid_options": dict(hybrid_options or {}),
            "ci": {"confidence": 0.95, "resamples": DEFAULT_RESAMPLES, "seed": DEFAULT_SEED},
        },
        index=index,
    )
    report = build_report(
        dataset.name, split, len(queries), results, depth=depth, provenance=provenance
    )
    write_report(report, out, runs=runs, per_query=rows)
    return report


def _intervals(rows: Mapping[str, Mapping[str, float]]) -> dict[str, list[float]]:
    """Bootstrap 95% intervals of the means the chart draws and papers quote."""
    intervals = {}
    for metric in REQUIRED_METRICS:
        values = [row[metric] for row in rows.values() if metric in row]
        if len(values) == len(rows) >= 2:
            intervals[metric] = list(bootstrap_ci(values))
    return intervals
