"""The BEIR loader: layout, CRLF, clear errors, and the real SciFact test split."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from ragtools import parsers
from ragtools.parsers.errors import ConfigError, ParseError
from ragtools.retrieval.evaluation import BeirDataset, available_splits, corpus_documents, load_beir


def write_dataset(
    root: Path,
    *,
    corpus: list[dict] | None = None,
    queries: list[dict] | None = None,
    qrels: dict[str, bytes] | None = None,
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    corpus = (
        corpus
        if corpus is not None
        else [
            {"_id": "d1", "title": "Alpha", "text": "first text", "metadata": {}},
            {"_id": 2, "title": "", "text": "second text"},
            {"_id": "d3", "text": "third text"},
        ]
    )
    queries = (
        queries
        if queries is not None
        else [
            {"_id": "q1", "text": "what is alpha"},
            {"_id": "q2", "text": "second?"},
            {"_id": "q3", "text": "never judged in test"},
        ]
    )
    qrels = (
        qrels
        if qrels is not None
        else {
            "test": b"query-id\tcorpus-id\tscore\r\nq2\t2\t1\r\nq1\td1\t2\r\nq1\td3\t0\r\n",
            "train": b"query-id\tcorpus-id\tscore\nq3\td3\t1\n",
        }
    )
    lines = "".join(json.dumps(record) + "\n" for record in corpus)
    (root / "corpus.jsonl").write_text(lines, encoding="utf-8")
    lines = "".join(json.dumps(record) + "\n" for record in queries)
    (root / "queries.jsonl").write_text(lines, encoding="utf-8")
    (root / "qrels").mkdir(exist_ok=True)
    for split, content in qrels.items():
        (root / "qrels" / f"{split}.tsv").write_bytes(content)
    return root


def test_loads_a_split_with_crlf_and_graded_scores(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "tiny")
    dataset = load_beir(root, "test")
    assert isinstance(dataset, BeirDataset)
    assert (dataset.name, dataset.split, dataset.path) == ("tiny", "test", root)
    assert dataset.qrels == {"q2": {"2": 1}, "q1": {"d1": 2, "d3": 0}}
    assert dataset.queries == {"q2": "second?", "q1": "what is alpha"}  # judged only, qrels order
    assert dataset.num_judgments == 3
    assert {doc_id: doc.text for doc_id, doc in dataset.corpus.items()} == {
        "d1": "Alpha\n\nfirst text",
        "2": "second text",
        "d3": "third text",
    }
    train = load_beir(root, "train", name="custom")
    assert train.name == "custom" and train.queries == {"q3": "never judged in test"}
    assert available_splits(root) == ["test", "train"]


def test_qrels_without_header_keep_their_first_line(tmp_path: Path) -> None:
    root = write_dataset(tmp_path, qrels={"test": b"q1\td1\t1\nq2 2 1.0\n"})
    assert load_beir(root).qrels == {"q1": {"d1": 1}, "q2": {"2": 1}}


def test_missing_split_lists_the_available_ones(tmp_path: Path) -> None:
    root = write_dataset(tmp_path)
    with pytest.raises(
        ConfigError, match=r"split 'dev' does not exist.*available splits: test, train"
    ):
        load_beir(root, "dev")


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td3\n", 3),
        (b"query-id\tcorpus-id\tscore\r\nq1\td1\tyes\r\n", 2),
        (b"q1\td1\t0.5\n", 1),
        (b"query-id\tcorpus-id\tscore\n\nq1\t\t1\n", 3),
    ],
)
def test_malformed_qrels_line_names_file_and_line(
    tmp_path: Path, content: bytes, line: int
) -> None:
    root = write_dataset(tmp_path, qrels={"test": content})
    with pytest.raises(ParseError, match=f"test.tsv: line {line}: expected") as info:
        load_beir(root)
    assert info.value.path == str(root / "qrels" / "test.tsv")


def test_repeated_judgments_are_kept_once_and_conflicts_raise(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "ok", qrels={"test": b"q1\td1\t1\nq1\td1\t1\n"})
    assert load_beir(root).qrels == {"q1": {"d1": 1}}
    root = write_dataset(tmp_path / "bad", qrels={"test": b"q1\td1\t1\nq1\td1\t2\n"})
    with pytest.raises(ParseError, match=r"line 2: judgment .* conflicts with 1 on line 1"):
        load_beir(root)


def test_malformed_json_names_the_line(tmp_path: Path) -> None:
    root = write_dataset(tmp_path)
    with (root / "corpus.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"_id": "d4", "text": broken}\n')
    with pytest.raises(ParseError, match=r"corpus.jsonl: line 4: invalid JSON"):
        load_beir(root)


@pytest.mark.parametrize(
    ("records", "message"),
    [
        (
            [{"_id": "d1", "text": "x"}, {"_id": "d1", "text": "y"}],
            "duplicate _id 'd1' in records 1 and 2",
        ),
        ([{"text": "no id"}], 'record 1: "_id" must be a non-empty string or integer, got None'),
        ([{"_id": True, "text": "x"}], 'record 1: "_id" must be a non-empty string'),
        ([["not", "an", "object"]], 'record 1: "_id" must be'),  # read as 3 bare strings
        ([{"_id": "d1", "text": "x"}, 5], "line 2 is a int; JSON Lines records must be objects"),
        ([{"_id": "d1", "title": "t"}], "record 1: document 'd1' has no \"text\""),
        ([{"_id": "d1", "text": 3}], "record 1: field 'text' must be a string, got int"),
    ],
)
def test_bad_corpus_records_raise(tmp_path: Path, records: list, message: str) -> None:
    root = write_dataset(tmp_path, corpus=records)
    with pytest.raises(ParseError, match=re.escape(message)) as info:
        load_beir(root)
    assert info.value.path == str(root / "corpus.jsonl")


@pytest.mark.parametrize("name", ["corpus.jsonl", "queries.jsonl"])
def test_missing_files_are_named(tmp_path: Path, name: str) -> None:
    root = write_dataset(tmp_path)
    (root / name).unlink()
    with pytest.raises(ParseError, match=f"{name}: missing file") as info:
        load_beir(root)
    assert info.value.path == str(root / name)


def test_missing_qrels_directory_and_dataset_directory(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "ds", qrels={})
    (root / "qrels").rmdir()
    with pytest.raises(ParseError, match="qrels: missing directory"):
        load_beir(root)
    with pytest.raises(ConfigError, match="does not exist or is not a directory"):
        load_beir(tmp_path / "nowhere")


def test_empty_qrels_and_unjudged_query_ids_raise(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "a", qrels={"test": b"query-id\tcorpus-id\tscore\n"})
    with pytest.raises(ParseError, match="no judgments"):
        load_beir(root)
    root = write_dataset(tmp_path / "b", qrels={"test": b"q9\td1\t1\n"})
    with pytest.raises(
        ParseError, match=r"1 judged queries are not in queries.jsonl \(e.g. 'q9'\)"
    ):
        load_beir(root)


def test_judged_documents_missing_from_corpus_are_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_dataset(tmp_path, qrels={"test": b"q1\tghost\t1\nq1\td1\t1\n"})
    with caplog.at_level(logging.WARNING, logger="ragtools.retrieval.evaluation.beir"):
        dataset = load_beir(root)
    assert dataset.qrels == {"q1": {"ghost": 1, "d1": 1}}
    assert "1 judged documents are not in corpus.jsonl" in caplog.text


def test_non_utf8_file_is_a_parse_error(tmp_path: Path) -> None:
    root = write_dataset(tmp_path)
    (root / "queries.jsonl").write_bytes(b'{"_id": "q1", "text": "caf\xe9"}\n')
    with pytest.raises(ParseError, match=r"queries\.jsonl: not UTF-8"):
        load_beir(root)


def test_corpus_documents_join_title_and_text(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "tiny")
    documents = corpus_documents(load_beir(root))
    assert [d.id for d in documents] == ["d1", "2", "d3"]
    assert documents[0].text == "Alpha\n\nfirst text"
    assert documents[1].text == "second text"  # empty title: no blank header
    source = str(root / "corpus.jsonl")
    assert documents[0].metadata == {"source": source, "row": 1, "title": "Alpha"}
    assert documents[1].metadata == {"source": source, "row": 2}  # no title: no title key


def test_corpus_documents_are_what_parsers_load_makes(tmp_path: Path) -> None:
    """One BEIR -> Document path: ``rag eval`` indexes what ``rag build corpus.jsonl`` does."""
    corpus = [
        {
            "_id": "d1",
            "title": "The \ufb01sh  title ",
            "text": "Sci\ufb01c\u00a0text\r\n\r\n\r\nend\t.",
        },
        {
            "_id": 7,
            "title": None,
            "text": "  \uff21\uff22 full-width  ",
            "metadata": {"year": 2001},
        },
        {"_id": "empty", "title": "", "text": " \u200b "},
    ]
    root = write_dataset(tmp_path, corpus=corpus, qrels={"test": b"q1\td1\t1\n"})
    documents = corpus_documents(load_beir(root))
    assert [(d.id, d.text) for d in documents] == [
        ("d1", "The fish  title\n\nScific text\n\nend\t."),  # NFKC; layout kept
        ("7", "  AB full-width"),
    ]
    assert documents[0].metadata["title"] == "The fish  title"  # what the title boost reads
    assert documents[1].metadata["year"] == 2001
    loaded = parsers.load(root / "corpus.jsonl")
    file_keys = {"source", "path", "file_type", "mtime", "size"}  # the loader's, about the file
    assert [(d.id, d.text) for d in documents] == [(d.id, d.text) for d in loaded]
    for document, parsed in zip(documents, loaded, strict=True):
        assert {k: v for k, v in document.metadata.items() if k not in file_keys} == {
            k: v for k, v in parsed.metadata.items() if k not in file_keys
        }


def test_real_scifact_test_split(scifact_dir: Path) -> None:
    dataset = load_beir(scifact_dir, "test")
    assert dataset.name == "scifact"
    assert len(dataset.queries) == 300
    assert dataset.num_judgments == 339
    assert len(dataset.corpus) == 5183
    assert dataset.qrels["1"] == {"31715818": 1}
    assert dataset.queries["1"] == "0-dimensional biomaterials show inductive properties."
    assert all(doc_id in dataset.corpus for docs in dataset.qrels.values() for doc_id in docs)
    documents = corpus_documents(dataset)
    by_id = {d.id: d for d in documents}
    assert len(by_id) == 5183
    assert by_id["4983"].text.startswith("Microstructural development of human newborn")
    assert "\n\nAlterations of the architecture" in by_id["4983"].text
    assert by_id["4983"].metadata["source"] == str(scifact_dir / "corpus.jsonl")
    assert available_splits(scifact_dir) == ["test", "train"]
