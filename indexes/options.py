"""Settings objects from what a retriever argument holds (``rm3=``, ``prf=``).

One rule for every optional feature given as a frozen dataclass of settings: ``None`` or
``False`` is off, ``True`` is the defaults, a mapping names fields (an unknown name is refused,
listing the known ones), and an instance is taken as it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TypeVar

from ragtools.parsers.errors import ConfigError

__all__ = ["settings_of"]

_S = TypeVar("_S")


def settings_of(cls: type[_S], value: object, argument: str) -> _S | None:
    """``cls`` made from ``value`` as the argument named ``argument`` holds it.

    Raises:
        ConfigError: an unknown field, a value ``cls`` refuses, or another type, naming
            ``argument``.
    """
    if value is None or value is False:
        return None
    if value is True:
        return cls()
    if isinstance(value, cls):
        return value
    fields = sorted(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(fields))
        if unknown:
            msg = f"unknown {cls.__name__} setting(s) {unknown}; use {fields}"
            raise ConfigError(msg)
        return cls(**value)
    msg = (
        f"{argument} must be True, False, None, a mapping of settings or a {cls.__name__}, "
        f"got {value!r}"
    )
    raise ConfigError(msg)
