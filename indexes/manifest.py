"""The index bundle's ``manifest.json``: its format version and every migration, in one place.

A bundle's manifest says how it was built and what it holds. Its schema changes only with a
new :data:`FORMAT_VERSION`, and :func:`migrate` brings an older manifest up to the current
schema in memory when the bundle is opened (nothing on disk is rewritten: a later save
writes the current format). Keys say what they hold:

* ``settings``: the :class:`~indexes.settings.IndexSettings` the index was built with;
* ``bm25``: the keyword half's parameters in effect (variant, k1, b, k3, tokenizer);
* ``embedder``: model, model id, dimension and faiss kind of the vector half;
* ``vector_owners``: the file mapping vector rows to chunk rows when chunks have several
  windows, else ``null``;
* ``counts``, ``sources``, ``fingerprints``, ``failures``, ``meta`` and ``files`` (SHA-256).

History:

* **1**: the keyword half's parameters were stored under ``tokenizer``; the owner map was
  ``windows.npy`` when listed in ``files``; manifests older than title boost and vector
  windows lack those settings (both were off).
* **2**: ``bm25`` and ``vector_owners`` as above; every setting is present.
* **3**: ``source_root``: the directory chunk sources are relative to
  (:func:`indexes.sources.source_root`); chunks keep their text's layout and carry
  ``path``, ``file_type``, ``mtime``, ``size`` and (structured formats) ``headings``. A
  version-2 index opens as it is (its sources absolute, ``source_root`` ``null``), and its
  first ``update`` parses every file again into the new form.
* **4**: ``document_texts``: the folder holding every document's full text
  (:mod:`indexes.doc_texts`), so that expanded passages are exact document spans. An older
  index opens with ``document_texts`` ``null``: expansion then stitches passages from the
  chunks (:mod:`retrieval.expand`), and each later change stores the texts of the documents
  it parses.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DOCUMENT_TEXTS", "FORMAT", "FORMAT_VERSION", "OWNERS_FILE", "SOURCE_ROOT", "migrate"]

FORMAT = "ragtools-index"
FORMAT_VERSION = 4
SOURCE_ROOT = "source_root"
"""Manifest key of the directory chunk sources are relative to (``null``: absolute)."""
DOCUMENT_TEXTS = "document_texts"
"""Manifest key of the folder of document texts (``null``: none stored, before format 4)."""
OWNERS_FILE = "vector_owners.npy"
"""Chunk row of every vector row; written only when some chunk has several windows."""


def migrate(manifest: dict[str, Any]) -> dict[str, Any]:
    """``manifest`` (already verified) in the current schema; older versions step by step."""
    out = dict(manifest)
    if out.get("format_version", FORMAT_VERSION) < 2:
        out["settings"] = {"title_boost": 0, "vector_window": 0, **out.get("settings", {})}
        out["bm25"] = out.pop("tokenizer", None)
        out["vector_owners"] = "windows.npy" if "windows.npy" in out.get("files", {}) else None
        out["format_version"] = 2
    if out.get("format_version", FORMAT_VERSION) < 3:
        out[SOURCE_ROOT] = None
        out["format_version"] = 3
    if out.get("format_version", FORMAT_VERSION) < 4:
        out[DOCUMENT_TEXTS] = None
        out["format_version"] = 4
    return out
