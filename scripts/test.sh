#!/usr/bin/env bash
# The README's test command: set up .venv, then run lint, type checks and the whole test suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
echo "==> ruff" >&2
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "==> mypy" >&2
.venv/bin/mypy
echo "==> pytest" >&2
# Two workers (pytest-xdist; RAGTOOLS_TEST_WORKERS=0 runs in this process), each taking whole
# files, so a file's module fixtures (a built index, a clean clone) are made once.
workers="${RAGTOOLS_TEST_WORKERS:-2}"
.venv/bin/python -m pytest -n "$workers" --dist loadfile "$@"
