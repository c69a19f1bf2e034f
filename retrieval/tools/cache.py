"""A result cache for deterministic tools, with a time-to-live and a size bound.

Qwen-Agent caches the results of deterministic tools (its ``ToolCache``: TTL, maximum size,
key from the tool name and parameters). The storage is ``cachetools``' ``TTLCache`` (or its
``LRUCache`` when nothing expires), which is not thread-safe by itself, so every access holds
one lock; this module adds the key rule and the counters ``cachetools`` does not keep. Entries
expire ``ttl`` seconds after they were stored, measured with an injectable clock
(``time.monotonic`` by default, immune to wall-clock jumps); when full, expired entries go
first, then the least recently used one.

**The key rule.** :func:`cache_key` is the only place a key is made: a stored result is given
back only to a call that would certainly have produced it, and one cache store may be shared
by any number of tools and tenants. The key is the canonical JSON (sorted keys, no
whitespace) of:

1. **the tool** (:func:`tool_identity`): its class, its name, the tool *object*, and its
   visible settings. The name alone is not enough: two tools may share a name and differ in
   what they were bound to when made. ``create_retriever_tool(r, "search", ..., filter=
   {"source": "doc1.md"})`` and the same tool bound to ``doc2.md`` are both "search" (keyed by
   name, tenant B was answered with tenant A's ``doc1.md``); so are two ``get_tool("x",
   **config)`` instances, and two closures that one factory decorated with ``@cached``. The
   visible settings are not enough either: a retriever tool's filter, ``k``, retriever and
   budget live in its function's closure, where no key can read them. So the object itself
   is part of the key, as a token handed out once per live object and never reused (``id()``
   is reused once an object dies, which would give a dead tool's entries to a new one). Its
   settings (a pydantic tool's fields, a FunctionTool's ``config``) are added so that a
   setting reassigned on the same object (``tool.response_format = ...``) is not answered
   from before. Two CachedTools over one tool object share entries; equal-looking tools made
   separately never do (make a tool once per tenant and keep it, to get hits across requests).
2. **the validated arguments**: what the tool's own validation makes of the input
   (``BaseTool.parse_input``, ``FunctionTool.verify_args``, ``ModelTool.validate``, the
   signature binding with defaults of a ``@cached`` function), so ``"q"``, ``{"query": "q"}``
   and ``{"query": " q "}`` share one entry of a retriever tool, and input the tool rejects is
   not cached (the tool reports it). Other tools (duck-typed ones, LangChain's) key on their
   leniently parsed arguments (:func:`~retrieval.tools.params.parse_arguments`), all of them.
3. **the injected arguments**: the values of ``InjectedToolArg`` fields after injection,
   wherever they came from (keyword arguments of ``invoke``, a ToolsNode's ``injected``, the
   call's ``args`` as LangChain sends them); for other tools, ``invoke``'s keyword arguments.
   An ``InjectedToolCallId`` is left out: it differs on every call, and a hit is re-addressed
   to the new call's id.
4. **the run configuration** (``config`` of ``invoke``, e.g. ``{"configurable": {"tenant":
   ...}}``), its ``callbacks`` and ``max_concurrency`` aside: they observe or bound a run and
   never change its result.
5. **the namespace the application declares**: ``CachedTool(tool, store, namespace=
   "tenant-a")`` or ``@cached(store, namespace=...)``, for a tenant the tool reads from where
   no key can see it (a context variable, a connection, the process environment).
6. **the entry**: a ToolCall (answered with a ToolMessage) and plain input (answered with the
   content), ``invoke`` and ``execute`` (content or the full ToolOutput) are kept apart, as
   their results differ in shape.

A value JSON cannot encode in the arguments, injected values, configuration or settings makes
the call uncacheable (it simply runs); pydantic models are encoded field by field under their
class name, and objects in a tool's settings (its function, schema class) by their token.

**Every way a cached result comes back uses that key**: :class:`CachedTool` ``invoke``,
``ainvoke``, ``execute`` and ``aexecute`` with a string, a dict or a ToolCall; the Runnable
methods of the wrapped tool (``batch``, ``abatch``, ``stream``, ``astream``,
``run_with_artifact``, ``arun_with_artifact``), which the wrapper hands out bound to itself so
that they go through its cache; a :class:`~retrieval.tools.node.ToolsNode` holding a CachedTool
(``invoke``, ``ainvoke``, ``stream``), which calls its ``invoke``/``ainvoke``;
``to_langchain_tool`` of it (so LangGraph's ``ToolNode`` through ``to_langgraph_tools``),
which uses ``execute``; and :func:`cached` functions, alone or under ``@tool``. A tool that
streams natively streams through the wrapper uncached. Error messages are never cached; a
cached ToolMessage (or ToolOutput) is returned with the new call's id. Each call's hit or miss
and duration are logged at DEBUG.

Only cache tools whose result depends on nothing but what the key holds; cached values are
shared, so callers must not mutate them. Concurrent misses on one key each run the tool (no
single-flight locking): simple, and harmless for deterministic tools.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import itertools
import json
import logging
import threading
import time
import types
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar, cast

import cachetools
from pydantic import BaseModel

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools.base import BaseTool
from ragtools.retrieval.tools.classtool import FunctionTool, ModelTool
from ragtools.retrieval.tools.messages import ToolMessage, is_tool_call
from ragtools.retrieval.tools.output import ToolOutput
from ragtools.retrieval.tools.params import parse_arguments
from ragtools.retrieval.tools.runnable import RunnableMethods
from ragtools.retrieval.tools.schema import injected_fields

logger = logging.getLogger(__name__)

__all__ = [
    "CacheInfo",
    "CachedFunction",
    "CachedTool",
    "ToolResultCache",
    "cache_key",
    "cached",
    "tool_identity",
]

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

    One store may be shared by many tools and tenants: :func:`cache_key` keeps them apart.

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
    def make_key(scope: str, parts: Mapping[str, Any]) -> str | None:
        """The text of a key: ``scope`` + canonical JSON of ``parts``; ``None`` if JSON cannot
        encode them. Only the encoding: what goes into a tool's key is :func:`cache_key`'s."""
        try:
            canonical = _canonical_json(parts, _encode_model)
        except (TypeError, ValueError):
            return None
        return f"{scope}\x00{canonical}"

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


# ---- the key rule ------------------------------------------------------------------------


def cache_key(
    tool: Any,
    tool_input: Any,
    *,
    entry: str,
    injected: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    namespace: Any = None,
) -> str | None:
    """The key of one call's result: the only key rule (see the module docstring).

    Args:
        tool: the tool (or the :class:`CachedFunction`) that would run.
        tool_input: what it is called with: a string, a dict or a ToolCall; for a
            CachedFunction, its ``(args, kwargs)``.
        entry: which entry point answers, so results of different shapes stay apart.
        injected: the run-time keyword arguments (injected values).
        config: the run configuration.
        namespace: the tenant or configuration the application declares (JSON).

    Returns:
        The key, or ``None`` when the call must not be cached: input the tool rejects, or a
        value JSON cannot encode.
    """
    identity = tool_identity(tool)
    if identity is None:
        return None
    try:
        arguments, hidden = _call_arguments(tool, tool_input, injected or {})
    except Exception:  # input the tool rejects is the tool's to report, when it runs
        logger.debug("tool %r: input not cacheable", _name(tool), exc_info=True)
        return None
    settings = {k: v for k, v in (config or {}).items() if k not in _CONFIG_NOT_KEYED}
    parts = {
        "entry": entry,
        "namespace": namespace,
        "config": settings,
        "arguments": arguments,
        "injected": hidden,
    }
    return ToolResultCache.make_key(identity, parts)


def tool_identity(tool: Any) -> str | None:
    """What "the tool" is in a key: class, name, object token and settings, as JSON text.

    ``None`` when the settings hold a value that cannot be encoded (the call then runs
    uncached).
    """
    cls = type(tool)
    identity = {
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "name": _name(tool),
        "object": _object_token(tool),
        "settings": _settings(tool),
    }
    try:
        return _canonical_json(identity, _encode_setting)
    except (TypeError, ValueError):
        logger.debug("tool %r: settings not encodable, calls run uncached", _name(tool))
        return None


def _call_arguments(
    tool: Any, tool_input: Any, injected: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(model arguments, injected values)`` as the tool's own validation makes them.

    Raises:
        Exception: whatever the tool's validation raises for input it rejects.
    """
    if isinstance(tool, CachedFunction):
        args, kwargs = tool_input
        return tool.bind(args, kwargs), {}
    if isinstance(tool, BaseTool):
        values = tool.parse_input(tool_input, **injected)
        schema = tool.get_input_schema()
        hidden = injected_fields(schema) if schema is not None else dict.fromkeys(injected, False)
        return (
            {k: v for k, v in values.items() if k not in hidden},
            {k: v for k, v in values.items() if k in hidden and not hidden[k]},
        )
    raw = tool_input["args"] if is_tool_call(tool_input) else tool_input
    if isinstance(tool, FunctionTool):
        return tool.verify_args(raw), dict(injected)
    if isinstance(tool, ModelTool):
        model = tool.validate(raw)
        return {name: getattr(model, name) for name in type(model).model_fields}, dict(injected)
    return parse_arguments(raw), dict(injected)


def _settings(tool: Any) -> Any:
    """The settings a tool shows: a pydantic tool's fields, a FunctionTool's ``config``."""
    if isinstance(tool, BaseModel):
        return {name: getattr(tool, name) for name in type(tool).model_fields}
    if isinstance(tool, FunctionTool):
        return tool.config
    return None


def _name(tool: Any) -> str:
    return str(getattr(tool, "cache_name", None) or getattr(tool, "name", ""))


_CONFIG_NOT_KEYED = frozenset({"callbacks", "max_concurrency"})
"""Run-config keys that cannot change a result (observers, a batch's thread bound)."""


def _canonical_json(value: Any, default: Callable[[Any], Any]) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=default
    )


def _encode_model(value: Any) -> Any:
    """A validated pydantic model (an argument) as its class and fields; nothing else."""
    if isinstance(value, BaseModel):
        return {"$model": type(value).__qualname__, "fields": value.model_dump()}
    msg = f"{type(value).__name__} is not JSON"
    raise TypeError(msg)


def _encode_setting(value: Any) -> Any:
    """A setting JSON cannot hold (a function, a schema class) as its object token."""
    return {"$object": _object_token(value)}


class _ObjectTokens:
    """A number per live object, never handed out twice in the process.

    Objects are remembered by ``id()`` with a weak reference that forgets them when they
    die, so a new object at a dead one's address gets a new number. An object that cannot be
    weakly referenced is kept alive instead (its number then stays right forever).
    """

    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self._known: dict[int, tuple[Callable[[], Any], int]] = {}
        self._lock = threading.RLock()  # reentrant: a collection may run _forget mid-lookup

    def __call__(self, obj: Any) -> int:
        address = id(obj)
        with self._lock:
            known = self._known.get(address)
            if known is not None and known[0]() is obj:
                return known[1]
            number = next(self._numbers)
            reference: Callable[[], Any]
            try:
                reference = weakref.ref(obj, functools.partial(self._forget, address))
            except TypeError:
                reference = functools.partial(_same, obj)
            self._known[address] = (reference, number)
            return number

    def _forget(self, address: int, reference: Any) -> None:
        with self._lock:
            known = self._known.get(address)
            if known is not None and known[0] is reference:
                del self._known[address]


def _same(obj: Any) -> Any:
    return obj


_object_token = _ObjectTokens()


# ---- wrappers -----------------------------------------------------------------------------


class CachedTool:
    """Wraps a tool so that repeated calls with equal arguments are served from a cache.

    Every attribute other than ``invoke``/``execute`` (and their async forms) is the wrapped
    tool's, so the wrapper describes itself (name, schema) like the tool; the tool's Runnable
    methods (``batch``, ``stream``, ``run_with_artifact``, ...) are handed out bound to the
    wrapper, so they go through the cache too. ``to_langchain_tool`` and
    ``to_langgraph_tools`` (:mod:`retrieval.integrations`) take it like a tool.

    Args:
        tool: any object with ``name`` and ``invoke`` (and optionally ``ainvoke``).
        cache: a shared :class:`ToolResultCache`; default: a new one.
        maxsize: size of the new cache.
        ttl: time-to-live of the new cache.
        namespace: the tenant or configuration this wrapper serves (any JSON value), part of
            every key: for a tenant the tool reads from somewhere the key cannot see.

    Raises:
        ConfigError: a ``namespace`` JSON cannot encode.
    """

    def __init__(
        self,
        tool: Any,
        cache: ToolResultCache | None = None,
        *,
        maxsize: int = 1024,
        ttl: float | None = 3600.0,
        namespace: Any = None,
    ) -> None:
        self.tool = tool
        self.cache = cache if cache is not None else ToolResultCache(maxsize, ttl)
        self.namespace = _checked_namespace(namespace)

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
        value = getattr(self.tool, attr)
        if attr in _RUNNABLE_METHODS:
            default: Callable[..., Any] = getattr(RunnableMethods, attr)
            if getattr(value, "__func__", None) is default:
                # Written over invoke/execute: bound to the wrapper, they use its cache.
                return types.MethodType(default, self)
        return value

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
        # A ToolCall gives a ToolMessage and plain arguments give the raw result: keep apart.
        kind = "message" if is_tool_call(tool_input) else "value"
        key = cache_key(
            self.tool,
            tool_input,
            entry=f"{kind}.{method}",
            injected=kwargs,
            config=config,
            namespace=self.namespace,
        )
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

    def __repr__(self) -> str:
        return f"CachedTool({self.tool!r})"


class CachedFunction(Generic[_P, _R]):
    """A function whose results are cached by its bound arguments; see :func:`cached`."""

    def __init__(
        self, func: Callable[_P, _R], cache: ToolResultCache, name: str, namespace: Any = None
    ) -> None:
        functools.update_wrapper(self, func)
        self.func = func
        self.cache = cache
        self.cache_name = name
        self.namespace = _checked_namespace(namespace)
        self._signature = inspect.signature(func)
        self.is_async = inspect.iscoroutinefunction(func)

    def bind(self, args: Any, kwargs: Any) -> dict[str, Any]:
        """The arguments of a call by parameter name, defaults applied (the validation of a
        plain function).

        Raises:
            TypeError: arguments the signature does not take.
        """
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        key = cache_key(self, (args, kwargs), entry="call", namespace=self.namespace)
        if self.is_async:
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
    namespace: Any = None,
) -> Callable[[Callable[_P, _R]], CachedFunction[_P, _R]]:
    """Decorator caching a deterministic function's results (sync or async).

    The key (:func:`cache_key`) holds the decorated function (each decoration is its own: two
    closures one factory decorated never share entries, even under one ``name`` in one shared
    ``cache``), ``name`` (default: the function's qualified name), ``namespace`` and the
    arguments bound to the signature, defaults applied. The cache is ``wrapper.cache``. The
    wrapper keeps the function's signature and type hints (``__wrapped__``) and, for an
    ``async def``, is itself an ``async def``, so ``@tool`` over ``@cached`` infers the same
    schema and the same sync/async kind as over the bare function.

    Raises:
        ConfigError: a ``namespace`` JSON cannot encode.

    Example:
        >>> @cached(ttl=60)
        ... def lookup(city: str) -> str:
        ...     return city.upper()
        >>> lookup("shenzhen"), lookup(city="shenzhen"), lookup.cache.info().hits
        ('SHENZHEN', 'SHENZHEN', 1)
    """
    _checked_namespace(namespace)

    def decorator(func: Callable[_P, _R]) -> CachedFunction[_P, _R]:
        store = cache if cache is not None else ToolResultCache(maxsize, ttl)
        wrapper = CachedFunction(func, store, name or func.__qualname__, namespace)
        if not wrapper.is_async:
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


_RUNNABLE_METHODS = frozenset(
    {"batch", "abatch", "stream", "astream", "run_with_artifact", "arun_with_artifact"}
)
"""The :class:`~retrieval.tools.runnable.RunnableMethods` a CachedTool hands out bound to
itself (unless the wrapped tool overrides them: a native stream passes through)."""


def _checked_namespace(namespace: Any) -> Any:
    try:
        _canonical_json(namespace, _encode_model)
    except (TypeError, ValueError) as exc:
        msg = (
            f"namespace {namespace!r} cannot be part of a cache key ({exc}); give a JSON "
            "value, e.g. the tenant id as a string"
        )
        raise ConfigError(msg) from exc
    return namespace


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
