#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs every test: the C++ suite under ctest
# and the Python suite under pytest (ops checked against PyTorch 2.13).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
(cd build && ctest --output-on-failure -j2)
.venv/bin/python -m pytest -q -n 2 tests/python
