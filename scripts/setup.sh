#!/usr/bin/env bash
# Create .venv at the repository root and install the package with its test extras.
# torch==2.13.0 (CPU build) goes in first, so sentence-transformers does not pull CUDA wheels.
# Installs once: a stamp in .venv holds a hash of pyproject.toml and this script, and a later
# run whose hash matches (and whose .venv still imports ragtools) installs nothing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
stamp=.venv/.ragtools-installed
wanted="$(cat pyproject.toml scripts/setup.sh | "$python" -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
if [ -x .venv/bin/python ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ] \
    && .venv/bin/python -c "import ragtools.retrieval" 2>/dev/null; then
  echo "==> .venv is up to date (delete $stamp to reinstall)" >&2
else
  if [ ! -x .venv/bin/python ]; then
    echo "==> creating virtual environment in .venv" >&2
    "$python" -m venv .venv
  fi
  pip=(.venv/bin/python -m pip --disable-pip-version-check -q)
  # The venv's bundled pip may be old; older resolvers trip over repeated extras (lxml[html-clean]).
  "${pip[@]}" install --upgrade "pip>=24.1"
  if ! .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13.0') else 1)" 2>/dev/null; then
    echo "==> installing torch==2.13.0 (CPU build)" >&2
    "${pip[@]}" install "torch==2.13.0"
  fi
  echo "==> installing ragtools with its dev extras" >&2
  "${pip[@]}" install -e ".[dev]"
  echo "$wanted" > "$stamp"
fi
# mypy cannot see setuptools' editable import hook: give it the folders under their installed
# names (pyproject's mypy_path).
mkdir -p .venv/ragtools-src/ragtools
for package in parsers indexes retrieval; do
  ln -sfn "$root/$package" ".venv/ragtools-src/ragtools/$package"
done
