#!/usr/bin/env python3
"""infer_latency: the peer shared/bench/peers/infer_latency.py in unigrad. The forward of the MLP
784-128(ReLU)-10 (seeded default init, eval mode) under ug.no_grad() on the first 1 / first 256
Fashion-MNIST test images, each call timed on its own; seconds = the median per call.
100 warm-up + 5,000 timed calls at batch 1, 20 + 1,000 at batch 256 (quick: 1/5 of that)."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)
nn = ug.nn

images = ug.data.read_idx(os.path.join(common.DATA_DIR, "t10k-images-idx3-ubyte.gz"))
ug.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)).eval()
scale = 5 if args.quick else 1

for batch, warm, iters in ((1, 100, 5000), (256, 20, 1000)):
    warm, iters = warm // scale, iters // scale
    x = images[:batch].reshape(batch, -1).float().div_(255.0)
    ts = []
    with ug.no_grad():
        for _ in range(warm):
            model(x)
        for _ in range(iters):
            t0 = time.perf_counter()
            model(x)
            ts.append(time.perf_counter() - t0)
    ts.sort()
    med = common.median(ts)
    common.emit(ug, "infer_latency", args.threads, med, {
        "case": f"batch{batch}", "quick": args.quick, "iters": iters,
        "us_median": med * 1e6, "us_min": ts[0] * 1e6, "us_p90": ts[int(0.9 * (len(ts) - 1))] * 1e6,
        "samples_per_s": batch / med})
