"""Built-in English stopword lists for :class:`indexes.text.tokenize.Tokenizer`.

Two lists, both as frozen module constants so that an index records only the *name* of the
list it used:

* ``"english"`` (the default) — :data:`ENGLISH_STOPWORDS`, NLTK's English list (pronouns,
  auxiliaries, contraction stubs) reduced to the entries a ``\\w``-based split can produce
  (``"don't"`` is split into ``"don"`` and ``"t"``, which are both listed). It beat the short
  list on SciFact's train queries (``eval/tune_bm25.py``).
* ``"lucene"`` — :data:`LUCENE_STOPWORDS`, Lucene's ``EnglishAnalyzer`` stop set (33 words),
  which is also Elasticsearch's ``_english_`` set and bm25s's ``"en"`` list, the one the
  SciFact reference figures in ``shared/data/README.md`` were measured with.

Other languages are pluggable: pass any sequence of words to the tokenizer.
"""

from __future__ import annotations

import logging

__all__ = ["BUILTIN_STOPWORDS", "ENGLISH_STOPWORDS", "LUCENE_STOPWORDS"]

logger = logging.getLogger(__name__)

LUCENE_STOPWORDS: frozenset[str] = frozenset(
    """
    a an and are as at be but by for if in into is it no not of on or such that the their
    then there these they this to was will with
    """.split()  # noqa: SIM905 -- a word list reads better as text than as literals
)
"""Lucene's English stop set (``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``)."""

ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom
    this that these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against
    between into through during before after above below to from up down in out on off over
    under again further then once here there when where why how all any both each few more
    most other some such no nor not only own same so than too very s t can will just don
    should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn
    mustn needn shan shouldn wasn weren won wouldn
    """.split()  # noqa: SIM905 -- a word list reads better as text than as 150 literals
)
"""NLTK's English stopword list, restricted to single ``\\w`` tokens."""

BUILTIN_STOPWORDS: dict[str, frozenset[str]] = {
    "english": ENGLISH_STOPWORDS,
    "lucene": LUCENE_STOPWORDS,
}
"""Stopword lists selectable by name (the name is what gets saved with an index)."""
