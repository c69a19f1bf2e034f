"""Which files a tool that takes paths from a model may read.

A model names files in its tool calls, and a prompt-injected document can tell it to name
``/etc/passwd``, ``../secret`` or a key file. Qwen-Agent scopes its file tools to a work
directory; :class:`FileScope` does the same for ours (the ``retrieval``, ``doc_parser`` and
``simple_doc_parser`` tools of :mod:`ragtools.retrieval.tools.qwen`, and any
:class:`~ragtools.retrieval.tools.qwen.FileTool`). The rules:

* **Roots.** A path named by the model is read only when it lies under one of the folders the
  application names: ``get_tool("retrieval", roots=["docs"])``. The default is the working
  directory at the moment the tool is made, which is what a relative path means to Python and
  what ``rag build .`` reads; ``roots=[]`` allows no folder at all. Roots are resolved once,
  when the tool is made, so a later ``chdir`` widens nothing.
* **Files the application hands over are the user's.** ``call(params, files=[...])`` is how
  Qwen-Agent's agents pass the files of a conversation; those exact files are readable
  wherever they lie, and the model may name them again in its arguments.
* **Resolved first.** A path is resolved (``..`` and every symbolic link,
  :func:`os.path.realpath`) before the check, so a link inside a root that points outside it
  is outside. Nothing outside the scope is opened or even looked at: the refusal is one
  message whether the file exists or not, so it reveals nothing about the machine.
* **Only regular files of bounded size.** Inside the scope, the file is checked with ``stat``
  before it is opened: FIFOs, devices, sockets and directories are refused (reading a FIFO
  blocks until a writer comes, ``/dev/zero`` never ends), and so is a file over ``max_bytes``
  (the default of ``rag build``, :data:`~ragtools.parsers.loading.DEFAULT_MAX_BYTES`). The size
  is the file's length, so a sparse file is judged by what reading it would cost.
* **``file_access``** is Qwen-Agent's flag for a tool that needs file access: a file tool whose
  ``file_access`` is False (as a class attribute or ``file_access=False`` in its
  configuration) reads no path at all.

Every refusal is a :class:`~ragtools.retrieval.tools.exceptions.ToolException`: shown to the
model as an error message it can act on, never a traceback. What lies beyond this boundary: a
local user who can write inside a root and swaps a checked file for a link between the check
and the open. The model cannot do that; the parsers open with ``O_NONBLOCK`` and check the
opened file again, so even then a FIFO cannot hang the tool.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from ragtools.parsers.errors import ConfigError
from ragtools.parsers.loading import DEFAULT_MAX_BYTES
from ragtools.parsers.selection import not_regular, special_kind
from ragtools.retrieval.tools.exceptions import ToolException

__all__ = ["FileScope", "Roots"]

Roots = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None
"""One folder, several, or ``None`` for the working directory."""


class FileScope:
    """The files one tool may read: under its roots, or handed over by the application.

    Args:
        roots: the folders the model may name files under (see the module docstring);
            ``None``: the working directory; an empty list: none.
        max_bytes: larger files are refused before they are opened.
        enabled: ``False`` refuses every path (a tool without ``file_access``).

    Raises:
        ConfigError: a root that is not an existing folder, or ``max_bytes`` below 1.

    Example:
        >>> scope = FileScope(["docs"])  # doctest: +SKIP
        >>> scope.readable(["docs/guide.md"], given=[])  # doctest: +SKIP
        ['docs/guide.md']
        >>> scope.readable(["/etc/passwd"], given=[])  # doctest: +SKIP
        Traceback (most recent call last):
        ToolException: '/etc/passwd': not a file this tool may read ...
    """

    def __init__(
        self, roots: Roots = None, *, max_bytes: int = DEFAULT_MAX_BYTES, enabled: bool = True
    ) -> None:
        if max_bytes < 1:
            msg = f"max_bytes must be >= 1, got {max_bytes}"
            raise ConfigError(msg)
        self.max_bytes = max_bytes
        self.enabled = enabled
        self.roots: tuple[Path, ...] = tuple(_folder(root) for root in _as_list(roots))

    def readable(self, named: Iterable[str], given: Iterable[str]) -> list[str]:
        """The paths to read, in order: ``named`` (by the model) then ``given``.

        Args:
            named: paths the model wrote in its arguments.
            given: paths the application handed to the tool (trusted wherever they lie).

        Returns:
            The paths as written, each checked; a path given twice is read once.

        Raises:
            ToolException: a path outside the scope, missing, not a regular file or too
                large (the first such path, named as the model wrote it).
        """
        given = list(given)
        trusted = {os.path.realpath(path) for path in given}
        readable: dict[str, None] = {}
        for path in [*named, *given]:
            resolved = os.path.realpath(path)
            if not self.enabled or not (resolved in trusted or self._inside(resolved)):
                msg = (
                    f"{path!r}: not a file this tool may read; it reads only the files the "
                    "user gave and those under the folders the application allows"
                )
                raise ToolException(msg)
            self._check_file(path, resolved)
            readable.setdefault(path)
        return list(readable)

    def _inside(self, resolved: str) -> bool:
        target = Path(resolved)
        return any(target.is_relative_to(root) for root in self.roots)

    def _check_file(self, path: str, resolved: str) -> None:
        try:
            info = os.stat(resolved)
        except FileNotFoundError:
            msg = f"{path!r}: no such file; check the path"
            raise ToolException(msg) from None
        except OSError as exc:
            msg = f"{path!r}: cannot read the file ({exc.strerror or exc})"
            raise ToolException(msg) from None
        if stat.S_ISDIR(info.st_mode):
            msg = f"{path!r}: is a folder; name the files in it"
            raise ToolException(msg)
        kind = special_kind(info.st_mode)
        if kind is not None:
            msg = f"{path!r}: {not_regular(kind)}"
            raise ToolException(msg)
        if info.st_size > self.max_bytes:
            msg = (
                f"{path!r}: the file is too large to read here "
                f"({info.st_size} bytes, the limit is {self.max_bytes})"
            )
            raise ToolException(msg)


def _as_list(roots: Roots) -> list[str | os.PathLike[str]]:
    if roots is None:
        return [os.getcwd()]
    if isinstance(roots, str | os.PathLike):
        return [roots]
    return list(roots)


def _folder(root: str | os.PathLike[str]) -> Path:
    resolved = Path(os.path.realpath(root))
    if not resolved.is_dir():
        msg = f"roots: {os.fspath(root)!r} is not an existing folder"
        raise ConfigError(msg)
    return resolved
