"""Run any retriever over a dataset's queries: a document-level run plus per-query latency.

What is measured, and how:

* **Latency.** Every query goes through ``retriever.invoke(query, k=...)`` on its own and is
  timed with :func:`time.perf_counter`; nothing is averaged over a batch, so p50/p95 are the
  latencies a user sees for one query. ``warmup`` untimed calls come first, so lazy model
  loading is not charged to the first query. When a query needs a second call (below), its
  latency is the sum of its calls: the real cost of getting k documents.
* **Throughput** (optional, ``throughput=True``): the queries are sent again through
  ``retriever.batch`` in groups of ``batch_size`` and the wall time gives queries per second.
  Those results are not used for the run.
* **Documents, not chunks.** Qrels judge documents, but an index may hold several chunks of
  one document. A document's score is its best chunk's score (max-passage, the usual choice
  in BEIR passage experiments); the document id comes from ``hit.chunk.doc_id`` unless
  ``doc_key`` says otherwise. Since chunks collapse, the retriever is asked for
  ``ceil(k * overfetch)`` chunks (2k by default); if that yields fewer than k documents while
  the retriever returned all it was asked for, the request is doubled and repeated, up to
  ``k * 64`` chunks. The documents are then ranked in trec_eval order (score descending,
  doc id descending on ties) and cut to k, so the run holds what trec_eval will see.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ragtools.parsers.errors import ConfigError, ParseError
from ragtools.parsers.progress import progress
from ragtools.retrieval.base import Retriever
from ragtools.retrieval.evaluation._io import atomic_write
from ragtools.retrieval.evaluation.beir import BeirDataset
from ragtools.retrieval.evaluation.metrics import Run, trec_order
from ragtools.retrieval.hit import Hit

__all__ = ["RunResult", "latency_summary", "read_trec_run", "run_retriever", "write_trec_run"]

logger = logging.getLogger(__name__)

_MAX_OVERFETCH = 64
"""Never ask for more than ``k * 64`` chunks: beyond that the corpus is mostly one document."""


@dataclass(frozen=True)
class RunResult:
    """The outcome of :func:`run_retriever`.

    Attributes:
        run: ``{query_id: {doc_id: score}}`` with at most k documents per query; a query
            with no hits maps to ``{}``.
        latencies_ms: the wall time of each query in milliseconds, aligned with
            ``query_ids``.
        query_ids: the queries in the order they were run.
        k: the number of documents asked for per query.
        refetches: how many extra ``invoke`` calls were needed to collect k documents.
        queries_per_second: batch throughput when measured, else ``None``.
    """

    run: dict[str, dict[str, float]]
    latencies_ms: list[float]
    query_ids: list[str] = field(default_factory=list)
    k: int = 100
    refetches: int = 0
    queries_per_second: float | None = None

    def latency_summary(self) -> dict[str, float]:
        """:func:`latency_summary` of :attr:`latencies_ms`."""
        return latency_summary(self.latencies_ms)


def _chunk_doc_id(hit: Hit) -> str:
    return hit.chunk.doc_id


def run_retriever(
    retriever: Retriever,
    dataset: BeirDataset | Mapping[str, str],
    *,
    k: int = 100,
    batch_size: int = 32,
    show_progress: bool | None = None,
    doc_key: Callable[[Hit], str] | None = None,
    overfetch: float = 2.0,
    warmup: int = 1,
    throughput: bool = False,
) -> RunResult:
    """Run every query of ``dataset`` through ``retriever`` and time each one.

    Args:
        retriever: anything with ``invoke(query, *, k)`` (and ``batch`` for throughput).
        dataset: a :class:`BeirDataset` (its judged queries are run) or ``{query_id: text}``.
        k: documents kept per query.
        batch_size: queries per ``batch`` call; used only when ``throughput`` is true.
        show_progress: a progress bar on stderr; ``None``: on a terminal only, log records
            elsewhere (:mod:`parsers.progress`).
        doc_key: maps a hit to its document id; defaults to ``hit.chunk.doc_id``.
        overfetch: chunks asked for per document wanted (>= 1); use 1.0 when every document
            is a single chunk.
        warmup: untimed calls (with the first query) before timing starts.
        throughput: also measure queries per second through ``retriever.batch``.

    Returns:
        The document-level run, per-query latencies and counters.

    Raises:
        ConfigError: ``k``, ``batch_size``, ``overfetch`` or ``warmup`` out of range.
    """
    _check(k >= 1, f"k must be >= 1, got {k!r}")
    _check(batch_size >= 1, f"batch_size must be >= 1, got {batch_size!r}")
    _check(overfetch >= 1.0, f"overfetch must be >= 1.0, got {overfetch!r}")
    _check(warmup >= 0, f"warmup must be >= 0, got {warmup!r}")
    queries = dataset.queries if isinstance(dataset, BeirDataset) else dataset
    key = doc_key or _chunk_doc_id
    first_fetch = max(k, math.ceil(k * overfetch))
    items = list(queries.items())
    for _ in range(warmup if items else 0):
        retriever.invoke(items[0][1], k=first_fetch)

    run: dict[str, dict[str, float]] = {}
    latencies: list[float] = []
    refetches = 0
    for query_id, text in progress(
        items, total=len(items), desc="queries", show_progress=show_progress, unit="queries"
    ):
        docs, elapsed, extra = _retrieve_documents(retriever, text, k, first_fetch, key)
        run[query_id] = docs
        latencies.append(elapsed * 1000.0)
        refetches += extra
        logger.debug("query %s: %d documents in %.2f ms", query_id, len(docs), elapsed * 1e3)
    short = sum(1 for docs in run.values() if len(docs) < k)
    if short:
        logger.warning("%d of %d queries returned fewer than k=%d documents", short, len(run), k)

    if latencies:
        summary = latency_summary(latencies)
        logger.info(
            "ran %d queries (k=%d): latency p50 %.2f ms, p95 %.2f ms, %d refetches",
            len(items),
            k,
            summary["p50"],
            summary["p95"],
            refetches,
        )
    qps = None
    if throughput:
        qps = _throughput(retriever, [text for _, text in items], first_fetch, batch_size)
    return RunResult(
        run=run,
        latencies_ms=latencies,
        query_ids=[query_id for query_id, _ in items],
        k=k,
        refetches=refetches,
        queries_per_second=qps,
    )


def _check(ok: bool, msg: str) -> None:
    if not ok:
        raise ConfigError(msg)


def _retrieve_documents(
    retriever: Retriever, text: str, k: int, fetch: int, key: Callable[[Hit], str]
) -> tuple[dict[str, float], float, int]:
    """Collapse chunk hits to at most k documents; returns (docs, seconds, extra calls)."""
    limit = k * _MAX_OVERFETCH
    elapsed = 0.0
    extra = 0
    while True:
        start = time.perf_counter()
        hits = retriever.invoke(text, k=fetch)
        elapsed += time.perf_counter() - start
        best: dict[str, float] = {}
        for hit in hits:
            doc_id = key(hit)
            if doc_id not in best or hit.score > best[doc_id]:
                best[doc_id] = hit.score
        if len(best) >= k or len(hits) < fetch or fetch >= limit:
            return dict(trec_order(best)[:k]), elapsed, extra
        fetch = min(fetch * 2, limit)
        extra += 1


def _throughput(
    retriever: Retriever, texts: Sequence[str], fetch: int, batch_size: int
) -> float | None:
    if not texts:
        return None
    start = time.perf_counter()
    for offset in range(0, len(texts), batch_size):
        retriever.batch(texts[offset : offset + batch_size], k=fetch)
    elapsed = time.perf_counter() - start
    return len(texts) / elapsed if elapsed > 0 else None


def latency_summary(latencies: Sequence[float]) -> dict[str, float]:
    """Median, 95th percentile (linear interpolation) and mean of latencies.

    Args:
        latencies: per-query latencies, in milliseconds.

    Returns:
        ``{"p50": ..., "p95": ..., "mean": ...}`` in the unit of the input.

    Raises:
        ConfigError: no latencies were given.
    """
    if len(latencies) == 0:
        msg = "no latencies to summarise: run at least one query"
        raise ConfigError(msg)
    values = np.asarray(latencies, dtype=np.float64)
    return {
        "p50": float(np.percentile(values, 50)),
        "p95": float(np.percentile(values, 95)),
        "mean": float(values.mean()),
    }


def write_trec_run(run: Run, path: str | Path, tag: str = "ragtools") -> Path:
    """Write a run in TREC format: ``qid Q0 docid rank score tag``, one document a line.

    Ranks follow trec_eval's order (score descending, doc id descending on ties), and scores
    are written with ``repr`` so they read back exactly and keep that order. The file is
    written atomically (a temporary sibling, then a rename).

    Args:
        run: ``{query_id: {doc_id: score}}``.
        path: the output file; missing parent directories are created.
        tag: the run tag of the last column (no whitespace).

    Returns:
        The path written.

    Raises:
        ConfigError: the tag, a query id or a document id is empty or contains whitespace.
    """
    _check_token(tag, "tag")
    lines = []
    for query_id, scores in run.items():
        _check_token(query_id, "query id")
        for rank, (doc_id, score) in enumerate(trec_order(scores), start=1):
            _check_token(doc_id, "document id")
            lines.append(f"{query_id} Q0 {doc_id} {rank} {score!r} {tag}\n")
    return atomic_write(path, "".join(lines))


def read_trec_run(path: str | Path) -> dict[str, dict[str, float]]:
    """Read a TREC run file (``qid Q0 docid rank score tag``); the rank column is ignored.

    Raises:
        ParseError: the file is missing, a line has not six fields or a bad score, or a
            document appears twice for one query; the message names the line.
    """
    source = Path(path)
    run: dict[str, dict[str, float]] = {}
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"cannot read the run file ({exc.strerror or exc})"
        raise ParseError(source, msg) from exc
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        try:
            if len(fields) != 6:
                raise ValueError
            score = float(fields[4])
        except ValueError:
            msg = f"line {number}: expected 'qid Q0 docid rank score tag', got {line[:80]!r}"
            raise ParseError(source, msg) from None
        scores = run.setdefault(fields[0], {})
        if fields[2] in scores:
            msg = f"line {number}: document {fields[2]!r} appears twice for query {fields[0]!r}"
            raise ParseError(source, msg)
        scores[fields[2]] = score
    return run


def _check_token(value: str, what: str) -> None:
    if not value or any(ch.isspace() for ch in value):
        msg = f"{what} {value!r} cannot be written to a TREC run: it is empty or has whitespace"
        raise ConfigError(msg)
