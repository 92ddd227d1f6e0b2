"""ug.distributed and DistributedDataParallel across processes: each test runs
distributed_worker.py under mpirun (2 or 3 ranks on loopback, oversubscribed on a 2-core
machine) and the ranks check themselves against NumPy or a single-process run."""
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import unigrad

MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(MPIRUN is None, reason="mpirun not found (Debian: openmpi-bin, libopenmpi-dev)")
WORKER = Path(__file__).with_name("distributed_worker.py")
FIT_WORKER = Path(__file__).with_name("distributed_fit_worker.py")
PYTHONPATH = str(Path(unigrad.__file__).resolve().parent.parent)  # the unigrad under test, in every rank


def environment():
    # Root may run mpirun only when told so; one kernel thread per rank, as on a real cluster.
    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONPATH=PYTHONPATH,
                OMP_NUM_THREADS="1", UG_NUM_THREADS="1")


def mpirun(n, scenario, launcher=(), options=(), timeout=60, worker=WORKER, args=()):
    cmd = [*launcher, MPIRUN, "-n", str(n), "--oversubscribe", *options, "-x", "PYTHONPATH", sys.executable,
           str(worker), scenario, *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=environment(), timeout=timeout)


def assert_ok(proc, n):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # mpirun forwards each rank's output in chunks: lines of two ranks may run together.
    assert sorted(int(r) for r in re.findall(r"rank (\d+) ok", proc.stdout)) == list(range(n)), proc.stdout


@pytest.mark.parametrize("n", [2, 3])
def test_collectives_match_numpy(n):
    assert_ok(mpirun(n, "collectives"), n)


@pytest.mark.parametrize("n", [2, 3])
def test_rooted_collectives_all_to_all_and_objects_match_numpy(n):
    assert_ok(mpirun(n, "rooted_and_all_to_all"), n)


@pytest.mark.parametrize("n", [2, 3])
def test_all_reduce_of_every_size_matches_numpy_bit_for_bit_on_every_rank(n):
    assert_ok(mpirun(n, "all_reduce_sizes"), n)


# "_view": gradient_as_bucket_view=True, every .grad a view of its bucket.
VIEW = pytest.mark.parametrize("view", ["", "_view"])


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@VIEW
def test_ddp_equals_one_process_with_the_whole_batch(n, optimizer, view):
    assert_ok(mpirun(n, f"ddp_{optimizer}{view}"), n)


@pytest.mark.parametrize("n", [2, 3])
def test_sync_batch_norm_equals_batch_norm_on_the_whole_batch(n):
    assert_ok(mpirun(n, "sync_batch_norm"), n)


@pytest.mark.parametrize("n", [2, 3])
@VIEW
def test_a_compiled_ddp_step_equals_one_process_with_the_whole_batch(n, view):
    assert_ok(mpirun(n, f"compiled_step{view}"), n)


@VIEW
def test_ddp_no_sync_accumulates_then_averages(view):
    assert_ok(mpirun(2, f"ddp_no_sync{view}"), 2)


@pytest.mark.parametrize("n", [2, 3])
@VIEW
def test_ddp_gradients_across_steps_are_kept_and_accumulate(n, view):
    assert_ok(mpirun(n, f"ddp_gradients_across_steps{view}"), n)


@VIEW
def test_ddp_find_unused_parameters(view):
    proc = mpirun(2, f"ddp_unused{view}")
    assert_ok(proc, 2)
    assert proc.stdout.count("unused-error-ok") == 2


@pytest.mark.parametrize("n", [2, 3])
def test_pmap_with_lax_collectives_equals_vmap(n):
    assert_ok(mpirun(n, "pmap"), n)


@pytest.mark.parametrize("scenario", ["timeout", "timeout_mpi"])
def test_a_missing_rank_is_a_clear_error_not_a_hang(scenario):
    proc = mpirun(3, scenario, timeout=30)
    for rank in (0, 1):
        assert (f"[all_reduce] timed out after 1.5 s on rank {rank} (group of ranks 0, 1, 2): rank 2 did not arrive"
                in proc.stdout), proc.stdout + proc.stderr


@pytest.mark.parametrize("n", [2, 3])
def test_ranks_calling_different_collectives_fail_at_once_naming_them(n):
    assert_ok(mpirun(n, "mismatch"), n)


def test_a_rank_killed_mid_training_ends_the_job():
    """kill -9 of one rank during DDP training: the others do not hang (mpirun ends them, or
    their next collective times out), and none claims to have finished."""
    proc = mpirun(3, "killed", timeout=30)
    assert proc.returncode != 0
    assert "exited on signal 9" in proc.stdout + proc.stderr
    assert "finished 1000 steps" not in proc.stdout


# MultiWorkerMirroredStrategy (and its tf.distribute.experimental name) is MirroredStrategy
# here: one run each.
@pytest.mark.parametrize("n, strategy, optimizer", [(2, "mirrored", "sgd"), (3, "mirrored", "sgd"),
                                                    (2, "mirrored", "adam"), (3, "mirrored", "adam"),
                                                    (2, "multi_worker", "sgd"), (2, "experimental", "sgd"),
                                                    (2, "mirrored", "adam_jit"), (3, "mirrored", "adam_jit")])
def test_fit_under_a_strategy_equals_one_process_with_the_global_batch(n, strategy, optimizer):
    """model.compile inside strategy.scope(), fit with global batch N*B: the parameters of one
    process fitting batches of N*B, and on every rank its logged loss and accuracy; "_jit":
    compiled with jit_compile=True."""
    assert_ok(mpirun(n, f"fit_{strategy}_{optimizer}", worker=FIT_WORKER), n)


@pytest.mark.parametrize("n", [2, 3])
def test_fit_shards_the_data_and_only_rank_0_prints_and_writes(n, tmp_path):
    proc = mpirun(n, "fit_shards", worker=FIT_WORKER, args=[tmp_path])
    assert_ok(proc, n)
    assert proc.stdout.count("Epoch 1/2") == 1 and proc.stdout.count("Epoch 2/2") == 1, proc.stdout
    assert sorted(os.listdir(tmp_path)) == ["log0.csv", "marker0", "state.safetensors", "tensorboard0",
                                            "weights0.safetensors"]
    state = unigrad.load(str(tmp_path / "state.safetensors"))
    assert state["epoch"] == 2 and state["ranks"]["world_size"] == n and state["ranks"]["rng"].shape == (n, 2)


@pytest.mark.parametrize("n", [2, 3])
def test_evaluation_under_a_strategy_shards_the_samples_and_agrees_with_one_process(n):
    assert_ok(mpirun(n, "evaluate_shards", worker=FIT_WORKER), n)


@pytest.mark.parametrize("n", [2, 3])
def test_strategy_gather_and_input_pipelines_as_tensorflow(n):
    assert_ok(mpirun(n, "gather_and_input_pipelines", worker=FIT_WORKER), n)


def test_fit_under_a_strategy_refuses_what_it_cannot_do():
    assert_ok(mpirun(2, "fit_errors", worker=FIT_WORKER), 2)


def test_a_killed_run_resumes_from_its_checkpoint_bit_identically(tmp_path):
    """kill -9 of rank 1 mid-epoch, after a checkpoint: the job ends, the checkpoint is whole,
    and resuming with the same world size ends with the parameters of an uninterrupted run,
    bit for bit; a rank killed during a collective save leaves the previous checkpoint as it
    was. Another world size cannot resume."""
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    straight.mkdir()
    killed.mkdir()
    assert_ok(mpirun(2, "resume", worker=FIT_WORKER, args=[straight]), 2)
    proc = mpirun(2, "resume", worker=FIT_WORKER, args=[killed, "1,4"])  # epoch 1, before its 5th batch
    assert proc.returncode != 0 and "exited on signal 9" in proc.stdout + proc.stderr
    assert sorted(os.listdir(killed)) == ["checkpoint.safetensors"]  # no temporary file, no final weights
    saved = unigrad.load(str(killed / "checkpoint.safetensors"))
    assert (saved["epoch"], saved["step"], saved["ranks"]["world_size"]) == (1, 4, 2)
    assert saved["ranks"]["rng"].shape == (2, 2) and saved["ranks"]["sampler"]["rank"].tolist() == [0, 1]
    # Killed again, now while rank 0 is in the collective save of epoch 2: the file keeps epoch 1's state.
    proc = mpirun(2, "resume", worker=FIT_WORKER, args=[killed, "2,3,save"])
    assert proc.returncode != 0 and "exited on signal 9" in proc.stdout + proc.stderr
    assert sorted(os.listdir(killed)) == ["checkpoint.safetensors"]
    saved = unigrad.load(str(killed / "checkpoint.safetensors"))
    assert (saved["epoch"], saved["step"]) == (1, 4)
    assert_ok(mpirun(2, "resume", worker=FIT_WORKER, args=[killed]), 2)
    assert (straight / "final.safetensors").read_bytes() == (killed / "final.safetensors").read_bytes()
    proc = mpirun(3, "resume", worker=FIT_WORKER, args=[killed])
    assert_ok(proc, 3)
    assert proc.stdout.count("it was written by a job of 2 ranks and this one has 3: a distributed checkpoint holds "
                             "each rank's RNG and sampler state, so it resumes only with the world size it was saved "
                             "with") == 3, proc.stdout


UG = os.environ.get("UG_CLI", str(Path(__file__).resolve().parents[2] / "build" / "cli" / "ug"))


def test_ug_launch_prints_the_mpirun_line():
    r = subprocess.run([UG, "launch", "-n", "3", "--python", "py", "--hostfile", "my hosts", "--dry-run", "train.py",
                        "--lr", "0.1", "it's"], capture_output=True, text=True)
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n") == [" ".join(["mpirun", "-n", "3", *root, "--hostfile", "'my hosts'", "py", "train.py",
                                              "--lr", "0.1", "'it'\\''s'"]), ""]
    r = subprocess.run([UG, "launch", "train.py"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("ug launch: -n N (the number of processes) is required")


def test_ug_launch_runs_a_job():
    env = dict(environment(), UG_PYTHON=sys.executable)
    proc = subprocess.run([UG, "launch", "-n", "3", str(WORKER), "ddp_sgd"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert_ok(proc, 3)


def tiny_image_files(folder):
    """256 training and 64 test images of 28x28 with labels, as NPY files: `ug train`'s data flags."""
    rng = np.random.default_rng(5)
    flags = []
    for split, count in (("train", 256), ("test", 64)):
        labels = rng.integers(0, 10, count)
        # Each class a brighter patch at its own place, so that a few steps learn something.
        images = rng.integers(0, 64, (count, 28, 28)).astype(np.uint8)
        for i, c in enumerate(labels):
            images[i, 2 * c:2 * c + 6, 4:20] += 150
        for kind, array in (("images", images), ("labels", labels.astype(np.int64))):
            np.save(folder / f"{split}-{kind}.npy", array)
            flags += [f"--{split}-{kind}", str(folder / f"{split}-{kind}.npy")]
    return flags


def test_ug_train_nproc_trains_the_global_batch_data_parallel(tmp_path):
    """`ug train --nproc 2 --batch-size 32` reruns itself under mpirun: 2 processes of 16
    samples each per step train what one process does with batches of 32 (same logs, same
    weights up to rounding); rank 0 alone prints and writes; --resume continues bit-identically."""
    data = [*tiny_image_files(tmp_path), "--epochs", "2", "--batch-size", "32", "--optimizer", "sgd", "--lr", "0.05",
            "--workers", "0", "--threads", "1", "--verbose", "2"]

    def train(out, *flags):
        return subprocess.run([UG, "train", *data, "--out", str(tmp_path / out), *flags], capture_output=True,
                              text=True, env=environment(), timeout=120)

    one, two = train("one"), train("two", "--nproc", "2")
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stdout + two.stderr
    assert "on 2 processes, 16 samples each per step" in two.stdout
    for text in ("training mlp", "Epoch 1/2", "Epoch 2/2", "test accuracy", "wrote "):
        assert two.stdout.count(text) == 1, two.stdout
    logs = [np.genfromtxt(tmp_path / run / "metrics.csv", delimiter=",", names=True) for run in ("one", "two")]
    for column in logs[0].dtype.names:
        # float32 losses summed per process, then over the 2 processes: rounding apart.
        np.testing.assert_allclose(logs[1][column], logs[0][column], rtol=1e-6, atol=0, err_msg=column)
    weights = [unigrad.load(str(tmp_path / run / "model.safetensors")) for run in ("one", "two")]
    for name, value in weights[0].items():
        np.testing.assert_allclose(weights[1][name].numpy(), value.numpy(), rtol=0, atol=1e-6, err_msg=name)

    assert train("resumed", "--nproc", "2", "--epochs", "1").returncode == 0
    resumed = train("resumed", "--nproc", "2", "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert resumed.stdout.count("resuming from") == 1
    assert ((tmp_path / "two" / "model.safetensors").read_bytes() ==
            (tmp_path / "resumed" / "model.safetensors").read_bytes())

    three = train("three", "--nproc", "3")
    assert three.returncode != 0
    assert ("--batch-size is the global batch, split evenly over the 3 processes: 32 is not a multiple of 3"
            in three.stderr), three.stderr


def run_single(code):
    """A one-process job (MPI's singleton start) in a fresh interpreter."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=environment(), timeout=60)


def test_a_strategy_lets_go_of_the_variables_of_a_dropped_model():
    """Before: a strategy held every variable it had mirrored, so a model trained under it and
    dropped kept its memory for the strategy's life."""
    proc = run_single("""
        import unigrad as ug
        strategy = ug.distribute.MirroredStrategy()
        def train(width):
            with strategy.scope():
                model, opt = ug.nn.Linear(width, width), ug.optimizers.SGD(0.1)
            def step():
                with ug.GradientTape() as tape:
                    loss = model(ug.ones(1, width)).sum()
                params = list(model.parameters())
                opt.apply_gradients(zip(tape.gradient(loss, params), params))
            strategy.run(step)
        base = ug.memory.allocated()
        train(1024)  # 4 MiB of weights
        train(1)  # a step under the strategy after the first model was dropped
        print("held", ug.memory.allocated() - base)
    """)
    assert proc.returncode == 0, proc.stderr
    held = int(proc.stdout.split("held")[1])
    assert held < 64 * 1024, proc.stdout  # before: 4 MiB and more


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_custom_loop_over_a_strategy_equals_one_process(n, optimizer):
    # strategy.run / reduce / experimental_distribute_dataset and compute_average_loss
    assert_ok(mpirun(n, f"custom_loop_{optimizer}", worker=FIT_WORKER), n)


def test_a_loss_scaled_custom_loop_skips_on_every_replica_alike():
    assert_ok(mpirun(2, "custom_loop_loss_scaled", worker=FIT_WORKER), 2)


@pytest.mark.parametrize("n", [2, 3])
def test_a_compiled_custom_loop_runs_its_collectives_at_every_call(n):
    # before: the program ran the trace's all_reduce once, then gave each rank its own sums
    assert_ok(mpirun(n, "custom_loop_compiled", worker=FIT_WORKER), n)


def test_errors_name_the_op_and_the_cause():
    proc = run_single("""
        import unigrad as ug, unigrad.distributed as dist
        def error(f):
            try:
                f()
            except (RuntimeError, ValueError, TypeError) as e:
                return str(e)
        print(error(lambda: dist.all_reduce(ug.ones(2))))
        print(error(lambda: dist.init_process_group("nccl")))
        dist.init_process_group("gloo", timeout=5)  # torch's CPU backend's name: MPI here
        print(dist.get_rank(), dist.get_world_size(), dist.get_backend(), dist.is_initialized())
        print(error(lambda: dist.init_process_group()))
        print(error(lambda: dist.all_reduce(ug.ones(2, dtype=ug.int64), op=dist.ReduceOp.AVG)))
        print(error(lambda: dist.all_gather([ug.ones(3)], ug.ones(2))))
        print(error(lambda: dist.broadcast(ug.ones(2), src=1)))
        print(error(lambda: ug.nn.parallel.DistributedDataParallel(ug.nn.Linear(2, 2), bucket_cap_mb=0)))
        dist.destroy_process_group()
        print(dist.is_initialized())
    """)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "[all_reduce] the default process group is not initialised: call init_process_group first"
    assert lines[1] == "[init_process_group] unknown backend 'nccl' (this build has: gloo, mpi)"
    assert lines[2] == "0 1 mpi True"
    assert lines[3] == "[init_process_group] the default process group is already initialised"
    assert lines[4] == "[all_reduce] ReduceOp.AVG needs a floating dtype, got int64"
    assert lines[5] == ("[all_gather] tensor_list holds a tensor of shape [3] and dtype float32 for one of shape [2] "
                        "and dtype float32")
    assert lines[6] == "[broadcast] rank 1 is not in the group of 1 ranks"
    assert lines[7] == "[DistributedDataParallel] bucket_cap_mb must be positive, got 0"
    assert lines[8] == "False"


NETNS = ("ugd_a", "ugd_b")


def make_two_hosts():
    """Two network namespaces joined by a veth pair, 10.77.0.1 and 10.77.0.2; None if made,
    else why not."""
    if shutil.which("ip") is None:
        return "iproute2's ip is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root"
    script = """
        set -e
        ip netns add ugd_a; ip netns add ugd_b
        ip link add ugd_va type veth peer name ugd_vb
        ip link set ugd_va netns ugd_a; ip link set ugd_vb netns ugd_b
        ip -n ugd_a addr add 10.77.0.1/24 dev ugd_va; ip -n ugd_b addr add 10.77.0.2/24 dev ugd_vb
        for n in a b; do ip -n ugd_$n link set lo up; ip -n ugd_$n link set ugd_v$n up; done
    """
    proc = subprocess.run(["sh", "-c", textwrap.dedent(script)], capture_output=True, text=True)
    if proc.returncode != 0:
        remove_two_hosts()
        return f"this machine cannot create network namespaces: {proc.stderr.strip()}"
    return None


def remove_two_hosts():
    for ns in NETNS:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)  # the veth pair goes with them


def test_ddp_across_two_hosts(tmp_path):
    """One rank in each of two network namespaces: nothing may assume one host or shared memory
    (MPI's shared-memory transport is off; the ranks talk TCP over the veth pair)."""
    why = make_two_hosts()
    if why:
        pytest.skip(why)
    try:
        hostfile = tmp_path / "hosts"
        hostfile.write_text("10.77.0.1 slots=1\n10.77.0.2 slots=1\n")
        # mpirun starts the remote rank's daemon through an "rsh" that enters that host's namespace.
        agent = tmp_path / "agent.sh"
        agent.write_text('#!/bin/sh\nhost=$1; shift\n'
                         'case $host in 10.77.0.1) ns=ugd_a ;; *) ns=ugd_b ;; esac\n'
                         'exec ip netns exec $ns sh -c "$*"\n')
        agent.chmod(0o755)
        proc = mpirun(2, "ddp_sgd", launcher=("ip", "netns", "exec", "ugd_a"),
                      options=("--hostfile", str(hostfile), "--mca", "plm_rsh_agent", str(agent),
                               "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "10.77.0.0/24",
                               "--mca", "oob_tcp_if_include", "10.77.0.0/24"))
        assert_ok(proc, 2)
    finally:
        remove_two_hosts()
