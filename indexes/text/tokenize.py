"""The tokenizer shared by the BM25 index and its queries.

Choices, and why:

* **Split**: Unicode word runs (``[^\\W_]+``), so accents, Greek letters and digits stay
  inside words and any punctuation (including ``_``, ``-`` and ``'``) separates them. The text
  is NFKC-normalised first (full-width Latin letters and ligatures match their plain forms, as
  the parsers normalise documents) and lowercased with :meth:`str.lower`.
* **Acronym plurals**: an ``s`` right after two capital letters is a plural of an
  acronym (``SNPs``, ``lncRNAs``, ``CAFs``, ``IDs``) and is cut before lowercasing, so the
  plural meets the singular. Snowball cannot do it: in ``snps`` or ``lncrnas`` no vowel
  stands before the ``s`` it would strip. On SciFact train it changed 6 of 809 queries, 5 for
  the better (nDCG@10 0.7050 -> 0.7061 at the default BM25 parameters).
* **Stopwords**: dropped *before* stemming, as Lucene does. The built-in lists live in
  :mod:`indexes.text.stopwords` and are saved by name; any other list is saved verbatim.
* **Defaults** (NLTK's English stopwords, Snowball English stemmer, tokens of at least two
  characters, acronym plurals cut) were chosen by nDCG@10 on SciFact's *train* queries with
  ``eval/tune_bm25.py``; ``Tokenizer(stopwords="lucene", min_length=1, acronym_plurals=False)``
  gives the bm25s/Lucene-style tokens of the reference figures.
* **Stemming**: Snowball via PyStemmer. Every distinct word is stemmed once: a cache maps a
  lowercased word straight to its final token ("" for a dropped word), so the hot loop is one
  regex ``findall`` plus one dict lookup per word. The cache is bounded (:data:`CACHE_SIZE`)
  and cleared when full; tokenizers with the same settings share it. A word of ASCII digits
  is its own token without a stemmer call: every Snowball algorithm leaves one as it is (a
  test checks each algorithm PyStemmer ships), and numbers are most of the distinct words
  of a table's rows.
* **CJK**: Chinese, Japanese and Korean scripts do not separate words with spaces, so a
  ``\\w`` split would make a whole sentence one token and Chinese queries would score zero.
  Runs of Han, Hiragana, Katakana and Hangul characters are cut into overlapping character
  bigrams (a run of length one stays a unigram), as Lucene's ``CJKBigramFilter`` does; with
  ``cjk="jieba"`` the runs are segmented by jieba's search mode instead (the ``cjk`` extra).
  CJK tokens are neither stemmed nor filtered by ``min_length``.

Settings round-trip through :meth:`Tokenizer.to_dict` / :meth:`Tokenizer.from_dict`, so an
index applies exactly the same tokenization to its queries after it is loaded.

Example:
    >>> Tokenizer()("The cells were running in 3 labs; 细胞生长")
    ['cell', 'run', 'lab', '细胞', '胞生', '生长']
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

import cachetools

from ragtools.indexes.text.stopwords import BUILTIN_STOPWORDS
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.optional import require

__all__ = ["CJKMode", "Tokenizer"]

logger = logging.getLogger(__name__)

CJKMode = Literal["bigram", "jieba"]

CACHE_SIZE = 1_000_000
"""Distinct words remembered per tokenizer before the word → token cache is cleared."""

# Han (incl. extension A, compatibility and the supplementary planes), iteration marks,
# Hiragana, Katakana (without the middle dot, which is punctuation) and Hangul syllables.
_CJK = (
    "\u3005\u3007\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff\U00020000-\U0003134f"
)
_CJK_RE = re.compile(f"[{_CJK}]")
_WORD_RE = re.compile("[^\\W_]+")
_ACRONYM_PLURAL_RE = re.compile(r"([A-Z][A-Z])s\b")
_MIXED_RE = re.compile(f"([{_CJK}]+)|[^\\W_{_CJK}]+")

_MAX_CACHED_PIECE = 64  # long CJK sentences are unique: segmenting them again is cheaper

_SETTINGS = (
    "lowercase",
    "stopwords",
    "stemmer",
    "cjk",
    "min_length",
    "nfkc",
    "acronym_plurals",
)


_SHARED: cachetools.LRUCache[tuple[Any, ...], _PieceCache] = cachetools.LRUCache(maxsize=4)
"""The caches of the tokenizers made last, by settings: a tokenizer with the same settings
shares its cache (the pieces' tokens depend on nothing else), so the shards of an index,
built one after another, or an index and its queries' tokenizer, tokenize a word once."""
_SHARED_LOCK = threading.Lock()


class _PieceCache(dict[str, str]):
    """Maps a whitespace-free piece of text to its tokens joined by spaces.

    A piece is normalised on a miss (acronym plural cut, then lowercased), so a warm cache
    pays for neither. A piece such as ``"Cells,"`` becomes ``"cell"``; a stopword becomes
    ``""``; a piece with inner punctuation or CJK characters becomes several space-separated
    tokens. Keeping the final string per piece makes tokenizing a text
    ``" ".join(map(cache, text.split()))`` followed by one ``split``: C loops and dict lookups
    only. Cold, it costs what one regex ``findall`` per text costs; warm (queries,
    re-indexing), each piece is one dict lookup and no regex runs at all.
    """

    def __init__(
        self,
        stopwords: frozenset[str],
        stem: Callable[[str], str] | None,
        min_length: int,
        segment: Callable[[str], list[str]],
        *,
        lowercase: bool,
        acronym_plurals: bool,
    ) -> None:
        super().__init__()
        self._lowercase = lowercase
        self._acronym_plurals = acronym_plurals
        self._stopwords = stopwords
        self._stem = stem
        self._min_length = min_length
        self._segment = segment
        self._words: dict[str, str] = {}  # word -> token, shared by the pieces holding it
        # PyStemmer objects are not documented as thread-safe; misses are rare, so lock them.
        self._lock = threading.Lock()

    def _word(self, word: str) -> str:
        token = self._words.get(word)
        if token is None:
            if len(word) < self._min_length or word in self._stopwords:
                token = ""
            elif self._stem is None or (word.isdigit() and word.isascii()):
                token = word  # every Snowball algorithm keeps a number as it is (tested)
            else:
                with self._lock:
                    token = self._stem(word)
            if len(self._words) >= CACHE_SIZE:
                self._words.clear()
            self._words[word] = token
        return token

    def __missing__(self, raw: str) -> str:
        piece = raw
        if self._acronym_plurals and "s" in raw and not raw.islower():  # cheap tests first
            piece = _ACRONYM_PLURAL_RE.sub(r"\1", raw)
        if self._lowercase:
            piece = piece.lower()
        if piece.isascii() or _CJK_RE.search(piece) is None:
            if piece.isalnum():
                tokens = self._word(piece)
            else:
                tokens = " ".join(filter(None, map(self._word, _WORD_RE.findall(piece))))
        else:
            parts: list[str] = []
            for match in _MIXED_RE.finditer(piece):
                run = match.group(1)
                if run is None:
                    parts.append(self._word(match.group()))
                else:
                    stop = self._stopwords
                    parts.extend(t for t in self._segment(run) if t not in stop and t.strip())
            tokens = " ".join(p for p in parts if p)
        if len(raw) <= _MAX_CACHED_PIECE:
            if len(self) >= CACHE_SIZE:
                self.clear()
            self[raw] = tokens
        return tokens


class Tokenizer:
    """Turns text into BM25 tokens; callable as ``tokenizer(text) -> list[str]``.

    Args:
        lowercase: lowercase the text before splitting.
        stopwords: ``"english"`` (NLTK's list), ``"lucene"`` (Lucene's 33 words), ``None``
            for none, or any sequence of words. Words are matched after lowercasing
            (when enabled) and before stemming.
        stemmer: a Snowball algorithm name known to PyStemmer (``"english"``, ``"porter"``,
            ``"german"``, ...) or ``None`` to keep words as they are.
        cjk: ``"bigram"`` (overlapping character bigrams, no dependency) or ``"jieba"``
            (word segmentation; needs ``pip install "ragtools[cjk]"``).
        min_length: drop non-CJK tokens shorter than this many characters (the default 2
            drops single letters and digits, as bm25s and scikit-learn do).
        nfkc: apply Unicode NFKC normalisation first.
        acronym_plurals: cut an ``s`` that follows two capital letters (``SNPs`` -> ``SNP``),
            before lowercasing.

    Raises:
        ConfigError: an unknown stopword list, stemmer or CJK mode, or ``min_length < 1``.
        MissingDependencyError: ``cjk="jieba"`` and jieba is not installed.
    """

    def __init__(
        self,
        *,
        lowercase: bool = True,
        stopwords: str | Sequence[str] | None = "english",
        stemmer: str | None = "english",
        cjk: CJKMode = "bigram",
        min_length: int = 2,
        nfkc: bool = True,
        acronym_plurals: bool = True,
    ) -> None:
        self.lowercase = bool(lowercase)
        self.nfkc = bool(nfkc)
        self.acronym_plurals = bool(acronym_plurals)
        self.stemmer = stemmer
        self.cjk: CJKMode = cjk
        self.min_length = int(min_length)
        self.stopwords: str | tuple[str, ...] | None
        if stopwords is None or isinstance(stopwords, str):
            self.stopwords = stopwords
        else:
            self.stopwords = tuple(sorted(set(stopwords)))
        if self.min_length < 1:
            msg = f"min_length must be >= 1, got {min_length!r}"
            raise ConfigError(msg)
        if cjk not in get_args(CJKMode):
            msg = f"cjk must be one of {get_args(CJKMode)}, got {cjk!r}"
            raise ConfigError(msg)
        self._stopword_set = self._resolve_stopwords(self.stopwords, self.lowercase)
        stem = self._resolve_stemmer(stemmer)
        self._segment: Callable[[str], list[str]] = _bigrams
        if cjk == "jieba":
            jieba = require("jieba", "cjk")
            self._segment = jieba.lcut_for_search
        key = tuple(tuple(v) if isinstance(v, list) else v for v in self.to_dict().values())
        with _SHARED_LOCK:
            cache = _SHARED.get(key)  # marks it the most recently used
            if cache is None:
                cache = _PieceCache(
                    self._stopword_set,
                    stem,
                    self.min_length,
                    self._segment,
                    lowercase=self.lowercase,
                    acronym_plurals=self.acronym_plurals,
                )
                _SHARED[key] = cache
        self._cache = cache

    @staticmethod
    def _resolve_stopwords(
        stopwords: str | tuple[str, ...] | None, lowercase: bool
    ) -> frozenset[str]:
        if stopwords is None:
            return frozenset()
        if isinstance(stopwords, str):
            try:
                return BUILTIN_STOPWORDS[stopwords]
            except KeyError:
                names = sorted(BUILTIN_STOPWORDS)
                msg = (
                    f"unknown stopword list {stopwords!r}; use one of {names}, None, "
                    "or pass a list of words"
                )
                raise ConfigError(msg) from None
        return frozenset(w.lower() if lowercase else w for w in stopwords)

    @staticmethod
    def _resolve_stemmer(stemmer: str | None) -> Callable[[str], str] | None:
        if stemmer is None:
            return None
        import Stemmer

        if stemmer not in Stemmer.algorithms():
            msg = f"unknown stemmer {stemmer!r}; use None or one of {Stemmer.algorithms()}"
            raise ConfigError(msg)
        stem: Callable[[str], str] = Stemmer.Stemmer(stemmer).stemWord
        return stem

    def __call__(self, text: str) -> list[str]:
        """Tokenize one text.

        Returns:
            The tokens in text order (repeated words repeat); empty when nothing is left.
        """
        if self.nfkc and not text.isascii():
            text = unicodedata.normalize("NFKC", text)
        return " ".join(map(self._cache.__getitem__, text.split())).split()

    def tokenize_many(self, texts: Iterable[str]) -> list[list[str]]:
        """Tokenize several texts; one token list per text, in order."""
        return [self(text) for text in texts]

    def to_dict(self) -> dict[str, Any]:
        """The settings as a JSON-serialisable dict (what an index saves)."""
        stopwords: str | list[str] | None = (
            list(self.stopwords) if isinstance(self.stopwords, tuple) else self.stopwords
        )
        return {
            "lowercase": self.lowercase,
            "stopwords": stopwords,
            "stemmer": self.stemmer,
            "cjk": self.cjk,
            "min_length": self.min_length,
            "nfkc": self.nfkc,
            "acronym_plurals": self.acronym_plurals,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Tokenizer:
        """Rebuild a tokenizer from :meth:`to_dict` output.

        Raises:
            ConfigError: ``data`` has unknown keys or invalid values.
        """
        unknown = sorted(set(data) - set(_SETTINGS))
        if unknown:
            msg = f"unknown tokenizer settings {unknown}; known settings are {list(_SETTINGS)}"
            raise ConfigError(msg)
        return cls(**dict(data))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        d = self.to_dict()
        return hash(tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in d.items()))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"Tokenizer({args})"


def _bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a single character stays a unigram."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]
