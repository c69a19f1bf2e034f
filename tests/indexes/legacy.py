"""Turn a freshly built index into the layout written before segments, for migration tests.

Before segments, a version folder held one bundle (``manifest.json`` with the tracked keys,
``chunks.jsonl``, ``bm25/``, the vectors); :func:`as_legacy` moves the live version's only
segment into its version folder and merges the version manifest's tracked keys into the
bundle's manifest, resealed, as that code wrote it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ragtools.indexes.store.persist import _SELF, _self_digest
from ragtools.indexes.store.versions import current_version

TRACKED = ("sources", "fingerprints", "failures", "meta", "skipped", "selection", "source_root")


def as_legacy(root: Path) -> Path:
    """Rewrite the live version of ``root`` (one segment, no deletions) as a legacy bundle;
    returns the version folder."""
    version = current_version(root)
    top = json.loads((version / "version.json").read_text(encoding="utf-8"))
    (entry,) = top["segments"]
    assert entry["deleted"] is None
    segment = root / entry["path"]
    for item in segment.iterdir():
        shutil.move(str(item), version / item.name)
    segment.rmdir()
    (version / "version.json").unlink()
    manifest = json.loads((version / "manifest.json").read_text(encoding="utf-8"))
    for key in TRACKED:
        manifest[key] = top.get(key)
    manifest["counts"] = {**top["counts"], **manifest["counts"]}
    manifest[_SELF] = _self_digest(manifest)
    (version / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return version
