"""A result cache for deterministic tools, with a time-to-live and a size bound.

Qwen-Agent caches the results of deterministic tools (its ``ToolCache``: TTL, maximum size,
key from the tool name and parameters). The storage is ``cachetools``' ``TTLCache`` (or its
``LRUCache`` when nothing expires), which is not thread-safe by itself, so every access holds
one lock; this class adds the canonical keys and the counters ``cachetools`` does not keep:

* the key is the tool name plus the **canonical JSON** of the arguments (sorted keys, no
  whitespace), so ``{"a": 1, "b": 2}`` and ``{"b": 2, "a": 1}`` hit the same entry; arguments
  JSON cannot encode are not cached (the call simply runs). For :class:`CachedTool` the
  arguments are *everything* that reaches the tool: the model's arguments, the injected
  keyword arguments (a tenant, an access filter) and the run configuration (its
  ``callbacks`` and ``max_concurrency`` aside), so one tenant is never served another's
  result;
* entries expire ``ttl`` seconds after they were stored, measured with an injectable clock
  (``time.monotonic`` by default, immune to wall-clock jumps);
* when full, expired entries go first, then the least recently used one.

Two ways to apply it: :class:`CachedTool` wraps any tool object (``invoke``/``ainvoke``; a
cached :class:`~retrieval.tools.messages.ToolMessage` is returned with the new call's id; error
messages are never cached; ``stream`` passes through uncached) and :func:`cached` decorates a
plain function, sync or async, before it is turned into a tool. Each call's hit or miss and
duration are logged at DEBUG.

Only cache tools whose result depends on nothing but their arguments; cached values are shared,
so callers must not mutate them. Concurrent misses on one key each run the tool (no
single-flight locking): simple, and harmless for deterministic tools.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar, cast

import cachetools

from ragtools.parsers.errors import ConfigError, ToolInputError
from ragtools.retrieval.tools.function_view import CallableAsFunction
from ragtools.retrieval.tools.messages import ToolMessage, is_tool_call
from ragtools.retrieval.tools.output import ToolOutput
from ragtools.retrieval.tools.params import parse_arguments

logger = logging.getLogger(__name__)

__all__ = ["CacheInfo", "CachedFunction", "CachedTool", "ToolResultCache", "cached"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


@dataclass(frozen=True)
class CacheInfo:
    """Counters of a :class:`ToolResultCache`."""

    hits: int
    misses: int
    evictions: int
    expirations: int
    size: int
    maxsize: int


class ToolResultCache:
    """Thread-safe LRU cache with per-entry time-to-live, on ``cachetools``.

    Args:
        maxsize: the most entries kept (>= 1).
        ttl: seconds an entry stays valid; ``None`` keeps entries until evicted.
        clock: returns the current time in seconds (inject a fake one in tests).

    Raises:
        ConfigError: ``maxsize < 1`` or ``ttl <= 0``.
    """

    def __init__(
        self,
        maxsize: int = 1024,
        ttl: float | None = 3600.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if maxsize < 1:
            msg = f"maxsize must be >= 1, got {maxsize}"
            raise ConfigError(msg)
        if ttl is not None and ttl <= 0:
            msg = f"ttl must be > 0 seconds or None (no expiry), got {ttl}"
            raise ConfigError(msg)
        self.maxsize = maxsize
        self.ttl = ttl
        self._entries: cachetools.Cache[str, Any] = (
            cachetools.LRUCache(maxsize)
            if ttl is None
            else cachetools.TTLCache(maxsize, ttl, timer=clock)
        )
        self._lock = threading.Lock()
        self._hits = self._misses = self._evictions = self._expirations = 0

    @staticmethod
    def make_key(tool_name: str, arguments: Mapping[str, Any]) -> str | None:
        """``tool_name`` + canonical JSON of ``arguments``; ``None`` if JSON cannot encode them."""
        try:
            canonical = json.dumps(
                arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False
            )
        except (TypeError, ValueError):
            return None
        return f"{tool_name}\x00{canonical}"

    def _expire(self) -> None:
        """Drop expired entries now (``cachetools`` only hides them), counting them."""
        if isinstance(self._entries, cachetools.TTLCache):
            self._expirations += len(self._entries.expire())

    def lookup(self, key: str) -> tuple[bool, Any]:
        """``(True, value)`` for a live entry (marked recently used), else ``(False, None)``."""
        with self._lock:
            self._expire()
            try:
                value = self._entries[key]
            except KeyError:
                self._misses += 1
                return False, None
            self._hits += 1
            return True, value

    def put(self, key: str, value: Any) -> None:
        """Store ``value``; makes room by dropping expired, then least recently used entries."""
        with self._lock:
            self._expire()
            if key not in self._entries and len(self._entries) >= self.maxsize:
                self._evictions += 1  # cachetools drops the least recently used entry
            self._entries[key] = value

    def clear(self) -> None:
        """Drop every entry (counters are kept)."""
        with self._lock:
            self._entries.clear()

    def info(self) -> CacheInfo:
        """Hit, miss, eviction and expiration counts, and the current size."""
        with self._lock:
            self._expire()
            return CacheInfo(
                self._hits,
                self._misses,
                self._evictions,
                self._expirations,
                len(self._entries),
                self.maxsize,
            )

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._entries)


class CachedTool(CallableAsFunction):
    """Wraps a tool so that repeated calls with equal arguments are served from a cache.

    Every attribute other than ``invoke``/``execute`` (and their async forms) is the wrapped
    tool's, so the wrapper describes itself (name, schema) and streams exactly like the tool;
    like a tool it is callable as a function, so LangGraph's ``ToolNode`` takes it as is.

    Args:
        tool: any object with ``name`` and ``invoke`` (and optionally ``ainvoke``).
        cache: a shared :class:`ToolResultCache`; default: a new one.
        maxsize: size of the new cache.
        ttl: time-to-live of the new cache.
    """

    def __init__(
        self,
        tool: Any,
        cache: ToolResultCache | None = None,
        *,
        maxsize: int = 1024,
        ttl: float | None = 3600.0,
    ) -> None:
        self.tool = tool
        self.cache = cache if cache is not None else ToolResultCache(maxsize, ttl)

    @property
    def name(self) -> str:
        """The wrapped tool's name."""
        return str(self.tool.name)

    @property
    def description(self) -> str:
        """The wrapped tool's description."""
        return str(getattr(self.tool, "description", ""))

    def __getattr__(self, attr: str) -> Any:
        if attr == "tool":  # not set yet (e.g. during unpickling-like construction)
            raise AttributeError(attr)
        return getattr(self.tool, attr)

    def invoke(
        self, tool_input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> Any:
        """``tool.invoke`` through the cache; ``config`` and ``kwargs`` are part of the key."""
        return self._through_cache("invoke", tool_input, config, kwargs)

    def execute(
        self, tool_input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> Any:
        """``tool.execute`` (the ToolOutput, which ``to_langchain_tool`` uses) through the cache."""
        return self._through_cache("execute", tool_input, config, kwargs)

    async def ainvoke(
        self, tool_input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> Any:
        """``tool.ainvoke`` (or ``invoke`` in a thread) through the cache."""
        return await self._athrough_cache("invoke", tool_input, config, kwargs)

    async def aexecute(
        self, tool_input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> Any:
        """``tool.aexecute`` (or ``execute`` in a thread) through the cache."""
        return await self._athrough_cache("execute", tool_input, config, kwargs)

    def _through_cache(
        self, method: str, tool_input: Any, config: Mapping[str, Any] | None, kwargs: dict[str, Any]
    ) -> Any:
        key, started, found, value = self._lookup(method, tool_input, config, kwargs)
        if found:
            return value
        result = getattr(self.tool, method)(tool_input, **_with_config(config, kwargs))
        return self._stored(key, result, started)

    async def _athrough_cache(
        self, method: str, tool_input: Any, config: Mapping[str, Any] | None, kwargs: dict[str, Any]
    ) -> Any:
        key, started, found, value = self._lookup(method, tool_input, config, kwargs)
        if found:
            return value
        options = _with_config(config, kwargs)
        if callable(getattr(self.tool, f"a{method}", None)):
            result = await getattr(self.tool, f"a{method}")(tool_input, **options)
        else:
            result = await asyncio.to_thread(getattr(self.tool, method), tool_input, **options)
        return self._stored(key, result, started)

    def _lookup(
        self, method: str, tool_input: Any, config: Mapping[str, Any] | None, kwargs: dict[str, Any]
    ) -> tuple[str | None, float, bool, Any]:
        """The call's key (``None``: uncacheable), start time, whether it hit, and the hit."""
        key = self._key(tool_input, config, kwargs, method)
        started = time.perf_counter()
        found, value = self.cache.lookup(key) if key is not None else (False, None)
        if found:
            _log(self.name, "hit", started)
            value = _rebind(value, tool_input)
        return key, started, found, value

    def _stored(self, key: str | None, result: Any, started: float) -> Any:
        if key is not None and getattr(result, "status", None) != "error":  # errors: not kept
            self.cache.put(key, result)
        _log(self.name, "miss", started)
        return result

    def _key(
        self,
        tool_input: Any,
        config: Mapping[str, Any] | None,
        injected: Mapping[str, Any],
        method: str,
    ) -> str | None:
        # A ToolCall gives a ToolMessage and plain arguments give the raw result: keep apart.
        if isinstance(tool_input, Mapping) and is_tool_call(tool_input):
            kind, raw = "message", tool_input["args"]
        else:
            kind, raw = "value", tool_input
        try:
            arguments = parse_arguments(raw)
        except ToolInputError:  # invalid input is the tool's to report, uncached
            return None
        settings = {k: v for k, v in (config or {}).items() if k not in _CONFIG_NOT_KEYED}
        everything = {"arguments": arguments, "injected": dict(injected), "config": settings}
        return ToolResultCache.make_key(f"{self.name}\x00{kind}\x00{method}", everything)

    def __repr__(self) -> str:
        return f"CachedTool({self.tool!r})"


class CachedFunction(Generic[_P, _R]):
    """A function whose results are cached by its bound arguments; see :func:`cached`."""

    def __init__(self, func: Callable[_P, _R], cache: ToolResultCache, name: str) -> None:
        functools.update_wrapper(self, func)
        self.func = func
        self.cache = cache
        self.cache_name = name
        self._signature = inspect.signature(func)
        self._is_async = inspect.iscoroutinefunction(func)

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        key = ToolResultCache.make_key(self.cache_name, dict(bound.arguments))
        if self._is_async:
            return cast(_R, self._acall(key, args, kwargs))
        started = time.perf_counter()
        if key is not None:
            found, value = self.cache.lookup(key)
            if found:
                _log(self.cache_name, "hit", started)
                return cast(_R, value)
        result = self.func(*args, **kwargs)
        if key is not None:
            self.cache.put(key, result)
        _log(self.cache_name, "miss", started)
        return result

    async def _acall(self, key: str | None, args: Any, kwargs: Any) -> Any:
        started = time.perf_counter()
        if key is not None:
            found, value = self.cache.lookup(key)
            if found:
                _log(self.cache_name, "hit", started)
                return value
        result = await cast(Callable[..., Awaitable[Any]], self.func)(*args, **kwargs)
        if key is not None:
            self.cache.put(key, result)
        _log(self.cache_name, "miss", started)
        return result


def cached(
    cache: ToolResultCache | None = None,
    *,
    maxsize: int = 128,
    ttl: float | None = 3600.0,
    name: str | None = None,
) -> Callable[[Callable[_P, _R]], CachedFunction[_P, _R]]:
    """Decorator caching a deterministic function's results (sync or async).

    The key is ``name`` (default: the function's qualified name) and the canonical JSON of the
    arguments bound to the signature, defaults applied. The cache is ``wrapper.cache``. The
    wrapper keeps the function's signature and type hints (``__wrapped__``) and, for an
    ``async def``, is itself an ``async def``, so ``@tool`` over ``@cached`` infers the same
    schema and the same sync/async kind as over the bare function.

    Example:
        >>> @cached(ttl=60)
        ... def lookup(city: str) -> str:
        ...     return city.upper()
        >>> lookup("shenzhen"), lookup(city="shenzhen"), lookup.cache.info().hits
        ('SHENZHEN', 'SHENZHEN', 1)
    """

    def decorator(func: Callable[_P, _R]) -> CachedFunction[_P, _R]:
        store = cache if cache is not None else ToolResultCache(maxsize, ttl)
        wrapper = CachedFunction(func, store, name or func.__qualname__)
        if not wrapper._is_async:
            return wrapper

        # An async function must stay one to ``inspect.iscoroutinefunction`` (``@tool`` and
        # LangChain decide sync or async by it), which a callable object is not on 3.11.
        @functools.wraps(func)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            return await wrapper(*args, **kwargs)  # type: ignore[misc]

        call_async.cache = store  # type: ignore[attr-defined]
        call_async.cache_name = wrapper.cache_name  # type: ignore[attr-defined]
        return cast(CachedFunction[_P, _R], call_async)

    return decorator


_CONFIG_NOT_KEYED = frozenset({"callbacks", "max_concurrency"})
"""Run-config keys that cannot change a result (observers, a batch's thread bound)."""


def _with_config(config: Mapping[str, Any] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    return kwargs if config is None else {"config": config, **kwargs}


def _rebind(value: Any, tool_input: Any) -> Any:
    """A cached ToolMessage (or ToolOutput) answered another call: give it this call's id."""
    if isinstance(value, ToolMessage) and isinstance(tool_input, Mapping):
        return value.model_copy(update={"tool_call_id": str(tool_input.get("id") or "")})
    if isinstance(value, ToolOutput) and value.tool_call_id is not None:
        return dataclasses.replace(value, tool_call_id=str(tool_input.get("id") or ""))
    return value


def _log(name: str, outcome: str, started: float) -> None:
    elapsed_ms = (time.perf_counter() - started) * 1000
    logger.debug("tool %r cache %s in %.2f ms", name, outcome, elapsed_ms)
