"""Messages on the command line name its flags, not the library's Python arguments.

The library's errors speak to a Python caller ("the PDF is encrypted ...; pass
password=..."), which is right in Python and wrong after ``rag build``, where the fix is
``--password``. Rather than teach every library message about the command line, ``rag``
rewrites them here, at its one boundary: the error it prints, the failed-file lines and the
log records (:func:`cli_message`). The table holds the phrases the library uses; an
argument the command line has no flag for is replaced by what a command-line user can do.
"""

from __future__ import annotations

import re

#: Python argument -> ``rag`` flag, for ``name=value`` written in a message.
_FLAGS = {
    "password": "--password",
    "precision": "--precision",
    "chunk_size": "--chunk-size",
    "chunk_overlap": "--chunk-overlap",
    "keep_versions": "--keep-versions",
    "shards": "--shards",
    "model": "--model",
}

#: Whole phrases first: those whose command-line form is not ``--flag VALUE``.
_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bpassword=(?:\.\.\.|…)"), "--password PASSWORD"),
    (
        re.compile(r"pass text_field= to load_records"),
        "give each record a string field with its text (such as 'text')",
    ),
    (re.compile(r"\bmodel=None\b"), "no --model"),
    (re.compile(r"\bvector=False\b"), "--no-vector"),
)

_ASSIGNMENT = re.compile(
    r"\b(" + "|".join(_FLAGS) + r")=(?:'([^']*)'|\"([^\"]*)\"|(\.\.\.|…|[^\s,;)]+))"
)


def _flag(match: re.Match[str]) -> str:
    value = next(group for group in match.groups()[1:] if group is not None)
    return f"{_FLAGS[match.group(1)]} {'VALUE' if value in ('...', '…') else value}"


def cli_message(text: str) -> str:
    """``text`` with the library's Python arguments written as ``rag`` flags.

    Example:
        >>> cli_message("the PDF is encrypted: a password is needed; pass password=...")
        'the PDF is encrypted: a password is needed; pass --password PASSWORD'
        >>> cli_message("precision='int8' needs ONNX Runtime")
        '--precision int8 needs ONNX Runtime'
    """
    for pattern, replacement in _PHRASES:
        text = pattern.sub(replacement, text)
    return _ASSIGNMENT.sub(_flag, text)
