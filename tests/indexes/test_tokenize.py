"""Tokenizer: splitting, stopwords, stemming, CJK, settings round trip."""

from __future__ import annotations

import json
import random
import re
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragtools.indexes.text.tokenize as tokenize_module
from ragtools.indexes.text.stopwords import ENGLISH_STOPWORDS, LUCENE_STOPWORDS
from ragtools.indexes.text.tokenize import Tokenizer
from ragtools.parsers.errors import ConfigError, MissingDependencyError

PLAIN = {"stopwords": None, "stemmer": None, "min_length": 1}


def test_default_lowercases_drops_stopwords_short_tokens_and_stems() -> None:
    assert Tokenizer()("The Cells were Running in 3 labs, see E. coli") == [
        "cell", "run", "lab", "see", "coli",
    ]  # fmt: skip


def test_stopwords_none_keeps_every_word() -> None:
    assert Tokenizer(stopwords=None, stemmer=None)("The cat is on the mat") == [
        "the", "cat", "is", "on", "the", "mat",
    ]  # fmt: skip


def test_builtin_lists() -> None:
    assert "the" in LUCENE_STOPWORDS and "were" not in LUCENE_STOPWORDS
    assert LUCENE_STOPWORDS < ENGLISH_STOPWORDS
    assert Tokenizer(stemmer=None)("They were here") == []
    assert Tokenizer(stopwords="lucene", stemmer=None)("They were here") == ["were", "here"]


def test_custom_stopwords_apply_before_stemming_and_ignore_case() -> None:
    tokenizer = Tokenizer(stopwords=["Running"], stemmer="english")
    assert tokenizer("running runs") == ["run"]


def test_stemmer_none_and_other_language() -> None:
    assert Tokenizer(stopwords=None, stemmer=None)("running cells") == ["running", "cells"]
    assert Tokenizer(stopwords=None, stemmer="german")("häuser") == ["haus"]


def test_punctuation_underscore_and_digits_split_words() -> None:
    tokens = Tokenizer(**PLAIN)("covid-19 x_y don't 3.5% e.g. α-helix (p<0.05)")
    assert tokens == [
        "covid", "19", "x", "y", "don", "t", "3", "5", "e", "g", "α", "helix", "p", "0", "05",
    ]  # fmt: skip


def test_unicode_letters_stay_in_words() -> None:
    assert Tokenizer(**PLAIN)("Naïve café ΑΒΓ straße") == ["naïve", "café", "αβγ", "straße"]


def test_nfkc_normalises_ligatures_and_full_width() -> None:
    assert Tokenizer(**PLAIN)("ﬁle ＡＢＣ") == ["file", "abc"]
    assert Tokenizer(**PLAIN, nfkc=False)("ﬁle") == ["ﬁle"]


def test_lowercase_off_keeps_case() -> None:
    assert Tokenizer(**PLAIN, lowercase=False)("DNA Repair") == ["DNA", "Repair"]


def test_acronym_plurals_meet_their_singular() -> None:
    tokenizer = Tokenizer()
    for plural, singular in [
        ("SNPs", "SNP"),
        ("lncRNAs", "lncRNA"),
        ("iPSCs", "iPSC"),
        ("CAFs,", "CAF"),
        ("IDs", "ID"),
    ]:
        assert tokenizer(plural) == tokenizer(singular), plural
    # Snowball alone leaves these plurals apart from their singulars.
    assert Tokenizer(acronym_plurals=False)("SNPs lncRNAs") == ["snps", "lncrnas"]


def test_acronym_plurals_leave_other_words_alone() -> None:
    tokenizer = Tokenizer(**PLAIN, acronym_plurals=True)
    # One capital before the s, an s inside a word, a capital S, lowercase words.
    text = "As Is PhDs IgGs RNAse DNases CELLS ALS cells snps"
    assert tokenizer(text) == Tokenizer(**PLAIN, acronym_plurals=False)(text)
    assert Tokenizer(**PLAIN, lowercase=False)("SNPs") == ["SNP"]


def test_min_length_drops_short_tokens_but_not_cjk() -> None:
    assert Tokenizer(stopwords=None, stemmer=None)("a bc d 中") == ["bc", "中"]


def test_cjk_bigrams_and_single_characters() -> None:
    tokenizer = Tokenizer(**PLAIN)
    assert tokenizer("细胞生长") == ["细胞", "胞生", "生长"]
    assert tokenizer("我") == ["我"]
    assert tokenizer("DNA修复机制") == ["dna", "修复", "复机", "机制"]
    assert tokenizer("细胞，生长。") == ["细胞", "生长"]
    assert tokenizer("テキスト") == ["テキ", "キス", "スト"]
    assert tokenizer("한국어") == ["한국", "국어"]


def test_cjk_stopwords_apply_to_segments() -> None:
    assert Tokenizer(stopwords=["的"], stemmer=None)("我的") == ["我的"]
    assert Tokenizer(stopwords=["我的"], stemmer=None)("我的 书") == ["书"]


def test_jieba_segments_words() -> None:
    tokens = Tokenizer(cjk="jieba")("我爱北京天安门")
    assert "北京" in tokens and "天安门" in tokens


def test_jieba_missing_raises_missing_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jieba", None)
    with pytest.raises(MissingDependencyError, match=r"ragtools\[cjk\]"):
        Tokenizer(cjk="jieba")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"stopwords": "klingon"}, "unknown stopword list"),
        ({"stemmer": "klingon"}, "unknown stemmer"),
        ({"cjk": "trigram"}, "cjk must be one of"),
        ({"min_length": 0}, "min_length"),
    ],
)
def test_bad_settings_raise_config_error(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Tokenizer(**kwargs)  # type: ignore[arg-type]


def test_settings_round_trip_through_json_and_equality() -> None:
    tokenizer = Tokenizer(
        stopwords=["b", "a", "a"], stemmer="porter", min_length=2, nfkc=False, acronym_plurals=False
    )
    data = json.loads(json.dumps(tokenizer.to_dict()))
    assert data["stopwords"] == ["a", "b"]
    assert data["acronym_plurals"] is False
    again = Tokenizer.from_dict(data)
    assert again == tokenizer and hash(again) == hash(tokenizer)
    assert again("Cats, a dog, SNPs") == tokenizer("Cats, a dog, SNPs")
    assert Tokenizer() != tokenizer
    assert Tokenizer() == Tokenizer.from_dict(Tokenizer().to_dict())
    assert Tokenizer().__eq__("tokenizer") is NotImplemented


def test_from_dict_rejects_unknown_settings() -> None:
    with pytest.raises(ConfigError, match="unknown tokenizer settings"):
        Tokenizer.from_dict({"lowercase": True, "colour": "red"})


def test_tokenize_many_matches_single_calls() -> None:
    tokenizer = Tokenizer()
    texts = ["First text.", "", "Second, longer text with 细胞."]
    assert tokenizer.tokenize_many(texts) == [tokenizer(t) for t in texts]
    assert tokenizer("") == [] and tokenizer("  \n ") == []


def test_results_stay_correct_when_the_cache_is_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = Tokenizer()("apples and oranges, apples again; pears")
    monkeypatch.setattr(tokenize_module, "CACHE_SIZE", 2)
    tokenizer = Tokenizer()
    assert tokenizer("apples and oranges, apples again; pears") == expected
    assert tokenizer("apples and oranges, apples again; pears") == expected


def test_threads_get_the_same_tokens() -> None:
    tokenizer = Tokenizer()
    texts = [f"running cells number {i} and studies" for i in range(200)]
    expected = [Tokenizer()(t) for t in texts]
    results: list[list[list[str]]] = []

    def work() -> None:
        results.append(tokenizer.tokenize_many(texts))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(result == expected for result in results)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii"), max_size=80))
def test_plain_ascii_split_equals_the_regex_oracle(text: str) -> None:
    plain = {"stopwords": None, "stemmer": None, "nfkc": False, "min_length": 1}
    tokenizer = Tokenizer(**plain, lowercase=False, acronym_plurals=False)
    assert tokenizer(text) == re.findall(r"[^\W_]+", text)
    # Cutting acronym plurals piece by piece equals one substitution over the whole text.
    cut = re.sub(r"([A-Z][A-Z])s\b", r"\1", text)
    assert Tokenizer(**plain, lowercase=False)(text) == re.findall(r"[^\W_]+", cut)
    assert Tokenizer(**plain)(text) == re.findall(r"[^\W_]+", cut.lower())


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_any_text_gives_clean_tokens(text: str) -> None:
    tokens = Tokenizer()(text)
    assert all(token and not any(ch.isspace() for ch in token) for token in tokens)
    assert Tokenizer()(text) == tokens


def test_tokenizers_with_the_same_settings_share_their_cache() -> None:
    """A word is tokenised once for every tokenizer of the same settings (the shards of one
    index), and never through the cache of other settings."""
    first, second = Tokenizer(), Tokenizer()
    other = Tokenizer(stemmer=None)
    assert first("The runners were running") == ["runner", "run"]
    assert second._cache is first._cache and "running" in second._cache
    assert other._cache is not first._cache
    assert other("The runners were running") == ["runners", "running"]


def _numbers() -> list[str]:
    """Every number below 20,000, zero-padded ones, and long random ones."""
    rng = random.Random(38)
    return [
        *map(str, range(20_000)),
        *(f"{n:0{width}d}" for n in (0, 7, 42, 913) for width in range(2, 12)),
        *(str(rng.getrandbits(rng.randint(40, 400))) for _ in range(2_000)),
    ]


def test_every_snowball_algorithm_keeps_ascii_numbers_as_they_are() -> None:
    """The premise of the tokenizer's shortcut for numbers (they are not stemmed): each
    algorithm PyStemmer ships returns a word of ASCII digits unchanged."""
    import Stemmer

    numbers = _numbers()
    for algorithm in Stemmer.algorithms():
        stemmed = Stemmer.Stemmer(algorithm).stemWords(numbers)
        changed = [(n, s) for n, s in zip(numbers, stemmed, strict=True) if n != s]
        assert not changed, (algorithm, changed[:5])


@pytest.mark.parametrize("stemmer", ["english", "arabic", "russian", "porter"])
def test_numbers_are_tokens_as_the_stemmer_leaves_them(stemmer: str) -> None:
    import Stemmer

    stem = Stemmer.Stemmer(stemmer).stemWord
    text = "12345 007 ٣٤ ²3 x9 9x 1 55"  # Arabic-Indic digits and ² are not ASCII digits
    expected = [stem(word) for word in re.findall(r"[^\W_]+", text.lower()) if len(word) >= 2]
    assert Tokenizer(stopwords=None, stemmer=stemmer, nfkc=False)(text) == expected
    # Stopwords and min_length still apply to numbers.
    assert Tokenizer(stopwords=["55"], stemmer=stemmer, min_length=3)(text) == [
        "12345",
        "007",
    ]
