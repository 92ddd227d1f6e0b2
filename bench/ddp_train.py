"""Data-parallel training throughput, unigrad's DDP against torch's DDP on gloo, one kernel
thread per rank. Run one rank count at a time, under mpirun (both frameworks read its ranks):

    ug launch -n 1 bench/ddp_train.py --framework ug --model mlp
    ug launch -n 2 bench/ddp_train.py --framework torch --model transformer
    ug launch -n 2 bench/ddp_train.py --framework ug --model mlp --compile

Rank 0 prints one line: framework, model, ranks, samples/s (all ranks together; each rank
trains on its own batch of --batch, the median step time over --steps after warm-up). With
--compile (unigrad only) the step is one ug.compile program, its buckets' all-reduces ops of it."""
import argparse
import os
import statistics
import time

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--framework", choices=["ug", "torch"], required=True)
p.add_argument("--model", choices=["mlp", "transformer"], default="mlp")
p.add_argument("--batch", type=int, default=64)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--compile", action="store_true", help="the training step under ug.compile")
args = p.parse_args()
if args.compile and args.framework != "ug":
    p.error("--compile times unigrad's compiled step only (torch.compile needs a C++ toolchain at run time)")
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", 0))
world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", 1))

if args.framework == "ug":
    import unigrad as fw
    import unigrad.distributed as dist
    fw.set_num_threads(1)
    dist.init_process_group("mpi")
    DDP = fw.nn.parallel.DistributedDataParallel
else:
    import torch as fw
    import torch.distributed as dist
    fw.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    DDP = fw.nn.parallel.DistributedDataParallel

nn = fw.nn
fw.manual_seed(0)
if args.model == "mlp":  # bench/py/mlp_train_epoch.py's MLP on Fashion-MNIST-shaped rows
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    x, y = fw.randn(args.batch, 784), fw.randint(0, 10, (args.batch,))
    loss_fn = nn.CrossEntropyLoss()
else:  # bench/py/transformer_step.py's encoder block
    model = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, activation="gelu", batch_first=True)
    x, y = fw.randn(args.batch, 64, 128), fw.randn(args.batch, 64, 128)
    loss_fn = nn.MSELoss()
# Both frameworks' DDP with gradient_as_bucket_view=True (torch's option, the same semantics in
# each): .grad is a view of the bucket, so neither copies the averages back into .grad.
model = DDP(model, gradient_as_bucket_view=True)
opt = fw.optim.Adam(model.parameters(), lr=1e-3)


def step():
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()


if args.compile:
    step = fw.compile(step)
for _ in range(5):
    step()
times = []
for _ in range(args.steps):
    dist.barrier()
    t0 = time.perf_counter()
    step()
    times.append(time.perf_counter() - t0)
if rank == 0:
    name = args.framework + (" compiled" if args.compile else "")
    print(f"{name},{args.model},{world},{world * args.batch / statistics.median(times):.0f}", flush=True)
dist.destroy_process_group()
