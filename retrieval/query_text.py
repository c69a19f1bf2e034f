"""What a retriever accepts as a query: a string of at most :data:`LONGEST_QUERY` characters.

Every retriever checks its query here (:meth:`~retrieval.base.BaseRetriever.invoke`), so the
command line, the tools, MCP and library callers meet one rule. A query costs memory in
proportion to its length at every stage (tokens, postings looked up, the embedder's input):
a 100 MB line given to ``rag search`` took 1.6 GB. No real query comes near the bound; the
longest of the BEIR collections (ArguAna's, whole arguments) are a few thousand characters,
and embedders read at most some thousands of tokens anyway. Tools that a model calls keep
their own, tighter bound (:data:`~retrieval.tools.retriever_tool.MAX_QUERY_CHARS`), which
their argument schema shows the model.

Lone surrogates (``"\\ud800"``, which a model can emit and no encoder or tokenizer takes) are
replaced by U+FFFD, as the parsers replace them in documents.
"""

from __future__ import annotations

from ragtools.parsers.document import replace_surrogates
from ragtools.parsers.errors import ConfigError

__all__ = ["LONGEST_QUERY", "query_problem", "query_text"]

LONGEST_QUERY = 100_000
"""The most characters a query may have (some 25,000 tokens: ten times a long question)."""


def query_problem(query: object) -> str | None:
    """Why ``query`` is refused (not a string, or too long), or ``None``."""
    if not isinstance(query, str):
        return f"query must be a string, got {type(query).__name__}"
    if len(query) > LONGEST_QUERY:
        return (
            f"the query is {len(query)} characters long, over the limit of {LONGEST_QUERY} "
            "(retrieval.query_text.LONGEST_QUERY); search with its key sentences instead"
        )
    return None


def query_text(query: object) -> str:
    """``query``, checked, with lone surrogates replaced by U+FFFD.

    Raises:
        ConfigError: not a string, or longer than :data:`LONGEST_QUERY` characters.
    """
    if isinstance(query, str) and len(query) <= LONGEST_QUERY:
        return replace_surrogates(query)[0]
    raise ConfigError(query_problem(query))
