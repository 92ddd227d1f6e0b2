"""ug.data's loading layer against torch.utils.data where the result is deterministic
(indexing, batch counts, drop_last, splits, DistributedSampler's shares), statistically for
random draws, plus worker threads: ordering, reproducibility across worker counts, overlap
with the consumer, exceptions, early exit and interpreter exit. Shuffled orders differ from
torch's (another random number generator), so only their properties are compared."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import unigrad as ug

D = ug.data


def numbered(n, start=0):
    y = ug.arange(start, start + n)
    x = ug.stack([y.float(), (y * 10).float()], 1)
    return D.TensorDataset(x, y)


def labels(loader):
    return [b[-1].tolist() for b in loader]


def flat(batches):
    return [i for b in batches for i in b]


def os_threads():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("Threads:")).split()[1])


# ---- data sets ---------------------------------------------------------------------------


def test_tensor_dataset_matches_torch():
    x = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    y = np.arange(6)
    ours = D.TensorDataset(ug.tensor(x), ug.tensor(y))
    ref = tud.TensorDataset(torch.tensor(x), torch.tensor(y))
    assert len(ours) == len(ref)
    for i in (0, 3, 5, -1, -6):
        a, b = ours[i], ref[i]
        assert isinstance(a, tuple) and len(a) == 2
        np.testing.assert_array_equal(a[0].numpy(), b[0].numpy())
        assert a[1].item() == b[1].item()
    assert len(ours.tensors) == 2


def test_tensor_dataset_errors():
    ds = numbered(5)
    with pytest.raises(IndexError, match=r"index 5 .* size 5"):
        ds[5]
    with pytest.raises(IndexError, match=r"index -6 .* size 5"):
        ds[-6]
    with pytest.raises(ValueError, match=r"5, 4"):
        D.TensorDataset(ug.zeros(5, 2), ug.zeros(4))
    with pytest.raises(TypeError):
        D.TensorDataset(ug.zeros(3), [1, 2, 3])


def test_subset_and_concat_match_torch():
    parts = [(3, 0), (4, 100), (2, 200)]
    ours = D.ConcatDataset([numbered(n, s) for n, s in parts])
    ref = tud.ConcatDataset([tud.TensorDataset(torch.arange(s, s + n)) for n, s in parts])
    assert len(ours) == len(ref) and ours.cumulative_sizes == ref.cumulative_sizes
    for i in range(-len(ref), len(ref)):
        assert ours[i][1].item() == ref[i][0].item()
    sub, rsub = D.Subset(ours, [8, 0, 4]), tud.Subset(ref, [8, 0, 4])
    assert [sub[i][1].item() for i in range(3)] == [rsub[i][0].item() for i in range(3)]
    assert sub.indices == [8, 0, 4]
    both = numbered(2) + numbered(3, 10)
    assert len(both) == 5 and both[4][1].item() == 12
    # Batches across the parts keep their order (ConcatDataset.get_batch regroups them).
    loader = D.DataLoader(ours, batch_size=9, sampler=[8, 0, 4, 2, 3, 7, 1, 5, 6])
    assert labels(loader) == [[201, 0, 101, 2, 100, 200, 1, 102, 103]]
    with pytest.raises(IndexError):
        D.Subset(numbered(3), [3])


FRACTIONS = [[0.5, 0.5], [0.3, 0.3, 0.4], [1 / 3] * 3, [0.1] * 10, [0.7, 0.2, 0.1]]


@pytest.mark.parametrize("lengths, n", [([3, 7], 10)] + [(f, n) for f in FRACTIONS for n in (10, 11, 17)])
def test_random_split_lengths_match_torch(lengths, n):
    ours = D.random_split(numbered(n), lengths, seed=1)
    ref = tud.random_split(range(n), lengths, generator=torch.Generator().manual_seed(1))
    assert [len(s) for s in ours] == [len(s) for s in ref]
    assert sorted(i for s in ours for i in s.indices) == list(range(n))
    assert [s.indices for s in D.random_split(numbered(n), lengths, seed=1)] == [s.indices for s in ours]


def test_random_split_errors_and_global_seed():
    with pytest.raises(ValueError, match="sum of input lengths"):
        D.random_split(numbered(10), [3, 6])
    ug.manual_seed(5)
    a = [s.indices for s in D.random_split(numbered(10), [5, 5])]
    ug.manual_seed(5)
    assert [s.indices for s in D.random_split(numbered(10), [5, 5])] == a


class Mixed(D.Dataset):
    """Samples as a tuple of a tensor, an int, a float, a bool and a NumPy array."""

    def __init__(self, n=7):
        super().__init__()
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return ug.full((2,), float(i)), i, i / 2, i % 2 == 0, np.full((3,), i, dtype=np.float32)


def test_python_dataset_collates_like_torch():
    ours = list(D.DataLoader(Mixed(), batch_size=3))
    ref = list(tud.DataLoader(
        [(torch.full((2,), float(i)), i, i / 2, i % 2 == 0, np.full((3,), i, dtype=np.float32)) for i in range(7)],
        batch_size=3))
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        assert isinstance(a, list) and len(a) == len(b)
        for fa, fb in zip(a, b):
            assert str(fa.dtype).split(".")[-1] == str(fb.dtype).split(".")[-1]
            np.testing.assert_array_equal(fa.numpy(), fb.numpy())
    assert len(Mixed()) == 7 and Mixed()[2][1] == 2


def test_python_dataset_without_super_init_and_plain_sequences():
    class NoInit(D.Dataset):
        def __init__(self):
            self.data = [ug.tensor([float(i)]) for i in range(5)]

        def __len__(self):
            return len(self.data)

        def __getitem__(self, i):
            return self.data[i]

    batches = list(D.DataLoader(NoInit(), batch_size=2))
    assert isinstance(batches[0], ug.Tensor)  # one value per sample: a tensor per batch, as torch
    assert [b.flatten().tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    pairs = [(np.float32(i), i) for i in range(4)]
    assert labels(D.DataLoader(pairs, batch_size=4)) == [[0, 1, 2, 3]]


def test_bad_fields_and_samples():
    class Strings(D.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return ug.zeros(2), "label"

    assert next(iter(D.DataLoader(Strings(), batch_size=2)))[1] == ("label", "label")  # as torch

    class Unsupported(D.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return ug.zeros(2), None

    with pytest.raises(TypeError, match=r"\[DataLoader\] batch must contain .*; found a NoneType"):
        next(iter(D.DataLoader(Unsupported(), batch_size=2)))

    class Ragged(D.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return (ug.zeros(2),) if i else (ug.zeros(2), 1)

    with pytest.raises(ValueError, match="fields"):
        next(iter(D.DataLoader(Ragged(), batch_size=2)))
    with pytest.raises(TypeError):
        D.DataLoader(42)


# ---- samplers ----------------------------------------------------------------------------


def test_sequential_and_batch_sampler_match_torch():
    for n, bs, drop in [(10, 3, False), (10, 3, True), (9, 3, True), (1, 4, False), (0, 2, False)]:
        ours = D.BatchSampler(D.SequentialSampler(range(n)), bs, drop)
        ref = tud.BatchSampler(tud.SequentialSampler(range(n)), bs, drop)
        assert len(ours) == len(ref) and list(ours) == list(ref)
    with pytest.raises(ValueError, match="batch_size=0"):
        D.BatchSampler(D.SequentialSampler(range(3)), 0, False)


def test_random_sampler_lengths_match_torch_and_resume():
    for kw in [{}, {"num_samples": 25}, {"num_samples": 7}, {"replacement": True, "num_samples": 30}]:
        ours = list(D.RandomSampler(range(10), seed=0, **kw))
        assert len(ours) == len(list(tud.RandomSampler(range(10), **kw)))
        if not kw.get("replacement"):
            assert sorted(ours[:min(10, len(ours))]) == sorted(set(ours[:min(10, len(ours))]))
    s = D.RandomSampler(range(20), seed=3)
    e0, e1 = list(s), list(s)
    assert sorted(e0) == list(range(20)) and e0 != e1
    resumed = D.RandomSampler(range(20), seed=3)
    resumed.set_epoch(1)
    assert list(resumed) == e1
    assert list(D.RandomSampler(range(20), generator=torch.Generator().manual_seed(3))) == e0
    with pytest.raises(ValueError, match="num_samples"):
        D.RandomSampler(range(0))


def test_weighted_random_sampler_frequencies():
    w = [1.0, 0.0, 2.0, 5.0]
    n = 40000
    counts = np.bincount(list(D.WeightedRandomSampler(w, n, seed=0)), minlength=4)
    expected = np.array(w) / sum(w) * n
    assert counts[1] == 0
    # Within 5 standard deviations of the binomial counts.
    sd = np.sqrt(expected * (1 - np.array(w) / sum(w)))
    assert np.all(np.abs(counts - expected) <= 5 * sd + 1e-9), counts
    ref = np.bincount(list(tud.WeightedRandomSampler(w, n, generator=torch.Generator().manual_seed(0))), minlength=4)
    assert np.all(np.abs(counts - ref) <= 10 * sd + 1e-9)
    once = list(D.WeightedRandomSampler(ug.tensor([1.0, 1.0, 0.0, 3.0]), 3, replacement=False, seed=1))
    assert sorted(once) == [0, 1, 3]
    with pytest.raises(ValueError):
        D.WeightedRandomSampler([1.0, 0.0], 2, replacement=False)
    with pytest.raises(ValueError, match="num_samples"):
        D.WeightedRandomSampler([1.0], 0)


@pytest.mark.parametrize("n", [0, 1, 5, 10, 11, 12])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_matches_torch(n, replicas, drop_last):
    data = list(range(n))
    seen = []
    for rank in range(replicas):
        ref = tud.DistributedSampler(data, num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        ours = D.DistributedSampler(data, num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        if n == 0 and not drop_last and replicas > 0:
            assert len(ours) == len(ref) == 0
            continue
        assert list(ours) == list(ref)  # unshuffled: identical, padding included
        shuffled = D.DistributedSampler(data, num_replicas=replicas, rank=rank, seed=4, drop_last=drop_last)
        rshuffled = tud.DistributedSampler(data, num_replicas=replicas, rank=rank, seed=4, drop_last=drop_last)
        assert len(shuffled) == len(rshuffled) == len(list(shuffled)) and shuffled.total_size == rshuffled.total_size
        seen += list(shuffled)
    if n and not drop_last:
        assert set(seen) == set(data)
    if n and drop_last:
        assert len(set(seen)) == len(seen) == (n // replicas) * replicas


def test_distributed_sampler_epochs_and_errors():
    s = D.DistributedSampler(range(20), num_replicas=2, rank=0, seed=1)
    assert list(s) == list(s)  # the epoch moves only through set_epoch, so ranks agree
    e0 = list(s)
    s.set_epoch(1)
    assert list(s) != e0
    with pytest.raises(ValueError, match=r"rank 2"):
        D.DistributedSampler(range(5), num_replicas=2, rank=2)


def test_custom_samplers():
    class Backwards(D.Sampler):
        def __init__(self, n):
            super().__init__()
            self.n = n

        def __iter__(self):
            return iter(range(self.n - 1, -1, -1))

        def __len__(self):
            return self.n

    ds = numbered(5)
    assert labels(D.DataLoader(ds, batch_size=2, sampler=Backwards(5))) == [[4, 3], [2, 1], [0]]
    assert labels(D.DataLoader(ds, batch_size=2, sampler=[1, 1, 0])) == [[1, 1], [0]]
    loader = D.DataLoader(ds, batch_sampler=[[0, 4], [2]])
    assert len(loader) == 2 and labels(loader) == [[0, 4], [2]] and loader.batch_size is None
    with pytest.raises(ValueError, match="mutually exclusive"):
        D.DataLoader(ds, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        D.DataLoader(ds, sampler=[0, 1], shuffle=True)


# ---- DataLoader --------------------------------------------------------------------------


@pytest.mark.parametrize("n,bs,drop", [(10, 3, False), (10, 3, True), (12, 4, True), (5, 8, False), (5, 8, True)])
def test_batches_match_torch(n, bs, drop):
    x = torch.arange(2 * n, dtype=torch.float32).reshape(n, 2)
    y = torch.arange(n)
    ref = list(tud.DataLoader(tud.TensorDataset(x, y), batch_size=bs, drop_last=drop))
    for workers in (0, 2):
        loader = D.DataLoader(D.TensorDataset(ug.tensor(x.numpy()), ug.tensor(y.numpy())), batch_size=bs,
                              drop_last=drop, num_workers=workers)
        ours = list(loader)
        assert len(loader) == len(ref) == len(ours)
        for (a, b), (c, d) in zip(ours, ref):
            np.testing.assert_array_equal(a.numpy(), c.numpy())
            np.testing.assert_array_equal(b.numpy(), d.numpy())
    with pytest.raises(ValueError, match="batch_size"):
        D.DataLoader(numbered(3), batch_size=0)


def test_shuffle_seed_epochs_and_resume():
    loader = D.DataLoader(numbered(50), batch_size=8, shuffle=True, seed=2, num_workers=2)
    e0, e1 = labels(loader), labels(loader)
    assert sorted(flat(e0)) == list(range(50)) and e0 != e1
    again = D.DataLoader(numbered(50), batch_size=8, shuffle=True, seed=2)
    again.set_epoch(1)
    assert labels(again) == e1
    ug.manual_seed(0)
    unseeded = labels(D.DataLoader(numbered(50), batch_size=8, shuffle=True))
    ug.manual_seed(0)
    assert labels(D.DataLoader(numbered(50), batch_size=8, shuffle=True)) == unseeded


class Noisy(D.Dataset):
    """Each sample draws random numbers: they show which generator its batch ran under."""

    def __len__(self):
        return 23

    def __getitem__(self, i):
        return ug.rand(3), i


@pytest.mark.parametrize("dataset", [Noisy, lambda: [(i,) for i in range(23)]])
def test_same_batches_with_any_number_of_workers(dataset):
    def run(workers):
        loader = D.DataLoader(dataset(), batch_size=4, shuffle=True, seed=9, num_workers=workers,
                              collate_fn=None if dataset is Noisy else (lambda s: [ug.rand(2), ug.tensor(s)]))
        return [[t.tolist() for t in b] for e in range(2) for b in loader]

    ref = run(0)
    assert run(2) == ref and run(3) == ref


def test_default_collate():
    out = D.default_collate([(ug.zeros(2), 1), (ug.ones(2), 2)])
    assert isinstance(out, list) and out[0].shape == (2, 2) and out[1].tolist() == [1, 2]
    assert D.default_collate([1.5, 2.5]).dtype == ug.float64
    with pytest.raises(ValueError, match="fields"):
        D.default_collate([(1, 2), (3,)])


def test_collate_fn_returns_any_object():
    def to_dict(samples):
        return {"x": ug.stack([s[0] for s in samples]), "n": len(samples)}

    for workers in (0, 2):
        out = list(D.DataLoader(numbered(5), batch_size=2, collate_fn=to_dict, num_workers=workers))
        assert [b["n"] for b in out] == [2, 2, 1]
        assert out[2]["x"].tolist() == [[4.0, 40.0]]


class Failing(D.Dataset):
    def __len__(self):
        return 20

    def __getitem__(self, i):
        if i == 9:
            raise KeyError(f"sample {i} is missing")
        return ug.zeros(1), i


@pytest.mark.parametrize("workers", [0, 2])
def test_worker_exception_reaches_the_consumer(workers):
    it = iter(D.DataLoader(Failing(), batch_size=4, num_workers=workers))
    assert next(it)[1].tolist() == [0, 1, 2, 3]
    assert next(it)[1].tolist() == [4, 5, 6, 7]
    with pytest.raises(KeyError, match="sample 9 is missing"):
        next(it)
    with pytest.raises(StopIteration):
        next(it)

    def bad_collate(samples):
        raise RuntimeError("collate failed")

    with pytest.raises(RuntimeError, match="collate failed"):
        list(D.DataLoader(numbered(4), batch_size=2, collate_fn=bad_collate, num_workers=workers))


def test_early_break_stops_the_workers():
    import gc

    ug.set_num_threads(ug.get_num_threads())  # the kernels' pool starts its threads once, first
    list(D.DataLoader(Noisy(), batch_size=4, num_workers=2))
    baseline = os_threads()
    for _ in range(5):
        for i, _batch in enumerate(D.DataLoader(Noisy(), batch_size=1, num_workers=3)):
            if i == 2:
                break
        it = iter(D.DataLoader(numbered(1000), batch_size=1, num_workers=2, prefetch_factor=4))
        next(it)
        del it
        gc.collect()
    assert os_threads() == baseline


def test_loading_overlaps_the_consumer():
    class Slow(D.Dataset):
        def __len__(self):
            return 12

        def __getitem__(self, i):
            time.sleep(0.04)  # releases the GIL, like reading a file
            return ug.zeros(1), i

    step = 0.04
    start = time.perf_counter()
    n = 0
    for _ in D.DataLoader(Slow(), batch_size=1, num_workers=2):
        time.sleep(step)
        n += 1
    elapsed = time.perf_counter() - start
    serial = 12 * (0.04 + step)
    assert n == 12
    assert elapsed < 0.75 * serial, (elapsed, serial)


def test_iterable_dataset():
    class Stream(D.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            for i in range(self.n):
                yield ug.rand(2), i

    for workers in (0, 1, 2):
        loader = D.DataLoader(Stream(10), batch_size=4, num_workers=workers, seed=1)
        assert labels(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
        assert labels(D.DataLoader(Stream(10), batch_size=4, drop_last=True, num_workers=workers)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
        batches = [b[0].tolist() for b in D.DataLoader(Stream(10), batch_size=4, num_workers=workers, seed=1)]
        assert batches == [b[0].tolist() for b in D.DataLoader(Stream(10), batch_size=4, seed=1)]
    class Bare(D.IterableDataset):
        def __iter__(self):
            return iter([ug.tensor(1.0), ug.tensor(2.0), ug.tensor(3.0)])

    assert [b.tolist() for b in D.DataLoader(Bare(), batch_size=2)] == [[1.0, 2.0], [3.0]]
    with pytest.raises(TypeError):
        len(D.DataLoader(Stream(3)))
    with pytest.raises(ValueError, match="shuffle"):
        D.DataLoader(Stream(3), shuffle=True)

    def broken():
        yield (ug.zeros(1),)
        raise OSError("disk gone")

    class Broken(D.IterableDataset):
        def __iter__(self):
            return broken()

    with pytest.raises(OSError, match="disk gone"):
        list(D.DataLoader(Broken(), num_workers=1))


def test_loader_as_batch_source():
    loader = D.DataLoader(numbered(5), batch_size=2, shuffle=True, seed=0, num_workers=1)
    assert isinstance(loader, D.BatchSource) and loader.num_batches() == 3
    loader.start_epoch(1)
    got = []
    while (b := loader.next()) is not None:
        got.append(b[1].tolist())
    fresh = D.DataLoader(numbered(5), batch_size=2, shuffle=True, seed=0)
    fresh.set_epoch(1)
    assert got == labels(fresh)


def test_accepted_torch_options():
    loader = D.DataLoader(numbered(6), batch_size=3, pin_memory=True, persistent_workers=True, num_workers=1,
                          prefetch_factor=1)
    assert labels(loader) == [[0, 1, 2], [3, 4, 5]]
    assert loader.num_workers == 1 and loader.batch_size == 3 and not loader.drop_last
    with pytest.raises(ValueError, match="num_workers"):
        D.DataLoader(numbered(3), num_workers=-1)


def test_torch_positional_order_and_extra_options():
    # torch's positional order: ..., drop_last, timeout, worker_init_fn, multiprocessing_context, generator.
    started = []
    ours = D.DataLoader(numbered(6), 2, None, None, None, 1, None, False, True, 5.0, started.append, None, None,
                        prefetch_factor=2, persistent_workers=False, pin_memory_device="", in_order=False)
    theirs = tud.DataLoader(tud.TensorDataset(torch.arange(6)), 2, None, None, None, 0, None, False, True, 0, None,
                            None, None)
    assert labels(ours) == [b[-1].tolist() for b in theirs] == [[0, 1], [2, 3], [4, 5]]
    assert started == [0] and ours.timeout == 5.0


class WhoLoads(D.Dataset):
    """Each sample records the worker loading it."""

    def __len__(self):
        return 24

    def __getitem__(self, i):
        info = D.get_worker_info()
        return ug.zeros(1), i, -1 if info is None else info.id, -1 if info is None else info.num_workers, info


def test_worker_init_fn_and_get_worker_info():
    ds = WhoLoads()
    started = []
    loader = D.DataLoader(ds, batch_size=2, num_workers=3, worker_init_fn=started.append, collate_fn=list, seed=4)
    samples = [s for batch in loader for s in batch]
    assert sorted(started) == [0, 1, 2]  # once per worker thread, before it loads anything
    assert [s[1] for s in samples] == list(range(24))
    infos = {s[2]: s[4] for s in samples}
    assert set(infos) <= {0, 1, 2} and all(s[3] == 3 for s in samples)
    for wid, info in infos.items():
        assert info.id == wid and info.num_workers == 3 and info.dataset is ds
        assert "WorkerInfo(id=%d, num_workers=3, seed=" % wid in repr(info)
    assert len({info.seed - info.id for info in infos.values()}) == 1  # the pass's seed plus the id, as in torch
    assert D.get_worker_info() is None  # off the workers, as torch's main process
    assert {sample[2] for batch in D.DataLoader(ds, batch_size=4, collate_fn=list) for sample in batch} == {-1}

    def failing_init(worker_id):
        raise KeyError(f"worker {worker_id} cannot start")

    with pytest.raises(KeyError, match="cannot start"):
        list(D.DataLoader(ds, batch_size=4, num_workers=2, worker_init_fn=failing_init))
    with pytest.raises(TypeError, match="worker_init_fn must be callable, got int"):
        D.DataLoader(ds, num_workers=1, worker_init_fn=3)


def test_a_stream_sharded_by_worker_info_is_read_whole():
    # The sharding torch's documentation shows for multi-process workers; unigrad's one thread
    # pulling from the stream says num_workers=1, so every sample comes once.
    class Range(D.IterableDataset):
        def __iter__(self):
            info = D.get_worker_info()
            lo, hi = 3, 17
            if info is not None:
                per = -(-(hi - lo) // info.num_workers)
                lo, hi = lo + info.id * per, min(lo + (info.id + 1) * per, hi)
            yield from (ug.tensor(float(i)) for i in range(lo, hi))

    for workers in (0, 1, 3):
        assert [v for b in D.DataLoader(Range(), batch_size=4, num_workers=workers) for v in b.tolist()] == \
            [float(i) for i in range(3, 17)]


def test_timeout():
    import threading

    release = threading.Event()

    class Blocked(D.Dataset):
        """Samples wait for `release` (at most 10 s)."""

        def __len__(self):
            return 3

        def __getitem__(self, i):
            release.wait(10)
            return ug.zeros(1), i

    it = iter(D.DataLoader(Blocked(), num_workers=1, timeout=0.05))
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.05 seconds$"):  # torch's words
        next(it)  # the sample waits for `release`: only the timeout ends the wait
    release.set()
    del it
    assert labels(D.DataLoader(Blocked(), num_workers=2, timeout=5)) == [[0], [1], [2]]
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        D.DataLoader(Blocked(), num_workers=1, timeout=-1)
    with pytest.raises(ValueError, match="num_workers=0 loads batches on the calling thread"):
        D.DataLoader(Blocked(), timeout=1)


# ---- Pipeline (tf.data style) --------------------------------------------------------------


def test_pipeline_basics():
    x, y = ug.arange(10).float(), ug.arange(10)
    p = D.from_tensor_slices((x, y))
    assert len(p) == 10 and [e[1].item() for e in p] == list(range(10))
    assert all(isinstance(e, tuple) for e in p)
    assert [e[0].item() for e in D.from_tensor_slices(y)] == list(range(10))
    b = p.batch(4)
    assert isinstance(b, D.BatchSource) and len(b) == 3
    assert [e[1].tolist() for e in b] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(p.batch(4, drop_remainder=True)) == 2
    assert [e[1].tolist() for e in p.take(3).repeat(2).batch(6)] == [[0, 1, 2, 0, 1, 2]]
    assert len(p.repeat(3)) == 30
    with pytest.raises(TypeError):
        len(p.repeat())
    assert len(list(p.repeat().take(25))) == 25
    with pytest.raises(ValueError):
        p.batch(0)
    with pytest.raises(ValueError):
        D.from_tensor_slices((x, ug.arange(3)))


def test_pipeline_shuffle_semantics():
    p = D.from_tensor_slices(ug.arange(100))
    assert [e[0].item() for e in p.shuffle(1)] == list(range(100))
    s = p.shuffle(100, seed=3)
    e0, e1 = [e[0].item() for e in s], [e[0].item() for e in s]
    assert sorted(e0) == list(range(100)) and e0 != e1  # reshuffle_each_iteration
    assert [e[0].item() for e in p.shuffle(100, seed=3)] == e0
    # A small buffer only moves elements forward by a bounded amount (tf's buffered shuffle):
    # the element at output position k comes from the first k + buffer_size inputs.
    small = [e[0].item() for e in p.shuffle(5, seed=1)]
    assert sorted(small) == list(range(100))
    assert all(v < k + 5 for k, v in enumerate(small))


def test_pipeline_map_prefetch_and_errors():
    p = D.from_tensor_slices((ug.arange(20).float(), ug.arange(20)))
    mapped = p.map(lambda x, y: (x * 2, y + ug.rand(1).long() * 0)).batch(5).prefetch(D.AUTOTUNE)
    got = [e[0].tolist() for e in mapped]
    assert got == [[float(2 * i) for i in range(k, k + 5)] for k in range(0, 20, 5)]
    single = D.from_tensor_slices(ug.arange(4)).map(lambda x: x + 1).prefetch(2)
    assert [e[0].item() for e in single] == [1, 2, 3, 4]

    def fail(x, y):
        if y.item() == 3:
            raise LookupError("element 3")
        return x, y

    with pytest.raises(LookupError, match="element 3"):
        list(p.map(fail).prefetch(2))
    it = iter(p.map(lambda x, y: (x, y)).repeat().prefetch(3))
    next(it)
    del it  # an endless pass with a Python map, dropped mid-way
    with pytest.raises(TypeError):
        p.map(lambda x, y: "not a tensor").batch(2).__iter__().__next__()


def test_pipeline_as_batch_source():
    p = D.from_tensor_slices((ug.arange(6),)).shuffle(6, seed=0).batch(4)
    p.start_epoch(2)
    first = p.next()[0].tolist()
    assert len(first) == 4 and len(p.next()[0].tolist()) == 2 and p.next() is None
    p.start_epoch(2)
    assert p.next()[0].tolist() == first


EXIT_SCRIPT = """
import time
import unigrad as ug
D = ug.data

class Slow(D.Dataset):
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        time.sleep(0.001)
        return ug.zeros(3), i

it = iter(D.DataLoader(Slow(), batch_size=2, num_workers=2))
next(it)
p = iter(D.from_tensor_slices(ug.arange(10)).map(lambda x: x).repeat().prefetch(4))
next(p)
loader = D.DataLoader(Slow(), batch_size=2, num_workers=2)
loader.start_epoch(0)
loader.next()
print("ok")
"""


def test_interpreter_exit_with_workers_running():
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# ---- dict elements: tf.data's from_tensor_slices(dict), MindSpore's NumpySlicesDataset --------


def tf_numpy(element):
    return {k: v.numpy() for k, v in element.items()}


def ug_numpy(element):
    return {k: v.numpy() for k, v in element.items()}


def assert_same_elements(ours, reference):
    ours, reference = list(ours), list(reference)
    assert len(ours) == len(reference)
    for o, r in zip(ours, reference):
        assert isinstance(o, dict) and list(o) == list(r)  # the dict's own order, as tf keeps it
        for k in r:
            assert o[k].numpy().dtype == r[k].dtype and o[k].shape == r[k].shape, k
            np.testing.assert_array_equal(o[k].numpy(), r[k], err_msg=k)


def test_from_tensor_slices_of_a_dict_is_tf_datas(tf):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((10, 3)).astype(np.float32), np.arange(10)
    reference = tf.data.Dataset.from_tensor_slices({"label": y, "data": x})
    ours = D.from_tensor_slices({"label": ug.tensor(y), "data": ug.tensor(x)})
    assert len(ours) == int(reference.cardinality())
    assert_same_elements(ours, map(tf_numpy, reference))
    # batch stacks each field: a dict of batched tensors, the last one shorter.
    assert_same_elements(ours.batch(4), map(tf_numpy, reference.batch(4)))
    assert_same_elements(ours.batch(4, drop_remainder=True), map(tf_numpy, reference.batch(4, drop_remainder=True)))
    # map gets the dict as one argument and may return a dict or a tuple.
    doubled = ours.map(lambda d: {"data": d["data"] * 2, "label": d["label"]})
    assert_same_elements(doubled, map(tf_numpy, reference.map(lambda d: {"data": d["data"] * 2, "label": d["label"]})))
    pairs = list(ours.map(lambda d: (d["data"], d["label"])).batch(5))
    ref_pairs = list(reference.map(lambda d: (d["data"], d["label"])).batch(5))
    assert all(isinstance(p, tuple) for p in pairs)
    for (a, b), (ra, rb) in zip(pairs, ref_pairs):
        np.testing.assert_array_equal(a.numpy(), ra.numpy())
        np.testing.assert_array_equal(b.numpy(), rb.numpy())
    # NumPy arrays straight in, as MindSpore's NumpySlicesDataset takes them.
    assert_same_elements(D.from_tensor_slices({"label": y, "data": x}), map(tf_numpy, reference))


def test_dict_elements_shuffle_prefetch_and_repeat_keep_rows_together():
    x = ug.arange(20).float() * 10
    p = D.from_tensor_slices({"data": x, "label": ug.arange(20)})
    seen = []
    for b in p.shuffle(20, seed=0).batch(8).prefetch(D.AUTOTUNE).repeat(2):
        assert list(b) == ["data", "label"]
        assert b["data"].tolist() == (b["label"] * 10).float().tolist()
        seen += b["label"].tolist()
    assert sorted(seen) == sorted(list(range(20)) * 2)


def test_dict_element_errors_name_the_field():
    with pytest.raises(ValueError, match=r"\[from_tensor_slices\] the tensors' first dimensions differ: 'data' has "
                                         r"shape \[4\], 'label' has shape \[3\]"):
        D.from_tensor_slices({"data": ug.ones(4), "label": ug.ones(3)})
    with pytest.raises(ValueError, match=r"'label' is a scalar"):
        D.from_tensor_slices({"data": ug.ones(4), "label": ug.tensor(1.0)})
    with pytest.raises(TypeError, match=r"\[from_tensor_slices\] field 'data' is a str"):
        D.from_tensor_slices({"data": "images"})
    with pytest.raises(TypeError, match=r"a dict's keys name its fields and must be strings, got a int"):
        D.from_tensor_slices({0: ug.ones(4)})


class NamedSamples(D.Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return {"data": ug.tensor([float(i), 2.0 * i]), "label": i}


class TorchNamedSamples(tud.Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return {"data": torch.tensor([float(i), 2.0 * i]), "label": i}


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_collates_dict_samples_as_torch(num_workers):
    ours = list(D.DataLoader(NamedSamples(), batch_size=4, num_workers=num_workers))
    reference = list(tud.DataLoader(TorchNamedSamples(), batch_size=4))
    assert len(ours) == len(reference)
    for o, r in zip(ours, reference):
        assert list(o) == list(r)
        for k in r:
            assert o[k].numpy().dtype == r[k].numpy().dtype
            np.testing.assert_array_equal(o[k].numpy(), r[k].numpy())
    for b in D.DataLoader(NamedSamples(), batch_size=3, shuffle=True, seed=0):
        assert b["data"][:, 0].tolist() == b["label"].float().tolist()
    assert D.default_collate([{"a": 1}, {"a": 2}])["a"].tolist() == [1, 2]
    with pytest.raises(ValueError, match=r"\[default_collate\] sample 1 of the batch has the fields \(b\), sample 0 has "
                                         r"\(a\)"):
        D.default_collate([{"a": 1}, {"b": 2}])
