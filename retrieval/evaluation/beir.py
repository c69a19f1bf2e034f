"""Load a BEIR dataset directory: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

The layout is the one of the BEIR release (Thakur et al. 2021)::

    scifact/
      corpus.jsonl      {"_id": ..., "title": ..., "text": ..., "metadata": {...}} per line
      queries.jsonl     {"_id": ..., "text": ...} per line
      qrels/test.tsv    header "query-id<TAB>corpus-id<TAB>score", then one judgment a line

The corpus is read by the parsers' BEIR loader (:func:`parsers.records.load_beir_corpus`),
the one ``rag build corpus.jsonl`` uses: the same NFKC and whitespace normalisation, ids,
``title`` metadata and ``title + "\\n\\n" + text``. An evaluation therefore measures the text
a user's index holds, not a rawer copy of it.

Choices, stricter than BEIR's own ``GenericDataLoader`` where it matters for correct numbers:

* every failure raises our errors with the file and line (or record): a missing split is a
  :class:`ConfigError` listing the splits that exist; a missing file, invalid JSON, a record
  without ``_id``, a non-integer score or a duplicate id is a :class:`ParseError`;
* qrels lines are tab-separated (whitespace is accepted as a fallback), LF or CRLF; the header
  is recognised by its names, so a data first line is never silently dropped; scores are
  graded integers (``"1.0"`` is read as 1); a judgment repeated with the same score is kept
  once, with a conflicting score it is an error;
* ``queries`` holds only the queries judged in the split (in qrels order, as BEIR does), and a
  judged query missing from ``queries.jsonl`` is an error; judged documents missing from the
  corpus are only logged (they lower recall, which is the honest outcome);
* ids are strings (some BEIR files store numbers) and files are read as UTF-8 (a BOM is
  tolerated).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtools.parsers.document import Document
from ragtools.parsers.errors import ConfigError, ParseError
from ragtools.parsers.nesting import nesting_problem, text_too_deep
from ragtools.parsers.records import load_beir_corpus

__all__ = [
    "BeirDataset",
    "available_splits",
    "corpus_documents",
    "load_beir",
    "load_qrels",
    "load_queries",
]

logger = logging.getLogger(__name__)

_QRELS_HEADER = ("query-id", "corpus-id", "score")


@dataclass(frozen=True)
class BeirDataset:
    """One split of a BEIR dataset, loaded in memory.

    Attributes:
        name: the dataset name (the directory name unless given).
        split: the qrels split that was loaded (``test``, ``train``, ``dev``, ...).
        corpus: every document with text, keyed by its BEIR ``_id``, in file order, as
            :func:`parsers.load` makes it (normalised ``title + "\\n\\n" + text``, metadata
            ``source``, ``row``, ``title`` when not empty, and the record's ``metadata``).
        queries: the text of every query judged in this split, keyed by query id.
        qrels: graded judgments ``{query_id: {doc_id: score}}``; score > 0 is relevant.
        path: the dataset directory.
    """

    name: str
    split: str
    corpus: dict[str, Document]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    path: Path = field(default_factory=Path)

    @property
    def num_judgments(self) -> int:
        """The number of (query, document) judgments in the split."""
        return sum(len(docs) for docs in self.qrels.values())


def load_beir(path: str | Path, split: str = "test", *, name: str | None = None) -> BeirDataset:
    """Load one split of a BEIR dataset directory.

    Args:
        path: the dataset directory (holding ``corpus.jsonl``, ``queries.jsonl``, ``qrels/``).
        split: the qrels file to use, ``qrels/<split>.tsv``.
        name: the dataset name; defaults to the directory name.

    Returns:
        The dataset, with ``queries`` restricted to the queries judged in ``split``.

    Raises:
        ConfigError: ``path`` is not a directory, or ``split`` does not exist (the message
            lists the available splits).
        ParseError: a file is missing or malformed; the message names the file and line.

    Example:
        >>> ds = load_beir("../shared/data/scifact", "test")  # doctest: +SKIP
        >>> len(ds.queries), ds.num_judgments, len(ds.corpus)  # doctest: +SKIP
        (300, 339, 5183)
    """
    root = Path(path)
    if not root.is_dir():
        msg = f"BEIR dataset directory {str(root)!r} does not exist or is not a directory"
        raise ConfigError(msg)
    qrels_path = _split_path(root, split)
    qrels = _read_qrels(qrels_path)
    all_queries = load_queries(root)
    missing = [qid for qid in qrels if qid not in all_queries]
    if missing:
        shown = ", ".join(repr(q) for q in missing[:5])
        msg = (
            f"{len(missing)} judged queries are not in queries.jsonl (e.g. {shown}); "
            "the qrels and queries files do not belong together"
        )
        raise ParseError(qrels_path, msg)
    corpus_path = _require_file(root / "corpus.jsonl")
    corpus = {document.id: document for document in load_beir_corpus(corpus_path)}
    unknown = sum(1 for docs in qrels.values() for doc_id in docs if doc_id not in corpus)
    if unknown:
        logger.warning(
            "%s: %d judged documents are not in corpus.jsonl; they count as relevant but can "
            "never be retrieved",
            qrels_path,
            unknown,
        )
    dataset = BeirDataset(
        name=name if name is not None else root.resolve().name,
        split=split,
        corpus=corpus,
        queries={qid: all_queries[qid] for qid in qrels},
        qrels=qrels,
        path=root,
    )
    logger.info(
        "loaded BEIR %s/%s: %d documents, %d queries, %d judgments",
        dataset.name,
        split,
        len(corpus),
        len(dataset.queries),
        dataset.num_judgments,
    )
    return dataset


def corpus_documents(dataset: BeirDataset) -> list[Document]:
    """The corpus as documents, exactly as ``rag build corpus.jsonl`` indexes them.

    ``Document.id`` is the BEIR ``_id``, so hits map back to qrels; the text is the normalised
    ``title + "\\n\\n" + text`` (just the text when the title is empty, as BEIR baselines
    index them) and ``metadata["title"]`` feeds the index's title boost.

    Args:
        dataset: a dataset from :func:`load_beir`.

    Returns:
        One document per corpus entry with text, in corpus order.
    """
    return list(dataset.corpus.values())


def load_queries(path: str | Path) -> dict[str, str]:
    """Every query of a BEIR dataset directory's ``queries.jsonl``, in file order, by id.

    Raises:
        ParseError: a missing or malformed file, named with the line.
    """
    return _read_queries(Path(path) / "queries.jsonl")


def load_qrels(path: str | Path, split: str = "test") -> dict[str, dict[str, int]]:
    """The judgments ``{query_id: {doc_id: score}}`` of ``qrels/<split>.tsv``, in file order.

    Raises:
        ConfigError: ``split`` does not exist (the message lists the available splits).
        ParseError: a missing or malformed file, named with the line.
    """
    return _read_qrels(_split_path(Path(path), split))


def available_splits(root: Path) -> list[str]:
    """The split names that have a ``qrels/<split>.tsv`` file, sorted."""
    qrels_dir = root / "qrels"
    if not qrels_dir.is_dir():
        return []
    return sorted(p.stem for p in qrels_dir.glob("*.tsv") if p.is_file())


def _split_path(root: Path, split: str) -> Path:
    qrels_path = root / "qrels" / f"{split}.tsv"
    if qrels_path.is_file():
        return qrels_path
    if not (root / "qrels").is_dir():
        msg = "missing directory: a BEIR dataset needs qrels/<split>.tsv files"
        raise ParseError(root / "qrels", msg)
    splits = available_splits(root)
    msg = (
        f"split {split!r} does not exist in {str(root)!r} (no {qrels_path.name} in qrels/); "
        f"available splits: {', '.join(splits) if splits else 'none'}"
    )
    raise ConfigError(msg)


def _require_file(path: Path) -> Path:
    if not path.is_file():
        msg = "missing file: a BEIR dataset needs corpus.jsonl, queries.jsonl and qrels/"
        raise ParseError(path, msg)
    return path


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` without line endings (LF or CRLF), skipping blank lines."""
    _require_file(path)
    try:
        with open(path, encoding="utf-8-sig", newline=None) as handle:
            for number, line in enumerate(handle, start=1):
                stripped = line.rstrip("\r\n")
                if stripped.strip():
                    yield number, stripped
    except UnicodeDecodeError as exc:
        msg = f"not UTF-8 ({exc.reason} at byte {exc.start}); BEIR files are UTF-8"
        raise ParseError(path, msg) from exc


def _json_records(path: Path) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """Yield ``(line_number, _id, record)`` for every JSON object of a JSONL file."""
    first_line: dict[str, int] = {}
    for number, line in _lines(path):
        if text_too_deep(line):  # json recurses: measured before parsing
            raise ParseError(path, f"line {number}: {nesting_problem()}")
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            msg = f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})"
            raise ParseError(path, msg) from exc
        if not isinstance(record, dict) or "_id" not in record:
            msg = f'line {number}: expected a JSON object with an "_id" field'
            raise ParseError(path, msg)
        raw_id = record["_id"]
        if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool) or raw_id == "":
            msg = f'line {number}: "_id" must be a non-empty string, got {raw_id!r}'
            raise ParseError(path, msg)
        doc_id = str(raw_id)
        if doc_id in first_line:
            msg = f"line {number}: duplicate _id {doc_id!r} (first on line {first_line[doc_id]})"
            raise ParseError(path, msg)
        first_line[doc_id] = number
        yield number, doc_id, record


def _text_field(path: Path, number: int, record: dict[str, Any], key: str, default: str) -> str:
    value = record.get(key, default)
    if value is None:
        return ""
    if not isinstance(value, str):
        msg = f"line {number}: field {key!r} must be a string, got {type(value).__name__}"
        raise ParseError(path, msg)
    return value


def _read_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for number, query_id, record in _json_records(path):
        if "text" not in record:
            msg = f'line {number}: query {query_id!r} has no "text" field'
            raise ParseError(path, msg)
        queries[query_id] = _text_field(path, number, record, "text", "")
    return queries


def _split_fields(line: str) -> list[str]:
    fields = line.split("\t")
    if len(fields) != 3:
        fields = line.split()
    return [f.strip() for f in fields]


def _parse_score(raw: str) -> int | None:
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        value = float(raw)
    except ValueError:
        return None
    return int(value) if value.is_integer() else None


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for index, (number, line) in enumerate(_lines(path)):
        fields = _split_fields(line)
        if index == 0 and tuple(f.lower() for f in fields) == _QRELS_HEADER:
            continue
        score = _parse_score(fields[2]) if len(fields) == 3 else None
        if score is None or not fields[0] or not fields[1]:
            msg = (
                f"line {number}: expected 'query-id<TAB>corpus-id<TAB>integer score', "
                f"got {line[:80]!r}"
            )
            raise ParseError(path, msg)
        query_id, doc_id = fields[0], fields[1]
        judged = qrels.setdefault(query_id, {})
        if doc_id in judged and judged[doc_id] != score:
            msg = (
                f"line {number}: judgment ({query_id!r}, {doc_id!r}) = {score} conflicts with "
                f"{judged[doc_id]} on line {first_line[(query_id, doc_id)]}"
            )
            raise ParseError(path, msg)
        first_line.setdefault((query_id, doc_id), number)
        judged[doc_id] = score
    if not qrels:
        msg = "no judgments: the qrels file is empty"
        raise ParseError(path, msg)
    return qrels
