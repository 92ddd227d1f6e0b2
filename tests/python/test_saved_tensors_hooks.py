"""ug.autograd.graph.saved_tensors_hooks / save_on_cpu / disable_saved_tensors_hooks against
torch.autograd.graph's: what the hooks see, what backward gets back, and the errors."""
import threading

import numpy as np
import pytest
import torch

import unigrad as ug


def run(lib, fn, hooks_for):
    """fn's gradients w.r.t. two float64 inputs, computed under the hooks hooks_for(lib) makes."""
    x = lib.tensor([0.5, -1.25, 2.0], dtype=lib.float64, requires_grad=True)
    y = lib.tensor([1.5, 0.75, -0.5], dtype=lib.float64, requires_grad=True)
    with hooks_for(lib):
        out = fn(lib, x, y)
    out.backward()
    return x.grad.numpy(), y.grad.numpy()


FUNCTIONS = {
    "mul exp": lambda lib, x, y: (x * y).exp().sum(),
    "sin matmul": lambda lib, x, y: (x.sin()[:, None] * y[None, :]).matmul(y).sum(),
    "tanh div": lambda lib, x, y: (x.tanh() / (y * y + 1)).sum(),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_gradients_through_hooks_that_store_numpy_copies_match_torch(name):
    calls = {}

    def hooks_for(lib):
        calls[lib] = {"pack": 0, "unpack": 0}

        def pack(t):
            calls[lib]["pack"] += 1
            return t.detach().numpy().copy()  # kept outside the tensor library altogether

        def unpack(a):
            calls[lib]["unpack"] += 1
            return lib.tensor(a)

        return lib.autograd.graph.saved_tensors_hooks(pack, unpack)

    got, want = run(ug, FUNCTIONS[name], hooks_for), run(torch, FUNCTIONS[name], hooks_for)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert calls[ug]["pack"] > 0 and calls[ug]["unpack"] == calls[ug]["pack"]


def test_packed_values_are_what_backward_uses():
    # unpack hands back a different tensor: backward must use it (torch does the same).
    def hooks_for(lib):
        return lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 0 + 2)

    got = run(ug, lambda lib, x, y: (x * y).sum(), hooks_for)
    want = run(torch, lambda lib, x, y: (x * y).sum(), hooks_for)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[0], [2.0, 2.0, 2.0])


def test_mul_saves_both_operands_once():
    # b is broadcast: it is kept as it came, not as its expanded view.
    seen = {}
    for lib in (ug, torch):
        shapes = []
        a = lib.ones(2, 3, requires_grad=True)
        b = lib.ones(3, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: shapes.append(tuple(t.shape)) or t, lambda t: t):
            a * b
        seen[lib] = sorted(shapes)
    assert seen[ug] == seen[torch] == [(2, 3), (3,)]


def test_innermost_hooks_apply_and_outer_ones_return_after():
    log = []

    def hooks(tag):
        return ug.autograd.graph.saved_tensors_hooks(lambda t: log.append(tag) or t, lambda t: t)

    x = ug.ones(3, requires_grad=True)
    with hooks("outer"):
        with hooks("inner"):
            x.exp()
        x.sin()
    x.cos()  # no hooks any more
    assert log == ["inner", "outer"]


def test_hooks_belong_to_the_thread_that_entered_them():
    log = []
    x = ug.ones(3, requires_grad=True)
    with ug.autograd.graph.saved_tensors_hooks(lambda t: log.append(1) or t, lambda t: t):
        worker = threading.Thread(target=lambda: x.exp())
        worker.start()
        worker.join()
    assert log == []


def test_save_on_cpu_gives_the_same_gradients():
    plain = run(ug, FUNCTIONS["mul exp"], lambda lib: ug.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t))
    offloaded = run(ug, FUNCTIONS["mul exp"], lambda lib: ug.autograd.graph.save_on_cpu(pin_memory=True))
    for a, b in zip(plain, offloaded):
        np.testing.assert_array_equal(a, b)


def test_save_on_cpu_keeps_a_copy_not_the_tensor():
    x = ug.tensor([1.0, 2.0], requires_grad=True)
    with ug.autograd.graph.save_on_cpu():
        h = x * 3
        y = (h * h).sum()  # saves h twice: as copies, so changing h afterwards is not seen
    with ug.no_grad():
        h.add_(100.0)
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [18.0, 36.0])


def test_unpack_must_return_a_tensor():
    x = ug.ones(2, requires_grad=True)
    with ug.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: "not a tensor"):
        y = (x * x).sum()
    with pytest.raises(TypeError, match=r"\[saved_tensors_hooks\] unpack_hook must return a Tensor, got str"):
        y.backward()


def test_a_failing_pack_hook_raises_its_own_error():
    x = ug.ones(2, requires_grad=True)
    with ug.autograd.graph.saved_tensors_hooks(lambda t: 1 / 0, lambda t: t):
        with pytest.raises(ZeroDivisionError):
            x * x


def test_disable_saved_tensors_hooks_refuses_hooks_with_its_message():
    for lib in (ug, torch):
        with lib.autograd.graph.disable_saved_tensors_hooks("no hooks in here"):
            with pytest.raises(RuntimeError, match="no hooks in here"):
                with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):  # allowed again after
            pass
