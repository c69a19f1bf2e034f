"""``IndexWriter``: build, update, add and delete; each change is a new version on disk.

Every change goes the same way: work out the new list of chunks, index both halves from it
(BM25 from the chunk texts, which is cheap; vectors from the embedding cache kept beside the
versions, keyed by model and text hash, so the model embeds only texts it has not seen),
write a complete new version, switch to it atomically, and only then hand the new state to
the :class:`~indexes.bundle.Index`. So an updated index equals a fresh build of the same
chunks, a crash or an error leaves the previous version live and untouched, and every
retriever over the ``Index`` sees the new chunks at once, never half of them.

Rebuilding the halves costs time linear in the index for each change; batch changes (one
``add`` of many chunks, one ``update``) rather than calling ``add`` per chunk.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from ragtools.indexes._persist import write_manifest
from ragtools.indexes.bundle import CHUNKS, MANIFEST, Index, IndexState
from ragtools.indexes.doc_texts import TEXTS_DIR, ChainedTexts, DocumentTexts, write_texts
from ragtools.indexes.embed import Embedder, SentenceTransformerEmbedder
from ragtools.indexes.manifest import (
    DOCUMENT_TEXTS,
    FORMAT,
    FORMAT_VERSION,
    OWNERS_FILE,
    SOURCE_ROOT,
)
from ragtools.indexes.settings import IndexSettings, keyword_text
from ragtools.indexes.sources import fingerprint, parse_files, select_sources, source_root
from ragtools.indexes.store import write_chunks
from ragtools.indexes.versions import collect_unused, write_version, writer_lock
from ragtools.indexes.windows import WindowedVectorIndex
from ragtools.parsers import Chunk, Document, FileError, Selection, split
from ragtools.parsers.errors import ConfigError

__all__ = ["IndexWriter", "UpdateOptions", "UpdateReport"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class UpdateReport:
    """What :meth:`IndexWriter.update` did, by file path."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    failures: list[FileError] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """``(path, reason)`` of every file or folder left out (hidden, ignored, not a document)."""


class UpdateOptions(TypedDict, total=False):
    """The keyword options of every index's ``update`` (see :meth:`IndexWriter.update`)."""

    show_progress: bool | None
    selection: Selection | None
    password: str | None


class IndexWriter:
    """Changes one :class:`~indexes.bundle.Index`, a new version per change.

    Each change holds the writer lock of the index from reading the live version to making
    the new one live (:func:`~indexes.versions.writer_lock`): a second writer of the same
    index waits, and then applies its change to what the first one wrote (the ``Index`` is
    refreshed first), so no change is silently undone.

    Args:
        index: the index to change.
        collect: delete old versions after each write (``False`` for a shard, whose versions
            the sharded writer collects by what its top versions name).
    """

    def __init__(self, index: Index, *, collect: bool = True) -> None:
        self.index = index
        self.collect = collect

    @classmethod
    def build(
        cls,
        sources: Sequence[str | Path],
        path: str | Path,
        *,
        settings: IndexSettings | None = None,
        embedder: Embedder | None = None,
        show_progress: bool | None = None,
        selection: Selection | None = None,
        password: str | None = None,
        **overrides: Any,
    ) -> Index:
        """Parse ``sources`` (files or directories), split, index both halves and save.

        Args:
            sources: files and directories to index; directories are walked recursively.
            path: the index directory (created; an existing index gets a new version).
            settings: build settings; keyword ``overrides`` (e.g. ``chunk_size=500``) win.
            embedder: an embedder to use instead of ``settings.model`` (e.g. a fake in tests).
            show_progress: progress bars; ``None`` shows them only on a terminal.
            selection: which files of the folders to read (recorded; updates reuse it).
            password: for encrypted PDFs (never recorded).

        Raises:
            ConfigError: a source does not exist, a setting is invalid, or no text was found.
        """
        started = time.perf_counter()
        writer = cls(_empty(path, settings, overrides, embedder))
        roots = [str(Path(s).expanduser().resolve()) for s in sources]
        rules = selection or Selection()
        files, skipped = select_sources(roots, rules)
        root = source_root(roots)
        parsed = parse_files(files, root=root, show_progress=show_progress, password=password)
        failures = parsed.failures
        documents = [doc for f in files for doc in parsed.by_file.get(str(f), [])]
        writer.commit(
            writer._split(documents),
            sources=roots,
            fingerprints={str(f): fingerprint(f) for f in files},
            failures=failures,
            skipped=sorted(skipped + parsed.skipped),
            selection=rules,
            source_base=str(root),
            documents={doc.id: doc.text for doc in documents},
            replaced=parsed.replaced,
        )
        logger.info(
            "built %s: %d files, %d chunks, %d failures in %.1fs",
            path,
            len(files),
            len(writer.index.chunks),
            len(failures),
            time.perf_counter() - started,
        )
        return writer.index

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        path: str | Path,
        *,
        settings: IndexSettings | None = None,
        embedder: Embedder | None = None,
        show_progress: bool | None = None,
        meta: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> Index:
        """Index already-parsed documents (no source files are tracked for updates).

        ``meta`` is any JSON the caller wants kept in the manifest (e.g. a corpus hash).
        """
        del show_progress  # progress is shown by the embedder
        writer = cls(_empty(path, settings, overrides, embedder))
        docs = list(documents)
        texts = {doc.id: doc.text for doc in docs}
        writer.commit(writer._split(docs), meta=dict(meta or {}), documents=texts)
        return writer.index

    # ----------------------------------------------------------------- changes
    def update(
        self,
        sources: Sequence[str | Path] | None = None,
        *,
        show_progress: bool | None = None,
        selection: Selection | None = None,
        password: str | None = None,
    ) -> UpdateReport:
        """Bring the index up to date with its sources and save a new version.

        Only files whose size or SHA-256 changed are parsed again; chunks of removed files
        are dropped; only chunk texts not in the embedding cache are embedded. The result
        equals a fresh build of the same sources. ``sources`` and ``selection`` default to
        the recorded ones; ``password`` is for encrypted PDFs. An index whose chunks predate
        the current text form (no ``source_root`` in its manifest: absolute sources,
        collapsed whitespace) has every file parsed again.
        """
        with writer_lock(self.index.path):
            self.index.refresh()
            return self._update(
                sources, show_progress=show_progress, selection=selection, password=password
            )

    def _update(
        self,
        sources: Sequence[str | Path] | None,
        *,
        show_progress: bool | None,
        selection: Selection | None,
        password: str | None,
    ) -> UpdateReport:
        manifest = self.index.manifest
        known = [str(Path(s).expanduser().resolve()) for s in sources or ()]
        roots = known or list(manifest.get("sources", []))
        if not roots:
            msg = "this index tracks no source files (built from documents); pass sources"
            raise ConfigError(msg)
        rules = selection if selection is not None else self.index.selection
        selected, walk_skipped = select_sources(roots, rules)
        files = [str(f) for f in selected]
        prints = {f: fingerprint(Path(f)) for f in files}
        root = source_root(roots)
        old: dict[str, Any] = manifest.get("fingerprints", {})
        if manifest.get(SOURCE_ROOT) != str(root):  # older chunk form, or other sources
            old = {}
        stale = [f for f in files if old.get(f) != prints[f]]
        result = parse_files(
            [Path(f) for f in stale], root=root, show_progress=show_progress, password=password
        )
        parsed, failures = result.by_file, result.failures
        by_source: dict[str, list[Chunk]] = {}
        for chunk in self.index.chunks:
            by_source.setdefault(str(chunk.metadata.get("path", chunk.source)), []).append(chunk)
        chunks: list[Chunk] = []
        stale_set = set(stale)
        for path in files:
            fresh = path in stale_set
            chunks += self._split(parsed.get(path, [])) if fresh else by_source.get(path, [])
        kept = [f for f in self.index.failures if f.path in prints and f.path not in stale_set]
        kept_skips = [s for s in self.index.skipped if s[0] in prints and s[0] not in stale_set]
        skipped = sorted(set(walk_skipped) | set(kept_skips) | set(result.skipped))
        before: dict[str, Any] = manifest.get("fingerprints", {})
        report = UpdateReport(
            added=[f for f in files if f not in before],
            changed=[f for f in stale if f in before],
            removed=sorted(set(before) - set(prints)),
            unchanged=len(files) - len(stale),
            failures=failures,
            skipped=skipped,
        )
        self.commit(
            chunks,
            sources=roots,
            fingerprints=prints,
            failures=sorted(kept + failures, key=lambda f: f.path),
            skipped=skipped,
            selection=rules,
            source_base=str(root),
            documents={doc.id: doc.text for path in stale for doc in parsed.get(path, [])},
        )
        return report

    def add(self, chunks: Sequence[Chunk]) -> npt.NDArray[np.int64]:
        """Append chunks as a new version (of the live version); returns their rows."""
        with writer_lock(self.index.path):
            self.index.refresh()
            start = len(self.index.chunks)
            if chunks:
                self.commit([*self.index.chunks, *chunks])
        return np.arange(start, start + len(chunks), dtype=np.int64)

    def delete(self, doc_ids: Iterable[str]) -> int:
        """Remove every chunk of the given documents as a new version; returns how many."""
        wanted = set(doc_ids)
        with writer_lock(self.index.path):
            self.index.refresh()
            kept = [c for c in self.index.chunks if c.doc_id not in wanted]
            removed = len(self.index.chunks) - len(kept)
            if removed:
                self.commit(kept)
        return removed

    # ----------------------------------------------------------------- one way to commit
    def _split(self, documents: Sequence[Document]) -> list[Chunk]:
        settings = self.index.settings
        return split(
            documents, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap
        )

    def commit(
        self,
        chunks: Sequence[Chunk],
        *,
        sources: list[str] | None = None,
        fingerprints: dict[str, Any] | None = None,
        failures: list[FileError] | None = None,
        meta: dict[str, Any] | None = None,
        skipped: list[tuple[str, str]] | None = None,
        selection: Selection | None = None,
        source_base: str | None = None,
        documents: Mapping[str, str] | None = None,
        replaced: int = 0,
    ) -> None:
        """Index ``chunks``, write them as a new version and make the ``Index`` show it.

        What the index tracks (``sources``, ``fingerprints``, ``failures``, ``meta``,
        ``skipped``, ``selection``) carries over from the current version unless given;
        so do the texts of the chunks' documents, except those ``documents`` gives anew.
        ``replaced`` (lone surrogates the parsers replaced by U+FFFD in this change) is
        counted in the manifest for the build report.
        """
        index, settings = self.index, self.index.settings
        if not chunks:
            msg = f"{index.path}: no text to index (all sources empty, unreadable or without text)"
            raise ConfigError(msg)
        bm25 = vector = None
        if settings.keyword:
            bm25 = settings.new_bm25()
            boost = settings.title_boost
            bm25.add([keyword_text(c.text, c.metadata, boost) for c in chunks])
        if settings.vector:
            vector = WindowedVectorIndex.build(
                [c.text for c in chunks],
                self._embed,
                dim=index.embedder.dim,
                kind=settings.vector_kind,
                window=settings.vector_window,
                overlap=settings.vector_window_overlap,
            )
        tracked = {
            "sources": index.sources if sources is None else sources,
            "fingerprints": index.fingerprints if fingerprints is None else fingerprints,
            "failures": [vars(f) for f in (index.failures if failures is None else failures)],
            "meta": index.meta if meta is None else meta,
            "skipped": [list(s) for s in (index.skipped if skipped is None else skipped)],
            "selection": (index.selection if selection is None else selection).to_json(),
            SOURCE_ROOT: index.manifest.get(SOURCE_ROOT) if source_base is None else source_base,
        }
        state = IndexState(settings, list(chunks), bm25, vector)
        texts = ChainedTexts([documents or {}, index.state.texts or {}])
        written: dict[str, Any] = {}

        def write(directory: Path) -> None:
            written.update(self._write(directory, state, tracked, texts, replaced))

        with writer_lock(index.path):  # the new version stays live until the index pins it
            final = write_version(index.path, write, keep=None)
            stored = DocumentTexts.open(final, written["files"])
            index.show(IndexState(settings, state.chunks, bm25, vector, written, stored), final)
            if self.collect:  # after the pin moved: the previous version is not kept for us
                collect_unused(index.path, settings.keep_versions)

    def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        embedder = self.index.embedder
        vectors = embedder.embed_documents(texts)
        embedder.cache.save()
        return vectors

    def _write(
        self,
        directory: Path,
        state: IndexState,
        tracked: dict[str, Any],
        texts: Mapping[str, str],
        replaced: int,
    ) -> dict[str, Any]:
        index, settings = self.index, state.settings
        write_chunks(directory / CHUNKS, state.chunks)
        files = [CHUNKS]
        files += write_texts(directory, (c.doc_id for c in state.chunks), texts)
        if state.bm25 is not None:
            state.bm25.save(directory / "bm25")
            files += [f"bm25/{p.name}" for p in sorted((directory / "bm25").iterdir())]
        embedder_info = None
        if state.vector is not None:
            model_id = index.embedder.model_id
            files += state.vector.save(directory, model_id=model_id, owners_file=OWNERS_FILE)
            embedder_info = {
                "model": settings.model,
                "model_id": model_id,
                "dim": index.embedder.dim,
                "kind": settings.vector_kind,
            }
        data = {
            "package_version": _package_version(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "settings": settings.model_dump(mode="json"),
            "bm25": state.bm25.params if state.bm25 is not None else None,
            "embedder": embedder_info,
            "vector_owners": OWNERS_FILE if OWNERS_FILE in files else None,
            DOCUMENT_TEXTS: TEXTS_DIR,
            "counts": {
                "chunks": len(state.chunks),
                "vectors": len(state.vector) if state.vector is not None else 0,
                "documents": len({c.doc_id for c in state.chunks}),
                "files": len(set(tracked["fingerprints"]) - {p for p, _ in tracked["skipped"]}),
                "failures": len(tracked["failures"]),
                "skipped": len(tracked["skipped"]),
                "replaced": replaced,
            },
            **tracked,
        }
        return write_manifest(
            directory,
            MANIFEST,
            fmt=FORMAT,
            version=FORMAT_VERSION,
            files=files,
            data=data,
            sealed=True,
        )


def _empty(
    path: str | Path,
    settings: IndexSettings | None,
    overrides: dict[str, Any],
    embedder: Embedder | None,
) -> Index:
    """An ``Index`` with no version yet, for a writer's first commit."""
    base = settings.model_dump() if settings is not None else {}
    resolved = IndexSettings.checked({**base, **overrides})
    if resolved.vector and embedder is None:  # a model not on this machine fails before parsing
        SentenceTransformerEmbedder(resolved.model, precision=resolved.precision).resolve()
    return Index(Path(path), IndexState(resolved, []), embedder=embedder)


def _package_version() -> str:
    try:
        return version("ragtools")
    except PackageNotFoundError:
        return "0+unknown"
