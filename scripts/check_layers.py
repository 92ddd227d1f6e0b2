#!/usr/bin/env python3
"""Checks that every #include in src/ug points down the layer stack (docs/design.md, "Layers"):
a file may include its own layer and the layers below it, never one above. The CMake build
enforces the same for symbols (each layer is a library linking only downward, and
ug_layer_check links each one alone with --no-undefined); this script also catches an
upward include of a header-only part.

    python3 scripts/check_layers.py      # prints each upward include; exit status 1 if any
"""
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

# Bottom up. A path belongs to the first layer whose pattern matches it.
LAYERS = [
    ("kinds", [r"ug/ops/\w+_kinds\.h$"]),
    ("core", [r"ug/core/", r"ug/version\.h"]),
    ("backend", [r"ug/backend/"]),
    ("graph", [r"ug/graph/"]),
    ("ops", [r"ug/ops/"]),
    ("autograd", [r"ug/autograd/"]),
    ("nn", [r"ug/nn/"]),
    ("distributions", [r"ug/distributions/"]),
    ("optim", [r"ug/optim/"]),
    ("quantization", [r"ug/quantization/"]),
    ("data", [r"ug/data/"]),
    ("io", [r"ug/io/"]),
    ("log", [r"ug/log/"]),
    ("distributed", [r"ug/distributed/"]),
    ("train", [r"ug/train/", r"ug/models/"]),
    ("onnx", [r"ug/onnx/"]),
    ("compiler", [r"ug/compiler/"]),
    ("serve", [r"ug/serve/"]),
    ("all", [r"ug/ug\.h$"]),
]
# Layers side by side: neither may include the other.
PEERS = [{"distributions", "optim", "quantization", "data", "io", "log", "distributed"}]


def layer_of(path):
    for rank, (name, patterns) in enumerate(LAYERS):
        if any(re.search(p, path) for p in patterns):
            return rank, name
    return None, None


def main():
    bad = []
    for f in sorted(SRC.rglob("*")):
        if f.suffix not in (".h", ".cpp"):
            continue
        rel = str(f.relative_to(SRC))
        rank, name = layer_of(rel)
        if rank is None:
            bad.append(f"{rel}: in no layer (add it to scripts/check_layers.py)")
            continue
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = re.match(r'#include "(ug/[^"]+)"', line)
            if not m:
                continue
            irank, iname = layer_of(m.group(1))
            if irank is None or irank > rank or (
                    irank != rank and any({name, iname} <= peers for peers in PEERS)):
                bad.append(f"{rel}:{n}: {name} includes {m.group(1)} ({iname})")
    for b in bad:
        print(b)
    print(f"check_layers: {len(bad)} upward include(s)" if bad else "check_layers: every include points down")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
