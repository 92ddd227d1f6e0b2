"""The official ONNX backend node tests (onnx/backend/test/case/node, ~1,900 one-node models with
inputs and expected outputs) run through ug.onnx.load, and through onnxruntime for comparison.

Each case is one of: pass; wrong (ran, but an output differs from the expected one beyond the
backend runner's tolerances); refused (a clear unigrad error at load or run, by category: opset,
op, dtype, other); crash (the worker process died or hung); random (ran, but the expected
outputs come from a random generator, see RANDOM_CASES). Cases run in worker subprocesses, so
a crash is counted, not fatal.

    python tests/python/onnx_node_suite.py [--runtime ug|ort|both] [--json report.json] [-j N]

The installed onnx wheel ships the case generators, not the data: the suite is generated once into
build/onnx-node-suite/<onnx version> and reused."""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "build" / "onnx-node-suite"
# The onnx backend test runner's defaults (onnx/backend/test/case/model: rtol=1e-3, atol=1e-7).
RTOL, ATOL = 1e-3, 1e-7
# A worker that runs past this (plus a second a case) is taken to hang in its current case.
CASE_TIMEOUT_S = 60


def suite_dir() -> Path:
    """The generated node cases of the installed onnx, generating them on first use."""
    import onnx

    out = CACHE / onnx.__version__
    if (out / "node").is_dir():
        return out / "node"
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=CACHE))
    # onnx's own writer (cmd_tools generate-data) writes the model cases; pointing it at the node
    # cases writes those in the same layout.
    code = ("import argparse, onnx.backend.test.case.model as m, onnx.backend.test.case.node as n\n"
            "from onnx.backend.test import cmd_tools\n"
            "m.collect_testcases = n.collect_testcases\n"
            f"cmd_tools.generate_data(argparse.Namespace(output={str(tmp)!r}))\n")
    subprocess.run([sys.executable, "-W", "ignore", "-c", code], check=True, stdout=subprocess.DEVNULL)
    try:
        tmp.rename(out)
    except OSError:  # another process generated it first
        shutil.rmtree(tmp)
    return out / "node"


def read_data_set(case: Path):
    """The first data set's inputs and expected outputs, as NumPy arrays (None where not a tensor)."""
    import onnx
    from onnx import numpy_helper

    data = case / "test_data_set_0"

    def read(kind):
        arrays = []
        for path in sorted(data.glob(f"{kind}_*.pb"), key=lambda p: int(p.stem.split("_")[1])):
            t = onnx.TensorProto()
            try:
                t.ParseFromString(path.read_bytes())
                arrays.append(numpy_helper.to_array(t))
            except Exception:  # a sequence, map or optional: not a tensor
                arrays.append(None)
        return arrays

    return read("input"), read("output")


# Cases whose expected outputs carry NumPy's single-precision FFT rounding: np.fft.ifft of a complex64
# signal gives 1.9e-7 where the exact value is 0 (float32's ULP at the outputs' 45 is 3.8e-6), past the
# runner's atol of 1e-7. They are compared with an atol of 1e-6.
FFT_ROUNDED_CASES = {"test_dft_inverse", "test_dft_inverse_opset19"}


def compare(outputs, expected, atol=ATOL) -> str | None:
    """None when the outputs match as onnx's backend runner checks them, else what differs."""
    if len(outputs) != len(expected):
        return f"{len(outputs)} outputs, expected {len(expected)}"
    for i, (out, ref) in enumerate(zip(outputs, expected)):
        if ref is None:
            return f"output {i}: expected a non-tensor value"
        out = np.asarray(out)
        if out.shape != ref.shape:
            return f"output {i}: shape {out.shape}, expected {ref.shape}"
        if ref.dtype == object:
            if not np.array_equal(out, ref):
                return f"output {i}: strings differ"
            continue
        if out.dtype != ref.dtype:
            return f"output {i}: dtype {out.dtype}, expected {ref.dtype}"
        rtol = RTOL
        if ref.dtype.name == "bfloat16":  # as the runner does: two bfloat16 ULPs, compared as float32
            rtol, out, ref = max(RTOL, 2**-6), out.astype(np.float32), ref.astype(np.float32)
        elif ref.dtype == np.float16:
            # The runner's rule for bfloat16, applied to float16: 1e-3 is under one float16 ULP
            # (2**-10), and the expected values carry NumPy's own float16 roundings.
            rtol = max(RTOL, 2**-9)
        try:
            np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)
        except AssertionError as e:
            return f"output {i}: " + " ".join(str(e).split())[:300]
    return None


# Cases whose expected outputs come from NumPy's random generator (Dropout in training mode with a
# nonzero ratio, Bernoulli): no runtime can reproduce them, so they are reported as "random".
RANDOM_CASES = {"test_training_dropout", "test_training_dropout_default", "test_training_dropout_default_mask",
                "test_training_dropout_mask", "test_bernoulli", "test_bernoulli_double",
                "test_bernoulli_double_expanded", "test_bernoulli_expanded", "test_bernoulli_seed",
                "test_bernoulli_seed_expanded"}


def refusal_category(message: str) -> str:
    if re.search(r"opset \d+ is not supported|needs opset|changed in opset", message):
        return "opset"
    if "unsupported op type" in message:
        return "op"
    if re.search(r"element type|dtype|not a tensor|sequences, maps|can't convert numpy", message):
        return "dtype"
    return "other"


def run_ug(case: Path):
    import unigrad as ug

    inputs, expected = read_data_set(case)
    try:
        model = ug.onnx.load(str(case / "model.onnx"))
        if any(a is None for a in inputs):
            raise TypeError("an input is not a tensor (sequences, maps and optionals are not supported)")
        # np.array, not np.ascontiguousarray, which makes 0-d arrays 1-d.
        outputs = model.forward(*[ug.from_numpy(np.array(a, order="C")) for a in inputs])
    except (ValueError, TypeError, RuntimeError, NotImplementedError, IndexError, OverflowError) as e:
        message = " ".join(str(e).split())
        return "refused", refusal_category(message), message[:300]
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    if case.name in RANDOM_CASES:
        return "random", None, None
    diff = compare([to_numpy(o) for o in outputs], expected, 1e-6 if case.name in FFT_ROUNDED_CASES else ATOL)
    return ("wrong", None, diff) if diff else ("pass", None, None)


def to_numpy(t):
    import unigrad as ug

    if t.dtype == ug.bfloat16:  # NumPy has no bfloat16; onnx reads it as ml_dtypes'
        import ml_dtypes

        return t.float().numpy().astype(ml_dtypes.bfloat16)
    return t.numpy()


def run_ort(case: Path):
    import onnxruntime as ort

    inputs, expected = read_data_set(case)
    try:
        session = ort.InferenceSession(str(case / "model.onnx"), providers=["CPUExecutionProvider"])
        if any(a is None for a in inputs):
            raise TypeError("an input is not a tensor")
        names = [i.name for i in session.get_inputs()]
        outputs = session.run(None, dict(zip(names, inputs)))
    except Exception as e:  # ORT reports its refusals as several exception types
        return "refused", "other", " ".join(str(e).split())[:300]
    if any(not isinstance(o, np.ndarray) for o in outputs):
        return "refused", "dtype", "a non-tensor output"
    if case.name in RANDOM_CASES:
        return "random", None, None
    diff = compare(outputs, expected, 1e-6 if case.name in FFT_ROUNDED_CASES else ATOL)
    return ("wrong", None, diff) if diff else ("pass", None, None)


def worker(runtime: str, cases: list[str]) -> None:
    """Runs cases in order, printing a START line before each and a JSON result after it, so the
    parent can name the case that a dying process was running."""
    import warnings

    warnings.simplefilter("ignore")
    run = run_ug if runtime == "ug" else run_ort
    for name in cases:
        print("START " + name, flush=True)
        status, category, detail = run(Path(name))
        print("RESULT " + json.dumps([Path(name).name, status, category, detail]), flush=True)


def run_batch(runtime: str, cases: list[Path]) -> dict:
    """Results of `cases` from worker subprocesses: one dying takes only its current case with it."""
    results, pending = {}, [str(c) for c in cases]
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.environ.get("PYTHONPATH") or str(ROOT / "python"))
    while pending:
        cmd = [sys.executable, __file__, "--worker", runtime, *pending]
        current, lines = None, []
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                  timeout=CASE_TIMEOUT_S + len(pending))
            lines, rc = proc.stdout.splitlines(), proc.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
            lines, rc = out.splitlines(), "timeout"
        for line in lines:
            if line.startswith("START "):
                current = line[6:]
            elif line.startswith("RESULT "):
                name, status, category, detail = json.loads(line[7:])
                results[name] = {"status": status, "category": category, "detail": detail}
                pending.remove(current)
                current = None
        if current is not None or (pending and rc != 0):
            crashed = current or pending[0]
            results[Path(crashed).name] = {"status": "crash", "category": None, "detail": f"worker exit {rc}"}
            pending.remove(crashed)
        elif pending:
            raise RuntimeError(f"worker stopped without running {pending[0]} (exit {rc})")
    return results


def run_suite(runtime: str, jobs: int = os.cpu_count() or 1, batch: int = 40, cases=None) -> dict:
    root = suite_dir()
    cases = sorted(p for p in root.iterdir() if (p / "model.onnx").exists()) if cases is None else cases
    batches = [cases[i:i + batch] for i in range(0, len(cases), batch)]
    results = {}
    with ThreadPoolExecutor(jobs) as pool:
        for part in pool.map(lambda b: run_batch(runtime, b), batches):
            results.update(part)
    return dict(sorted(results.items()))


def summary(runtime: str, results: dict) -> str:
    counts = collections.Counter(r["status"] for r in results.values())
    lines = [f"{runtime}: {len(results)} cases: " + ", ".join(
        f"{k} {counts.get(k, 0)}" for k in ("pass", "wrong", "refused", "crash", "random"))]
    cats = collections.Counter(r["category"] for r in results.values() if r["status"] == "refused")
    if cats:
        lines.append("  refused by category: " + ", ".join(f"{k} {v}" for k, v in cats.most_common()))
    # The top reasons, with case-specific names and numbers folded together.
    reasons = collections.Counter(
        re.sub(r"'[^']*'|\d+", "_", r["detail"] or "")[:110]
        for r in results.values() if r["status"] == "refused")
    for reason, n in reasons.most_common(12):
        lines.append(f"  {n:5d}  {reason}")
    for name, r in results.items():
        if r["status"] in ("wrong", "crash"):
            lines.append(f"  {r['status'].upper()}: {name}: {r['detail']}")
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime", choices=["ug", "ort", "both"], default="both")
    parser.add_argument("--json", help="write every case's result here")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("-k", help="only the cases whose name contains this")
    args = parser.parse_args()
    cases = None
    if args.k:
        cases = sorted(p for p in suite_dir().iterdir() if args.k in p.name and (p / "model.onnx").exists())
    report = {}
    for runtime in (["ug", "ort"] if args.runtime == "both" else [args.runtime]):
        start = time.time()
        report[runtime] = run_suite(runtime, args.jobs, cases=cases)
        print(summary(runtime, report[runtime]) + f"\n  ({time.time() - start:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
