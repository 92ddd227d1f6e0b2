"""ug.histogramdd against torch.histogramdd 2.13: counts, weights, densities and edges, for bin
counts, per-dim counts, ranges and explicit edges; and its errors."""
import numpy as np
import pytest
import torch

import unigrad as ug

RNG = np.random.default_rng(0)


def compare(x, **kwargs):
    ukw = {k: ([ug.tensor(e) for e in v] if k == "bins" and not isinstance(v, int) and isinstance(v[0], np.ndarray)
               else ug.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    tkw = {k: ([torch.tensor(e) for e in v] if k == "bins" and not isinstance(v, int) and isinstance(v[0], np.ndarray)
               else torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    want, got = torch.histogramdd(torch.tensor(x), **tkw), ug.histogramdd(ug.tensor(x), **ukw)
    assert type(got).__name__ == "histogramdd" and isinstance(got.bin_edges, tuple)
    assert len(got.bin_edges) == len(want.bin_edges)
    for g, w in zip(got.bin_edges, want.bin_edges):
        # torch's linspace from both ends, in the input's dtype: exact or an ulp of the range
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6)
    assert got.hist.dtype == getattr(ug, str(want.hist.dtype).split(".")[-1])
    # sums of a few weights (float32) or counts; a density divides by float32 volumes
    np.testing.assert_allclose(got.hist.numpy(), want.hist.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [
    {"bins": 4}, {"bins": [2, 3, 5]}, {"bins": 3, "range": [-1.0, 1.0, -2.0, 0.5, 0.0, 3.0]},
    {"bins": [3, 2, 4], "density": True}, {"bins": 2, "weight": "w"}, {"bins": 3, "weight": "w", "density": True},
])
def test_matches_torch(kwargs):
    x = RNG.standard_normal((40, 3)).astype(np.float32)
    if kwargs.get("weight") == "w":
        kwargs = {**kwargs, "weight": RNG.uniform(size=40).astype(np.float32)}
    compare(x, **kwargs)


def test_batched_points_explicit_edges_and_edge_values():
    x = RNG.standard_normal((2, 10, 2))
    compare(x, bins=2, weight=RNG.uniform(size=(2, 10)))
    # points on the edges: the last bin holds its right edge, the others their left
    pts = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 3.0], [0.5, 2.0], [3.5, -1.0]])
    compare(pts, bins=[np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.5, 3.0])])
    compare(np.array([[0.0, 1.0], [0.0, 2.0], [0.0, 3.0]]), bins=[2, 3])  # one value in a dim: widened by 0.5
    compare(np.zeros((0, 2)), bins=2)  # no points: [0, 1]


def test_errors():
    x = ug.randn(5, 2)
    with pytest.raises(RuntimeError, match=r"\[histogramdd\] bins must give one entry per dimension of the points, 2"):
        ug.histogramdd(x, bins=[2])
    with pytest.raises(RuntimeError, match=r"\[histogramdd\] for a 2-dimensional histogram range should have 4"):
        ug.histogramdd(x, bins=2, range=[0.0, 1.0])
    with pytest.raises(RuntimeError, match=r"\[histogramdd\] input must have at least 2 dimensions"):
        ug.histogramdd(ug.randn(5), bins=2)
    with pytest.raises(RuntimeError, match=r"\[histogramdd\] weight must have the input's shape less its last dim"):
        ug.histogramdd(x, bins=2, weight=ug.ones(2))
    with pytest.raises(RuntimeError, match=r"\[histogramdd\] needs a floating tensor"):
        ug.histogramdd(ug.ones(5, 2, dtype=ug.int32), bins=2)
    with pytest.raises(RuntimeError, match=r"\[histogramdd\] bins must be > 0"):
        ug.histogramdd(x, bins=[2, 0])
    with pytest.raises(RuntimeError, match=r"\[histogramdd\] each dim's bins must be a 1-d tensor of at least 2"):
        ug.histogramdd(x, bins=[ug.tensor([0.0, 1.0]), ug.tensor([0.0])])
