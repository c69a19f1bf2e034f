"""What the studies in ``eval/`` share: the corpus as texts, BM25 grids, scoring a BM25 run.

``eval/bench_bm25.py``, ``tune_bm25.py``, ``tune_title_boost.py`` and
``check_bm25_selection.py`` tokenise the same corpus, search it with bare ``BM25Index``
objects and score the runs the same way, and ``bench_vector.py`` embeds the same texts. That
code lives here, in the package, rather than in one script the others reach through
``sys.path``; and the corpus comes from :func:`corpus_documents` (the parsers' BEIR loader,
as ``rag build corpus.jsonl`` and ``rag eval`` read it), so the figures these scripts print
are of the text an index holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ragtools.retrieval.evaluation.beir import (
    corpus_documents,
    load_beir,
    load_qrels,
    load_queries,
)
from ragtools.retrieval.evaluation.metrics import Qrels, Run, per_query

if TYPE_CHECKING:
    from ragtools.indexes.keyword.bm25 import BM25Index

__all__ = [
    "B_GRID",
    "K1_GRID",
    "K3_GRID",
    "bm25_run",
    "evaluate",
    "load_corpus",
    "load_titles",
    "run_split",
]

#: The (k1, b) grid of ``eval/tune_bm25.py``'s stage 2, also searched by
#: ``eval/check_bm25_selection.py``.
K1_GRID = (0.6, 0.9, 1.2, 1.5, 1.8, 2.2)
B_GRID = (0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9)
#: k3 values of stage 3; stages 1 and 2 use inf (rank-bm25's linear query-term count).
K3_GRID = (math.inf, 8.0, 2.0, 1.0, 0.5, 0.0)


def load_corpus(
    root: str | Path, splits: Sequence[str] = ("train", "test")
) -> tuple[list[str], list[str], dict[str, str], dict[str, dict[str, dict[str, int]]]]:
    """A BEIR dataset for token-level studies: document ids and texts (in corpus order),
    every query of ``queries.jsonl`` by id (in file order), and the qrels of each split.

    The texts are ``rag build``'s: normalised ``title + "\\n\\n" + text``.
    """
    documents = corpus_documents(load_beir(root, splits[0]))
    qrels = {split: load_qrels(root, split) for split in splits}
    ids = [document.id for document in documents]
    texts = [document.text for document in documents]
    return ids, texts, load_queries(root), qrels


def load_titles(root: str | Path) -> list[str]:
    """The title of every corpus document (``""`` when it has none), in corpus order, as the
    index's title boost reads it (``metadata["title"]``)."""
    documents = corpus_documents(load_beir(root, "test"))
    return [str(document.metadata.get("title", "")) for document in documents]


def evaluate(qrels: Qrels, run: Run) -> dict[str, float]:
    """Mean nDCG@10 and Recall@100 over the judged queries (absent ones count 0), and the
    standard error of the nDCG@10 mean over queries."""
    rows = per_query(qrels, run, (10, 100))
    ndcg = [row["nDCG@10"] for row in rows.values()]
    mean = math.fsum(ndcg) / len(ndcg)
    spread = math.sqrt(math.fsum((value - mean) ** 2 for value in ndcg) / len(ndcg))
    return {
        "nDCG@10": mean,
        "R@100": math.fsum(row["R@100"] for row in rows.values()) / len(rows),
        "nDCG@10_se": spread / math.sqrt(len(ndcg)),
    }


def bm25_run(
    index: BM25Index, qids: list[str], query_tokens: dict[str, list[str]], doc_ids: list[str]
) -> dict[str, dict[str, float]]:
    """The top 100 documents of each query as a run (one ``search_batch`` call)."""
    results = index.search_batch([query_tokens[q] for q in qids], k=100)
    return {
        qid: {doc_ids[int(r)]: float(s) for r, s in zip(rows, scores, strict=True)}
        for qid, (rows, scores) in zip(qids, results, strict=True)
    }


def run_split(
    index: BM25Index,
    query_tokens: dict[str, list[str]],
    qrels: Qrels,
    doc_ids: list[str],
) -> dict[str, float]:
    """:func:`evaluate` of ``index`` on the queries judged in ``qrels``."""
    return evaluate(qrels, bm25_run(index, sorted(qrels), query_tokens, doc_ids))
