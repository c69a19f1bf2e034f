"""Token → term-id mapping for :func:`indexes._bm25_math.count_rows`, on two cores when it pays.

Mapping a token to its id is one dict probe per token. On a large batch that probe is
memory-bound (about 300 ns on 100M Zipfian tokens: the string, the hash table and the entry
are three cache misses), and the GIL keeps a second thread from sharing the work. A forked
child process inherits the token lists as they are (no copy, no pickling), maps the second
half of the rows with a dictionary of its own into shared memory and sends back its list of
distinct terms as JSON; meanwhile the parent maps the first half with the index's vocabulary.
The parent then gives the child's terms their ids in the shared vocabulary and renumbers the
child's half with one array gather.

The fork is used only where it is safe and worth it: a POSIX ``os.fork``, a single Python
thread (forking a threaded process can leave a lock held forever in the child), at least
:data:`MIN_PARALLEL_TOKENS` tokens and ``workers >= 2``. If the child fails for any reason
the parent maps that half itself, so the result never depends on the path taken, except for
the order in which new terms get their ids (which no score depends on).
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from itertools import chain

import numpy as np

__all__ = ["MIN_PARALLEL_TOKENS", "available_workers", "map_token_ids"]

logger = logging.getLogger(__name__)

MIN_PARALLEL_TOKENS = 4_000_000
"""Below this many tokens a fork costs more than it saves (measured: ~1 s of mapping)."""


def available_workers() -> int:
    """CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _map(
    lookup: Callable[[str], int], token_lists: Sequence[Sequence[str]], count: int
) -> np.ndarray:
    tokens = chain.from_iterable(token_lists)
    return np.fromiter(map(lookup, tokens), dtype=np.int32, count=count)


def _can_fork(workers: int, total: int, min_tokens: int) -> bool:
    return (
        workers >= 2
        and total >= min_tokens
        and hasattr(os, "fork")
        and threading.active_count() == 1
    )


def map_token_ids(
    token_lists: Sequence[Sequence[str]],
    lengths: np.ndarray,
    vocab: dict[str, int],
    *,
    workers: int | None = None,
    min_tokens: int | None = None,
) -> np.ndarray:
    """Term ids (int32) of all tokens, row after row; unknown terms are added to ``vocab``.

    Args:
        token_lists: one token list per row.
        lengths: ``len`` of each token list (int64).
        vocab: term → id; must assign the next id to a missing term (``__missing__``).
        workers: CPUs to use (``None``: all available); only 1 or 2 are ever used.
        min_tokens: the smallest batch worth a forked worker (``None``:
            :data:`MIN_PARALLEL_TOKENS`).
    """
    total = int(lengths.sum())
    if min_tokens is None:
        min_tokens = MIN_PARALLEL_TOKENS
    n_workers = available_workers() if workers is None else workers
    if not _can_fork(n_workers, total, min_tokens):
        return _map(vocab.__getitem__, token_lists, total)
    ends = np.cumsum(lengths)
    split = int(np.searchsorted(ends, total // 2, side="left")) + 1
    split = min(split, len(token_lists))
    n_first = int(ends[split - 1])
    n_second = total - n_first
    if n_second == 0:
        return _map(vocab.__getitem__, token_lists, total)
    second = token_lists[split:]
    child = _ForkedMapper(second, n_second)
    first_ids = _map(vocab.__getitem__, token_lists[:split], n_first)
    result = child.result()
    ids = np.empty(total, dtype=np.int32)
    ids[:n_first] = first_ids
    if result is None:
        logger.warning("forked token mapper failed; mapping its half in this process")
        ids[n_first:] = _map(vocab.__getitem__, second, n_second)
        return ids
    local_ids, terms = result
    renumber = _map(vocab.__getitem__, [terms], len(terms))
    np.take(renumber, local_ids, out=ids[n_first:])
    return ids


class _ForkedMapper:
    """A child process mapping ``token_lists`` to ids of its own dictionary."""

    def __init__(self, token_lists: Sequence[Sequence[str]], count: int) -> None:
        self._count = count
        self._shared = mmap.mmap(-1, max(1, 4 * count))  # anonymous and shared with the child
        read_fd, write_fd = os.pipe()
        with warnings.catch_warnings():
            # Python 3.12+ warns about fork in threaded processes; _can_fork checked ours.
            warnings.simplefilter("ignore", DeprecationWarning)
            self._pid = os.fork()
        if self._pid == 0:  # pragma: no cover - runs in the child, reported through its exit code
            os.close(read_fd)
            code = 1
            try:
                local = _LocalVocabulary()
                ids = np.frombuffer(self._shared, dtype=np.int32, count=count)
                ids[:] = _map(local.__getitem__, token_lists, count)
                if all(type(term) is str for term in local.terms):
                    payload = json.dumps(local.terms, ensure_ascii=False).encode("utf-8")
                    with os.fdopen(write_fd, "wb") as pipe:
                        pipe.write(payload)
                    code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        self._read_fd = read_fd

    def result(self) -> tuple[np.ndarray, list[str]] | None:
        """The child's ids and its terms (id order), or ``None`` if it failed."""
        with os.fdopen(self._read_fd, "rb") as pipe:
            payload = pipe.read()  # until the child exits (EOF), so it never blocks on write
        _, status = os.waitpid(self._pid, 0)
        try:
            if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
                return None
            terms = json.loads(payload.decode("utf-8"))
            ids = np.frombuffer(self._shared, dtype=np.int32, count=self._count).copy()
        finally:
            self._shared.close()
        return ids, terms


class _LocalVocabulary(dict[str, int]):
    def __init__(self) -> None:
        super().__init__()
        self.terms: list[str] = []

    def __missing__(self, term: str) -> int:
        new_id = len(self.terms)
        self[term] = new_id
        self.terms.append(term)
        return new_id
