#!/usr/bin/env python3
"""dataloader: one shuffled epoch of the 60k Fashion-MNIST training images (quick: the first
10k) through ug.data.DataLoader: a TensorDataset of float32 (N, 1, 28, 28) images in [0, 1]
and int64 labels, batch 64, seed 0, num_workers 2, each batch normalised ((x - 0.2860) /
0.3530) by the consumer. seconds = the median epoch of 3 (after one warm-up epoch);
images_per_s = images / seconds."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

args = common.parse_args(__doc__)
ug = common.init_ug(args)
BATCH, WORKERS, EPOCHS = 64, 2, 3

images = ug.data.read_idx(os.path.join(common.DATA_DIR, "train-images-idx3-ubyte.gz"))
labels = ug.data.read_idx(os.path.join(common.DATA_DIR, "train-labels-idx1-ubyte.gz"))
if args.quick:
    images, labels = images[:10000], labels[:10000]
x = (images.float() / 255.0).reshape(-1, 1, 28, 28).contiguous()
y = labels.long()
loader = ug.data.DataLoader(ug.data.TensorDataset(x, y), batch_size=BATCH, shuffle=True,
                            num_workers=WORKERS, seed=0)


def epoch():
    t0 = time.perf_counter()
    seen = 0
    for xb, yb in loader:
        xb = (xb - 0.2860) / 0.3530
        seen += yb.shape[0]
    assert seen == x.shape[0]
    return time.perf_counter() - t0


epoch()
seconds = common.median([epoch() for _ in range(EPOCHS)])
common.emit(ug, "dataloader", args.threads, seconds, {
    "case": f"fashion_mnist_b{BATCH}_w{WORKERS}", "quick": args.quick, "images": x.shape[0],
    "images_per_s": x.shape[0] / seconds,
})
