#!/usr/bin/env python3
"""Instructions per iteration of the 1-element op-overhead loops (a + b, and
(a * b + c).sum().backward()), in C++ and through Python, counted by callgrind.

Time on a loaded 2-core machine moves by 20% from run to run; the instruction count of
one iteration does not, so this is how two builds are compared for dispatch overhead:

    .venv/bin/python bench/instructions.py                       # this checkout's build/
    .venv/bin/python bench/instructions.py ../old/build build     # two builds side by side

Each build dir must belong to a checkout whose python/unigrad holds that build's module.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMALL, LARGE = 2000, 12000
PY_LOOP = """
import sys, unigrad as ug
n = int(sys.argv[2])
a, b, c = ug.ones(1), ug.ones(1), ug.ones(1)
if sys.argv[1] == "add":
    for _ in range(n): a + b
else:
    for t in (a, b, c): t.requires_grad_()
    for _ in range(n): (a * b + c).sum().backward()
"""


def instructions(cmd, env=None):
    with tempfile.NamedTemporaryFile() as out:
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}", *cmd],
                       check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return int(re.search(r"^totals: (\d+)", Path(out.name).read_text(), re.M).group(1))


def per_iteration(cmd_for, env=None):
    return (instructions(cmd_for(LARGE), env) - instructions(cmd_for(SMALL), env)) / (LARGE - SMALL)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("builds", nargs="*", default=[str(ROOT / "build")])
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".py") as script:
        script.write(PY_LOOP)
        script.flush()
        print("| build | C++ a + b | C++ autograd | Python a + b | Python autograd |")
        print("|---|---|---|---|---|")
        for build in map(Path, args.builds):
            loop = build.resolve() / "bench" / "ug_op_loop"
            env = {**os.environ, "PYTHONPATH": str(build.resolve().parent / "python")}
            row = [per_iteration(lambda n, k=k: [str(loop), k, str(n)]) for k in ("add", "autograd")]
            row += [per_iteration(lambda n, k=k: [sys.executable, script.name, k, str(n)], env)
                    for k in ("add", "autograd")]
            print(f"| {build} | " + " | ".join(f"{r:,.0f}" for r in row) + " |")


if __name__ == "__main__":
    main()
