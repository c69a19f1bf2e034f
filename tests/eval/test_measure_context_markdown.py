"""eval/measure_context.py's Markdown docs folder: what it holds, and that every judged unit
of eval/data/md_docs names a unit the folder has (a README heading renamed would otherwise
score as a miss in every run, silently)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from ragtools.parsers import load_dir
from ragtools.parsers.document import Chunk
from ragtools.parsers.splitting import split
from ragtools.retrieval.evaluation.beir import load_qrels, load_queries
from tests.eval.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
JUDGED = ROOT / "eval" / "data" / "md_docs"


def _script() -> ModuleType:
    return load_script("measure_context")


def test_folder_holds_the_markdown_files_and_one_page_per_public_module(tmp_path: Path) -> None:
    script = _script()
    folder = script.markdown_folder(tmp_path / "docs")
    assert (folder / "README.md").read_bytes() == (ROOT / "README.md").read_bytes()
    assert (folder / "CHANGELOG.md").read_bytes() == (ROOT / "CHANGELOG.md").read_bytes()
    page = (folder / "api" / "retrieval" / "evaluation" / "tune.md").read_text("utf-8")
    assert page.startswith("# ragtools.retrieval.evaluation.tune\n\n``rag tune``")
    pages = {p.relative_to(folder).as_posix() for p in (folder / "api").rglob("*.md")}
    assert "api/parsers/splitting.md" in pages
    assert not any("/_" in p for p in pages)  # private modules and __init__ are left out
    # the folder is made afresh: a page left by an earlier run is gone
    (folder / "api" / "stale.md").write_text("# stale\n", "utf-8")
    script.markdown_folder(folder)
    assert not (folder / "api" / "stale.md").exists()


def test_every_judged_unit_is_in_the_folder(tmp_path: Path) -> None:
    script = _script()
    folder = script.markdown_folder(tmp_path / "docs")
    chunks: list[Chunk] = split(load_dir(folder, show_progress=False).documents)
    unit = script.markdown_unit()
    units = {unit(chunk) for chunk in chunks}
    qrels = load_qrels(JUDGED, "test")
    assert len(qrels) == 40 and set(qrels) == set(load_queries(JUDGED))
    judged = {name for judgements in qrels.values() for name in judgements}
    assert judged <= units, sorted(judged - units)
    assert "README.md#Install" in units and "api/parsers/splitting.md" in units
