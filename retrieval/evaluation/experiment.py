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
from pathlib import Path
from typing import Any

from ragtools.indexes.bundle import Index
from ragtools.indexes.embed import Embedder
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.versions import is_index_root
from ragtools.parsers.document import Document
from ragtools.parsers.errors import ConfigError, IndexLoadError
from ragtools.retrieval.base import Retriever
from ragtools.retrieval.evaluation.beir import BeirDataset, corpus_documents, load_beir
from ragtools.retrieval.evaluation.metrics import evaluate_run
from ragtools.retrieval.evaluation.report import build_report, write_report
from ragtools.retrieval.evaluation.runner import run_retriever
from ragtools.retrieval.frontpage import FrontPageRetriever
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.vector import VectorRetriever

__all__ = ["EVAL_CHUNK_SIZE", "RETRIEVER_NAMES", "make_retrievers", "open_or_build", "run_eval"]

logger = logging.getLogger(__name__)

EVAL_CHUNK_SIZE = 12_000
RETRIEVER_NAMES = ("bm25", "vector", "hybrid", "hybrid_rrf", "front_page")
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
    embedder: Embedder | None = None,
    show_progress: bool | None = None,
) -> Index:
    """Open ``index_dir`` if it indexes this corpus with these settings, else (re)build it."""
    settings = IndexSettings(
        chunk_size=EVAL_CHUNK_SIZE, chunk_overlap=0, vector=vector, model=model
    )
    documents = corpus_documents(dataset)
    fingerprint = _fingerprint(documents, settings)
    if is_index_root(index_dir):
        try:
            index = Index.open(index_dir, embedder=embedder)
            if index.meta.get("corpus_fingerprint") == fingerprint:
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
    )
    logger.info("indexed %d documents in %.1fs", len(index.chunks), time.perf_counter() - started)
    return index


def make_retrievers(
    index: Index, names: Sequence[str], **hybrid_options: Any
) -> dict[str, Retriever]:
    """Retrievers by name: ``bm25``, ``vector``, ``hybrid`` (tuned default fusion),
    ``hybrid_rrf`` (plain RRF, equal weights) and ``front_page``."""
    made: dict[str, Retriever] = {}
    for name in names:
        if name == "bm25":
            made[name] = KeywordRetriever(index)
        elif name == "vector":
            made[name] = VectorRetriever(index)
        elif name == "hybrid":
            made[name] = HybridRetriever.from_index(index, **hybrid_options)
        elif name == "hybrid_rrf":
            made[name] = HybridRetriever.from_index(index, fusion="rrf", weights=None)
        elif name == "front_page":
            made[name] = FrontPageRetriever(index)
        else:
            msg = f"unknown retriever {name!r}; choose from {', '.join(RETRIEVER_NAMES)}"
            raise ConfigError(msg)
    return made


def run_eval(
    dataset_dir: str | Path,
    *,
    split: str = "test",
    retrievers: Sequence[str] = ("bm25", "vector", "hybrid"),
    out: str | Path,
    index_dir: str | Path | None = None,
    max_queries: int | None = None,
    model: str | None = None,
    k: int = 100,
    show_progress: bool | None = None,
    hybrid_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate ``retrievers`` on a BEIR dataset and write the report into ``out``.

    Returns:
        The report (also written as ``report.json``, ``report.md``, ``report.png`` and
        ``runs/NAME.trec``).
    """
    unknown = [name for name in retrievers if name not in RETRIEVER_NAMES]
    if unknown:
        msg = f"unknown retriever(s) {', '.join(unknown)}; choose from {', '.join(RETRIEVER_NAMES)}"
        raise ConfigError(msg)
    dataset = load_beir(dataset_dir, split)
    queries: Mapping[str, str] = dataset.queries
    if max_queries is not None:
        queries = dict(sorted(queries.items())[:max_queries])
    out = Path(out)
    index = open_or_build(
        dataset,
        index_dir or out / "index",
        vector=bool(_NEEDS_VECTOR & set(retrievers)),
        model=model,
        show_progress=show_progress,
    )
    results: dict[str, dict[str, Any]] = {}
    runs = {}
    for name, retriever in make_retrievers(index, retrievers, **(hybrid_options or {})).items():
        result = run_retriever(retriever, queries, k=k, overfetch=1.0, show_progress=show_progress)
        qrels = {qid: dataset.qrels[qid] for qid in queries}
        metrics = evaluate_run(qrels, result.run)
        results[name] = {**metrics, "latency_ms": result.latency_summary()}
        runs[name] = result.run
        logger.info("%s: nDCG@10 %.4f", name, metrics["ndcg@10"])
    report = build_report(dataset.name, split, len(queries), results)
    write_report(report, out, runs=runs)
    return report
