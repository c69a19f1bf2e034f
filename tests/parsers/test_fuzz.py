"""Fuzzing load(): random and mutated bytes only ever raise ParseError, and never hang."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest

from ragtools import parsers
from ragtools.parsers import ParseError

SEED_PDFS = [
    "002-trivial-libre-office-writer.pdf",
    "multilang.pdf",
    "scan-bad.pdf",
    "zen_of_python_corrupted.pdf",
    "aes-256-r6.pdf",
    "invalid.pdf",
    "issue12823.pdf",
]
SEED_HTML = [
    b"<!DOCTYPE html><html><head><title>T</title><script>x()</script></head>"
    b"<body><p>Hello <b>world</b></p><ul><li>a</li><li>b</li></ul><table><tr><td>1</td>"
    b"</tr></table></body></html>",
    '<html><head><meta charset="utf-8"><title>Ünï 中文</title></head><body><nav>n</nav>'
    "<h1>مرحبا</h1><p>日本語のテキスト。</p><!-- c --></body></html>".encode(),
]
N_INPUTS = 2400


def mutate(data: bytes, rng: random.Random) -> bytes:
    """Byte flips, deletions, random insertions, duplicated slices and truncation."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 20)):
        if not out:
            out.extend(rng.randbytes(10))
            continue
        i = rng.randrange(len(out))
        op = rng.random()
        if op < 0.4:
            out[i] = rng.randrange(256)
        elif op < 0.6:
            del out[i : i + rng.randint(1, 200)]
        elif op < 0.8:
            out[i:i] = rng.randbytes(rng.randint(1, 50))
        elif op < 0.9:
            j = rng.randrange(len(out))
            out[i:i] = out[j : j + rng.randint(1, 300)]
        else:
            del out[i:]
    return bytes(out)


@pytest.mark.timeout(300)
def test_fuzz_load_raises_only_parse_error(pdf_dir: Path, tmp_path: Path) -> None:
    rng = random.Random(20240611)
    seeds = [(pdf_dir / name).read_bytes() for name in SEED_PDFS] + SEED_HTML
    outcomes = {"documents": 0, "parse_error": 0}
    unexpected: list[tuple[int, str, str]] = []
    logging.disable(logging.CRITICAL)  # pypdf warns on every broken object; keep CI logs small
    try:
        for number in range(N_INPUTS):
            if rng.random() < 0.15:
                data = rng.randbytes(rng.randint(0, 3000))
            else:
                data = mutate(rng.choice(seeds), rng)
            path = tmp_path / f"f{number}{rng.choice(['.pdf', '.html', '.txt'])}"
            path.write_bytes(data)
            try:
                docs = parsers.load(path)
            except ParseError as exc:
                assert exc.path == str(path)
                outcomes["parse_error"] += 1
            except Exception as exc:  # what this test exists to catch
                unexpected.append((number, path.suffix, f"{type(exc).__name__}: {exc}"))
            else:
                assert all(isinstance(d, parsers.Document) for d in docs)
                outcomes["documents"] += 1
            path.unlink()
    finally:
        logging.disable(logging.NOTSET)
    assert unexpected == []
    # Both outcomes really happen: the fuzzer reaches the parsers, not only the sniffers.
    assert outcomes["documents"] > 100 and outcomes["parse_error"] > 100
