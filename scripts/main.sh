#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs the main job: the articles' MLP
# (784-128-10, Keras's Adam 1e-3, batch 64) trained on Fashion-MNIST for 3 epochs by `ug train`, with
# a progress bar on a terminal; it reports the test accuracy and writes the model, a resumable
# checkpoint, CSV and TensorBoard logs and a chart to runs/main/, then `ug predict` classifies
# a few test images. Extra arguments go to `ug train` (e.g. --model lenet, --epochs 5).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
build/cli/ug train --model mlp --epochs 3 --batch-size 64 --optimizer adam --lr 1e-3 --out runs/main "$@"
build/cli/ug predict runs/main/model.safetensors --index 0 1 2 3 4 5 6 7
