"""The export rules of Python's // and %, atan2, the bit ops, sort/topk, group and instance
norm and binary cross entropy: each exported at low and high opsets, run by ONNX Runtime and by
unigrad's importer, against unigrad's eager result (itself checked against torch) on inputs
with negative numbers, zeros and edge values; and ug.jit.save of models holding the norms."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import unigrad as ug

F = ug.nn.functional
EPS32 = np.finfo(np.float32).eps


class Fn(ug.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def as_list(y):
    return list(y) if isinstance(y, tuple) else [y]


def export_run(tmp_path, model, args, opset, dynamic=False, ort_runs=True):
    """Exports model(*args) at opset; returns eager's, ONNX Runtime's (None where ORT lacks a
    kernel for the dtype) and the importer's outputs as numpy arrays."""
    names = [f"x{i}" for i in range(len(args))]
    expected = [y.numpy() for y in as_list(model(*args))]
    outs = [f"y{i}" for i in range(len(expected))]
    axes = {n: {0: "batch"} for n in names + outs} if dynamic else None
    path = str(tmp_path / f"m{opset}.onnx")
    ug.onnx.export(model, tuple(args), path, input_names=names, output_names=outs, dynamic_axes=axes,
                   opset_version=opset)
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    assert proto.opset_import[0].version == opset
    got = None
    if ort_runs:
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = session.run(None, {n: a.numpy() for n, a in zip(names, args)})
    imported = [y.numpy() for y in as_list(ug.onnx.load(path)(*args))]
    return expected, got, imported


def same_bits(got, want):
    """Equal values, NaN where NaN (of either sign), and zeros of the same sign."""
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
    if got.dtype.kind == "f":
        numbers = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def ints_with_edges(dtype, seed):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    low = max(info.min, -100)
    values = rng.integers(low, min(info.max, 100), size=40, endpoint=True)
    edges = [0, 1, -1, info.min + 1, info.max, 7, -7] if info.min < 0 else [0, 1, info.max, 7]
    return np.concatenate([values, edges]).astype(dtype)


# ---- floor_divide and remainder ---------------------------------------------------------------


@pytest.mark.parametrize("opset", [13, 20])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
def test_floor_divide_and_remainder_of_integers(tmp_path, opset, dtype):
    a = ints_with_edges(dtype, 0)
    b = np.roll(ints_with_edges(dtype, 1), 3)
    b[b == 0] = 3  # division by zero raises eagerly (and in ONNX Runtime)
    ta, tb = ug.tensor(a), ug.tensor(b)
    for op in ("floor_divide", "remainder"):
        want = getattr(torch, op)(torch.tensor(a), torch.tensor(b)).numpy()
        expected, got, imported = export_run(tmp_path, Fn(getattr(ug, op)), [ta, tb], opset)
        same_bits(expected[0], want)
        same_bits(got[0], want)
        same_bits(imported[0], want)


def float_operands(dtype):
    """Dividends and divisors with both signs, signed zeros, infinities, NaN, a zero divisor and
    quotients just below an integer (1 // 0.1 is 9)."""
    inf, nan = np.inf, np.nan
    rng = np.random.default_rng(2)
    a = np.concatenate([rng.uniform(-10, 10, 30), [7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 3.0, -3.0,
                                                    inf, -inf, 5.0, -5.0, 0.0, nan, 1e30, -1e-30, 5.0]])
    b = np.concatenate([rng.uniform(-3, 3, 30), [2.0, 2.0, -2.0, -2.0, 3.0, 3.0, -3.0, -3.0, 0.1, 0.1, inf, inf,
                                                 2.0, 2.0, 0.0, -0.0, 0.0, 1.0, 0.3, 7.0, -0.1]])
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("opset", [13, 20])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_floor_divide_and_remainder_of_floats(tmp_path, opset, dtype):
    a, b = float_operands(dtype)
    ta, tb = ug.tensor(a), ug.tensor(b)
    for op in ("floor_divide", "remainder"):
        want = getattr(torch, op)(torch.tensor(a), torch.tensor(b)).numpy()
        expected, got, imported = export_run(tmp_path, Fn(getattr(ug, op)), [ta, tb], opset)
        np.testing.assert_array_equal(expected[0], want)
        # The rules run the kernels' own steps (fmod, the sign test, the rounding): the same bits.
        same_bits(got[0], expected[0])
        same_bits(imported[0], expected[0])


def test_bool_floor_divide_is_refused_naming_the_dtype(tmp_path):
    with pytest.raises(ValueError, match=r"floor_divide of bool tensors has no ONNX form"):
        ug.onnx.export(Fn(ug.floor_divide), (ug.ones(3, dtype=ug.bool), ug.ones(3, dtype=ug.bool)),
                       str(tmp_path / "m.onnx"))


# ---- atan2 ------------------------------------------------------------------------------------


def test_atan2_at_signed_zeros_infinities_and_nan(tmp_path):
    edges = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, np.nan], np.float32)
    y, x = (v.ravel() for v in np.meshgrid(edges, edges))
    want = np.arctan2(y, x)
    for opset in (13, 20):
        expected, got, imported = export_run(tmp_path, Fn(ug.atan2), [ug.tensor(y), ug.tensor(x)], opset)
        # Eagerly: NaN where C's is, zeros and infinities' angles with their signs, and within
        # an ulp of C's elsewhere (the vectorized kernel is not correctly rounded, as torch's
        # Sleef one is not; AVX2 and AVX-512 round atan2(1, 1) differently).
        numbers = ~np.isnan(want)
        np.testing.assert_array_equal(np.isnan(expected[0]), ~numbers)
        np.testing.assert_array_max_ulp(expected[0][numbers], want[numbers], maxulp=1)
        np.testing.assert_array_equal(np.signbit(expected[0][numbers]), np.signbit(want[numbers]))
        for out in (got[0], imported[0]):
            # atan(y / x) plus pi: within an ulp of pi of C's atan2, with its zeros' signs.
            np.testing.assert_allclose(out, want, rtol=2 * EPS32, atol=0)
            np.testing.assert_array_equal(np.signbit(out[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]))


def test_atan2_on_random_inputs_and_integers(tmp_path):
    rng = np.random.default_rng(3)
    y = rng.standard_normal(200).astype(np.float32) * rng.choice([1e-3, 1, 1e3], 200).astype(np.float32)
    x = rng.standard_normal(200).astype(np.float32)
    want = torch.atan2(torch.tensor(y), torch.tensor(x)).numpy()
    expected, got, imported = export_run(tmp_path, Fn(ug.atan2), [ug.tensor(y), ug.tensor(x)], 17)
    np.testing.assert_allclose(expected[0], want, rtol=EPS32, atol=0)
    # y / x rounds (half an ulp), atan keeps the relative error (its condition number is at
    # most 1) and adds its own ulp; adding pi adds half an ulp of the result.
    for out in (got[0], imported[0]):
        np.testing.assert_allclose(out, want, rtol=3 * EPS32, atol=0)
    ints = ug.tensor(np.array([-3, 0, 2, 0, 5], np.int32)), ug.tensor(np.array([0, 0, -1, -4, 5], np.int32))
    expected, got, imported = export_run(tmp_path, Fn(ug.atan2), list(ints), 13)
    np.testing.assert_allclose(got[0], expected[0], rtol=2 * EPS32, atol=0)
    np.testing.assert_allclose(imported[0], expected[0], rtol=2 * EPS32, atol=0)


def test_atan2_in_float64_runs_in_the_importer(tmp_path):
    # ONNX Runtime has no float64 Atan kernel; unigrad's importer runs the file.
    y, x = float_operands(np.float64)
    want = np.arctan2(y, x)
    expected, _, imported = export_run(tmp_path, Fn(ug.atan2), [ug.tensor(y), ug.tensor(x)], 17, ort_runs=False)
    np.testing.assert_allclose(expected[0], want, rtol=np.finfo(np.float64).eps, atol=0)
    np.testing.assert_allclose(imported[0], want, rtol=3 * np.finfo(np.float64).eps, atol=0)
    np.testing.assert_array_equal(np.signbit(imported[0][~np.isnan(want)]), np.signbit(want[~np.isnan(want)]))


# ---- bit ops ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_bitwise_ops_of_integers_from_opset_18(tmp_path, dtype):
    a, b = ints_with_edges(dtype, 4), np.roll(ints_with_edges(dtype, 5), 2)
    ta, tb = ug.tensor(a), ug.tensor(b)
    for opset in (18, 20):
        for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            want = getattr(torch, op)(torch.tensor(a), torch.tensor(b)).numpy()
            expected, got, imported = export_run(tmp_path, Fn(getattr(ug, op)), [ta, tb], opset)
            for out in (expected[0], got[0], imported[0]):
                same_bits(out, want)
        expected, got, imported = export_run(tmp_path, Fn(ug.bitwise_not), [ta], opset)
        for out in (expected[0], got[0], imported[0]):
            same_bits(out, torch.bitwise_not(torch.tensor(a)).numpy())
    for op in ("bitwise_and", "bitwise_not"):
        args = (ta, tb) if op == "bitwise_and" else (ta,)
        with pytest.raises(ValueError, match=rf"{op} of {np.dtype(dtype).name} tensors needs opset 18 or later"):
            ug.onnx.export(Fn(getattr(ug, op)), args, str(tmp_path / "m.onnx"), opset_version=17)


@pytest.mark.parametrize("opset", [13, 18])
def test_bitwise_ops_of_bools_at_any_opset(tmp_path, opset):
    rng = np.random.default_rng(6)
    a, b = rng.random(20) < 0.5, rng.random(20) < 0.5
    ta, tb = ug.tensor(a), ug.tensor(b)
    for op, want in (("bitwise_and", a & b), ("bitwise_or", a | b), ("bitwise_xor", a ^ b)):
        for out in export_run(tmp_path, Fn(getattr(ug, op)), [ta, tb], opset):
            same_bits(out[0], want)
    for out in export_run(tmp_path, Fn(ug.bitwise_not), [ta], opset):
        same_bits(out[0], ~a)


@pytest.mark.parametrize("opset", [13, 20])
def test_shifts_of_uint8(tmp_path, opset):
    a = np.array([1, 255, 3, 128, 0, 77, 200, 5, 9, 255], np.uint8)
    b = np.array([0, 1, 7, 8, 9, 3, 255, 2, 10, 4], np.uint8)  # counts of 8 and more shift all bits out
    ta, tb = ug.tensor(a), ug.tensor(b)
    for op in ("bitwise_left_shift", "bitwise_right_shift"):
        want = getattr(torch, op)(torch.tensor(a), torch.tensor(b)).numpy()
        for out in export_run(tmp_path, Fn(getattr(ug, op)), [ta, tb], opset):
            same_bits(out[0], want)


def test_shifts_of_signed_integers_are_refused(tmp_path):
    a = ug.tensor(np.array([1, -2, 3], np.int32))
    with pytest.raises(ValueError, match="bitwise_right_shift of int32 tensors has no ONNX form: BitShift takes "
                                         r"unsigned integers only \(uint8\)"):
        ug.onnx.export(Fn(ug.bitwise_right_shift), (a, a.abs()), str(tmp_path / "m.onnx"))


# ---- sort and topk ----------------------------------------------------------------------------


def with_ties(dtype, shape, seed):
    """Values drawn from few levels (ties everywhere), negatives and zeros among them."""
    rng = np.random.default_rng(seed)
    return rng.integers(-3, 4, size=shape).astype(dtype)


@pytest.mark.parametrize("opset", [13, 20])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_sort_and_topk_with_ties_in_a_stable_order(tmp_path, opset, dtype):
    x = with_ties(dtype, (4, 9), 7)
    tx = ug.tensor(x)
    cases = {
        "sort": (lambda t: t.sort(dim=1, stable=True), lambda t: t.sort(dim=1, stable=True)),
        "sort_descending": (lambda t: t.sort(dim=0, descending=True, stable=True),
                            lambda t: t.sort(dim=0, descending=True, stable=True)),
        "argsort": (lambda t: t.argsort(dim=-1, stable=True), lambda t: t.argsort(dim=-1, stable=True)),
        # topk is the head of a stable sort: TopK's order for ties (the lower index first).
        "topk": (lambda t: t.topk(4, 1), lambda t: t.sort(dim=1, descending=True, stable=True)),
        "topk_smallest": (lambda t: t.topk(3, 0, largest=False), lambda t: t.sort(dim=0, stable=True)),
    }
    for name, (fn, reference) in cases.items():
        ref = [r.numpy() for r in as_list(reference(torch.tensor(x)))]
        expected, got, imported = export_run(tmp_path, Fn(fn), [tx], opset)
        for outs in (expected, got, imported):
            for out, want in zip(outs, ref):
                k = out.shape[1] if name == "topk" else out.shape[0] if name == "topk_smallest" else None
                want = want[:, :k] if name == "topk" else want[:k] if name == "topk_smallest" else want
                same_bits(out, want)


def test_sort_follows_a_dynamic_sorted_dim(tmp_path):
    model = Fn(lambda t: t.sort(0, descending=True))
    x = ug.tensor(np.random.default_rng(8).standard_normal((5, 3)).astype(np.float32))
    path = str(tmp_path / "m.onnx")
    ug.onnx.export(model, (x,), path, input_names=["x"], output_names=["v", "i"],
                   dynamic_axes={"x": {0: "n"}, "v": {0: "n"}, "i": {0: "n"}})
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    other = ug.tensor(np.random.default_rng(9).standard_normal((11, 3)).astype(np.float32))
    for got, want in zip(session.run(None, {"x": other.numpy()}), model(other)):
        same_bits(got, want.numpy())


def test_a_0d_sort(tmp_path):
    for out in export_run(tmp_path, Fn(lambda t: t.sort()), [ug.tensor(2.5)], 17):
        same_bits(out[0], np.array(2.5, np.float32))
        same_bits(out[1], np.array(0, np.int64))


def test_jit_save_of_the_new_rules_and_the_programs_against_eager(tmp_path):
    # A program is the graph a file holds: the ops compile to it (no call back), ug.jit.save
    # writes it, and ONNX Runtime runs it.
    def f(a, b, i, j):
        return (ug.atan2(a, b), a.sort(1, descending=True)[0], ug.floor_divide(a, b), ug.remainder(a, b),
                ug.floor_divide(i, j), ug.bitwise_xor(i, j), ug.bitwise_not(i))
    rng = np.random.default_rng(14)
    a, b = (ug.tensor(rng.uniform(-5, 5, (3, 6)).astype(np.float32)) for _ in range(2))
    i = ug.tensor(rng.integers(-20, 20, (3, 6)))
    j = ug.tensor(rng.choice([-3, -1, 2, 7], (3, 6)))
    eager = [y.numpy() for y in f(a, b, i, j)]
    compiled = ug.jit(f)
    path = str(tmp_path / "f.onnx")
    ug.jit.save(compiled, path, a, b, i, j)
    assert "UgReplay" not in [n.op_type for n in onnx.load(path).graph.node]
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    from_file = session.run(None, {s.name: t.numpy() for s, t in zip(session.get_inputs(), (a, b, i, j))})
    for k, (want, program, saved) in enumerate(zip(eager, compiled(a, b, i, j), from_file)):
        if k == 0:  # atan2: Atan(y / x) and the corrections, within 3 ulps
            np.testing.assert_allclose(program.numpy(), want, rtol=3 * EPS32, atol=0)
            np.testing.assert_allclose(saved, want, rtol=3 * EPS32, atol=0)
        else:
            same_bits(program.numpy(), want)
            same_bits(saved, want)


# ---- group and instance norm --------------------------------------------------------------------


def norm_tolerance(x, spatial):
    """The normalized values are sums of `spatial` terms over a standard deviation: n eps of
    their magnitude, with the output's magnitude as the terms' scale."""
    return 4 * spatial * EPS32 * max(1.0, float(np.abs(x).max()))


NORM_MODELS = {
    "group_norm_affine": (lambda: ug.nn.GroupNorm(3, 6), lambda: torch.nn.GroupNorm(3, 6), (4, 6, 5, 3)),
    "group_norm_plain": (lambda: ug.nn.GroupNorm(2, 6, affine=False), lambda: torch.nn.GroupNorm(2, 6, affine=False),
                         (4, 6, 7)),
    "group_norm_one_group": (lambda: ug.nn.GroupNorm(1, 4), lambda: torch.nn.GroupNorm(1, 4), (3, 4, 2, 2)),
    "instance_norm_1d": (lambda: ug.nn.InstanceNorm1d(5), lambda: torch.nn.InstanceNorm1d(5), (3, 5, 8)),
    "instance_norm_2d_affine": (lambda: ug.nn.InstanceNorm2d(4, affine=True),
                                lambda: torch.nn.InstanceNorm2d(4, affine=True), (2, 4, 5, 6)),
    # With running statistics, eval mode normalizes by them (as torch's export does): ops
    # the table already had.
    "instance_norm_running": (lambda: ug.nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
                              lambda: torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
                              (2, 4, 5, 6)),
}


def trained_pair(name, seed=0):
    """The unigrad and torch modules of NORM_MODELS[name] with the same random affine
    parameters and running statistics (two training-mode steps), both in eval mode."""
    make_ug, make_torch, shape = NORM_MODELS[name]
    ours, theirs = make_ug(), make_torch()
    rng = np.random.default_rng(seed)
    state = {k: rng.uniform(0.5, 1.5, tuple(v.shape)).astype(np.float32) for k, v in theirs.state_dict().items()
             if v.dtype == torch.float32 and k in ("weight", "bias")}
    theirs.load_state_dict({**theirs.state_dict(), **{k: torch.tensor(v) for k, v in state.items()}})
    ours.load_state_dict({**ours.state_dict(), **{k: ug.tensor(v) for k, v in state.items()}})
    for step in range(2):
        batch = rng.standard_normal(shape).astype(np.float32) * 2 + step
        ours(ug.tensor(batch))
        theirs(torch.tensor(batch))
    return ours.eval(), theirs.eval(), shape


@pytest.mark.parametrize("name", list(NORM_MODELS))
@pytest.mark.parametrize("opset", [13, 17, 20])
def test_group_and_instance_norm(tmp_path, name, opset):
    ours, theirs, shape = trained_pair(name)
    rng = np.random.default_rng(10)
    x = (rng.standard_normal(shape) * 3 - 1).astype(np.float32)
    x[0, 0] = 0.0  # a plane (or group) holding zeros
    spatial = int(np.prod(shape[2:])) * (shape[1] if "one_group" in name else 2 if "group" in name else 1)
    tol = norm_tolerance(x, spatial)
    with torch.no_grad():
        want = theirs(torch.tensor(x)).numpy()
    expected, got, imported = export_run(tmp_path, ours, [ug.tensor(x)], opset, dynamic=True)
    np.testing.assert_allclose(expected[0], want, rtol=0, atol=tol)
    np.testing.assert_allclose(got[0], expected[0], rtol=0, atol=tol)
    np.testing.assert_array_equal(imported[0], expected[0])  # the importer runs the same kernel
    # The batch axis is dynamic: another batch size.
    other = rng.standard_normal((shape[0] + 3,) + shape[1:]).astype(np.float32)
    session = ort.InferenceSession(str(tmp_path / f"m{opset}.onnx"), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"x0": other})
    np.testing.assert_allclose(got, ours(ug.tensor(other)).numpy(), rtol=0, atol=norm_tolerance(other, spatial))
    ops = [n.op_type for n in onnx.load(str(tmp_path / f"m{opset}.onnx")).graph.node]
    assert ("InstanceNormalization" in ops) == ("running" not in name)


def test_a_loaded_export_of_instance_norm_trains_its_scale_and_bias(tmp_path):
    # ug.onnx.load makes the file's constants parameters: the importer keeps the affine step
    # there (it drops only a scale and bias that nothing differentiates), so they get gradients.
    path = str(tmp_path / "m.onnx")
    x = np.random.default_rng(13).standard_normal((2, 3, 5)).astype(np.float32)
    ug.onnx.export(ug.nn.InstanceNorm1d(3), ug.tensor(x), path)
    loaded = ug.onnx.load(path)
    weights = np.arange(15.0, dtype=np.float32).reshape(1, 3, 5)
    (loaded(ug.tensor(x)) * ug.tensor(weights)).sum().backward()
    scale, bias = torch.ones((), requires_grad=True), torch.zeros((), requires_grad=True)
    y = torch.nn.functional.instance_norm(torch.tensor(x), weight=scale.expand(3), bias=bias.expand(3))
    (y * torch.tensor(weights)).sum().backward()
    grads = sorted((float(p.grad) for _, p in loaded.named_parameters()), key=abs)
    want = sorted((float(scale.grad), float(bias.grad)), key=abs)
    # Sums of 30 terms, each a weight times a normalized value (|xhat| <= sqrt(5)).
    tol = x.size * EPS32 * np.sqrt(x.shape[2]) * 2 * float(np.abs(weights).sum())
    np.testing.assert_allclose(grads, want, rtol=0, atol=tol)


def test_jit_save_of_a_model_with_group_and_instance_norm_runs_in_onnx_runtime(tmp_path):
    ug.manual_seed(0)
    net = ug.nn.Sequential(ug.nn.Conv2d(3, 8, 3), ug.nn.GroupNorm(4, 8), ug.nn.ReLU(), ug.nn.Conv2d(8, 4, 3),
                           ug.nn.InstanceNorm2d(4, affine=True), ug.nn.Flatten(), ug.nn.Linear(4 * 5 * 5, 3)).eval()
    x = ug.randn(2, 3, 9, 9)
    compiled = ug.jit(net)
    np.testing.assert_array_equal(compiled(x).numpy(), net(x).numpy())  # the same kernels
    path = str(tmp_path / "net.onnx")
    ug.jit.save(compiled, path, x)
    ops = [n.op_type for n in onnx.load(path).graph.node]
    assert ops.count("InstanceNormalization") == 2 and "UgReplay" not in ops
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    # Through the normalizations (sums of 49 and 25 terms) and the products after them.
    np.testing.assert_allclose(got, net(x).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ug.onnx.load(path)(x).numpy(), net(x).numpy())


def test_a_compiled_training_step_through_group_norm_is_the_eager_step():
    def make():
        ug.manual_seed(1)
        return ug.nn.Sequential(ug.nn.Conv2d(2, 6, 3), ug.nn.GroupNorm(3, 6), ug.nn.InstanceNorm2d(6, affine=True))
    x = ug.randn(3, 2, 7, 7)
    losses = []
    for compiled in (False, True):
        net = make()
        opt = ug.optim.SGD(net.parameters(), lr=0.1)

        def step(x, net=net, opt=opt):
            opt.zero_grad()
            loss = (net(x) * ug.arange(6).reshape(1, 6, 1, 1)).pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        run = ug.jit(step) if compiled else step
        losses.append([float(run(x)) for _ in range(3)])
        losses[-1].append([p.detach().numpy() for p in net.parameters()])
    eager, jitted = losses
    np.testing.assert_allclose(jitted[:3], eager[:3], rtol=1e-6)
    for a, b in zip(jitted[3], eager[3]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---- binary cross entropy -----------------------------------------------------------------------


@pytest.mark.parametrize("opset", [13, 20])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(tmp_path, opset, reduction):
    rng = np.random.default_rng(11)
    p = np.concatenate([rng.uniform(0, 1, 30), [0.0, 1.0, 0.0, 1.0, 1e-30, 0.5]]).astype(np.float32)
    t = np.concatenate([rng.uniform(0, 1, 30), [0.0, 1.0, 1.0, 0.0, 1.0, 0.5]]).astype(np.float32)
    w = rng.uniform(0.5, 2, p.shape).astype(np.float32)
    model = Fn(lambda p, t, w: F.binary_cross_entropy(p, t, w, reduction=reduction))
    want = torch.nn.functional.binary_cross_entropy(torch.tensor(p), torch.tensor(t), torch.tensor(w),
                                                     reduction=reduction).numpy()
    expected, got, imported = export_run(tmp_path, model, [ug.tensor(p), ug.tensor(t), ug.tensor(w)], opset)
    # Each term is at most 100 (the clamped log) times a weight of at most 2: a sum of n of
    # them errs by n eps of their total.
    total = float(np.sum(np.abs(expected[0]))) if reduction == "none" else 200.0 * p.size
    tol = p.size * EPS32 * max(total / (p.size if reduction == "mean" else 1), 1.0)
    np.testing.assert_allclose(expected[0], want, rtol=0, atol=tol)
    np.testing.assert_allclose(got[0], expected[0], rtol=0, atol=tol)
    np.testing.assert_allclose(imported[0], expected[0], rtol=0, atol=tol)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_is_exported_as_its_parts(tmp_path, reduction):
    # nll_loss's kernel runs where nothing is captured; a trace sees its composition.
    rng = np.random.default_rng(12)
    x = np.log(rng.dirichlet(np.ones(5), size=8)).astype(np.float32)
    t = np.array([0, 1, 2, 3, 4, 2, 2, 1])
    w = rng.uniform(0.5, 2, 5).astype(np.float32)
    model = Fn(lambda x, t, w: F.nll_loss(x, t, w, ignore_index=2, reduction=reduction))
    want = torch.nn.functional.nll_loss(torch.tensor(x), torch.tensor(t), torch.tensor(w), ignore_index=2,
                                        reduction=reduction).numpy()
    tol = 8 * EPS32 * float(np.abs(want).sum() + 1)
    for out in export_run(tmp_path, model, [ug.tensor(x), ug.tensor(t), ug.tensor(w)], 13):
        np.testing.assert_allclose(out[0], want, rtol=0, atol=tol)


def test_reduce_retracing_makes_one_program_of_group_norm_and_sort_for_any_batch():
    # The rules read no size that changes with the batch (Reshape to [0, groups, -1], TopK's k
    # from the shape where it would): two traces make one program.
    def body(x):
        return F.group_norm(x, 2).sort(1, descending=True)[0]
    f = ug.function(body, reduce_retracing=True)
    for n in (1, 2, 3, 5):
        x = ug.randn(n, 4, 3)
        np.testing.assert_array_equal(f(x).numpy(), body(x).numpy())
    assert f.cache_info().traces == 2 and f.cache_info().size == 1
