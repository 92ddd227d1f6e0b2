"""Every op-table row whose float32 inputs can be made complex64: unigrad's answer equals
torch's, or unigrad raises. No op may answer for the real part alone (an op that casts its
input to a real dtype raises instead: Tensor.to refuses to drop an imaginary part). Where
torch refuses and unigrad computes (glu, interpolate, xlog1py: compositions of complex ops),
unigrad's answer is the composition's, checked on its parts elsewhere."""
import warnings

import numpy as np
import pytest
import torch

import op_table
import unigrad as ug
from reference import Arg

EXTENDS_TORCH = {"F.glu", "interpolate", "special.xlog1py"}


def complex_inputs(op):
    rng = np.random.default_rng(1)
    out = []
    for a in op.inputs:
        if isinstance(a, Arg) and a.array.dtype == np.float32 and a.dtype is None:
            a = Arg((a.array + 1j * rng.uniform(-1, 1, a.array.shape)).astype(np.complex64), None, a.view)
        out.append(a)
    return out


ROWS = [op for op in op_table.OPS if any(a is not b for a, b in zip(complex_inputs(op), op.inputs))]


def flat(v):
    if isinstance(v, (list, tuple)):
        return np.concatenate([flat(x) for x in v]) if v else np.zeros(0)
    if isinstance(v, torch.Tensor):
        v = v.detach().resolve_conj().numpy()
    elif isinstance(v, ug.Tensor):
        v = v.numpy()
    return np.ravel(np.asarray(v)).astype(np.complex128)


@pytest.mark.parametrize("op", ROWS, ids=lambda op: op.name)
def test_complex_inputs_get_torchs_answer_or_an_error(op):
    inputs = complex_inputs(op)
    try:
        got = op.fn(ug, *[a.make(ug) if isinstance(a, Arg) else a for a in inputs])
    except Exception:  # refused: the error names the op (test_errors checks messages)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = op.fn(torch, *[a.make(torch) if isinstance(a, Arg) else a for a in inputs])
        except Exception:
            assert op.name in EXTENDS_TORCH, f"{op.name}: unigrad computes where torch refuses complex inputs"
            return
    a, b = flat(got), flat(want)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3 * (1 + np.abs(b).max(initial=0)), equal_nan=True)
