#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs the main job: for now the `ug demo`
# tour of tensors, random numbers and matrix products with timings.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
build/cli/ug demo "$@"
