"""Jupyter notebooks (``.ipynb``): the Markdown and code cells, as one Markdown document.

A notebook is JSON, but reading it as records (one field as the text) finds no text field,
and reading it as text indexes its JSON escapes and, worse, its outputs: base64 images,
HTML tables, tracebacks, progress bars, often most of the file and none of it written by
the author. So, as nbconvert's Markdown export and LangChain's ``NotebookLoader`` (whose
``include_outputs`` is off by default) do:

* Markdown cells are kept as they are, so their headings give the document's outline
  (:mod:`parsers.outline`) and its ``title`` (the first heading, as for Markdown).
* Code cells are kept as fenced code blocks in the notebook's language
  (```` ```python ````), so a ``# comment`` in code is not taken for a heading and a reader
  of a chunk sees code as code.
* Outputs and execution counts are dropped; raw cells (nbconvert's pass-through for other
  output formats, usually LaTeX or reST) are dropped too; empty cells leave no trace.

Both the nbformat 4 layout (``cells``) and the old nbformat 3 one (``worksheets[].cells``,
code under ``input``) are read. LlamaIndex's ``IPYNBReader`` converts through nbconvert (a
heavy dependency with Jinja templates); the layout is simple enough to read here.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ragtools.parsers.document import Document
from ragtools.parsers.errors import ParseError
from ragtools.parsers.markdown import first_heading
from ragtools.parsers.normalize import normalize_text
from ragtools.parsers.outline import OUTLINE_KEY, markdown_outline
from ragtools.parsers.registry import register_parser
from ragtools.parsers.text import decode_bytes

__all__ = ["notebook_markdown", "parse_notebook"]

logger = logging.getLogger(__name__)


def _source(cell: Mapping[str, Any], key: str) -> str:
    value = cell.get(key, "")
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return value if isinstance(value, str) else ""


def _cells(notebook: Mapping[str, Any]) -> Sequence[Any]:
    cells = notebook.get("cells")
    if isinstance(cells, list):
        return cells
    worksheets = notebook.get("worksheets")  # nbformat 3
    if isinstance(worksheets, list):
        return [
            cell
            for sheet in worksheets
            if isinstance(sheet, Mapping) and isinstance(sheet.get("cells"), list)
            for cell in sheet["cells"]
        ]
    msg = "not a Jupyter notebook: no 'cells' list; is it another JSON file named .ipynb?"
    raise ValueError(msg)


def _language(notebook: Mapping[str, Any]) -> str:
    metadata = notebook.get("metadata")
    if isinstance(metadata, Mapping):
        for key, field in (("language_info", "name"), ("kernelspec", "language")):
            info = metadata.get(key)
            if isinstance(info, Mapping) and isinstance(info.get(field), str):
                return str(info[field]).strip()
    return ""


def notebook_markdown(notebook: Mapping[str, Any]) -> str:
    """The Markdown of a notebook's JSON: Markdown cells, code cells fenced, no outputs.

    Raises:
        ValueError: the JSON is not a notebook (no ``cells`` and no ``worksheets``).
    """
    language = _language(notebook)
    parts: list[str] = []
    for cell in _cells(notebook):
        if not isinstance(cell, Mapping):
            continue
        kind = cell.get("cell_type")
        if kind == "markdown":
            text = _source(cell, "source").strip("\n")
        elif kind == "code":
            code = (_source(cell, "source") or _source(cell, "input")).strip("\n")
            fence = "````" if "```" in code else "```"
            text = f"{fence}{language}\n{code}\n{fence}" if code.strip() else ""
        else:  # raw cells and unknown kinds: not the author's prose or code
            continue
        if text.strip():
            parts.append(text)
    return "\n\n".join(parts)


@register_parser(".ipynb", name="notebook", _builtin=True)
def parse_notebook(path: Path, *, source: str, password: str | None = None) -> list[Document]:
    """Parse a Jupyter notebook into one Markdown document (see the module docstring).

    Raises:
        ParseError: unreadable, not JSON, or JSON that is not a notebook.
    """
    raw = decode_bytes(path.read_bytes(), source)
    try:
        notebook = json.loads(raw)
        if not isinstance(notebook, Mapping):
            msg = f"not a Jupyter notebook: the JSON is a {type(notebook).__name__}, not an object"
            raise ValueError(msg)
        markdown = notebook_markdown(notebook)
    except ValueError as exc:
        what = f"invalid notebook JSON ({exc})" if isinstance(exc, json.JSONDecodeError) else exc
        raise ParseError(source, str(what)) from exc
    text = normalize_text(markdown)
    if not text:
        logger.warning("%s: a notebook without Markdown or code; no document", source)
        return []
    metadata: dict[str, JsonValue] = {"source": source, OUTLINE_KEY: markdown_outline(text)}
    title = normalize_text(first_heading(text) or "")
    if title:
        metadata["title"] = title
    return [Document(text=text, metadata=metadata)]
