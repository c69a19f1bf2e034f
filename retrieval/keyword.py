"""BM25 keyword retrieval over an :class:`indexes.Index`, optionally expanded by RM3.

Scores are BM25 scores (unbounded, higher is better), kept in ``hit.scores["bm25"]``.
A filter is compiled to a row mask and applied *before* ranking, so ``k`` hits come back
whenever ``k`` matching chunks contain a query term.

``rm3=`` adds pseudo-relevance feedback (:mod:`indexes.keyword.rm3`, as Anserini and
Pyserini run it): a first pass ranks the query's best ``fb_docs`` chunks under the same
filter; the terms of their keyword text (the text the BM25 half indexed for them, title
copies included) make a weighted query, and the second pass's scores are what the retriever
returns. The feedback chunks are the first pass's in hit order (score, then chunk key), so
the expansion does not depend on how rows happen to be numbered.

RM3 is off by default: on SciFact (``eval/tune_rm3.py``; settings chosen on half of the
train queries, checked on the other half with ``rag compare``'s paired tests) no setting of
a 27-point grid beat plain BM25 on nDCG@10. The best, ``fb_docs=10, fb_terms=5,
original_query_weight=0.9``, scored 0.7176 against 0.7214 on the held-out half (p = 0.41),
0.6888 against 0.6929 on test (p = 0.47); Anserini's defaults lost significantly (train
0.6518 against 0.7076, test 0.6392 against 0.6929, randomisation p = 0.0002). Short,
precise scientific claims gain little from terms their neighbours share; RM3 is for
collections with long, vague queries (news, web), where Anserini reports its gains.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ragtools.indexes.errors import IndexStateError
from ragtools.indexes.index import Index, IndexState
from ragtools.indexes.keyword.bm25 import Query
from ragtools.indexes.keyword.rm3 import RM3
from ragtools.indexes.ranking import Ranking
from ragtools.retrieval.base import IndexRetriever
from ragtools.retrieval.filters import BoolArray
from ragtools.retrieval.hit import top_by_key

__all__ = ["KeywordRetriever"]


class KeywordRetriever(IndexRetriever):
    """BM25 search over an index's keyword half.

    Args:
        index: the index to search.
        rm3: query expansion by RM3 pseudo-relevance feedback: ``True`` for Anserini's
            defaults (``fb_docs=10, fb_terms=10, original_query_weight=0.5``), a mapping of
            those settings, an :class:`~indexes.keyword.rm3.RM3`, or ``None``/``False``
            (none, the default).
        k: default number of hits.
        **options: ``expand=`` and ``min_score=`` (see :class:`~retrieval.base.BaseRetriever`).

    Raises:
        ConfigError: an invalid ``rm3`` setting, naming it.
    """

    stage = "bm25"

    def __init__(
        self,
        index: Index,
        *,
        rm3: RM3 | Mapping[str, Any] | bool | None = None,
        k: int = 10,
        **options: Any,
    ) -> None:
        super().__init__(index, k=k, **options)
        self.rm3 = RM3.of(rm3)

    def rank_state(self, state: IndexState, query: str, k: int, allow: BoolArray | None) -> Ranking:
        return state.keyword_ranking(query, k, allow)

    def ranker(
        self, state: IndexState, query: str, allow: BoolArray | None
    ) -> Callable[[int], Ranking]:
        if self.rm3 is None:
            return super().ranker(state, query, allow)
        expanded = self.expanded_query(state, query, allow)
        return lambda depth: state.keyword_ranking(expanded, depth, allow)

    def expanded_query(self, state: IndexState, query: str, allow: BoolArray | None) -> Query:
        """The weighted query RM3 makes of ``query`` over ``state`` (term → weight), or the
        query's tokens when expansion is off or the first pass finds nothing."""
        if state.bm25 is None:
            msg = "this index was built without the keyword half"
            raise IndexStateError(msg)
        tokenizer = state.bm25.tokenizer
        tokens = tokenizer(query)
        if self.rm3 is None or not tokens:
            return tokens
        first = top_by_key(
            lambda depth: state.keyword_ranking(tokens, depth, allow),
            self.rm3.fb_docs,
            state.chunk_keys,
        )
        if not len(first.rows):
            return tokens
        chunks = [state.chunks[row] for row in first.rows.tolist()]
        feedback = [tokenizer(state.settings.keyword_text(c)) for c in chunks]
        return self.rm3.expand(tokens, feedback, first.scores.tolist(), state.document_frequencies)
