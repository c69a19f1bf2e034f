"""Source selection: .gitignore read as git reads it, patterns, and what is skipped (not failed)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pathspec
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from ragtools.parsers import ConfigError, Selection, load_dir
from ragtools.parsers.selection import (
    LEAVES_ROOT,
    MAX_IGNORE_BYTES,
    MAX_IGNORE_PATTERNS,
    MAX_PATTERN_CHARS,
    compile_patterns,
    select_files,
)

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
    shutil.copy(pdf_dir / "aes-256-r6.pdf", root / "aes.pdf")  # a link would leave the folder
    assert [e.error for e in load_dir(root, workers=1).errors] == ["PasswordRequiredError"]
    opened = load_dir(root, workers=1, password="usersecret")
    assert opened.errors == [] and opened.documents


# ---- symbolic links: a build stays inside its root -------------------------------------------


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """A folder with links to a file and a folder outside it, and links that stay inside."""
    outside = tmp_path / "outside"
    write(outside, "secret.txt", "private key material\n")
    write(outside, "notes/n.txt", "notes from elsewhere\n")
    root = tmp_path / "root"
    write(root, "a.txt")
    write(root, "sub/b.txt")
    (root / "key.txt").symlink_to(outside / "secret.txt")
    (root / "notes").symlink_to(outside / "notes")
    (root / "inner.txt").symlink_to(root / "sub" / "b.txt")
    (root / "zlink").symlink_to("sub")  # relative, inside (walked once: sub comes first)
    (root / "sub" / "up").symlink_to(outside / "secret.txt")  # leaves from a sub-folder
    return root


def names(files: list[Path], root: Path) -> list[str]:
    return [f.relative_to(root).as_posix() for f in files]


def test_links_leaving_the_root_are_skipped_with_the_reason(linked: Path) -> None:
    files, skipped = select_files(linked)
    assert names(files, linked) == ["a.txt", "inner.txt", "sub/b.txt"]
    leaving = [path for path, why in skipped if why == LEAVES_ROOT]
    assert leaving == [str(linked / "key.txt"), str(linked / "notes"), str(linked / "sub" / "up")]
    assert "--follow-links" in LEAVES_ROOT


def test_follow_links_reads_what_they_point_to(linked: Path) -> None:
    files, skipped = select_files(linked, Selection(follow_links=True))
    assert names(files, linked) == [
        "a.txt",
        "inner.txt",
        "key.txt",
        "notes/n.txt",
        "sub/b.txt",
        "sub/up",
    ]
    assert not [path for path, why in skipped if why == LEAVES_ROOT]


def test_load_dir_keeps_inside_the_root_unless_asked(linked: Path) -> None:
    kept = load_dir(linked, workers=1)
    assert "private key material" not in " ".join(d.text for d in kept.documents)
    assert (str(linked / "key.txt"), LEAVES_ROOT) in kept.skipped
    followed = load_dir(linked, workers=1, selection=Selection(follow_links=True))
    assert "private key material" in " ".join(d.text for d in followed.documents)


def test_a_root_that_is_a_link_is_read(linked: Path, tmp_path: Path) -> None:
    (tmp_path / "via").symlink_to(linked)
    files, _ = select_files(tmp_path / "via")
    assert names(files, tmp_path / "via") == ["a.txt", "inner.txt", "sub/b.txt"]


def test_a_gitignore_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    """As git (2.32 and later): a linked ``.gitignore`` could point at any file, or a FIFO."""
    write(tmp_path, "rules", "*.txt\n")
    root = tmp_path / "root"
    write(root, "a.txt")
    (root / ".gitignore").symlink_to(tmp_path / "rules")
    assert names(select_files(root)[0], root) == ["a.txt"]


def test_follow_links_is_recorded_and_old_records_still_load() -> None:
    rules = Selection(include=("*.md",), follow_links=True)
    assert rules.to_json()["follow_links"] is True
    assert Selection.from_json(rules.to_json()) == rules
    old = {"include": ["*.md"], "exclude": [], "gitignore": True}  # before follow_links
    assert Selection.from_json(old) == Selection(include=("*.md",))


# ---- patterns match in linear time -----------------------------------------------------------

PATHOLOGICAL = [  # (pattern, a path it must not match, a path it must match)
    ("*a" * 25 + "b", "a" * 60, "a" * 25 + "b"),
    ("*" * 5000 + "x", "y" * 300, "dir/yx"),
    ("*" * 16 + "a", "b" * 60 + ".txt", "b" * 60 + "a"),
    ("*" * 3000 + "a", "b" * 60 + ".txt", "b" * 60 + "a"),
    ("**/a/**/a/**/a/**/a/**/a/**/a/**/b", "a/" * 40 + "c", "a/" * 40 + "b"),
    ("?*" * 30 + "z", "y" * 200, "y" * 40 + "z"),
]


@pytest.mark.parametrize(("pattern", "miss", "hit"), PATHOLOGICAL)
def test_pathological_patterns_match_quickly_and_rightly(pattern: str, miss: str, hit: str) -> None:
    patterns = compile_patterns([pattern], "exclude pattern")
    assert not patterns.match(miss) and patterns.match(hit)


def test_a_gitignore_of_pathological_lines_keeps_a_build_quick(tmp_path: Path) -> None:
    root = tmp_path / "clone"
    lines = ["*" * 16 + "a", "*c" * 25 + "d"] * 999 + ["*" * 3000 + "b"]  # past one RE2 set
    write(root, ".gitignore", "\n".join(lines) + "\n")
    write(root, "keep.txt")
    write(root, "data", "x\n")
    write(root, "grab", "x\n")
    write(root, "b" * 60 + "c" * 25 + "d", "x\n")
    files, skipped = select_files(root)
    assert names(files, root) == ["keep.txt"]
    assert {Path(p).name for p, why in skipped if why.startswith("ignored by")} == {
        "data",
        "grab",
        "b" * 60 + "c" * 25 + "d",
    }


def test_an_overlong_gitignore_line_is_left_out_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "clone"
    write(root, ".gitignore", "x" * (MAX_PATTERN_CHARS + 1) + "\n*.log\n")
    write(root, "a.txt")
    write(root, "b.log")
    with caplog.at_level(logging.WARNING, logger="ragtools.parsers.selection"):
        files, _ = select_files(root)
    assert names(files, root) == ["a.txt"]  # the other lines still apply
    assert f"{root / '.gitignore'}, line 1 is left out" in caplog.text


def test_an_overlarge_gitignore_is_not_applied_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "clone"
    write(root, ".gitignore", "*.log\n" + "#" * MAX_IGNORE_BYTES + "\n")
    write(root, "b.log")
    with caplog.at_level(logging.WARNING, logger="ragtools.parsers.selection"):
        files, _ = select_files(root)
    assert names(files, root) == ["b.log"]
    assert f"{root / '.gitignore'} is not applied" in caplog.text


def test_a_gitignore_of_too_many_patterns_is_not_applied_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "clone"
    patterns = [f"*.x{i}" for i in range(MAX_IGNORE_PATTERNS)]
    write(root, ".gitignore", "\n".join(["# comments are no patterns", *patterns, ""]))
    write(root, "a.x1")
    assert names(select_files(root)[0], root) == []  # at the limit: applied
    write(root, ".gitignore", "\n".join([*patterns, "*.log", ""]))
    with caplog.at_level(logging.WARNING, logger="ragtools.parsers.selection"):
        files, _ = select_files(root)
    assert names(files, root) == ["a.x1"]
    told = f"{root / '.gitignore'} is not applied: {MAX_IGNORE_PATTERNS + 1} patterns"
    assert told in caplog.text


def test_an_overlong_pattern_is_a_config_error_naming_the_limit() -> None:
    with pytest.raises(ConfigError, match=f"exclude pattern 'xxx.*at most {MAX_PATTERN_CHARS}"):
        Selection(exclude=("x" * (MAX_PATTERN_CHARS + 1),))
    assert Selection(exclude=("*" * 10_000 + "x",)).exclude  # a run of * counts as one


SEGMENTS = st.sampled_from(["a", "b", "ab", "*", "**", "?", "[ab]", "[!a]", "\\*", "."])


@st.composite
def gitignore_lines(draw: st.DrawFn) -> str:
    parts = draw(st.lists(SEGMENTS, min_size=1, max_size=5))
    seps = draw(st.lists(st.sampled_from(["", "/"]), min_size=len(parts), max_size=len(parts)))
    line = "".join(part + sep for part, sep in zip(parts, seps, strict=True))
    return draw(st.sampled_from(["", "!", "/"])) + line


@given(
    lines=st.lists(gitignore_lines(), min_size=1, max_size=4),
    path=st.lists(st.sampled_from(["a", "b", "ab", "ba", "*", "a.b"]), min_size=1, max_size=4),
    is_dir=st.booleans(),
)
@example(lines=["!*", "a"], path=["a"], is_dir=True)  # the two pathspec backends disagree
@example(lines=["!*", "a", "!a"], path=["a"], is_dir=True)  # pathspec's re2 backend was wrong
@example(lines=["a/**"], path=["a"], is_dir=True)  # the folder itself is not below it
@example(lines=["a", "!a/b"], path=["a", "b"], is_dir=False)  # in an ignored folder
@settings(max_examples=300, deadline=None)
def test_matching_equals_pathspecs_backtracking_matcher(
    lines: list[str], path: list[str], is_dir: bool
) -> None:
    """The reference is pathspec's own default (Python ``re``) on these small cases, and git
    itself where we disagree with it: pathspec matches a path *or anything below it* with one
    expression and settles ties by priorities that its backends apply differently (``!*``
    then ``a`` on the folder ``a/``: git ignores it, pathspec's Python backend does not)."""
    assume(not any("***" in line for line in lines))  # cut to ** on purpose: see the git test
    text = "/".join(path) + ("/" if is_dir else "")
    reference = pathspec.GitIgnoreSpec.from_lines(lines, backend="simple").check_file(text)
    decided = compile_patterns(lines, "test").decide(text)
    if decided != reference.include:
        assert bool(decided) == _git_ignores(lines, path, is_dir), (lines, text)


def test_a_negation_after_an_ignoring_line_re_includes_a_folder(tmp_path: Path) -> None:
    """Found by the property above: the last matching line wins for a folder too, whatever
    the lines before it (pathspec's re2 backend let ``a`` beat the later ``!a``)."""
    lines = ["!*", "a", "!a"]
    patterns = compile_patterns(lines, "test")
    assert patterns.decide("a/") is False
    assert patterns.decide("a/x") is False
    assert not _git_ignores(lines, ["a"], True)
    root = tmp_path / "repo"
    write(root, ".gitignore", "\n".join(lines) + "\n")
    write(root, "a/x.txt")
    assert names(select_files(root)[0], root) == ["a/x.txt"]


def _git_ignores(lines: list[str], path: list[str], is_dir: bool) -> bool:
    """Whether ``git check-ignore`` ignores ``path`` under a ``.gitignore`` of ``lines``.

    A folder is named without its trailing ``/``, as git's own walk sees it (with the ``/``,
    check-ignore also matches the text ``a/`` against ``a/**``, which its walk never does).
    """
    assert GIT is not None
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        subprocess.run([GIT, "init", "-q", folder], check=True)
        (root / ".gitignore").write_text("\n".join(lines) + "\n")
        target = root.joinpath(*path)
        if is_dir:
            target.mkdir(parents=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
        shown = "/".join(path)
        done = subprocess.run([GIT, "-C", folder, "check-ignore", "-q", shown], check=False)
    return done.returncode == 0


def test_runs_of_stars_mean_what_they_mean_to_git(tmp_path: Path) -> None:
    assert GIT is not None
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run([GIT, "init", "-q", str(root)], check=True)
    write(root, ".gitignore", "***/deep.md\na****b.txt\n/top/*****\n")
    for relative in ["x/y/deep.md", "deep.md", "aZZb.txt", "a/b.txt", "top/t.txt", "keep.txt"]:
        write(root, relative)
    files, _ = select_files(root)
    assert sorted(f.relative_to(root).as_posix() for f in files) == git_untracked(root)


def test_names_that_are_not_utf8_are_matched(tmp_path: Path) -> None:
    root = tmp_path / "latin"
    write(root, ".gitignore", "caf?.txt\n")
    write(root, os.fsdecode(b"caf\xe9.txt"))
    write(root, os.fsdecode(b"th\xe9.md"))
    files, skipped = select_files(root, Selection(exclude=("*.md",)))
    assert files == []
    assert sorted(why for _, why in skipped) == [
        "excluded by pattern",
        "hidden file",
        f"ignored by {root / '.gitignore'}",
    ]


def test_index_folders_are_never_sources(tmp_path: Path) -> None:
    from ragtools.parsers.selection import INDEX_FOLDER

    root = tmp_path / "src"
    write(root, "a.md", "# A")
    write(root, "idx/CURRENT", "v-000001")
    write(root, "idx/versions/v-000001/chunks.jsonl", "{}")
    write(root, "notes/CURRENT", "not an index: no versions/ beside it")
    files, skipped = select_files(root)
    assert names(files, root) == ["a.md", "notes/CURRENT"]
    assert (str(root / "idx"), INDEX_FOLDER) in skipped
    assert select_files(root / "idx") == ([], [(str(root / "idx"), INDEX_FOLDER)])


def test_a_class_never_matches_a_slash_and_deep_paths_stay_quick() -> None:
    """git's wildmatch keeps ``[!a]`` and ``[!-0]`` (a range over ``/``) within one part;
    a path 300 folders deep is matched folder by folder against 2,000 patterns in time."""
    classes = compile_patterns(["a[!b]c", "x[!-0]y"], "test")
    assert classes.match("azc") and not classes.match("a/c") and not classes.match("x/y")
    assert classes.match("x.y") and classes.match("q/x1y")
    lines = ["*" * 16 + "a", "*c" * 25 + "d"] * 999 + ["**/keep/**", "!**/keep/x*"]
    deep = "/".join(f"folder{n:04d}" for n in range(300))
    patterns = compile_patterns(lines, "test")
    assert patterns.decide(deep + "/keep/x.txt") is False
    assert patterns.decide(deep + "/keep/y.txt") is True
    assert patterns.decide(deep + "/" + "b" * 60 + "a") is True
    assert patterns.decide(deep + "/plain.txt") is None
