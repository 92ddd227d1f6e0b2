"""torch's nn and data APIs that unigrad lacked: ConvTranspose's output_size, Sequential and
ModuleList slicing and editing, clip_grad_norm_(norm_type='inf'), ug.save / ug.load with file
objects, DataLoader(batch_size=None), ug.Generator and
unigrad.utils.data. Each is checked against torch on the same inputs."""
import io

import numpy as np
import pytest
import torch

import unigrad as ug


def _same(u, t, atol=1e-5):
    np.testing.assert_allclose(np.asarray(u.numpy()), t.detach().numpy(), atol=atol)


# ---- ConvTranspose*d(x, output_size=) -------------------------------------------------------

@pytest.mark.parametrize("dims, output_size", [
    (1, [10]), (1, [2, 1, 9]),
    (2, [10, 10]), (2, [9, 10]), (2, (1, 1, 10, 9)),
    (3, [9, 10, 10]),
])
def test_conv_transpose_output_size_matches_torch(dims, output_size):
    name = f"ConvTranspose{dims}d"
    t_layer = getattr(torch.nn, name)(1, 2, 3, stride=2, padding=1)
    u_layer = getattr(ug.nn, name)(1, 2, 3, stride=2, padding=1)
    u_layer.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in t_layer.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 1) + (5,) * dims).astype(np.float32)
    expected = t_layer(torch.tensor(x), output_size=output_size)
    got = u_layer(ug.tensor(x), output_size=output_size)
    assert tuple(got.shape) == tuple(expected.shape)
    _same(got, expected)
    # output_size=None is the layer's own output_padding
    _same(u_layer(ug.tensor(x), output_size=None), t_layer(torch.tensor(x)))


def test_conv_transpose_output_size_out_of_reach():
    x = ug.ones(1, 1, 5, 5)
    layer = ug.nn.ConvTranspose2d(1, 1, 3, stride=2, padding=1)
    with pytest.raises(ValueError, match=r"valid sizes range from \[9, 9\] to \[10, 10\]"):
        layer(x, output_size=[11, 10])
    with pytest.raises(ValueError, match="output_size must have 2 or 4 elements"):
        layer(x, output_size=[10])


# ---- Sequential and ModuleList ---------------------------------------------------------------

def _types(seq):
    return [type(m).__name__ for m in seq]


def test_sequential_slicing_and_editing_as_torch():
    def build(nn):
        return nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.Identity())

    t, u = build(torch.nn), build(ug.nn)
    for key in [slice(1, None), slice(None, -1), slice(None, None, 2), slice(3, 1, -1)]:
        t_part, u_part = t[key], u[key]
        assert isinstance(u_part, ug.nn.Sequential)
        assert _types(u_part) == _types(t_part)
        assert [n for n, _ in u_part.named_children()] == [n for n, _ in t_part.named_children()]
    assert type(u[-1]).__name__ == type(t[-1]).__name__
    for seq, nn in ((t, torch.nn), (u, ug.nn)):
        del seq[1]
        seq.insert(0, nn.ELU())
        seq.insert(-1, nn.GELU())
        seq.extend([nn.SiLU()])
        seq.append(nn.Softplus())
        seq[2] = nn.Hardtanh()
        del seq[::3]
    assert _types(u) == _types(t) and len(u) == len(t)
    assert [n for n, _ in u.named_children()] == [n for n, _ in t.named_children()]
    assert type(u.pop(0)).__name__ == type(t.pop(0)).__name__
    assert _types(u) == _types(t)
    x = np.linspace(-2, 2, 7).astype(np.float32)
    _same(u(ug.tensor(x)), t(torch.tensor(x)))
    with pytest.raises(IndexError, match="Sequential"):
        u[10]


def test_sequential_slice_keeps_names_and_parameters():
    u = ug.nn.Sequential(ug.nn.Linear(2, 3), ug.nn.ReLU(), ug.nn.Linear(3, 1))
    tail = u[1:]
    assert list(tail.state_dict()) == ["2.weight", "2.bias"]
    assert tail[1] is u[2]


def test_module_list_slicing_and_editing_as_torch():
    def build(nn):
        return nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.Identity()])

    t, u = build(torch.nn), build(ug.nn)
    t_part, u_part = t[1:3], u[1:3]
    assert isinstance(u_part, ug.nn.ModuleList)
    assert _types(u_part) == _types(t_part)
    assert [n for n, _ in u_part.named_children()] == [n for n, _ in t_part.named_children()]
    for lst, nn in ((t, torch.nn), (u, ug.nn)):
        del lst[0]
        lst.insert(1, nn.ELU())
        lst[-1] = nn.GELU()
        del lst[1:2]
    assert _types(u) == _types(t)
    assert [n for n, _ in u.named_children()] == [n for n, _ in t.named_children()]
    assert type(u.pop(1)).__name__ == type(t.pop(1)).__name__
    assert _types(u) == _types(t)


# ---- clip_grad_norm_ / clip_grad_value_ ------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1, "inf", float("inf"), "2"])
@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_norm_matches_torch(norm_type, foreach):
    grads = [np.array([3.0, -4.0, 0.5], np.float32), np.array([[1.0, -7.0]], np.float32)]
    t_params = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
    u_params = [ug.nn.Parameter(ug.zeros(*g.shape)) for g in grads]
    for tp, up, g in zip(t_params, u_params, grads):
        tp.grad = torch.tensor(g)
        up.grad = ug.tensor(g)
    t_norm = torch.nn.utils.clip_grad_norm_(t_params, 1.5, norm_type=norm_type, foreach=foreach)
    u_norm = ug.nn.utils.clip_grad_norm_(u_params, 1.5, norm_type=norm_type, foreach=foreach)
    _same(u_norm, t_norm)
    for tp, up in zip(t_params, u_params):
        _same(up.grad, tp.grad)


def test_clip_grad_norm_nonfinite_and_bad_norm_type():
    p = ug.nn.Parameter(ug.zeros(2))
    p.grad = ug.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        ug.nn.utils.clip_grad_norm_([p], 1.0, norm_type="inf", error_if_nonfinite=True)
    with pytest.raises(ValueError, match=r"\[clip_grad_norm_\] norm_type"):
        ug.nn.utils.clip_grad_norm_([p], 1.0, norm_type="max")


@pytest.mark.parametrize("foreach", [None, False])
def test_clip_grad_value_matches_torch(foreach):
    g = np.array([3.0, -4.0, 0.5], np.float32)
    tp, up = torch.nn.Parameter(torch.zeros(3)), ug.nn.Parameter(ug.zeros(3))
    tp.grad, up.grad = torch.tensor(g), ug.tensor(g)
    torch.nn.utils.clip_grad_value_([tp], 1.0, foreach=foreach)
    ug.nn.utils.clip_grad_value_([up], 1.0, foreach=foreach)
    _same(up.grad, tp.grad)


# ---- ug.save / ug.load -----------------------------------------------------------------------

def test_save_load_file_objects(tmp_path):
    obj = {"z": ug.zeros(2), "a": ug.ones(1), "step": 3}  # a checkpoint: its skeleton keeps the order
    buffer = io.BytesIO()
    ug.save(obj, buffer)
    buffer.seek(0)
    back = ug.load(buffer)
    assert list(back) == ["z", "a", "step"] and back["step"] == 3
    _same(back["z"], torch.zeros(2))
    path = tmp_path / "ckpt.safetensors"
    with open(path, "wb") as f:
        ug.save(obj, f)
    with open(path, "rb") as f:
        assert list(ug.load(f)) == ["z", "a", "step"]
    assert list(ug.load(path)) == ["z", "a", "step"]  # a pathlib.Path too
    with pytest.raises(TypeError, match=r"\[save\] f must be a path"):
        ug.save(obj, 3)
    with open(path, encoding="latin-1") as f, pytest.raises(TypeError, match="binary mode"):
        ug.load(f)


# ---- DataLoader(batch_size=None) -------------------------------------------------------------

def _plain(x):
    if isinstance(x, (torch.Tensor, ug.Tensor)):
        return ("tensor", str(x.dtype).split(".")[-1], np.asarray(x.numpy()).tolist())
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_plain(v) for v in x])
    return x


def test_data_loader_without_automatic_batching_matches_torch():
    samples = [(np.arange(2.0) + i, i, "s%d" % i, {"w": np.float32(i / 2)}) for i in range(3)]
    t_loader = torch.utils.data.DataLoader(samples, batch_size=None)
    u_loader = ug.data.DataLoader(samples, batch_size=None)
    assert u_loader.batch_size is None and len(u_loader) == len(t_loader) == 3
    assert [_plain(b) for b in u_loader] == [_plain(b) for b in t_loader]
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    t_items = list(torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x)), batch_size=None))
    u_items = list(ug.data.DataLoader(ug.data.TensorDataset(ug.tensor(x)), batch_size=None))
    assert [_plain(b) for b in u_items] == [_plain(b) for b in t_items]
    # collate_fn gets each sample alone; shuffling still visits every sample once
    got = list(ug.data.DataLoader(list(range(5)), batch_size=None, shuffle=True, collate_fn=lambda s: s * 10))
    assert sorted(got) == [0, 10, 20, 30, 40]
    with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
        ug.data.DataLoader(samples, batch_size=None, drop_last=True)


def test_data_loader_without_automatic_batching_on_an_iterable_dataset():
    class Stream(ug.data.IterableDataset):
        def __iter__(self):
            return iter([np.ones(2) * i for i in range(3)])

    got = list(ug.data.DataLoader(Stream(), batch_size=None))
    assert [_plain(b) for b in got] == [("tensor", "float64", [float(i)] * 2) for i in range(3)]


# ---- ug.Generator --------------------------------------------------------------------------

def test_generator_api_as_torch():
    g = ug.Generator()
    assert g.initial_seed() == torch.Generator().initial_seed()
    assert g.manual_seed(7) is g and g.initial_seed() == 7
    seed = g.seed()
    assert g.initial_seed() == seed
    assert ug.Generator().manual_seed(-1).initial_seed() == torch.Generator().manual_seed(-1).initial_seed()


def test_generator_draws_are_reproducible_and_independent_of_the_global_one():
    draws = {
        "randn": lambda g: ug.randn(3, 2, generator=g),
        "rand": lambda g: ug.rand((4,), generator=g),
        "randint": lambda g: ug.randint(0, 10, (5,), generator=g),
        "randperm": lambda g: ug.randperm(6, generator=g),
        "normal": lambda g: ug.normal(1.0, 2.0, (3,), generator=g),
    }
    for name, draw in draws.items():
        ug.manual_seed(0)
        a = draw(ug.Generator().manual_seed(5))
        global_after_a = ug.get_rng_state()
        ug.manual_seed(123)
        ug.rand(10)
        b = draw(ug.Generator().manual_seed(5))
        assert np.array_equal(a.numpy(), b.numpy()), name
        ug.manual_seed(0)
        assert np.array_equal(global_after_a.numpy(), ug.get_rng_state().numpy()), name  # untouched
        assert not np.array_equal(a.numpy(), draw(ug.Generator().manual_seed(6)).numpy()), name
    # the state round-trips, and successive draws differ
    g = ug.Generator().manual_seed(1)
    state = g.get_state()
    first, second = ug.randn(4, generator=g), ug.randn(4, generator=g)
    assert not np.array_equal(first.numpy(), second.numpy())
    assert g.set_state(state) is g
    assert np.array_equal(ug.randn(4, generator=g).numpy(), first.numpy())
    with pytest.raises(TypeError, match=r"\[randn\] generator must be a ug.Generator"):
        ug.randn(2, generator=torch.Generator())


def test_generator_seeds_data_loading():
    def order(make):
        return [int(b.item()) for b in make()]

    data = list(range(10))
    loader = lambda seed: ug.data.DataLoader(data, shuffle=True, generator=ug.Generator().manual_seed(seed))  # noqa: E731
    ug.manual_seed(0)
    first = order(lambda: loader(3))
    ug.manual_seed(99)
    assert order(lambda: loader(3)) == first
    assert sorted(first) == data
    sampler = lambda seed: list(ug.data.RandomSampler(data, generator=ug.Generator().manual_seed(seed)))  # noqa: E731
    assert sampler(4) == sampler(4) and sorted(sampler(4)) == data
    split = lambda seed: [list(s.indices) for s in ug.data.random_split(  # noqa: E731
        data, [7, 3], generator=ug.Generator().manual_seed(seed))]
    assert split(2) == split(2)


# ---- unigrad.utils.data ----------------------------------------------------------------------

def test_utils_data_is_torch_utils_data_layout():
    import unigrad.utils.data as data
    from unigrad.utils.data import DataLoader, Dataset, RandomSampler, Subset, TensorDataset, random_split

    assert data is ug.data
    assert (DataLoader, Dataset, TensorDataset, random_split, Subset, RandomSampler) == (
        ug.data.DataLoader, ug.data.Dataset, ug.data.TensorDataset, ug.data.random_split, ug.data.Subset,
        ug.data.RandomSampler)
    for name in ["DataLoader", "Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset",
                 "random_split", "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
                 "WeightedRandomSampler", "SubsetRandomSampler", "ChainDataset", "StackDataset",
                 "get_worker_info", "default_collate", "default_convert"]:
        assert hasattr(data, name), name
