"""ug.data's SubsetRandomSampler, ChainDataset, StackDataset and default_collate on strings and
nested samples, against torch.utils.data on the same inputs. Shuffled orders differ from
torch's (another random number generator): the sampler's passes are checked as permutations
of torch's, and for seeded reproducibility."""
import collections

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import unigrad as ug

D = ug.data

Point = collections.namedtuple("Point", ["x", "label"])


def same(ours, ref):
    """ours (unigrad) has ref's (torch) structure, container types, dtypes and values."""
    if isinstance(ref, torch.Tensor):
        assert isinstance(ours, ug.Tensor), f"{type(ours).__name__} is not a tensor"
        assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
        return
    assert type(ours) is type(ref), f"{type(ours).__name__} is not a {type(ref).__name__}"
    if isinstance(ref, dict):
        assert list(ours) == list(ref)
        for k in ref:
            same(ours[k], ref[k])
    elif isinstance(ref, (list, tuple)):
        assert len(ours) == len(ref)
        for o, r in zip(ours, ref):
            same(o, r)
    else:
        assert ours == ref


# SubsetRandomSampler

def test_subset_random_sampler_permutes_the_indices_as_torch():
    indices = [7, 3, 11, 0, 5, 9, 2]
    ours = D.SubsetRandomSampler(indices, seed=0)
    ref = tud.SubsetRandomSampler(indices, generator=torch.Generator().manual_seed(0))
    assert len(ours) == len(ref) == 7 and ours.indices == indices
    passes = [list(ours) for _ in range(4)]
    for p in passes:
        assert sorted(p) == sorted(list(ref))
    assert len({tuple(p) for p in passes}) > 1  # each pass reshuffles


def test_subset_random_sampler_is_reproducible():
    indices = list(range(100, 150))
    first = D.SubsetRandomSampler(indices, seed=3)
    passes = [list(first) for _ in range(3)]
    again = D.SubsetRandomSampler(indices, generator=torch.Generator().manual_seed(3))
    assert [list(again) for _ in range(3)] == passes
    again.set_epoch(1)
    assert list(again) == passes[1]
    # unseeded, a pass draws from the global generator, as RandomSampler's
    unseeded = D.SubsetRandomSampler(indices)
    ug.manual_seed(5)
    a = list(unseeded)
    ug.manual_seed(5)
    assert list(unseeded) == a and sorted(a) == indices


def test_subset_random_sampler_in_a_dataloader():
    x = np.arange(20, dtype=np.float32)
    picked = [2, 4, 6, 8, 10]
    ours = [b.tolist() for b in D.DataLoader(x.tolist(), batch_size=2, sampler=D.SubsetRandomSampler(picked, seed=1))]
    ref = [b.tolist() for b in tud.DataLoader(x.tolist(), batch_size=2, sampler=tud.SubsetRandomSampler(picked))]
    assert [len(b) for b in ours] == [len(b) for b in ref] == [2, 2, 1]
    assert sorted(sum(ours, [])) == sorted(sum(ref, [])) == [2.0, 4.0, 6.0, 8.0, 10.0]
    # tensors and NumPy integers are indices too
    assert sorted(D.SubsetRandomSampler(ug.tensor([4, 1]))) == sorted(D.SubsetRandomSampler(np.array([4, 1]))) == [1, 4]
    assert list(D.SubsetRandomSampler([])) == []


def test_subset_random_sampler_errors():
    with pytest.raises(TypeError, match=r"\[SubsetRandomSampler\] indices must be integers, got a float"):
        D.SubsetRandomSampler([1, 2.5])
    with pytest.raises(ValueError, match="a seed or a generator, not both"):
        D.SubsetRandomSampler([1], generator=0, seed=0)


# ChainDataset

def _stream_class(base):
    """An iterable data set over a list, on unigrad's or torch's IterableDataset."""
    class Stream(base):
        def __init__(self, values):
            self.values = values

        def __iter__(self):
            return iter(self.values)

        def __len__(self):
            return len(self.values)

    return Stream


Stream, TorchStream = _stream_class(D.IterableDataset), _stream_class(tud.IterableDataset)


def test_chain_dataset_as_torch():
    parts = [[0.5, 1.5, 2.5], [3.5], [4.5, 5.5]]
    ours = D.ChainDataset([Stream(p) for p in parts])
    ref = tud.ChainDataset([TorchStream(p) for p in parts])
    assert isinstance(ours, D.IterableDataset)
    assert list(ours) == list(ref) and len(ours) == len(ref) == 6
    for workers in [0, 2]:
        batches = list(D.DataLoader(ours, batch_size=4, num_workers=workers))
        for o, r in zip(batches, tud.DataLoader(ref, batch_size=4), strict=True):
            same(o, r)


def test_chain_dataset_errors():
    chained = D.ChainDataset([Stream([1]), [2, 3]])
    with pytest.raises(TypeError, match=r"\[ChainDataset\] expected IterableDatasets, got a list"):
        list(chained)
    with pytest.raises(TypeError, match=r"\[ChainDataset\] expected IterableDatasets, got a list"):
        len(chained)


# StackDataset

def tensors_pair(n):
    x = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
    y = np.arange(n, dtype=np.int64)
    return (D.TensorDataset(ug.tensor(x), ug.tensor(y)), tud.TensorDataset(torch.tensor(x), torch.tensor(y)))


def test_stack_dataset_tuple_as_torch():
    ours_xy, ref_xy = tensors_pair(5)
    words = ["a", "bb", "ccc", "dd", "e"]
    ours = D.StackDataset(ours_xy, words)
    ref = tud.StackDataset(ref_xy, words)
    assert len(ours) == len(ref) == 5
    for i in [0, 3, -1]:
        same(ours[i], ref[i])
    assert isinstance(ours.datasets, tuple) and len(ours.datasets) == 2
    for workers in [0, 2]:
        for o, r in zip(D.DataLoader(ours, batch_size=2, num_workers=workers), tud.DataLoader(ref, batch_size=2),
                        strict=True):
            same(o, r)


def test_stack_dataset_dict_as_torch():
    ours_xy, ref_xy = tensors_pair(4)
    scores = [0.5, 1.5, 2.5, 3.5]
    ours = D.StackDataset(pair=ours_xy, score=scores)
    ref = tud.StackDataset(pair=ref_xy, score=scores)
    same(ours[1], ref[1])
    assert list(ours.datasets) == ["pair", "score"]
    for o, r in zip(D.DataLoader(ours, batch_size=3), tud.DataLoader(ref, batch_size=3), strict=True):
        same(o, r)


def test_subset_and_concat_keep_python_samples_as_torch():
    words = [(f"w{i}", i) for i in range(6)]
    ours_xy, ref_xy = tensors_pair(6)
    ours = D.ConcatDataset([D.Subset(words, [5, 1, 3]), D.Subset(D.StackDataset(ours_xy, words), [0, 2])])
    ref = tud.ConcatDataset([tud.Subset(words, [5, 1, 3]), tud.Subset(tud.StackDataset(ref_xy, words), [0, 2])])
    for i in range(3):
        same(ours[i], ref[i])
    same(ours[4], ref[4])
    for o, r in zip(D.DataLoader(ours, batch_size=3), tud.DataLoader(ref, batch_size=3), strict=True):
        same(o, r)
    train, _ = D.random_split(words, [4, 2], generator=0)
    batch = next(iter(D.DataLoader(train, batch_size=4)))
    assert sorted(zip(batch[0], batch[1].tolist())) == sorted(words[i] for i in train.indices)


def test_stack_dataset_errors():
    with pytest.raises(ValueError, match=r"\[StackDataset\] size mismatch between datasets: dataset 0 has 2 samples, "
                                         r"dataset 2 has 3"):
        D.StackDataset([1, 2], [3, 4], [5, 6, 7])
    with pytest.raises(ValueError, match=r"\[StackDataset\] size mismatch between datasets: 'a' has 2 samples, "
                                         r"'b' has 1"):
        D.StackDataset(a=[1, 2], b=[3])
    with pytest.raises(ValueError, match=r"\[StackDataset\] give the data sets either as arguments"):
        D.StackDataset([1], b=[2])
    with pytest.raises(ValueError, match=r"\[StackDataset\] at least one dataset should be passed"):
        D.StackDataset()
    with pytest.raises(IndexError, match=r"\[Dataset\] index 2 is out of range"):
        D.StackDataset([1, 2])[2]
    with pytest.raises(TypeError, match=r"\[StackDataset\] expected a data set"):
        D.StackDataset(3)


# default_collate on strings and nested samples

NESTED_BATCHES = [
    ["cat", "dog", "emu"],
    [("cat", 1), ("dog", 2)],
    [(np.ones(2, np.float32), ("a", 1.5)), (np.zeros(2, np.float32), ("b", 2.5))],
    [{"text": "hi", "pos": (1, 2)}, {"text": "yo", "pos": (3, 4)}],
    [{"x": {"y": [1, 2]}}, {"x": {"y": [3, 4]}}],
    [Point(np.ones(3), "a"), Point(np.zeros(3), "b")],
    [Point(1.0, 0), Point(2.0, 1)],
    [[{"a": 1, "b": "u"}, {"a": 2, "b": "v"}], [{"a": 3, "b": "w"}, {"a": 4, "b": "x"}]],
    [(1, True, np.float64(0.5)), (2, False, np.float64(1.5))],  # flat: the C++ collation
]


@pytest.mark.parametrize("batch", NESTED_BATCHES, ids=range(len(NESTED_BATCHES)))
def test_default_collate_as_torch(batch):
    same(D.default_collate(batch), tud.default_collate(batch))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_collates_nested_samples_as_torch(num_workers):
    samples = [(f"w{i}", {"x": np.full(2, i, np.float32), "n": (i, i / 2)}) for i in range(7)]
    ours = list(D.DataLoader(samples, batch_size=3, num_workers=num_workers))
    ref = list(tud.DataLoader(samples, batch_size=3))
    assert len(ours) == len(ref) == 3
    for o, r in zip(ours, ref):
        same(o, r)

    class Named(D.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return Point(ug.full((2,), float(i)), f"p{i}")

    for o, r in zip(D.DataLoader(Named(), batch_size=2, num_workers=num_workers),
                    tud.DataLoader([Point(torch.full((2,), float(i)), f"p{i}") for i in range(4)], batch_size=2),
                    strict=True):
        same(o, r)
    streamed = list(D.DataLoader(Stream(samples), batch_size=3, num_workers=num_workers))
    for o, r in zip(streamed, ref, strict=True):
        same(o, r)


def test_default_collate_errors():
    with pytest.raises(ValueError, match=r"\[default_collate\] sample 1 of the batch has 1 fields, sample 0 has 2"):
        D.default_collate([(("a", 1),), (("b",),)])
    with pytest.raises(TypeError, match=r"\[default_collate\] sample 1 of the batch is a str, sample 0 is a int"):
        D.default_collate([("a", 1), ("b", "c")])
    with pytest.raises(ValueError, match=r"\[default_collate\] sample 0 of the batch has the key 'y', sample 1 does "
                                         r"not"):
        D.default_collate([{"x": "a", "y": 1}, {"x": "b"}])
    with pytest.raises(TypeError, match=r"\[default_collate\] batch must contain tensors, NumPy arrays, numbers, "
                                        r"strings, dicts or lists; found a object"):
        D.default_collate([("a", object()), ("b", object())])
    with pytest.raises(ValueError, match=r"\[default_collate\] expected at least one sample"):
        D.default_collate([])
    with pytest.raises(TypeError, match=r"\[DataLoader\] batch must contain"):
        next(iter(D.DataLoader([(1, None), (2, None)], batch_size=2)))
