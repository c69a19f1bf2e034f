"""Source selection: .gitignore read as git reads it, patterns, and what is skipped (not failed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ragtools.parsers import ConfigError, Selection, load_dir
from ragtools.parsers.selection import select_files

GIT = shutil.which("git")


def write(root: Path, relative: str, text: str = "some text\n") -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git work tree with nested .gitignore files, negations, anchored and folder rules."""
    assert GIT is not None, "git is needed: it is the reference for .gitignore semantics"
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run([GIT, "init", "-q", str(root)], check=True)
    write(root, ".gitignore", "*.log\n!keep.log\nbuild/\n/rootonly.txt\ndocs/**/draft-*.md\n")
    write(root, "src/.gitignore", "secret.txt\n!important.log\n*.tmp\n")
    for relative in [
        "README.md",
        "rootonly.txt",
        "keep.log",
        "debug.log",
        "build/out.txt",
        "src/build/gen.txt",
        "src/main.py",
        "src/secret.txt",
        "src/important.log",
        "src/other.log",
        "src/cache.tmp",
        "src/rootonly.txt",
        "docs/guide.md",
        "docs/a/b/draft-1.md",
        "docs/a/final.md",
        "notes/x.tmp",
    ]:
        write(root, relative)
    return root


def git_untracked(root: Path, sub: str = ".") -> list[str]:
    """What git itself would add: untracked files that no ignore rule hides."""
    assert GIT is not None
    out = subprocess.run(
        [GIT, "ls-files", "--others", "--exclude-standard", "--", sub],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return sorted(line for line in out.splitlines() if not Path(line).name.startswith("."))


def test_gitignore_selects_what_git_selects(repo: Path) -> None:
    files, skipped = select_files(repo)
    assert sorted(f.relative_to(repo).as_posix() for f in files) == git_untracked(repo)
    reasons = dict(skipped)
    assert reasons[str(repo / "build")] == f"ignored by {repo / '.gitignore'}"  # one entry
    assert reasons[str(repo / "src" / "secret.txt")] == f"ignored by {repo / 'src/.gitignore'}"
    assert reasons[str(repo / ".gitignore")] == "hidden file"
    assert reasons[str(repo / ".git")] == "hidden directory"


def test_a_subfolder_honours_the_work_tree_above_it(repo: Path) -> None:
    files, _ = select_files(repo / "src")
    expected = [p.removeprefix("src/") for p in git_untracked(repo, "src")]
    assert sorted(f.relative_to(repo / "src").as_posix() for f in files) == expected
    assert "important.log" in expected and "other.log" not in expected  # negation below


def test_gitignore_off_reads_everything_but_hidden(repo: Path) -> None:
    files, skipped = select_files(repo, Selection(gitignore=False))
    assert len(files) == 16
    assert {reason for _, reason in skipped} == {"hidden file", "hidden directory"}


def test_include_and_exclude_patterns(repo: Path) -> None:
    only_md = select_files(repo, Selection(include=("*.md",), gitignore=False))[0]
    assert [f.relative_to(repo).as_posix() for f in only_md] == [
        "README.md",
        "docs/a/b/draft-1.md",
        "docs/a/final.md",
        "docs/guide.md",
    ]
    files, skipped = select_files(repo, Selection(exclude=("docs/", "*.py")))
    names = [f.relative_to(repo).as_posix() for f in files]
    assert not any(n.startswith("docs/") or n.endswith(".py") for n in names)
    assert (str(repo / "docs"), "excluded by pattern") in skipped  # the folder, once
    assert (str(repo / "src" / "main.py"), "excluded by pattern") in skipped


def test_bad_patterns_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="exclude"):
        Selection(exclude=("",))
    with pytest.raises(ConfigError, match="include"):
        Selection(include=(3,))  # type: ignore[arg-type]


def test_selection_round_trips_through_json() -> None:
    rules = Selection(include=("*.md",), exclude=("tmp/",), gitignore=False)
    assert Selection.from_json(rules.to_json()) == rules
    assert Selection.from_json(None) == Selection()


def test_caches_hidden_files_and_images_are_skipped_not_failed(tmp_path: Path) -> None:
    root = tmp_path / "code"
    write(root, "app.py", "def main():\n    return 42\n")
    write(root, "notes.md", "# Notes\n\nPlain notes.")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "app.cpython-312.pyc").write_bytes(b"\xcb\r\r\n\x00\x00\x00\x00" * 8)
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 10)
    write(root, ".env", "SECRET=1")
    write(root, ".gitignore", "generated/\n")
    write(root, "generated/big.txt", "generated text")
    result = load_dir(root, workers=1)
    assert result.errors == []
    assert [d.metadata["path"] for d in result.documents] == [
        str(root / "app.py"),
        str(root / "notes.md"),
    ]
    assert result.skipped == [
        (str(root / ".env"), "hidden file"),
        (str(root / ".gitignore"), "hidden file"),
        (str(root / "__pycache__"), "Python bytecode cache"),
        (str(root / "generated"), f"ignored by {root / '.gitignore'}"),
        (str(root / "logo.png"), "image (png): not text, and no parser reads it"),
    ]


def test_load_dir_reads_encrypted_pdfs_with_a_password(tmp_path: Path, pdf_dir: Path) -> None:
    root = tmp_path / "locked"
    root.mkdir()
    (root / "aes.pdf").symlink_to(pdf_dir / "aes-256-r6.pdf")
    assert [e.error for e in load_dir(root, workers=1).errors] == ["PasswordRequiredError"]
    opened = load_dir(root, workers=1, password="usersecret")
    assert opened.errors == [] and opened.documents
