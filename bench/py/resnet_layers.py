"""resnet_layers: ResNet-18's convolutions one by one at inference (batch 1, float32, bias,
one thread), unigrad against torch eager and ONNX Runtime (a one-node Conv model per shape):
where a network's time goes, layer by layer. Impls run interleaved; milliseconds = the median
of the repeats of the calling thread's CPU time. One JSON line per shape, with how many times
the network runs it, then the totals weighted by those counts."""
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as TF  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import unigrad as ug  # noqa: E402
import unigrad.nn.functional as UF  # noqa: E402

QUICK = "--quick" in sys.argv
REPS, N = (3, 5) if QUICK else (5, 10)

# (C in, C out, kernel, stride, padding, input size, times in ResNet-18)
SHAPES = [(3, 64, 7, 2, 3, 224, 1), (64, 64, 3, 1, 1, 56, 4), (64, 128, 3, 2, 1, 56, 1), (128, 128, 3, 1, 1, 28, 3),
          (64, 128, 1, 2, 0, 56, 1), (128, 256, 3, 2, 1, 28, 1), (256, 256, 3, 1, 1, 14, 3), (128, 256, 1, 2, 0, 28, 1),
          (256, 512, 3, 2, 1, 14, 1), (512, 512, 3, 1, 1, 7, 3), (256, 512, 1, 2, 0, 14, 1)]


def cpu_ms(fn, n=N):
    c0 = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - c0) / n * 1e3


def ort_session(w, b, stride, pad, size, folder):
    cin = w.shape[1]
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[stride] * 2, pads=[pad] * 4)
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    path = os.path.join(folder, "conv.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def main():
    torch.set_num_threads(1)
    ug.set_num_threads(1)
    rng = np.random.default_rng(0)
    folder = tempfile.mkdtemp()
    totals = {"unigrad": 0.0, "torch": 0.0, "onnxruntime": 0.0}
    for cin, cout, k, s, pad, size, count in SHAPES:
        x = rng.normal(size=(1, cin, size, size)).astype(np.float32)
        w = (rng.normal(size=(cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
        b = rng.normal(size=(cout,)).astype(np.float32)
        xt, wt, bt = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
        xu, wu, bu = ug.tensor(x), ug.tensor(w), ug.tensor(b)
        session = ort_session(w, b, s, pad, size, folder)

        def run_torch():
            with torch.no_grad():
                TF.conv2d(xt, wt, bt, stride=s, padding=pad)

        def run_ug():
            with ug.no_grad():
                UF.conv2d(xu, wu, bu, stride=s, padding=pad)

        fns = {"unigrad": run_ug, "torch": run_torch, "onnxruntime": lambda: session.run(None, {"x": x})}
        runs = {name: [] for name in fns}
        for fn in fns.values():
            fn()
        for _ in range(REPS):
            for name, fn in fns.items():
                runs[name].append(cpu_ms(fn))
        med = {name: round(statistics.median(r), 3) for name, r in runs.items()}
        for name in totals:
            totals[name] += med[name] * count
        print(json.dumps({"bench": "resnet18_conv_layer", "shape": f"{cin}->{cout} {k}x{k}/{s} on {size}x{size}",
                          "count": count, "ms": med, "unigrad_over_onnxruntime": round(med["unigrad"] /
                                                                                        med["onnxruntime"], 2)}))
    print(json.dumps({"bench": "resnet18_conv_total", "ms": {k: round(v, 2) for k, v in totals.items()},
                      "loadavg1": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
