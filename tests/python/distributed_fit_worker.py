"""One rank of a test_distributed.py job about training loops (run under mpirun): `python
distributed_fit_worker.py SCENARIO [DIR] [...]`: Keras fit under ug.distribute strategies, and a
torch-style loop checkpointing every rank's RNG and sampler state. Each rank checks itself and
prints "rank R ok"; files go to DIR."""
import os
import signal
import sys
from pathlib import Path

import numpy as np

import unigrad as ug
import unigrad.distributed as dist

SAMPLES = 48  # divisible by the global batches of 2 and 3 ranks of 4 rows: 8 and 12


def data():
    rng = np.random.default_rng(3)
    return ug.tensor(rng.standard_normal((SAMPLES, 6))), ug.tensor(rng.integers(0, 3, SAMPLES))


def mlp(seed, dropout=0.0):
    ug.manual_seed(seed)
    layers = [ug.nn.Linear(6, 16), ug.nn.Tanh()] + ([ug.nn.Dropout(dropout)] if dropout else []) + [ug.nn.Linear(16, 3)]
    return ug.nn.Sequential(*layers).to(ug.float64)


def row_recorder():
    """(seen, metric): a metric that appends the targets it is given (rows' indices) to seen."""
    seen = []

    def record(output, target):
        seen.extend(int(v) for v in target.numpy().ravel())
        return ug.zeros((), dtype=ug.float64)

    record.__name__ = "seen"
    return seen, record


def fit_equals_one_process(strategy_name, optimizer, jit_compile=False):
    """fit under the strategy with global batch N*B (B per rank) equals fit in one process on
    the same global batches: parameters, and the logged metrics on every rank (validation_split
    leaves 36 training rows: equal shards on 2 and 3 ranks, 2 rows a rank in the last batch of 2).
    With jit_compile=True each rank's step is one program, DDP's all-reduces in it."""
    strategy = {"mirrored": ug.distribute.MirroredStrategy,
                "multi_worker": ug.distribute.MultiWorkerMirroredStrategy,
                "experimental": ug.distribute.experimental.MultiWorkerMirroredStrategy}[strategy_name]()
    assert dist.is_initialized()  # the strategy joined the job's process group
    rank, n = dist.get_rank(), strategy.num_replicas_in_sync
    assert n == dist.get_world_size()
    x, y = data()
    with strategy.scope():
        assert ug.distribute.get_strategy() is strategy
        model = mlp(seed=rank)  # DDP broadcasts rank 0's weights
        model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                      jit_compile=jit_compile)
    assert not ug.distribute.has_strategy()
    history = model.fit(x, y, batch_size=4 * n, epochs=3, shuffle=False, verbose=0, validation_split=0.25)
    reference = mlp(seed=0)
    reference.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    expected = reference.fit(x, y, batch_size=4 * n, epochs=3, shuffle=False, verbose=0, validation_split=0.25)
    # float64: the replicas' mean gradients and the whole batch's differ by rounding only.
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=1e-10)
    assert history.history.keys() == expected.history.keys()
    for key, values in expected.history.items():
        np.testing.assert_allclose(history.history[key], values, rtol=1e-12, atol=0, err_msg=key)


def custom_loop_equals_one_process(optimizer):
    """TensorFlow's custom loop over a strategy (the tf.distribute tutorial's): each global batch
    split over the replicas (experimental_distribute_dataset; 4N+1 rows, so the first replica
    takes one more), strategy.run(step) with the loss averaged over the global batch
    (compute_average_loss) and apply_gradients summing the gradients over the replicas,
    strategy.reduce(SUM) of the replicas' losses: the parameters and losses of one process on
    the global batches. A model made with each rank's own seed raises at its first step (its
    gradients came from other weights), on every rank."""
    strategy = ug.distribute.MirroredStrategy()
    rank, n = dist.get_rank(), strategy.num_replicas_in_sync
    x, y = data()
    size = 4 * n + 1
    batches = [(x[i:i + size], y[i:i + size]) for i in range(0, SAMPLES, size)]

    def step(model, opt, xb, yb, global_size):
        with ug.GradientTape() as tape:
            per_example = ug.nn.functional.cross_entropy(model(xb), yb, reduction="none")
            loss = ug.nn.compute_average_loss(per_example, global_batch_size=global_size)
        params = list(model.parameters())
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    def optimizer_for():
        return ug.optimizers.SGD(0.1, momentum=0.9) if optimizer == "sgd" else ug.optimizers.Adam(0.01)

    with strategy.scope():
        model, opt = mlp(seed=rank), optimizer_for()
    try:
        strategy.run(step, args=(model, opt, x[:4], y[:4], 4 * n))
        raise AssertionError("no error for replicas that start from other weights")
    except RuntimeError as e:
        assert "the replicas' variables differ at their first step" in str(e), e
    with strategy.scope():
        model, opt = mlp(seed=0), optimizer_for()
    losses = []
    for (xb, _), (xl, yl) in zip(batches, strategy.experimental_distribute_dataset(batches)):
        rows = xb.shape[0]  # the last batch is shorter
        assert xl.shape[0] == rows // n + (1 if rank < rows % n else 0)
        per_replica = strategy.run(step, args=(model, opt, xl, yl, xb.shape[0]))
        losses.append(float(strategy.reduce(ug.distribute.ReduceOp.SUM, per_replica, axis=None)))
    reference, ref_opt = mlp(seed=0), optimizer_for()
    want = [float(step(reference, ref_opt, xb, yb, xb.shape[0])) for xb, yb in batches]
    # float64: the replicas' summed gradients and the whole batch's differ by rounding only
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(losses, want, rtol=1e-12)
    # reduce with an axis: MEAN over every replica's rows, SUM over them
    local = next(iter(strategy.experimental_distribute_dataset([x[:size]])))
    np.testing.assert_allclose(strategy.reduce("MEAN", local, axis=0).numpy(), x[:size].mean(0).numpy(), rtol=1e-12)
    np.testing.assert_allclose(strategy.reduce("SUM", local, axis=0).numpy(), x[:size].sum(0).numpy(), rtol=1e-12)
    # a Python number (a step's loss.item()) reduces as a tensor does (before: each rank's own)
    assert float(strategy.reduce("SUM", 1.5 * (rank + 1), axis=None)) == 1.5 * n * (n + 1) / 2
    assert float(strategy.reduce("MEAN", rank, axis=None)) == (n - 1) / 2
    assert strategy.experimental_local_results(local) == (local,)


def custom_loop_loss_scaled():
    """A loss-scaled custom loop over a strategy: an inf in one replica's gradients only (rank
    1's loss poisoned at step 2) skips the step on every replica and halves every replica's
    scale, since apply_gradients sums the gradients over the replicas before the check; the
    replicas' weights stay equal."""
    strategy = ug.distribute.MirroredStrategy()
    rank = dist.get_rank()
    x, y = data()
    with strategy.scope():
        model = mlp(seed=0)
        opt = ug.optimizers.LossScaleOptimizer(ug.optimizers.SGD(0.1), initial_scale=8.0, dynamic_growth_steps=3)

    def step(xb, yb, poison):
        with ug.GradientTape() as tape:
            per_example = ug.nn.functional.cross_entropy(model(xb), yb, reduction="none") * poison
            scaled = opt.scale_loss(ug.nn.compute_average_loss(per_example))
        params = list(model.parameters())
        opt.apply_gradients(zip(tape.gradient(scaled, params), params))

    scales = []
    for i in range(5):
        rows = slice(8 * i, 8 * i + 8)
        xl, yl = next(iter(strategy.experimental_distribute_dataset([(x[rows], y[rows])])))
        strategy.run(step, args=(xl, yl, float("inf") if (i == 2 and rank == 1) else 1.0))
        scales.append(float(opt.dynamic_scale))
    assert scales == [8.0, 8.0, 4.0, 4.0, 4.0], scales  # skipped at 2; 3 finite steps grow it after
    assert opt.iterations == 4
    weights = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    gathered = [ug.zeros(weights.size, dtype=ug.float64) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, ug.tensor(weights))
    assert all(np.array_equal(g.numpy(), weights) for g in gathered)


def custom_loop_compiled():
    """The tutorial's compiled form, @tf.function around strategy.run and strategy.reduce: the
    program runs the collectives (the gradients' sum, the losses' reduce) at every call, as the
    eager loop does. Batches of 4N+1 rows, then one of 4N: rank 0 (5 rows, then 4) traces again
    where the other ranks (4 rows each time) run their program, so ranks trace at different
    calls. Collectives a program cannot replay raise."""
    strategy = ug.distribute.MirroredStrategy()
    n = strategy.num_replicas_in_sync
    x, y = data()
    size = 4 * n + 1
    bounds = [(0, size), (size, 2 * size), (2 * size, 2 * size + 4 * n)]
    batches = [(x[a:b], y[a:b]) for a, b in bounds]

    def run(compiled):
        with strategy.scope():
            model, opt = mlp(seed=0), ug.optimizers.Adam(0.01)

        def step(xb, yb):
            with ug.GradientTape() as tape:
                per_example = ug.nn.functional.cross_entropy(model(xb), yb, reduction="none")
                loss = ug.nn.compute_average_loss(per_example, global_batch_size=size)  # TF's constant
            params = list(model.parameters())
            opt.apply_gradients(zip(tape.gradient(loss, params), params))
            return loss

        def distributed_step(xb, yb):
            return strategy.reduce("SUM", strategy.run(step, args=(xb, yb)), axis=None)

        distributed_step = ug.function(distributed_step) if compiled else distributed_step
        losses = [float(distributed_step(xl, yl)) for _ in range(2)
                  for xl, yl in strategy.experimental_distribute_dataset(batches)]
        return losses, [p.detach().numpy() for p in model.parameters()]

    (eager_losses, eager), (losses, compiled) = run(False), run(True)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-12)
    for a, b in zip(compiled, eager):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    try:
        ug.jit(lambda t: dist.all_gather([ug.zeros_like(t) for _ in range(n)], t) or t * 2)(ug.ones(2))
        raise AssertionError("all_gather was compiled")
    except RuntimeError as e:
        assert "[all_gather] inside a compiled function" in str(e), e


def fit_shards(folder):
    """With shuffle, each epoch every rank trains on its own shard: together the whole data set
    once, in an order that changes per epoch; for arrays (fit shards them) and for a DataLoader
    over a DistributedSampler (fit sets its epoch). Only rank 0 prints and writes files."""
    strategy = ug.distribute.MirroredStrategy()
    rank, n = dist.get_rank(), strategy.num_replicas_in_sync
    x, _ = data()
    index = ug.arange(SAMPLES, dtype=ug.float64)  # the target is the sample's index: a metric records it
    seen, record = row_recorder()
    with strategy.scope():
        model = mlp(seed=0)
        model.compile(optimizer="sgd", loss=lambda out, t: ((out[:, 0] - t) ** 2).mean() * 0, metrics=[record])
    folder = Path(folder)

    class Marker(ug.callbacks.Callback):  # a Python callback that asks to run on rank 0 alone
        def chief_only(self):
            return True

        def on_train_end(self, logs):
            (folder / f"marker{rank}").touch()

    callbacks = [Marker(), ug.callbacks.CSVLogger(str(folder / f"log{rank}.csv")),
                 ug.callbacks.TensorBoard(str(folder / f"tensorboard{rank}")),
                 ug.callbacks.ModelCheckpoint(str(folder / f"weights{rank}.safetensors"), save_best_only=False,
                                              monitor="loss"),
                 # The whole state, collective: every rank calls it, rank 0 writes every rank's RNG state.
                 ug.callbacks.ModelCheckpoint(str(folder / "state.safetensors"), save_weights_only=False)]
    dataset = ug.data.TensorDataset(x, index)
    loader = ug.data.DataLoader(dataset, batch_size=4,
                                sampler=ug.data.DistributedSampler(dataset, num_replicas=n, rank=rank, seed=1))
    for fit in (lambda: model.fit(x, index, batch_size=4 * n, epochs=2, verbose=2, callbacks=callbacks),
                lambda: model.fit(loader, epochs=2, verbose=0)):
        seen.clear()
        fit()
        mine = ug.tensor(seen, dtype=ug.int64).reshape(2, -1)
        every = [ug.zeros_like(mine) for _ in range(n)]
        dist.all_gather(every, mine)
        orders = np.stack([e.numpy() for e in every], axis=1)  # [epoch, rank, sample]
        for epoch in range(2):
            assert sorted(orders[epoch].ravel().tolist()) == list(range(SAMPLES)), orders[epoch]
        assert not np.array_equal(orders[0], orders[1])  # reshuffled


def gather_and_input_pipelines():
    """strategy.gather joins the replicas' values along an axis in replica order, their sizes along
    it differing (replica r gives r + 1 rows), against NumPy; a shape that differs elsewhere raises
    on every replica. distribute_datasets_from_function gives dataset_fn this replica's pipeline
    and per-replica batch size, and its dataset's batches go to the step as they are."""
    strategy = ug.distribute.MirroredStrategy()
    rank, n = dist.get_rank(), strategy.num_replicas_in_sync

    def rows(r):
        return np.arange(3 * (r + 1), dtype=np.float64).reshape(r + 1, 3) + 100 * r

    got = strategy.gather({"x": ug.tensor(rows(rank)), "steps": 7}, axis=0)
    np.testing.assert_array_equal(got["x"].numpy(), np.concatenate([rows(r) for r in range(n)], 0))
    assert got["steps"] == 7
    columns = strategy.gather(ug.tensor(rows(rank).T.copy()), axis=-1)
    np.testing.assert_array_equal(columns.numpy(), np.concatenate([rows(r).T for r in range(n)], 1))
    try:
        strategy.gather(ug.zeros(2, rank + 1), axis=0)
        raise AssertionError("replicas' shapes that differ off the axis were gathered")
    except ValueError as e:
        assert "only the sizes along axis 0 may differ" in str(e), e

    contexts = []

    def dataset_fn(context):
        contexts.append(context)
        per_replica = context.get_per_replica_batch_size(4 * n)
        mine = np.arange(8 * n, dtype=np.float64)[context.input_pipeline_id::context.num_input_pipelines]
        return [ug.tensor(mine[i:i + per_replica]) for i in range(0, len(mine), per_replica)]

    batches = list(strategy.distribute_datasets_from_function(dataset_fn))
    (context,) = contexts
    assert (context.num_input_pipelines, context.input_pipeline_id, context.num_replicas_in_sync) == (n, rank, n)
    assert [b.numpy().tolist() for b in batches] == [[rank + n * i for i in range(4)],
                                                     [rank + n * i for i in range(4, 8)]]
    total = strategy.reduce("SUM", strategy.run(lambda b: b.sum(), args=(batches[0],)), axis=None)
    assert total.item() == sum(range(4 * n))
    try:
        context.get_per_replica_batch_size(4 * n + 1)
        raise AssertionError("an uneven global batch was split")
    except ValueError as e:
        assert f"not divisible by num_replicas_in_sync {n}" in str(e), e


def fit_errors():
    strategy = ug.distribute.MirroredStrategy()
    n = strategy.num_replicas_in_sync
    with strategy.scope():
        model = mlp(seed=0)
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    x, y = data()
    try:
        model.fit(x, y, batch_size=4 * n + 1, verbose=0)
        raise AssertionError("an uneven global batch was accepted")
    except ValueError as e:
        assert str(e) == (f"[fit] under a strategy batch_size is the global batch, split evenly over the {n} "
                          f"replicas: {4 * n + 1} is not a multiple of {n}"), e
    try:
        ug.distribute.MirroredStrategy(devices=["/cpu:0"] * (n + 1))
        raise AssertionError("more devices than processes were accepted")
    except ValueError as e:
        assert "one replica is one process here" in str(e), e


def evaluate_shards():
    """evaluate(x, y) and fit's validation_data under a strategy: each rank evaluates its own
    contiguous share (none counted twice, even when the shares are uneven or a rank has none)
    and every rank logs the figures of one process evaluating the whole set."""
    strategy = ug.distribute.MirroredStrategy()
    rank, n = dist.get_rank(), strategy.num_replicas_in_sync
    x, y = data()
    index = ug.arange(SAMPLES, dtype=ug.float64)  # as a target: a metric records which rows it saw
    seen, record = row_recorder()
    with strategy.scope():
        model = mlp(seed=0)
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        rows_seen = mlp(seed=0)
        rows_seen.compile(optimizer="sgd", loss=lambda out, t: (out[:, 0] * 0).mean(), metrics=[record])
    reference = mlp(seed=0)
    reference.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    for rows in (SAMPLES - 1, 2):  # uneven shares; fewer rows than 3 ranks
        seen.clear()
        rows_seen.evaluate(x[:rows], index[:rows], batch_size=8, verbose=0)
        assert seen == list(range(rows * rank // n, rows * (rank + 1) // n)), seen
        got = model.evaluate(x[:rows], y[:rows], batch_size=8, verbose=0, return_dict=True)
        expected = reference.evaluate(x[:rows], y[:rows], batch_size=8, verbose=0, return_dict=True)
        for key in ("loss", "accuracy"):
            np.testing.assert_allclose(got[key], expected[key], rtol=1e-12, atol=0, err_msg=key)
    history = model.fit(x[:24], y[:24], batch_size=4 * n, epochs=2, shuffle=False, verbose=0,
                        validation_data=(x[24:], y[24:]))
    expected = reference.fit(x[:24], y[:24], batch_size=4 * n, epochs=2, shuffle=False, verbose=0,
                             validation_data=(x[24:], y[24:]))
    for key in ("val_loss", "val_accuracy"):
        np.testing.assert_allclose(history.history[key], expected.history[key], rtol=1e-12, atol=0, err_msg=key)

STEPS_PER_CHECKPOINT = 4
EPOCHS = 3


def resume(folder, kill_at=None):
    """A torch-style DDP loop with dropout (each rank its own RNG stream) and a shuffling
    DistributedSampler, checkpointing every STEPS_PER_CHECKPOINT batches with every rank's RNG
    and sampler state; it resumes from the checkpoint when there is one. With kill_at
    "EPOCH,STEP", rank 1 kills itself (SIGKILL) at the start of that batch; with
    "EPOCH,STEP,save", just before that batch's checkpoint (rank 0 is then inside the save)."""
    folder = Path(folder)
    dist.init_process_group("mpi", timeout=10)
    rank, n = dist.get_rank(), dist.get_world_size()
    ug.manual_seed(100 + rank)
    model = ug.nn.parallel.DistributedDataParallel(mlp(seed=100 + rank, dropout=0.3))
    opt = ug.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = data()
    dataset = ug.data.TensorDataset(x, y)
    sampler = ug.data.DistributedSampler(dataset, num_replicas=n, rank=rank, shuffle=True, seed=7)
    loader = ug.data.DataLoader(dataset, batch_size=4, sampler=sampler, seed=7)  # no draw from the global RNG
    checkpoint = folder / "checkpoint.safetensors"
    start_epoch = start_step = 0
    if checkpoint.exists():
        try:
            start_epoch, start_step, _ = ug.train.load_checkpoint(checkpoint, model=model.module, optimizer=opt,
                                                                  sampler=sampler, group=dist.group.WORLD)
        except ValueError as e:
            print(f"rank {rank} cannot resume: {e}", flush=True)
            return
        assert sampler.epoch == start_epoch
    kill = tuple(kill_at.split(",")) if kill_at else ()
    kill_step, kill_save = tuple(int(v) for v in kill[:2]), kill[2:] == ("save",)
    for epoch in range(start_epoch, EPOCHS):
        sampler.set_epoch(epoch)
        for step, (xb, yb) in enumerate(loader):
            if epoch == start_epoch and step < start_step:
                continue  # done before the checkpoint
            if rank == 1 and (epoch, step) == kill_step and not kill_save:
                os.kill(os.getpid(), signal.SIGKILL)
            opt.zero_grad()
            ug.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
            if (step + 1) % STEPS_PER_CHECKPOINT == 0:
                if rank == 1 and (epoch, step) == kill_step and kill_save:
                    os.kill(os.getpid(), signal.SIGKILL)
                ug.train.save_checkpoint(checkpoint, model=model.module, optimizer=opt, epoch=epoch, step=step + 1,
                                         sampler=sampler, group=dist.group.WORLD)
    if rank == 0:
        ug.save(model.module.state_dict(), str(folder / "final.safetensors"))
    # Every rank's RNG went its own way (dropout): the checkpoint must have kept each.
    states = [ug.zeros(2, dtype=ug.int64) for _ in range(n)]
    dist.all_gather(states, ug.get_rng_state())
    assert len({tuple(s.tolist()) for s in states}) == n


def main():
    scenario, args = sys.argv[1], sys.argv[2:]
    run = {"fit_mirrored_sgd": lambda: fit_equals_one_process("mirrored", "sgd"),
           "fit_mirrored_adam": lambda: fit_equals_one_process("mirrored", "adam"),
           "fit_multi_worker_sgd": lambda: fit_equals_one_process("multi_worker", "sgd"),
           "fit_experimental_sgd": lambda: fit_equals_one_process("experimental", "sgd"),
           "fit_mirrored_adam_jit": lambda: fit_equals_one_process("mirrored", "adam", jit_compile=True),
           "fit_shards": lambda: fit_shards(*args), "fit_errors": fit_errors,
           "gather_and_input_pipelines": gather_and_input_pipelines,
           "evaluate_shards": evaluate_shards,
           "custom_loop_sgd": lambda: custom_loop_equals_one_process("sgd"),
           "custom_loop_adam": lambda: custom_loop_equals_one_process("adam"),
           "custom_loop_compiled": custom_loop_compiled, "custom_loop_loss_scaled": custom_loop_loss_scaled,
           "resume": lambda: resume(*args)}
    run[scenario]()
    dist.barrier()
    print(f"rank {dist.get_rank()} ok", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
