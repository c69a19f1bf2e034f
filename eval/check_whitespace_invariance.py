"""Keeping the layout changes neither BM25 tokens nor vector windows on SciFact.

    python eval/check_whitespace_invariance.py [--dataset ../shared/data/scifact]
        [--before 10b45ea]

Normalises every SciFact document (title, blank line, text, as the BEIR loader does) with
this package's :func:`normalize_text` (layout kept) and with the one of commit ``--before``
(whitespace collapsed; read with ``git show``), and counts the documents whose compacted new
text equals the old text, whose BM25 tokens are equal, and whose vector windows (1,000
characters, 200 overlap, the index defaults) are equal. All equal means ``rag eval``'s BM25
and vector halves see exactly the inputs they saw before.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import types
from pathlib import Path

from ragtools.indexes.dense.windows import split_windows
from ragtools.indexes.text.tokenize import Tokenizer
from ragtools.parsers.normalize import compact_whitespace, normalize_text

ROOT = Path(__file__).resolve().parents[1]
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--dataset", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
parser.add_argument("--before", default="10b45ea")
args = parser.parse_args()
show = ["git", "-C", str(ROOT), "show", f"{args.before}:parsers/normalize.py"]
code = subprocess.run(show, capture_output=True, text=True, check=True).stdout
old = types.ModuleType("old_normalize")
exec(compile(code, "old_normalize.py", "exec"), old.__dict__)  # the project's own history
tok = Tokenizer()


def joined(normalize: object, record: dict[str, str]) -> str:
    parts = (normalize(record["title"]), normalize(record["text"]))  # type: ignore[operator]
    return "\n\n".join(part for part in parts if part)


same_text = same_tokens = same_windows = n = 0
with open(args.dataset / "corpus.jsonl", encoding="utf-8") as corpus:
    for line in corpus:
        record = json.loads(line)
        n += 1
        new, before = joined(normalize_text, record), joined(old.normalize_text, record)
        same_text += compact_whitespace(new) == before
        same_tokens += tok(new) == tok(before)
        same_windows += split_windows([new], 1000, 200)[0] == split_windows([before], 1000, 200)[0]
print(
    f"{n} SciFact documents: compact(new text) == old text: {same_text}; "
    f"BM25 tokens equal: {same_tokens}; vector windows equal: {same_windows}"
)
