"""Token → term-id mapping for :func:`indexes._bm25_math.count_rows`, on two cores when it pays.

Mapping a token to its id is one dict probe per token. On a large batch that probe is
memory-bound (about 450 ns a token on 100M Zipfian tokens over 500,000 terms: the string,
the hash table, its entry and the id are separate cache misses), and the GIL keeps a second
thread from sharing the work. Two things cut that cost:

* **Identity.** Token lists made from a vocabulary (a subword tokenizer's
  ``convert_ids_to_tokens``, a lookup table, a corpus generator) repeat the *same* string
  objects. numpy groups the tokens' addresses with a table indexed by address, whose
  gathers the CPU overlaps instead of waiting for one probe after another. Only one token
  per distinct object is looked up in the vocabulary, so equal strings held in distinct
  objects still get one id. A sample of the first tokens decides whether this pays (most
  tokens repeat an object); otherwise, or when the addresses span too wide a range for the
  table, the dict probe is used. The addresses are copied from the lists' item arrays by
  two forked children (:func:`_read_list_items`, CPython's list layout checked first), or
  else read with ``id`` by iteration.
* **Two processes.** A forked child process inherits the token lists as they are (no copy,
  no pickling) and does part of the work into shared memory: token addresses (the same in
  both processes), or the ids of the second half of the rows in a dictionary of its own,
  which it sends back as a JSON list of terms for the parent to renumber with one gather.

The fork is used only where it is safe and worth it: a POSIX ``os.fork``, a single Python
thread (forking a threaded process can leave a lock held forever in the child), at least
:data:`MIN_PARALLEL_TOKENS` tokens and ``workers >= 2``. If the child fails for any reason
the parent does that half itself. Every path gives the same ids: new terms are numbered
in order of first occurrence.
"""

from __future__ import annotations

import ctypes
import json
import logging
import mmap
import os
import sys
import sysconfig
import threading
import warnings
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.integer[Any]]

__all__ = ["MIN_IDENTITY_TOKENS", "MIN_PARALLEL_TOKENS", "available_workers", "map_token_ids"]

logger = logging.getLogger(__name__)

MIN_PARALLEL_TOKENS = 4_000_000
"""Below this many tokens a fork costs more than it saves (measured: ~1 s of mapping)."""

MIN_IDENTITY_TOKENS = 1 << 20
"""Below this many tokens the identity pass is not tried (the dict probe takes < 0.5 s)."""

_SAMPLE_TOKENS = 1 << 18  # first tokens whose addresses decide if tokens repeat objects
_MIN_TABLE = 1 << 22  # address-table slots always allowed, beyond one per token
_BLOCK = 1 << 22  # tokens per numpy step of the identity pass: bounds its temporaries


def available_workers() -> int:
    """CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _map(
    lookup: Callable[[Any], int], token_lists: Sequence[Sequence[Any]], count: int
) -> IntArray:
    tokens = chain.from_iterable(token_lists)
    return np.fromiter(map(lookup, tokens), dtype=np.int32, count=count)


def _addresses(token_lists: Sequence[Sequence[Any]], count: int) -> IntArray:
    return np.fromiter(map(id, chain.from_iterable(token_lists)), dtype=np.int64, count=count)


def _can_fork(workers: int, total: int, min_tokens: int) -> bool:
    return (
        workers >= 2
        and total >= min_tokens
        and hasattr(os, "fork")
        and threading.active_count() == 1
    )


def map_token_ids(
    token_lists: Sequence[Sequence[str]],
    lengths: IntArray,
    vocab: dict[str, int],
    *,
    workers: int | None = None,
    min_tokens: int | None = None,
    identity: bool | None = None,
) -> IntArray:
    """Term ids (int32) of all tokens, row after row; unknown terms are added to ``vocab``.

    Args:
        token_lists: one token list per row.
        lengths: ``len`` of each token list (int64).
        vocab: term → id; must assign the next id to a missing term (``__missing__``).
        workers: CPUs to use (``None``: all available); only 1 or 2 are ever used.
        min_tokens: the smallest batch worth a forked worker (``None``:
            :data:`MIN_PARALLEL_TOKENS`).
        identity: group tokens by object first (``None``: when the batch has at least
            :data:`MIN_IDENTITY_TOKENS` tokens and a sample shows repeated objects).
    """
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if len(ends) else 0
    n_workers = available_workers() if workers is None else workers
    fork = _can_fork(n_workers, total, MIN_PARALLEL_TOKENS if min_tokens is None else min_tokens)
    if identity is None:
        identity = total >= MIN_IDENTITY_TOKENS and _repeats_objects(token_lists, ends)
    if identity and total:
        ids = _ids_by_identity(token_lists, lengths, ends, vocab, fork=fork, workers=n_workers)
        if ids is not None:
            return ids
    return _ids_by_lookup(token_lists, ends, vocab, fork=fork)


def _halves(ends: IntArray, fork: bool) -> tuple[int, int]:
    """Rows and tokens of the first half (all of them when not forking)."""
    total = int(ends[-1]) if len(ends) else 0
    if not fork:
        return len(ends), total
    split = min(int(np.searchsorted(ends, total // 2, side="left")) + 1, len(ends))
    return split, int(ends[split - 1])


def _table_span(addresses: IntArray, total: int) -> tuple[int, int] | None:
    """The lowest address and the slots of the address table from it; ``None`` if that is
    too many slots for ``total`` tokens."""
    low = int(addresses.min())
    size = ((int(addresses.max()) - low) >> 4) + 1
    return (low, size) if size <= total + _MIN_TABLE else None


def _repeats_objects(token_lists: Sequence[Sequence[str]], ends: IntArray) -> bool:
    """Whether at least half of the first tokens repeat an object seen before them, within
    an address range the table can cover."""
    rows = min(int(np.searchsorted(ends, _SAMPLE_TOKENS, side="left")) + 1, len(ends))
    addresses = _addresses(token_lists[:rows], int(ends[rows - 1]))
    if _table_span(addresses, int(ends[-1])) is None:
        return False
    return 2 * len(np.unique(addresses)) <= len(addresses)


def _ids_by_identity(
    token_lists: Sequence[Sequence[str]],
    lengths: IntArray,
    ends: IntArray,
    vocab: dict[str, int],
    *,
    fork: bool,
    workers: int,
) -> IntArray | None:
    """Ids by grouping tokens by object; ``None`` if the addresses span too wide a range."""
    total = int(ends[-1])
    slots = _all_addresses(token_lists, ends, fork)
    span = _table_span(slots, total)
    if span is None:
        logger.debug("token addresses span too many slots for %d tokens: dict probes", total)
        return None
    low, size = span
    # Live objects do not overlap and are at least 16 bytes long, so two distinct objects
    # never share a 16-byte slot: the slot identifies the object.
    slots -= low
    slots >>= 4
    positions = _first_positions(slots, size)  # distinct objects in order of first occurrence
    rows = np.searchsorted(ends, positions, side="right")
    cols = positions - (ends[rows] - lengths[rows])
    objects = [token_lists[r][c] for r, c in zip(rows.tolist(), cols.tolist(), strict=True)]
    table = np.empty(size, dtype=np.int32)  # slot → term id
    table[slots[positions]] = _map(vocab.__getitem__, [objects], len(objects))
    ids = np.empty(total, dtype=np.int32)

    def gather(part: int, parts: int) -> None:
        for start in range(part * _BLOCK, total, parts * _BLOCK):
            stop = min(total, start + _BLOCK)
            np.take(table, slots[start:stop], out=ids[start:stop])

    if workers >= 2 and total > _BLOCK:  # np.take releases the GIL: one thread per core
        helper = threading.Thread(target=gather, args=(1, 2), name="bm25-ids")
        helper.start()
        gather(0, 2)
        helper.join()
    else:
        gather(0, 1)
    return ids


def _first_positions(slots: IntArray, size: int) -> IntArray:
    """Position of the first occurrence of each distinct slot, ascending.

    Block by block: only the slots not seen in earlier blocks are sorted (``np.unique``),
    which after the first blocks of a Zipfian corpus are few; ``np.minimum.at`` over every
    token took three times as long.
    """
    seen = np.zeros(size, dtype=np.bool_)
    found: list[IntArray] = []
    for start in range(0, len(slots), _BLOCK):
        block = slots[start : start + _BLOCK]
        new = np.flatnonzero(~seen[block])
        if len(new):
            distinct, first = np.unique(block[new], return_index=True)
            seen[distinct] = True
            found.append(new[first] + start)
    return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)


def _all_addresses(token_lists: Sequence[Sequence[str]], ends: IntArray, fork: bool) -> IntArray:
    """Every token's ``id`` (addresses are the same in a forked child).

    A forked child copies them all from the lists' item arrays (:func:`_read_list_items`);
    otherwise, or if it fails, they are read by iteration, a child doing the second half.
    """
    total = int(ends[-1])
    split, n_first = _halves(ends, fork)
    if fork and _LIST_LAYOUT is not None:
        out = np.empty(total, dtype=np.int64)
        parts = ((token_lists[:split], 0, n_first), (token_lists[split:], n_first, total))
        readers = [
            (_Forked(_list_reader(lists, stop - start), stop - start, np.int64), start, stop)
            for lists, start, stop in parts
        ]  # two children, one per core, while this process waits
        results = [reader.copy_into(out[start:stop]) for reader, start, stop in readers]
        if all(results):
            return out
        logger.warning("forked list readers failed; reading token addresses by iteration")
    if n_first == total:
        return _addresses(token_lists, total)
    second = token_lists[split:]
    child = _Forked(lambda: (_addresses(second, total - n_first), b""), total - n_first, np.int64)
    out = np.empty(total, dtype=np.int64)
    out[:n_first] = _addresses(token_lists[:split], n_first)
    if not child.copy_into(out[n_first:]):
        logger.warning("forked address reader failed; reading its half in this process")
        out[n_first:] = _addresses(second, total - n_first)
    return out


def _list_layout() -> tuple[int, int] | None:
    """Byte offsets of the length and of the item array in CPython's list object, checked
    on a probe list; ``None`` on other interpreters or if the check fails."""
    if sys.implementation.name != "cpython" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    probe = [object(), object(), object()]
    size_at, items_at = 16, 24  # PyObject_VAR_HEAD (refcount, type, size), then ob_item
    try:
        if ctypes.c_ssize_t.from_address(id(probe) + size_at).value != len(probe):
            return None
        items = ctypes.c_void_p.from_address(id(probe) + items_at).value
        read = (ctypes.c_int64 * len(probe)).from_address(items or 0)
        if list(read) != [id(item) for item in probe]:
            return None
    except (ValueError, OSError):
        return None
    return size_at, items_at


_LIST_LAYOUT = _list_layout()


def _read_list_items(token_lists: Sequence[Sequence[str]], count: int) -> IntArray:
    """Token addresses copied from the lists' item arrays, without touching a token object
    (iterating increfs every token, a cache miss on each rare one: several times slower).

    The list headers and item arrays are read as raw 8-byte words with numpy gathers,
    block by block. Only for a forked child: it has no other thread, so no list can be
    resized while it is read; a stored length that disagrees with ``len`` stops it.
    """
    assert _LIST_LAYOUT is not None
    size_at, items_at = _LIST_LAYOUT
    if not all(type(tokens) is list for tokens in token_lists):
        msg = "token lists must be lists to be read directly"
        raise TypeError(msg)
    heads = np.fromiter(map(id, token_lists), dtype=np.int64, count=len(token_lists))
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    if int(lengths.sum()) != count:
        msg = f"read {int(lengths.sum())} token addresses, expected {count}"
        raise RuntimeError(msg)
    if not np.array_equal(_read_words(heads + size_at), lengths):
        msg = "a list's stored length differs from len()"
        raise RuntimeError(msg)
    out = np.empty(count, dtype=np.int64)
    ends = np.cumsum(lengths)
    first = 0
    while first < len(heads):  # lists of about _BLOCK tokens at a time
        last = max(first + 1, int(np.searchsorted(ends, ends[first] + _BLOCK)))
        n = lengths[first:last]
        keep = n > 0
        n = n[keep]
        items = _read_words(heads[first:last][keep] + items_at)
        start = int(ends[first] - lengths[first])
        within = np.arange(int(n.sum()), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
        out[start : start + len(within)] = _read_words(np.repeat(items, n) + 8 * within)
        first = last
    return out


def _list_reader(
    token_lists: Sequence[Sequence[str]], count: int
) -> Callable[[], tuple[IntArray, bytes]]:
    return lambda: (_read_list_items(token_lists, count), b"")


def _read_words(addresses: IntArray) -> IntArray:
    """The 8-byte words at ``addresses`` (all 8-byte aligned), through one numpy view of
    the address range: a gather reads only the indexed words."""
    if len(addresses) == 0:
        return np.zeros(0, dtype=np.int64)
    low = int(addresses.min())
    offsets = addresses - low
    if (offsets & 7).any():
        msg = "unaligned address"
        raise RuntimeError(msg)
    words = int(offsets.max()) // 8 + 1
    view: IntArray = np.ctypeslib.as_array((ctypes.c_int64 * words).from_address(low))
    found: IntArray = np.take(view, offsets >> 3)
    return found


def _ids_by_lookup(
    token_lists: Sequence[Sequence[str]], ends: IntArray, vocab: dict[str, int], *, fork: bool
) -> IntArray:
    """Ids by one dict probe per token; a forked child maps the second half."""
    total = int(ends[-1]) if len(ends) else 0
    split, n_first = _halves(ends, fork)
    if n_first == total:
        return _map(vocab.__getitem__, token_lists, total)
    second = token_lists[split:]
    child = _Forked(lambda: _local_ids(second, total - n_first), total - n_first, np.int32)
    ids = np.empty(total, dtype=np.int32)
    ids[:n_first] = _map(vocab.__getitem__, token_lists[:split], n_first)

    def renumber(local_ids: IntArray, payload: bytes) -> None:
        terms = json.loads(payload.decode("utf-8"))
        shared_ids = _map(vocab.__getitem__, [terms], len(terms))
        np.take(shared_ids, local_ids, out=ids[n_first:])

    if not child.result(renumber):
        logger.warning("forked token mapper failed; mapping its half in this process")
        ids[n_first:] = _map(vocab.__getitem__, second, total - n_first)
    return ids


def _local_ids(token_lists: Sequence[Sequence[str]], count: int) -> tuple[IntArray, bytes]:
    """Ids in a dictionary of the child's own, and its terms in id order as JSON."""
    local = _LocalVocabulary()
    ids = _map(local.__getitem__, token_lists, count)
    if not all(type(term) is str for term in local.terms):
        msg = "only string terms can travel back as JSON"
        raise TypeError(msg)
    return ids, json.dumps(local.terms, ensure_ascii=False).encode("utf-8")


class _Forked:
    """A child process filling a shared array (and sending bytes) while the parent works."""

    def __init__(
        self, compute: Callable[[], tuple[IntArray, bytes]], count: int, dtype: type
    ) -> None:
        self._count = count
        self._dtype = np.dtype(dtype)
        self._shared = mmap.mmap(-1, max(1, self._dtype.itemsize * count))  # shared, anonymous
        read_fd, write_fd = os.pipe()
        with warnings.catch_warnings():
            # Python 3.12+ warns about fork in threaded processes; _can_fork checked ours.
            warnings.simplefilter("ignore", DeprecationWarning)
            self._pid = os.fork()
        if self._pid == 0:  # pragma: no cover - runs in the child, reported through its exit code
            os.close(read_fd)
            code = 1
            try:
                values, payload = compute()
                np.frombuffer(self._shared, dtype=self._dtype, count=count)[:] = values
                with os.fdopen(write_fd, "wb") as pipe:
                    pipe.write(payload)
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        self._read_fd = read_fd

    def result(self, consume: Callable[[IntArray, bytes], None]) -> bool:
        """Pass the child's array and bytes to ``consume``; ``False`` if the child failed."""
        with os.fdopen(self._read_fd, "rb") as pipe:
            payload = pipe.read()  # until the child exits (EOF), so it never blocks on write
        _, status = os.waitpid(self._pid, 0)
        try:
            if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
                return False
            consume(np.frombuffer(self._shared, dtype=self._dtype, count=self._count), payload)
            return True
        finally:
            self._shared.close()

    def copy_into(self, target: IntArray) -> bool:
        """Copy the child's array into ``target``; ``False`` if the child failed."""
        return self.result(lambda values, _: np.copyto(target, values))


class _LocalVocabulary(dict[Any, int]):
    def __init__(self) -> None:
        super().__init__()
        self.terms: list[Any] = []

    def __missing__(self, term: Any) -> int:
        new_id = len(self.terms)
        self[term] = new_id
        self.terms.append(term)
        return new_id
