"""--verify: stored figures pass within their tolerance, a drifted one is named, and a file
that would check nothing or cannot be read is an error naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtools.parsers.errors import ConfigError, ParseError
from ragtools.retrieval.evaluation import build_report, load_expected, verify_report

REPORT = build_report(
    "scifact",
    "test",
    300,
    {
        "keyword": {
            "nDCG@10": 0.6929,
            "R@100": 0.9227,
            "AP@100": 0.64,
            "RR@10": 0.65,
            "latency_ms": {"p50": 1.0, "p95": 2.0},
        },
        "hybrid": {
            "nDCG@10": 0.7463,
            "R@100": 0.951,
            "AP@100": 0.7,
            "RR@10": 0.71,
            "latency_ms": {"p50": 1.0, "p95": 2.0},
        },
    },
)

YAML = """\
figures:
  - dataset: scifact
    split: test
    retriever: bm25
    metric: ndcg@10
    value: 0.6929
    tolerance: 0.0005
  - {dataset: scifact, retriever: hybrid, metric: R@100, value: 0.9510, tolerance: 0.001}
  - {dataset: nfcorpus, retriever: keyword, metric: nDCG@10, value: 0.3, tolerance: 0.01}
"""


def test_yaml_figures_pass_with_aliases(tmp_path: Path) -> None:
    path = tmp_path / "expected.yaml"
    path.write_text(YAML)
    figures = load_expected(path)
    assert [(f.retriever, f.metric, f.split) for f in figures] == [
        ("keyword", "nDCG@10", "test"),
        ("hybrid", "R@100", None),
        ("keyword", "nDCG@10", None),
    ]
    assert verify_report(REPORT, figures) == []  # the nfcorpus figure is not for this report


def test_a_drifted_figure_is_named(tmp_path: Path) -> None:
    path = tmp_path / "expected.json"
    figures = [
        {"dataset": "scifact", "retriever": "keyword", "metric": "nDCG@10", "value": 0.7000,
         "tolerance": 0.001},
        {"dataset": "scifact", "retriever": "hybrid", "metric": "nDCG@10", "value": 0.7465,
         "tolerance": 0.001},
    ]  # fmt: skip
    path.write_text(json.dumps(figures))
    problems = verify_report(REPORT, load_expected(path))
    assert problems == [
        "scifact keyword nDCG@10 drifted: 0.6929, expected 0.7000 ± 0.001 (off by -0.0071)"
    ]


def test_figures_the_report_cannot_answer_fail(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    path.write_text(
        json.dumps(
            [
                {"dataset": "SciFact", "retriever": "vector", "metric": "nDCG@10", "value": 0.6,
                 "tolerance": 0.1},
                {"dataset": "scifact", "retriever": "keyword", "metric": "P@1000", "value": 0.1,
                 "tolerance": 0.1},
            ]
        )
    )  # fmt: skip
    assert verify_report(REPORT, load_expected(path)) == [
        "SciFact vector nDCG@10: vector was not evaluated",
        "scifact keyword P@1000: the report has no P@1000",
    ]
    train = {"dataset": "scifact", "split": "train", "retriever": "keyword", "metric": "nDCG@10"}
    path.write_text(json.dumps([{**train, "value": 0.6, "tolerance": 0.1}]))
    with pytest.raises(ConfigError, match=r"no expected figure is for scifact \(test\)"):
        verify_report(REPORT, load_expected(path))


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("a.json", "{", "not valid JSON"),
        ("a.yaml", "figures: [", "not valid YAML"),
        ("a.json", "[]", "non-empty list of figures"),
        ("a.json", '[{"dataset": "s"}]', "figure 1: missing retriever, metric, value, tolerance"),
        (
            "a.json",
            '[{"dataset": "s", "retriever": "k", "metric": "P@1", "value": "x", "tolerance": 0}]',
            "figure 1: value must be a finite number",
        ),
        (
            "a.json",
            '[{"dataset": "s", "retriever": "k", "metric": "nope", "value": 1, "tolerance": 0}]',
            "figure 1: unknown metric 'nope'",
        ),
        (
            "a.json",
            '[{"dataset": "s", "retriever": "k", "metric": "P@1", "value": 1, "tolerance": -1}]',
            "tolerance must be >= 0",
        ),
    ],
)
def test_bad_files_raise_naming_the_file(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(ParseError, match=message) as info:
        load_expected(path)
    assert str(path) in str(info.value)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match=r"no-such\.yaml: cannot read"):
        load_expected(tmp_path / "no-such.yaml")


# ---- hostile files: a named error, fast ----------------------------------------------------


def _laughs(levels: int = 9) -> list[str]:
    """Billion laughs: each anchor lists nine aliases of the one before (9**9 items)."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    return lines


@pytest.mark.parametrize(
    ("figures", "message"),
    [
        ("figures: [*a8]", "figure 1: expected a mapping, got a list"),
        (
            "figures: [{dataset: *a8, retriever: k, metric: P@1, value: 1, tolerance: 0}]",
            r"figure 1: dataset must be one value \(text or number\), got a list",
        ),
        (
            "figures: [{dataset: s, retriever: k, metric: P@1, value: *a8, tolerance: 0}]",
            r"figure 1: value must be one value \(text or number\), got a list",
        ),
        ("figures: &f [*f]", "figure 1: expected a mapping, got a list"),  # it holds itself
    ],
)
def test_a_yaml_alias_bomb_is_a_named_error_at_once(
    tmp_path: Path, figures: str, message: str
) -> None:
    """A 1.2 kB bomb took 66 s, then a traceback: its values were printed into a message."""
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join([*_laughs(), figures]) + "\n", encoding="utf-8")
    assert path.stat().st_size < 1300
    with pytest.raises(ParseError, match=rf"bomb\.yaml: {message}"):
        load_expected(path)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000),
        ("deep.yaml", "figures: " + "[" * 100_000 + "]" * 100_000),
        ("block.yaml", "".join(" " * depth + "-\n" for depth in range(0, 6_000, 2))),
    ],
)
def test_deeply_nested_expected_files_are_a_named_error(
    tmp_path: Path, name: str, content: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ParseError, match=f"{name}: objects and lists nested more than 32 levels"):
        load_expected(path)


def test_rag_eval_refuses_the_bomb_before_evaluating(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join([*_laughs(), "figures: [*a8]"]) + "\n", encoding="utf-8")
    rag = Path(sys.executable).with_name("rag")
    proc = subprocess.run(
        [str(rag), "eval", "--dataset", str(tmp_path / "none"), "--verify", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"rag: error: {path}: figure 1: expected a mapping, got a list"
    ]
