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
  (:mod:`indexes.store.doc_texts`), so that expanded passages are exact document spans. An older
  index opens with ``document_texts`` ``null``: expansion then stitches passages from the
  chunks (:mod:`retrieval.expand`), and each later change stores the texts of the documents
  it parses.

A bundle's format is also the format of a **segment**. Since segments exist, a version folder
holds ``version.json`` (format ``"ragtools-version"``, :data:`VERSION_FORMAT_VERSION`): the
settings, what the index tracks, and its segments (:mod:`indexes.store.segments`). Folders written
before open through :func:`legacy_segments`, the one place older layouts are read:

* a version folder with a bundle's ``manifest.json`` (format 1 to 4): one segment, the folder
  itself, no deleted rows;
* a sharded top version (``shards.json``, sharded formats 1 and 2): one segment per shard,
  the shard version it names (``shards/shard-NNN/versions/v-N``), pinned by its manifest's
  SHA-256 when the top version recorded it.

Either way the version manifest is the old manifest's tracked keys, and the first change
writes the current layout (every live row into new segments; nothing is embedded again, the
embedding cache has the vectors).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.store.persist import read_json, read_manifest, sha256_file
from ragtools.indexes.store.segments import SegmentEntry

__all__ = [
    "DOCUMENT_TEXTS",
    "FORMAT",
    "FORMAT_VERSION",
    "OWNERS_FILE",
    "SOURCE_ROOT",
    "VERSION_FORMAT",
    "VERSION_FORMAT_VERSION",
    "VERSION_MANIFEST",
    "legacy_segments",
    "migrate",
]

FORMAT = "ragtools-index"
FORMAT_VERSION = 4
SOURCE_ROOT = "source_root"
"""Manifest key of the directory chunk sources are relative to (``null``: absolute)."""
DOCUMENT_TEXTS = "document_texts"
"""Manifest key of the folder of document texts (``null``: none stored, before format 4)."""
OWNERS_FILE = "vector_owners.npy"
"""Chunk row of every vector row; written only when some chunk has several windows."""
VERSION_MANIFEST = "version.json"
VERSION_FORMAT = "ragtools-version"
VERSION_FORMAT_VERSION = 1
BUNDLE_MANIFEST = "manifest.json"
_SHARDS_MANIFEST = "shards.json"
_SHARDED_FORMAT = "ragtools-sharded-index"
_SHARDED_FORMAT_VERSION = 2


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


def legacy_segments(root: Path, directory: Path) -> tuple[dict[str, Any], list[SegmentEntry]]:
    """The version manifest and segments of a version folder written before segments.

    Raises:
        IndexLoadError: neither layout, or a damaged manifest (named).
    """
    if (directory / _SHARDS_MANIFEST).is_file():
        top = read_manifest(
            directory,
            _SHARDS_MANIFEST,
            fmt=_SHARDED_FORMAT,
            version=_SHARDED_FORMAT_VERSION,
            sealed=True,
        )
        entries = []
        try:
            for number, shard in enumerate(top["shards"]):
                if shard["version"] is None:
                    continue
                path = f"shards/shard-{number:03d}/versions/{shard['version']}"
                rows = _bundle_rows(root / path)
                entries.append(SegmentEntry(path, number, shard.get("manifest_sha256"), rows))
        except (KeyError, TypeError) as exc:
            raise IndexLoadError(directory / _SHARDS_MANIFEST, f"invalid shards ({exc})") from exc
        return top, entries
    if not (directory / BUNDLE_MANIFEST).is_file():
        raise IndexLoadError(directory, f"no {VERSION_MANIFEST} in the version folder")
    manifest = migrate(
        read_manifest(directory, BUNDLE_MANIFEST, fmt=FORMAT, version=FORMAT_VERSION, sealed=True)
    )
    path = directory.relative_to(root).as_posix()
    rows = _bundle_rows(directory)
    return manifest, [SegmentEntry(path, 0, sha256_file(directory / BUNDLE_MANIFEST), rows)]


def _bundle_rows(directory: Path) -> int:
    manifest = directory / BUNDLE_MANIFEST
    if not directory.is_dir():
        raise IndexLoadError(directory, "the segment named by the version is missing")
    data = read_json(manifest)
    try:
        return int(data["counts"]["chunks"])
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexLoadError(manifest, "invalid or missing counts") from exc
