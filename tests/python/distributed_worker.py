"""One rank of a test_distributed.py job (run under mpirun): `python distributed_worker.py
SCENARIO`. Each rank checks its own results against NumPy or against a single-process run
it computes itself, and exits non-zero (with the failing assertion) on a mismatch."""
import os
import signal
import sys
import time

import numpy as np

import unigrad as ug
import unigrad.distributed as dist

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]
NP_REDUCE = {"SUM": np.sum, "MAX": np.max, "MIN": np.min, "PRODUCT": np.prod, "AVG": np.mean}


def rank_data(rank, dtype, shape=(3, 4), seed=0):
    """What rank `rank` contributes: every rank can compute every other rank's data."""
    rng = np.random.default_rng(1000 * seed + rank)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith(("int", "uint")):
        return rng.integers(1, 4, shape).astype(dtype)  # small: the product stays exact
    return rng.standard_normal(shape).astype(dtype)


def check(got, expected, dtype):
    got = got.numpy()
    if dtype.startswith("float"):
        # float16 reduces in float32 and rounds once; others sum n values in another order.
        tol = 2e-3 if dtype == "float16" else 10 * np.finfo(dtype).eps
        np.testing.assert_allclose(got, expected.astype(dtype), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, expected.astype(dtype))


def collectives():
    rank, n = dist.get_rank(), dist.get_world_size()
    for dtype in DTYPES:
        every = [rank_data(r, dtype) for r in range(n)]
        for op, reduce in NP_REDUCE.items():
            if op == "AVG" and not dtype.startswith("float"):
                continue
            t = ug.tensor(every[rank])
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            expected = np.stack(every)
            if dtype == "bool":  # gloo's convention: sum and max are "or", prod and min "and"
                expected = expected.any(0) if op in ("SUM", "MAX") else expected.all(0)
            else:
                expected = reduce(expected.astype("float64" if op == "AVG" else expected.dtype), axis=0)
            check(t, expected, dtype)
        # broadcast from the last rank, into a non-contiguous view
        t = ug.tensor(every[rank].T.copy()).t()
        dist.broadcast(t, src=n - 1)
        check(t, every[n - 1], dtype)
        out = [ug.zeros(3, 4, dtype=getattr(ug, dtype)) for _ in range(n)]
        dist.all_gather(out, ug.tensor(every[rank]))
        for r in range(n):
            check(out[r], every[r], dtype)
        if dtype != "bool":
            inputs = [ug.tensor(rank_data(rank, dtype, seed=1 + r)) for r in range(n)]
            out = ug.zeros(3, 4, dtype=getattr(ug, dtype))
            dist.reduce_scatter(out, inputs, op=dist.ReduceOp.SUM)
            check(out, np.sum([rank_data(r, dtype, seed=1 + rank) for r in range(n)], axis=0), dtype)
    # async: several in flight, waited in reverse order
    tensors = [ug.tensor(rank_data(rank, "float64", seed=s)) for s in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    for w in reversed(works):
        assert w.wait() is True and w.is_completed()
    for s, t in enumerate(tensors):
        check(t, np.sum([rank_data(r, "float64", seed=s) for r in range(n)], axis=0), "float64")
    assert dist.all_reduce(ug.ones(1)) is None  # torch: None unless async_op
    # blocking collectives while async ones are in flight queue behind them (through shared
    # memory and through MPI: 300_007 float64 are over the segment's 1 MiB)
    for size in (1000, 300_007):
        tensors = [ug.tensor(rank_data(rank, "float64", shape=(size,), seed=s)) for s in range(4)]
        works = [dist.all_reduce(t, async_op=True) for t in tensors[:2]]
        dist.all_reduce(tensors[2])
        dist.broadcast(tensors[3], src=n - 1)
        for w in works:
            w.wait()
        for s, t in enumerate(tensors[:3]):
            check(t, np.sum([rank_data(r, "float64", shape=(size,), seed=s) for r in range(n)], axis=0), "float64")
        check(tensors[3], rank_data(n - 1, "float64", shape=(size,), seed=3), "float64")
    # send/recv around a ring
    x = ug.tensor(rank_data(rank, "float32"))
    y = ug.zeros(3, 4)
    right, left = (rank + 1) % n, (rank - 1) % n
    send = dist.isend(x, right)
    assert dist.recv(y, left) == left
    send.wait()
    check(y, rank_data(left, "float32"), "float32")
    # a sub-group of ranks n-1 and 0 (in that order), with world ranks as src
    group = dist.new_group([n - 1, 0])
    if rank in (0, n - 1):
        assert dist.get_rank(group) == (0 if rank == n - 1 else 1) and dist.get_world_size(group) == 2
        t = ug.tensor(rank_data(rank, "float64"))
        dist.all_reduce(t, group=group)
        check(t, rank_data(0, "float64") + rank_data(n - 1, "float64"), "float64")
        t = ug.tensor(rank_data(rank, "int64"))
        dist.broadcast(t, src=0, group=group)
        check(t, rank_data(0, "int64"), "int64")
    else:
        assert dist.get_rank(group) == -1
    dist.barrier()
    dist.barrier(async_op=True).wait()


def rooted_and_all_to_all():
    """torch's other collectives against NumPy: reduce, gather and scatter to and from the
    last rank, all_to_all with sizes differing pair by pair, the *_tensor and _single forms,
    recv from any rank, the object collectives, Work.wait(timeout) and a non-member's size."""
    rank, n = dist.get_rank(), dist.get_world_size()
    root = n - 1
    for dtype in DTYPES:
        every = [rank_data(r, dtype) for r in range(n)]
        mine = ug.tensor(every[rank])
        for op in ("SUM", "MAX") if dtype == "bool" else ("SUM", "MIN", "PRODUCT"):
            t = mine.clone()
            assert dist.reduce(t, root, op=getattr(dist.ReduceOp, op)) is None
            if rank == root:
                stacked = np.stack(every)
                check(t, stacked.any(0) if dtype == "bool" else NP_REDUCE[op](stacked, axis=0), dtype)
            else:
                check(t, every[rank], dtype)  # the others keep their values
        out = [ug.zeros(3, 4, dtype=getattr(ug, dtype)) for _ in range(n)] if rank == root else None
        dist.gather(mine, out, dst=root)
        for r in range(n if rank == root else 0):
            check(out[r], every[r], dtype)
        parts = [ug.tensor(rank_data(r, dtype, seed=7)) for r in range(n)] if rank == root else None
        got = ug.zeros(3, 4, dtype=getattr(ug, dtype))
        dist.scatter(got, parts, src=root)
        check(got, rank_data(rank, dtype, seed=7), dtype)
        # all_to_all: rank r sends r + i + 1 rows to rank i
        sent = [ug.tensor(rank_data(rank, dtype, shape=(rank + i + 1, 2), seed=10 + i)) for i in range(n)]
        received = [ug.zeros(r + rank + 1, 2, dtype=getattr(ug, dtype)) for r in range(n)]
        dist.all_to_all(received, sent)
        for r in range(n):
            check(received[r], rank_data(r, dtype, shape=(r + rank + 1, 2), seed=10 + rank), dtype)
        whole = ug.zeros(n * 3, 4, dtype=getattr(ug, dtype))
        dist.all_gather_into_tensor(whole, mine)
        check(whole, np.concatenate(every), dtype)
        stacked = ug.zeros(n, 3, 4, dtype=getattr(ug, dtype))
        dist.all_gather_into_tensor(stacked, mine)
        check(stacked, np.stack(every), dtype)
        if dtype != "bool":
            t = ug.zeros(3, 4, dtype=getattr(ug, dtype))
            dist.reduce_scatter_tensor(t, ug.tensor(np.concatenate([rank_data(rank, dtype, seed=20 + i)
                                                                    for i in range(n)])))
            check(t, np.sum([rank_data(r, dtype, seed=20 + rank) for r in range(n)], axis=0), dtype)
    # all_to_all_single, evenly and with split sizes
    x = ug.arange(2 * n, dtype=ug.float64) + 100 * rank
    y = ug.zeros(2 * n, dtype=ug.float64)
    dist.all_to_all_single(y, x)
    check(y, np.concatenate([np.arange(2 * rank, 2 * rank + 2) + 100 * r for r in range(n)]), "float64")
    sizes_in = [rank + 1] * n  # rank r sends r + 1 elements to every rank
    x = ug.full((sum(sizes_in),), float(rank), dtype=ug.float64)
    y = ug.zeros(sum(r + 1 for r in range(n)), dtype=ug.float64)
    dist.all_to_all_single(y, x, output_split_sizes=[r + 1 for r in range(n)], input_split_sizes=sizes_in)
    check(y, np.concatenate([np.full(r + 1, float(r)) for r in range(n)]), "float64")
    # recv from whichever rank sends: the root hears from every other rank, in any order
    if rank == root:
        heard = set()
        for _ in range(n - 1):
            t = ug.zeros(2)
            sender = dist.recv(t)
            check(t, np.full(2, float(sender)), "float32")
            heard.add(sender)
        assert heard == set(range(n - 1)), heard
        work = dist.irecv(ug.zeros(2), tag=5)
        assert work.wait() and work.source_rank() == 0
    else:
        dist.send(ug.full((2,), float(rank)), root)
        if rank == 0:
            dist.send(ug.zeros(2), root, tag=5)
    # Python objects
    objects = [{"rank": rank}, "x" * rank, None] if rank == root else [None, None, None]
    dist.broadcast_object_list(objects, src=root)
    assert objects == [{"rank": root}, "x" * root, None], objects
    gathered = [None] * n
    dist.all_gather_object(gathered, ("r", rank, list(range(rank))))
    assert gathered == [("r", r, list(range(r))) for r in range(n)], gathered
    at_root = [None] * n if rank == root else None
    dist.gather_object({"r": rank}, at_root, dst=root)
    assert rank != root or at_root == [{"r": r} for r in range(n)], at_root
    out = [None]
    dist.scatter_object_list(out, [f"to {r}" for r in range(n)] if rank == root else None, src=root)
    assert out == [f"to {rank}"], out
    # a bounded wait: a recv not yet sent times out at its own limit, not the group's; the
    # message sent after it is received all the same
    if rank == 0:
        work, started = dist.irecv(ug.zeros(1), src=root, tag=99), time.monotonic()
        try:
            work.wait(timeout=0.2)
            raise AssertionError("the wait did not time out")
        except RuntimeError as e:
            assert "[wait] the collective did not finish within 0.2 s" in str(e), e
        assert time.monotonic() - started < 5
    dist.barrier()
    if rank == root:
        dist.send(ug.ones(1), 0, tag=99)
    if rank == 0:
        assert work.wait() and work.source_rank() == root
    # a process outside a group: rank and size -1, as torch's
    group = dist.new_group([0])
    assert (dist.get_rank(group), dist.get_world_size(group)) == ((0, 1) if rank == 0 else (-1, -1))
    # torch's refusals: a list on the wrong rank
    if rank != root:
        try:
            dist.gather(mine, [ug.zeros(3, 4)] * n, dst=root)
            raise AssertionError("gather took a list on a rank that is not the destination")
        except ValueError as e:
            assert "gather_list must be given on the destination rank only" in str(e), e


def all_reduce_sizes():
    """Sums and means of float buffers (reduced through shared memory when the ranks share a
    host) of every size: empty, under a cache line, over one rank's share, over the 1 MiB piece
    the segment carries at a time; over the world and over a group of two ranks in reverse
    order. NumPy's values, and the same bits on every rank of the group."""
    rank, n = dist.get_rank(), dist.get_world_size()
    pair = dist.new_group([n - 1, 0])
    for group, members in ((None, list(range(n))), (pair, [n - 1, 0])):
        if rank not in members:
            continue
        for dtype in ("float32", "float64", "float16"):
            for size in (0, 1, 17, 1000, 300_007):
                for op in ("SUM", "AVG"):
                    every = [rank_data(r, dtype, shape=(size,), seed=size) for r in range(n)]
                    t = ug.tensor(every[rank])
                    dist.all_reduce(t, op=getattr(dist.ReduceOp, op), group=group)
                    check(t, NP_REDUCE[op](np.stack([every[r] for r in members]).astype("float64"), axis=0), dtype)
                    gathered = [ug.zeros_like(t) for _ in members]
                    dist.all_gather(gathered, t, group=group)
                    for g in gathered:
                        np.testing.assert_array_equal(g.numpy(), t.numpy())


def mlp(seed):
    ug.manual_seed(seed)
    return ug.nn.Sequential(ug.nn.Linear(6, 16), ug.nn.Tanh(), ug.nn.Linear(16, 3)).to(ug.float64)


def grad_pointers(model):
    return [p.grad.data_ptr() for p in model.module.parameters()]


def ddp(optimizer_name, view=False):
    """20 steps of DDP (batch B per rank) against one model trained here on all N*B rows. With
    gradient_as_bucket_view the steps alternate zero_grad's set_to_none, and the gradients stay
    where the first backward put them: in the buckets."""
    rank, n = dist.get_rank(), dist.get_world_size()
    batch = 4
    model = ug.nn.parallel.DistributedDataParallel(mlp(seed=rank), bucket_cap_mb=0.0002,  # 210 bytes: two buckets
                                                   gradient_as_bucket_view=view)
    reference = mlp(seed=0)  # rank 0's initial weights: DDP broadcasts them
    make = {"sgd": lambda p: ug.optim.SGD(p, lr=0.1, momentum=0.9), "adam": lambda p: ug.optim.Adam(p, lr=0.01)}
    opt, ref_opt = make[optimizer_name](model.parameters()), make[optimizer_name](reference.parameters())
    rng = np.random.default_rng(7)  # the same stream on every rank: each takes its rows
    pointers = None
    for step in range(20):
        x_all, y_all = rng.standard_normal((n * batch, 6)), rng.standard_normal((n * batch, 3))
        rows = slice(rank * batch, (rank + 1) * batch)
        opt.zero_grad(set_to_none=not view or step % 2 == 0)
        ug.nn.functional.mse_loss(model(ug.tensor(x_all[rows])), ug.tensor(y_all[rows])).backward()
        if view:
            pointers = pointers or grad_pointers(model)
            assert grad_pointers(model) == pointers
        opt.step()
        ref_opt.zero_grad()
        ug.nn.functional.mse_loss(reference(ug.tensor(x_all)), ug.tensor(y_all)).backward()
        ref_opt.step()
    for p, q in zip(model.module.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=1e-6)
    assert len(model.reducer.bucket_indices) > 1
    if view:  # parameters 3 and 2 share the first bucket, 3's gradient first
        params = list(model.module.parameters())
        assert pointers[2] == pointers[3] + params[3].numel() * 8


def compiled_step(view=False):
    """A training step through DDP under ug.compile (zero_grad, backward, step: each full bucket's
    all_reduce is an op of the program, run at every call) equals one process on the whole batch,
    as the eager DDP step does: two buckets, SGD with momentum and Adam, 10 steps, one trace.
    Inside no_sync (a guard: the program made outside it is not run there) backward accumulates
    locally, and the next synced call averages what accumulated. So does the plain module's
    compiled step that averages with dist.all_reduce itself."""
    rank, n = dist.get_rank(), dist.get_world_size()
    batch = 4
    rng = np.random.default_rng(7)  # the same stream on every rank: each takes its rows

    def batches(count):
        for _ in range(count):
            x_all, y_all = rng.standard_normal((n * batch, 6)), rng.standard_normal((n * batch, 3))
            rows = slice(rank * batch, (rank + 1) * batch)
            yield ug.tensor(x_all[rows]), ug.tensor(y_all[rows]), ug.tensor(x_all), ug.tensor(y_all)

    def reference_step(reference, ref_opt, x_all, y_all):
        ref_opt.zero_grad()
        ug.nn.functional.mse_loss(reference(x_all), y_all).backward()
        ref_opt.step()

    make = {"sgd": lambda p: ug.optim.SGD(p, lr=0.1, momentum=0.9), "adam": lambda p: ug.optim.Adam(p, lr=0.01)}
    for name, optimizer in make.items():
        model = ug.nn.parallel.DistributedDataParallel(mlp(seed=rank), bucket_cap_mb=0.0002,  # two buckets
                                                       gradient_as_bucket_view=view)
        reference = mlp(seed=0)
        opt, ref_opt = optimizer(model.parameters()), optimizer(reference.parameters())

        @ug.compile
        def step(x, y):
            opt.zero_grad()
            ug.nn.functional.mse_loss(model(x), y).backward()
            opt.step()

        for x, y, x_all, y_all in batches(10):
            step(x, y)
            reference_step(reference, ref_opt, x_all, y_all)
        assert step.cache_info().traces == 1, step.cache_info()
        for p, q in zip(model.module.parameters(), reference.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=1e-10, err_msg=name)

    # Accumulation over calls: two local micro-batches under no_sync, then a synced one.
    model = ug.nn.parallel.DistributedDataParallel(mlp(seed=rank), gradient_as_bucket_view=view)
    reference = mlp(seed=0)

    @ug.compile
    def accumulate(x):
        model(x).sum().backward()

    for i, (x, _, x_all, _) in enumerate(batches(3)):
        if i < 2:
            with model.no_sync():
                accumulate(x)
        else:
            accumulate(x)
        reference(x_all).sum().backward()
    assert accumulate.cache_info().traces == 2, accumulate.cache_info()
    for p, q in zip(model.module.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy() / n, rtol=1e-12, atol=1e-12)

    model, reference = mlp(seed=0), mlp(seed=0)
    opt, ref_opt = ug.optim.Adam(model.parameters(), lr=0.01), ug.optim.Adam(reference.parameters(), lr=0.01)

    @ug.compile
    def plain_step(x, y):
        opt.zero_grad()
        ug.nn.functional.mse_loss(model(x), y).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
        opt.step()

    for x, y, x_all, y_all in batches(10):
        plain_step(x, y)
        reference_step(reference, ref_opt, x_all, y_all)
    assert plain_step.cache_info().traces == 1
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=1e-10)


def ddp_no_sync(view=False):
    """Two micro-batches under no_sync then one synced: the gradient of all three, averaged."""
    rank, n = dist.get_rank(), dist.get_world_size()
    model = ug.nn.parallel.DistributedDataParallel(mlp(seed=rank), gradient_as_bucket_view=view)
    reference = mlp(seed=0)
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((n * 2, 6)) for _ in range(3)]
    for i, x in enumerate(xs):
        mine = ug.tensor(x[rank * 2:(rank + 1) * 2])
        if i < 2:
            with model.no_sync():
                model(mine).sum().backward()
            # accumulated locally only: rank 0 and 1 differ
        else:
            out = model(mine)
            with ug.no_grad():  # an evaluation between forward and backward leaves the reduction armed
                model(mine)
            out.sum().backward()
        reference(ug.tensor(x)).sum().backward()
    for p, q in zip(model.module.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy() / n, rtol=1e-12, atol=1e-12)


def ddp_gradients_across_steps(view=False):
    """Averaged gradients are the parameters' own: one held across a zero_grad keeps its step's
    values (with gradient_as_bucket_view, as in torch, it is the bucket and shows the next
    step's), and backward without zero_grad accumulates into the same tensor, as eager does."""
    rank, n = dist.get_rank(), dist.get_world_size()
    model = ug.nn.parallel.DistributedDataParallel(mlp(seed=rank), gradient_as_bucket_view=view)
    reference = mlp(seed=0)
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((n * 2, 6)) for _ in range(4)]

    def step(x):
        model(ug.tensor(x[rank * 2:(rank + 1) * 2])).sum().backward()
        reference(ug.tensor(x)).sum().backward()

    step(xs[0])
    held = [p.grad for p in model.module.parameters()]
    values = [g.numpy().copy() for g in held]
    for p, q in zip(model.module.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy() / n, rtol=1e-12, atol=1e-12)
    for m in (model, reference):
        m.zero_grad()
    step(xs[1])
    for g, v, p in zip(held, values, model.module.parameters()):
        np.testing.assert_array_equal(g.numpy(), p.grad.numpy() if view else v)
    pointers = grad_pointers(model)
    step(xs[2])
    step(xs[3])
    for p, q in zip(model.module.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy() / n, rtol=1e-12, atol=1e-12)
    assert grad_pointers(model) == pointers  # accumulated in place


class TwoHeads(ug.nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = ug.nn.Linear(4, 4)
        self.used = ug.nn.Linear(4, 1)
        self.unused = ug.nn.Linear(4, 1)

    def forward(self, x):
        return self.used(self.trunk(x))


def ddp_unused(view=False):
    rank = dist.get_rank()
    ug.manual_seed(rank)
    model = ug.nn.parallel.DistributedDataParallel(TwoHeads(), find_unused_parameters=True,
                                                   gradient_as_bucket_view=view)
    for _ in range(2):
        model(ug.randn(2, 4)).sum().backward()
    assert model.module.trunk.weight.grad is not None
    assert not model.module.unused.weight.grad.numpy().any()  # no rank's gradient: zeros
    # Two forwards and one backward: the first forward under no_sync, as torch's docs have it.
    model.zero_grad()
    with model.no_sync():
        first = model(ug.randn(2, 4))
    (first.sum() + model(ug.randn(2, 4)).sum()).backward()
    every = [ug.zeros(4, 4) for _ in range(dist.get_world_size())]
    dist.all_gather(every, model.module.trunk.weight.grad)
    assert all(g.equal(every[0]) for g in every), "the gradients were not averaged"
    model(ug.randn(2, 4))
    try:
        model(ug.randn(2, 4))
    except RuntimeError as e:
        assert "forward ran again before a backward" in str(e), e
    else:
        raise AssertionError("no error for two forwards before a backward with find_unused_parameters")
    ug.manual_seed(rank)
    strict = ug.nn.parallel.DistributedDataParallel(TwoHeads())
    strict(ug.randn(2, 4)).sum().backward()
    try:
        strict(ug.randn(2, 4))
    except RuntimeError as e:
        assert "find_unused_parameters=True" in str(e), e
        print("unused-error-ok", flush=True)
    else:
        raise AssertionError("no error for a parameter without gradient")


def timeout(size):
    """The last rank never calls the all_reduce (of `size` float32: 3 through shared memory,
    2**20 through MPI): the others raise within the timeout."""
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank == n - 1:
        time.sleep(4)
        return
    start = time.monotonic()
    try:
        dist.all_reduce(ug.ones(size))
    except RuntimeError as e:
        print(f"rank {rank} after {time.monotonic() - start:.1f} s: {e}", flush=True)
    time.sleep(0.5)  # let the other ranks print before this one's exit ends the job


def mismatch():
    """The last rank calls its all_reduce with another element count, then another op: every
    rank raises at once, naming the rank that differs, and the group still works after."""
    rank, n = dist.get_rank(), dist.get_world_size()
    last = rank == n - 1
    for call in (lambda: dist.all_reduce(ug.ones(4 if last else 3)),
                 lambda: dist.broadcast(ug.ones(3), 0) if last else dist.all_reduce(ug.ones(3))):
        start = time.monotonic()
        try:
            call()
            raise AssertionError("a mismatched collective returned")
        except RuntimeError as e:
            assert time.monotonic() - start < 30, "the mismatch waited for the timeout"
            differ = list(range(n - 1)) if last else [n - 1]
            named = ("rank " if len(differ) == 1 else "ranks ") + ", ".join(map(str, differ))
            assert f"{named} entered another collective at this point" in str(e), str(e)
    t = ug.full((2,), float(rank))
    dist.all_reduce(t)
    assert t.tolist() == [sum(range(n))] * 2


def pmap():
    """ug.pmap with lax collectives over N processes equals ug.vmap over the N rows at once."""
    rank, n = dist.get_rank(), dist.get_world_size()
    every = np.stack([rank_data(r, "float64", shape=(5,)) for r in range(n)])

    def f(x):
        centred = x - ug.lax.pmean(x, "i")
        return centred * ug.lax.psum(x, "i") + ug.lax.axis_index("i"), ug.lax.all_gather(x, "i")

    out, gathered = ug.pmap(f, axis_name="i")(ug.tensor(every[rank:rank + 1]))
    rows = ug.tensor(every)
    expected = ug.vmap(lambda x, i: (x - rows.mean(0)) * rows.sum(0) + i)(rows, ug.arange(n, dtype=ug.float64))
    assert list(out.shape) == [1, 5] and list(gathered.shape) == [1, n, 5]
    np.testing.assert_allclose(out[0].numpy(), expected[rank].numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(gathered[0].numpy(), every)
    # A vmap inside the pmap binding the same name is the innermost binding: its batch.
    inner = ug.pmap(lambda x: ug.vmap(lambda r: ug.lax.psum(r, "i"), axis_name="i")(x), axis_name="i")
    np.testing.assert_allclose(inner(ug.tensor(every[rank:rank + 1]))[0].numpy(), np.full(5, every[rank].sum()),
                               rtol=1e-12)
    # psum and pmean differentiate as JAX's: the vmap over every row is the reference (before:
    # ug.grad through the pmap gave zeros).
    def step(a):
        return (ug.lax.psum(a, "i") * a + ug.lax.pmean(a * a, "i")).sum()

    mine = ug.grad(lambda x: ug.pmap(step, axis_name="i")(x).sum())(ug.tensor(every[rank:rank + 1]))
    whole = ug.grad(lambda x: ug.vmap(step, axis_name="i")(x).sum())(rows)
    np.testing.assert_allclose(mine[0].numpy(), whole[rank].numpy(), rtol=1e-12)
    # A DistributedSampler takes the default group's size and rank, as torch's (before: 1 and 0,
    # every rank reading the whole set).
    assert list(ug.data.DistributedSampler(list(range(2 * n)), shuffle=False)) == list(range(rank, 2 * n, n))
    try:
        ug.lax.psum(ug.ones(1), "i")
    except NameError as e:
        assert "unbound axis name: 'i'" in str(e), e
    else:
        raise AssertionError("psum outside pmap did not raise")


def sync_batch_norm():
    """DDP over a net with SyncBatchNorm, batch B per rank, equals one process with BatchNorm1d
    on all N*B rows: outputs, parameters and running statistics after 20 SGD steps."""
    rank, n = dist.get_rank(), dist.get_world_size()

    def net(norm):
        ug.manual_seed(0)
        return ug.nn.Sequential(ug.nn.Linear(5, 4), norm(4), ug.nn.Tanh(), ug.nn.Linear(4, 2)).to(ug.float64)

    model = ug.nn.parallel.DistributedDataParallel(net(ug.nn.SyncBatchNorm))
    reference = net(ug.nn.BatchNorm1d)
    opt, ref_opt = ug.optim.SGD(model.parameters(), lr=0.1), ug.optim.SGD(reference.parameters(), lr=0.1)
    rng = np.random.default_rng(11)
    batch = 3
    for _ in range(20):
        x_all, y_all = rng.standard_normal((n * batch, 5)), rng.standard_normal((n * batch, 2))
        rows = slice(rank * batch, (rank + 1) * batch)
        opt.zero_grad()
        out = model(ug.tensor(x_all[rows]))
        ug.nn.functional.mse_loss(out, ug.tensor(y_all[rows])).backward()
        opt.step()
        ref_opt.zero_grad()
        ref_out = reference(ug.tensor(x_all))
        ug.nn.functional.mse_loss(ref_out, ug.tensor(y_all)).backward()
        ref_opt.step()
        np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy()[rows], rtol=0, atol=1e-6)
    for p, q in zip(model.module.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=1e-6)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(model.module[1], name).numpy(), getattr(reference[1], name).numpy(),
                                   rtol=0, atol=1e-9)
    # float32 rows far from zero, against float64 statistics of the whole batch. The mean of 4B
    # values near 1000 is off by a few ulps of 1000 (~1e-4) whatever the order, which bounds the
    # outputs' error here; E[x^2] - E[x]^2 would miss var by ulps of 1e6 (0.06 each).
    every = 1000 + rng.standard_normal((n * 4 * batch, 3))
    rows = slice(rank * 4 * batch, (rank + 1) * 4 * batch)
    norm = ug.nn.SyncBatchNorm(3)
    out = norm(ug.tensor(every[rows], dtype=ug.float32))
    mean, var = every.mean(0), every.var(0)
    np.testing.assert_allclose(out.detach().numpy(), ((every - mean) / np.sqrt(var + 1e-5))[rows], rtol=0, atol=2e-3)
    np.testing.assert_allclose(norm.running_var.numpy(), 0.9 + 0.1 * every.var(0, ddof=1), rtol=1e-4)


def killed():
    """The last rank dies (SIGKILL) in the middle of training: no rank may hang."""
    rank, n = dist.get_rank(), dist.get_world_size()
    model = ug.nn.parallel.DistributedDataParallel(mlp(seed=rank))
    for step in range(1000):
        if rank == n - 1 and step == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        model(ug.randn(4, 6, dtype=ug.float64)).sum().backward()
    print(f"rank {rank} finished 1000 steps", flush=True)


def main():
    scenario = sys.argv[1]
    dist.init_process_group("mpi", timeout=1.5 if scenario.startswith(("timeout", "killed")) else 60)
    # A DDP scenario ending in _view runs with gradient_as_bucket_view=True.
    view = scenario.endswith("_view")
    {"collectives": collectives, "all_reduce_sizes": all_reduce_sizes, "rooted_and_all_to_all": rooted_and_all_to_all,
     "ddp_sgd": lambda: ddp("sgd", view), "ddp_adam": lambda: ddp("adam", view),
     "ddp_no_sync": lambda: ddp_no_sync(view), "ddp_unused": lambda: ddp_unused(view), "timeout": lambda: timeout(3),
     "timeout_mpi": lambda: timeout(2**20), "killed": killed, "pmap": pmap,
     "sync_batch_norm": sync_batch_norm,
     "ddp_gradients_across_steps": lambda: ddp_gradients_across_steps(view),
     "mismatch": mismatch, "compiled_step": lambda: compiled_step(view)}[scenario.removesuffix("_view")]()
    if not scenario.startswith(("timeout", "killed")):
        dist.barrier()
        print(f"rank {dist.get_rank()} ok", flush=True)
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
