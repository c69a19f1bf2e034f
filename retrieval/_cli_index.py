"""``rag build``, ``update``, ``versions``, ``rollback`` and ``info``: an index's lifecycle.

``rag build --dry-run`` lists what a build would index and skip, by type, from the build's
own selection and planning code; a build that finds no text says why, file by file.

``rag build --out`` over an existing index never replaces it by surprise: with the same
sources, selection and settings it updates it in place (only changed files are parsed);
with other ones it stops and changes nothing unless ``--force``, and even then the
replaced contents stay a kept version that ``rag rollback`` brings back.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.index import Index, open_version, version_entries
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.sources import parse_files, plan_sources, source_root
from ragtools.indexes.store.versions import (
    current_version,
    is_index_root,
    list_versions,
    switch_version,
)
from ragtools.indexes.writer import UpdateReport, build_differences
from ragtools.parsers import Selection
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.policy import type_label
from ragtools.retrieval._cli_output import emit, emit_text, print_problems, show_progress

#: What the index writer's error says when no file gave any text (the build then says why).
NO_TEXT = "no text to index"

#: The settings ``rag build`` sets from its options; the others keep their defaults.
CLI_SETTINGS = (
    "chunk_size",
    "chunk_overlap",
    "model",
    "precision",
    "vector",
    "keep_versions",
    "context",
)


def selection_of(args: argparse.Namespace, recorded: Selection | None = None) -> Selection | None:
    """The selection given by ``--include``/``--exclude``/``--no-gitignore``/
    ``--follow-links``, else ``None``.

    With ``recorded`` (``rag update``), ``--follow-links`` or ``--no-follow-links`` alone
    keeps the recorded patterns and ``.gitignore`` setting, and ``--include``, ``--exclude``
    or ``--no-gitignore`` keep the recorded link setting: each flag changes its own rule.
    """
    links = args.follow_links
    if not (args.include or args.exclude or args.no_gitignore) and links is None:
        return None
    if recorded is not None and not (args.include or args.exclude or args.no_gitignore):
        return Selection(recorded.include, recorded.exclude, recorded.gitignore, links)
    if links is None:
        links = recorded.follow_links if recorded is not None else False
    return Selection(
        tuple(args.include or ()), tuple(args.exclude or ()), not args.no_gitignore, links
    )


def _settings_of(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "chunk_size": args.chunk_size,
        "chunk_overlap": args.chunk_overlap,
        "model": args.model,
        "precision": args.precision,
        "vector": not args.no_vector,
        "keep_versions": args.keep_versions,
        "context": args.context,
    }


def _relative(path: str, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


def _groups(rows: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str], list[str]]:
    """``(type, reason, path)`` rows grouped by type and reason, in sorted order."""
    groups: dict[tuple[str, str], list[str]] = {}
    for kind, reason, path in sorted(rows):
        groups.setdefault((kind, reason), []).append(path)
    return groups


def _files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"


def dry_run(sources: Sequence[str], rules: Selection) -> list[str]:
    """``rag build --dry-run``: what a build would index, skip and fail, by type.

    The plan comes from :func:`ragtools.indexes.sources.plan_sources`, the selection and
    planning code the build itself runs, so the two cannot disagree (a file planned for
    parsing may still fail, or hold no text, once parsed).
    """
    plan = plan_sources(sources, rules)
    root = source_root([str(Path(s).expanduser().resolve()) for s in sources])
    lines = [
        f"dry run (nothing written): {_files(len(plan.parse))} would be indexed, "
        f"{len(plan.skipped)} skipped, {len(plan.errors)} would fail"
    ]
    indexed = _groups((kind, "", _relative(path, root)) for path, kind in plan.parse)
    skipped = _groups(
        ("folder" if Path(path).is_dir() else type_label(path), why, _relative(path, root))
        for path, why in plan.skipped
    )
    failed = _groups(
        (type_label(f.path), f.message.removeprefix(f"{f.path}: "), _relative(f.path, root))
        for f in plan.errors
    )
    for verb, groups in (("index", indexed), ("skip", skipped), ("fail", failed)):
        for (kind, why), paths in groups.items():
            lines.append(f"{verb} {kind} ({_files(len(paths))})" + (f": {why}" if why else ""))
            lines.extend(f"  {path}" for path in paths)
    return lines


def _explain_no_text(sources: Sequence[str], rules: Selection, password: str | None) -> None:
    """Print why a build found no text: every file skipped, failed or empty, with why.

    The build stops before it records its failures, so they are found again: the plan
    gives the skips, and parsing the planned files (the failures' only cost) the rest.
    """
    plan = plan_sources(sources, rules)
    roots = [str(Path(s).expanduser().resolve()) for s in sources]
    files = [Path(path) for path, _ in plan.parse]
    logging.disable(logging.WARNING)  # the build has logged this parse's warnings once
    try:
        parsed = parse_files(files, root=source_root(roots), show_progress=False, password=password)
    finally:
        logging.disable(logging.NOTSET)
    print_problems([*plan.errors, *parsed.failures], plan.skipped)
    for path, documents in sorted(parsed.by_file.items()):
        if not documents:
            emit(f"no text in {path}", err=True)


def cmd_build(args: argparse.Namespace) -> int:
    rules = selection_of(args) or Selection()
    if args.dry_run:
        emit(*dry_run(args.sources, rules))
        return 0
    if args.out is None:
        msg = "rag build needs --out INDEX, the index directory to write (or --dry-run)"
        raise ConfigError(msg)
    out = Path(args.out)
    wanted = _settings_of(args)
    progress = show_progress(quiet=args.quiet)
    if is_index_root(out):
        index = Index.open(out, lazy_chunks=True)  # a build like the last one updates it
        roots = [str(Path(s).expanduser().resolve()) for s in args.sources]
        for source, root in zip(args.sources, roots, strict=True):
            if not Path(root).exists():
                msg = f"{source}: no such file or directory"
                raise ConfigError(msg)
        differ = build_differences(index, roots, rules, wanted, args.shards)
        if not differ:
            report = index.update(
                roots, show_progress=progress, selection=rules, password=args.password
            )
            _print_update(out, report, quiet=args.quiet)
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
    try:
        index = Index.build(
            args.sources,
            out,
            show_progress=progress,
            selection=rules,
            password=args.password,
            **sharding,
            **wanted,
        )
    except ConfigError as exc:
        if NO_TEXT in str(exc):
            _explain_no_text(args.sources, rules, args.password)
        raise
    counts = index.manifest.get("counts", {})
    in_shards = f" in {counts['shards']} shards" if "shards" in counts else ""
    replaced = counts.get("replaced", 0)  # lone surrogates the parsers replaced by U+FFFD
    in_text = f", {replaced} lone surrogates replaced by U+FFFD" if replaced else ""
    if not args.quiet:
        emit(
            f"built {out}: {counts.get('chunks')} chunks from {counts.get('files')} files"
            f"{in_shards} ({counts.get('skipped', 0)} skipped, {counts.get('failures')} failed"
            f"{in_text})"
        )
    print_problems(index.failures, [] if args.quiet else index.skipped)
    return 0


def _print_update(out: Path, report: UpdateReport, *, quiet: bool) -> None:
    """The update's summary ("up to date" when it wrote no version), the files it changed
    and the problems; ``--quiet``: the failures only."""
    if not quiet:
        counts = (
            f"{report.unchanged} unchanged ({len(report.skipped)} skipped, "
            f"{len(report.failures)} failed)"
        )
        if not report.written:
            emit(f"{out} is up to date: {counts}")
        else:
            emit(
                f"updated {out}: {len(report.added)} added, {len(report.changed)} changed, "
                f"{len(report.removed)} removed, {counts}"
            )
        for what, paths in (
            ("added", report.added),
            ("changed", report.changed),
            ("removed", report.removed),
        ):
            for path in paths:
                emit(f"  {what:<8}{path}")
    print_problems(report.failures, [] if quiet else report.skipped)


def cmd_update(args: argparse.Namespace) -> int:
    index = Index.open(args.index, lazy_chunks=True)  # an update reads no unchanged chunk
    report = index.update(
        args.sources or None,
        show_progress=show_progress(quiet=args.quiet),
        selection=selection_of(args, index.selection),
        password=args.password,
    )
    _print_update(Path(args.index), report, quiet=args.quiet)
    return 0


def _version_manifest(root: Path, directory: Path) -> dict[str, Any]:
    """The manifest of a version, or its error."""
    try:
        return version_entries(root, directory)[0]
    except IndexLoadError as exc:
        return {"error": str(exc)}


def _versions(root: Path) -> list[dict[str, Any]]:
    live = current_version(root).name
    rows = []
    for directory in list_versions(root):
        manifest = _version_manifest(root, directory)
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
        emit_text(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    for row in rows:
        mark = "*" if row["live"] else " "
        what = row.get("error") or (
            f"{row['files']} files, {row['chunks']} chunks  {', '.join(row['sources'])}"
        )
        emit(f"{mark} {row['version']}  {row['created']}  {what}")
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
        if not args.quiet:
            emit(f"{root}: {live} is already live")
        return 0
    if target not in names:
        msg = f"{root}: no version {target!r}; kept versions: {', '.join(names)}"
        raise ConfigError(msg)
    # checked in full under the writer lock: a damaged version never goes live
    switch_version(root, target, check=lambda directory: open_version(root, directory))
    if not args.quiet:
        emit(f"rolled back {root}: {target} is live (was {live})")
    return 0


def _size_on_disk(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.1f} kB"


def _summary(index: Index) -> list[tuple[str, str]]:
    info = index.info()
    counts: dict[str, Any] = info.get("counts") or {}
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
            "segments",
            f"{counts.get('segments')}"
            + (f" in {counts['shards']} shards" if counts.get("shards") else "")
            + f", {counts.get('deleted_rows', 0)} deleted rows",
        ),
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
        emit_text(json.dumps(index.info(), indent=2, ensure_ascii=False))
        return 0
    for label, value in _summary(index):
        emit(f"{label:<10}{value}")
    failures = index.failures
    if failures:
        emit(f"failed    {len(failures)} files (rag info --json lists them with the reasons)")
    return 0
