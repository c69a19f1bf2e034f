#!/usr/bin/env bash
# The README's main command: set up .venv, build an index with the default model over a folder
# (default: this project's README) and ask the retriever tool a question through a ToolsNode.
#   bash scripts/demo.sh [FILE_OR_FOLDER...] [--question "..."]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec "$root/.venv/bin/python" "$root/scripts/demo.py" "$@"
