"""resnet: ResNet-18 (torchvision's layout, random weights, 1x3x224x224) in one process, one
thread each: inference of the model exported to ONNX and imported by unigrad
(`ug.onnx.load`), against torch eager and ONNX Runtime on the same file; and one training step
at batch 2 (forward, cross-entropy, backward, SGD with momentum) of the same network written
once for both frameworks. Impls run interleaved; seconds = the median of the repeats. One
JSON line per workload and impl, then the ratios the targets name (unigrad / peer). Every impl
runs on the calling thread, so the ratios use that thread's CPU time, which other processes on a
busy machine do not inflate; the wall times are printed beside them. `--infer-only` leaves the
training step out, `--reps=N` takes N repeats (7 by default) and `--calls=N` times N inference
calls in a row per repeat (10 by default; 1: each call runs after the peers', caches cold). An A/B
of two builds on a loaded machine compares `infer_over_onnxruntime` of alternating runs."""
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402

import unigrad as ug  # noqa: E402

QUICK = "--quick" in sys.argv
REPS, N_INFER, N_TRAIN = (3, 3, 2) if QUICK else (7, 10, 4)
INFER_ONLY = "--infer-only" in sys.argv
REPS = next((int(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--reps=")), REPS)
N_INFER = next((int(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--calls=")), N_INFER)


def resnet18(m):
    """torchvision.models.resnet18's layers, written against either framework's nn."""
    nn = m.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.bn1(self.conv1(x)).relu()
            y = self.bn2(self.conv2(y))
            return (y + (x if self.down is None else self.down(x))).relu()

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64),
                                      nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1))
            widths = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
            self.layers = nn.Sequential(*[nn.Sequential(Block(a, b, s), Block(b, b, 1)) for a, b, s in widths])
            self.fc = nn.Linear(512, 1000)

        def forward(self, x):
            return self.fc(self.layers(self.stem(x)).mean((2, 3)))

    return ResNet18()


def seconds(fn, n):
    """Wall and calling-thread CPU seconds per call, over n calls."""
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n, (time.thread_time() - c0) / n


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ug.set_num_threads(1)
    x = np.random.default_rng(0).normal(size=(1, 3, 224, 224)).astype(np.float32)
    model = resnet18(torch).eval()
    for bn in (mod for mod in model.modules() if isinstance(mod, torch.nn.BatchNorm2d)):
        bn.running_mean.normal_(0, 0.1)
        bn.running_var.uniform_(0.5, 1.5)
    path = os.path.join(tempfile.mkdtemp(), "resnet18.onnx")
    torch.onnx.export(model, (torch.from_numpy(x),), path, dynamo=False, opset_version=17)

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    imported = ug.onnx.load(path)
    xt, xu = torch.from_numpy(x), ug.tensor(x)
    with torch.no_grad():
        want = model(xt).numpy()
    with ug.no_grad():
        got = imported(xu).numpy()
    assert np.allclose(got, want, rtol=1e-3, atol=1e-3), float(np.abs(got - want).max())

    def torch_infer():
        with torch.no_grad():
            model(xt)

    def ug_infer():
        with ug.no_grad():
            imported(xu)

    infer = {"torch-python": torch_infer, "onnxruntime": lambda: session.run(None, {session.get_inputs()[0].name: x}),
             "unigrad-python": ug_infer}

    xb = np.random.default_rng(1).normal(size=(2, 3, 224, 224)).astype(np.float32)
    yb = np.array([3, 7])

    def train_step(m):
        net = resnet18(m).train()
        opt = m.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        loss_fn = m.nn.CrossEntropyLoss()
        xs, ys = m.tensor(xb), m.tensor(yb)

        def step():
            opt.zero_grad()
            loss_fn(net(xs), ys).backward()
            opt.step()
        return step

    train = {} if INFER_ONLY else {"torch-python": train_step(torch), "unigrad-python": train_step(ug)}
    times = {(w, impl): [] for w, fns in (("infer", infer), ("train", train)) for impl in fns}
    for (w, impl) in times:  # warm up
        (infer if w == "infer" else train)[impl]()
    for _ in range(REPS):
        for (w, impl), runs in times.items():
            fn = (infer if w == "infer" else train)[impl]
            runs.append(seconds(fn, N_INFER if w == "infer" else N_TRAIN))
    wall = {key: statistics.median(r[0] for r in runs) for key, runs in times.items()}
    med = {key: statistics.median(r[1] for r in runs) for key, runs in times.items()}
    names = {"infer": "resnet18_infer_b1", "train": "resnet18_train_b2"}
    for (w, impl), s in med.items():
        print(json.dumps({"bench": names[w], "impl": impl, "threads": 1, "seconds": s,
                          "extra": {"quick": QUICK, "thread_cpu_ms": round(s * 1e3, 2),
                                    "wall_ms": round(wall[(w, impl)] * 1e3, 2),
                                    "loadavg1": round(os.getloadavg()[0], 2)}}))
    u = "unigrad-python"
    ratios = {"infer_over_torch": round(med[("infer", u)] / med[("infer", "torch-python")], 3),
              "infer_over_onnxruntime": round(med[("infer", u)] / med[("infer", "onnxruntime")], 3)}
    if train:
        ratios["train_over_torch"] = round(med[("train", u)] / med[("train", "torch-python")], 3)
    print(json.dumps({"bench": "resnet18_ratio", "threads": 1, **ratios}))


if __name__ == "__main__":
    main()
