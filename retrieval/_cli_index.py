"""``rag build``, ``update``, ``versions``, ``rollback`` and ``info``: an index's lifecycle.

``rag build --out`` over an existing index never replaces it by surprise: with the same
sources, selection and settings it updates it in place (only changed files are parsed);
with other ones it stops and changes nothing unless ``--force``, and even then the
replaced contents stay a kept version that ``rag rollback`` brings back.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ragtools.indexes._persist import read_manifest
from ragtools.indexes.bundle import MANIFEST, Index, open_version
from ragtools.indexes.manifest import FORMAT, FORMAT_VERSION
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.shards import (
    SHARDED_FORMAT,
    SHARDED_FORMAT_VERSION,
    SHARDS_MANIFEST,
    is_sharded,
)
from ragtools.indexes.versions import (
    current_version,
    is_index_root,
    list_versions,
    switch_version,
)
from ragtools.indexes.writer import UpdateReport
from ragtools.parsers import Selection
from ragtools.parsers.errors import ConfigError, IndexLoadError
from ragtools.retrieval._cli_output import print_problems, show_progress

#: The settings ``rag build`` sets from its options; the others keep their defaults.
CLI_SETTINGS = ("chunk_size", "chunk_overlap", "model", "precision", "vector", "keep_versions")


def selection_of(args: argparse.Namespace) -> Selection | None:
    """The selection given by ``--include``/``--exclude``/``--no-gitignore``, else ``None``."""
    if not (args.include or args.exclude or args.no_gitignore):
        return None
    return Selection(tuple(args.include or ()), tuple(args.exclude or ()), not args.no_gitignore)


def _settings_of(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "chunk_size": args.chunk_size,
        "chunk_overlap": args.chunk_overlap,
        "model": args.model,
        "precision": args.precision,
        "vector": not args.no_vector,
        "keep_versions": args.keep_versions,
    }


def _differences(index: Index, roots: list[str], rules: Selection, wanted: dict[str, Any]) -> str:
    """What differs between the index on disk and the build asked for, or ``""``."""
    found = []
    if sorted(index.sources) != sorted(roots):
        found.append(f"sources {sorted(index.sources)} (asked: {sorted(roots)})")
    if index.selection != rules:
        found.append(f"selection {index.selection.to_json()} (asked: {rules.to_json()})")
    recorded = index.settings.model_dump()
    for name in CLI_SETTINGS:
        if recorded[name] != wanted[name]:
            found.append(f"{name} {recorded[name]!r} (asked: {wanted[name]!r})")
    return "; ".join(found)


def cmd_build(args: argparse.Namespace) -> int:
    out = Path(args.out)
    wanted = _settings_of(args)
    rules = selection_of(args) or Selection()
    progress = show_progress(quiet=args.quiet)
    if is_index_root(out):
        index = Index.open(out)
        roots = [str(Path(s).expanduser().resolve()) for s in args.sources]
        for source, root in zip(args.sources, roots, strict=True):
            if not Path(root).exists():
                msg = f"{source}: no such file or directory"
                raise ConfigError(msg)
        differ = _differences(index, roots, rules, wanted)
        if not differ:
            report = index.update(
                roots, show_progress=progress, selection=rules, password=args.password
            )
            _print_update(out, report)
            return 0
        if not args.force:
            msg = (
                f"{out} is an index built differently: {differ}. Nothing was changed; use "
                "`rag update` for its own sources, another --out, or --force to replace it "
                "(the replaced contents stay a version for `rag rollback`)"
            )
            raise ConfigError(msg)
    sharding: dict[str, Any] = {}
    if args.shards is not None:
        sharding["shards"] = args.shards
    if args.ray is not None:
        if args.shards is None:
            msg = "--ray builds shards: give --shards N too"
            raise ConfigError(msg)
        sharding.update(engine="ray", address=args.ray or None)
    index = Index.build(
        args.sources,
        out,
        show_progress=progress,
        selection=rules,
        password=args.password,
        **sharding,
        **wanted,
    )
    counts = index.manifest.get("counts", {})
    in_shards = f" in {counts['shards']} shards" if "shards" in counts else ""
    print(
        f"built {out}: {counts.get('chunks')} chunks from {counts.get('files')} files"
        f"{in_shards} ({counts.get('skipped', 0)} skipped, {counts.get('failures')} failed)"
    )
    print_problems(index.failures, index.skipped)
    return 0


def _print_update(out: Path, report: UpdateReport) -> None:
    print(
        f"updated {out}: {len(report.added)} added, {len(report.changed)} changed, "
        f"{len(report.removed)} removed, {report.unchanged} unchanged "
        f"({len(report.skipped)} skipped, {len(report.failures)} failed)"
    )
    for what, paths in (
        ("added", report.added),
        ("changed", report.changed),
        ("removed", report.removed),
    ):
        for path in paths:
            print(f"  {what:<8}{path}")
    print_problems(report.failures, report.skipped)


def cmd_update(args: argparse.Namespace) -> int:
    index = Index.open(args.index)
    report = index.update(
        args.sources or None,
        show_progress=show_progress(quiet=args.quiet),
        selection=selection_of(args),
        password=args.password,
    )
    _print_update(Path(args.index), report)
    return 0


def _version_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of a version (a sharded index's top manifest), or its error."""
    try:
        if is_sharded(directory):
            fmt, version = SHARDED_FORMAT, SHARDED_FORMAT_VERSION
            return read_manifest(directory, SHARDS_MANIFEST, fmt=fmt, version=version, verify=False)
        return read_manifest(directory, MANIFEST, fmt=FORMAT, version=FORMAT_VERSION, verify=False)
    except IndexLoadError as exc:
        return {"error": str(exc)}


def _versions(root: Path) -> list[dict[str, Any]]:
    live = current_version(root).name
    rows = []
    for directory in list_versions(root):
        manifest = _version_manifest(directory)
        counts = manifest.get("counts", {})
        rows.append(
            {
                "version": directory.name,
                "live": directory.name == live,
                "created": manifest.get("created"),
                "files": counts.get("files"),
                "chunks": counts.get("chunks"),
                "sources": manifest.get("sources", []),
                **({"error": manifest["error"]} if "error" in manifest else {}),
            }
        )
    return rows


def cmd_versions(args: argparse.Namespace) -> int:
    rows = _versions(Path(args.index))
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    for row in rows:
        mark = "*" if row["live"] else " "
        what = row.get("error") or (
            f"{row['files']} files, {row['chunks']} chunks  {', '.join(row['sources'])}"
        )
        print(f"{mark} {row['version']}  {row['created']}  {what}")
    return 0


def _version_name(text: str) -> str:
    return f"v-{int(text):06d}" if text.isdigit() else text


def cmd_rollback(args: argparse.Namespace) -> int:
    root = Path(args.index)
    live = current_version(root).name
    names = [path.name for path in list_versions(root)]
    if args.version is not None:
        target = _version_name(args.version)
    else:
        older = [name for name in names if name < live]
        if not older:
            msg = f"{root}: no version older than the live {live} is kept; see `rag versions`"
            raise ConfigError(msg)
        target = older[-1]
    if target == live:
        print(f"{root}: {live} is already live")
        return 0
    if target not in names:
        msg = f"{root}: no version {target!r}; kept versions: {', '.join(names)}"
        raise ConfigError(msg)
    # checked in full under the writer lock: a damaged version never goes live
    switch_version(root, target, check=lambda directory: open_version(root, directory))
    print(f"rolled back {root}: {target} is live (was {live})")
    return 0


def _size_on_disk(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.1f} kB"


def _summary(index: Index) -> list[tuple[str, str]]:
    info, counts = index.info(), index.manifest.get("counts", {})
    settings: dict[str, Any] = info["settings"] or {}
    defaults = IndexSettings().model_dump()
    changed = [f"{k} {v!r}" for k, v in settings.items() if defaults.get(k) != v]
    embedder = info.get("embedder") or {}
    rows = [
        ("index", f"{index.path} ({current_version(index.path).name})"),
        ("created", f"{info.get('created')} by ragtools {info.get('package_version')}"),
        (
            "files",
            f"{counts.get('files')} ({counts.get('skipped', 0)} skipped,"
            f" {counts.get('failures')} failed)",
        ),
        ("chunks", f"{counts.get('chunks')} from {counts.get('documents')} documents"),
        ("vectors", f"{counts.get('vectors')}"),
        (
            "model",
            f"{embedder.get('model_id')} ({embedder.get('dim')} dims, {embedder.get('kind')})"
            if embedder
            else "none (keyword only)",
        ),
        (
            "settings",
            f"chunk_size {settings.get('chunk_size')}, overlap {settings.get('chunk_overlap')}, "
            f"keep_versions {settings.get('keep_versions', defaults['keep_versions'])}"
            + (f"; not default: {', '.join(changed)}" if changed else ""),
        ),
        ("bm25", ", ".join(f"{k} {v}" for k, v in (info.get("bm25") or {}).items()) or "none"),
        ("sources", ", ".join(index.sources) or "(documents, no files tracked)"),
        ("selection", json.dumps(index.selection.to_json())),
        ("size", _megabytes(_size_on_disk(index.path))),
        ("versions", ", ".join(p.name for p in list_versions(index.path))),
    ]
    return rows


def cmd_info(args: argparse.Namespace) -> int:
    index = Index.open(args.index)
    if args.json:
        print(json.dumps(index.info(), indent=2, ensure_ascii=False))
        return 0
    for label, value in _summary(index):
        print(f"{label:<10}{value}")
    failures = index.failures
    if failures:
        print(f"failed    {len(failures)} files (rag info --json lists them with the reasons)")
    return 0
