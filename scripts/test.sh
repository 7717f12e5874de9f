#!/usr/bin/env bash
# Install what the tests need, then lint and run the whole test suite. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev
.venv/bin/ruff check bridgebench tests
.venv/bin/python -m pytest -q "$@"
