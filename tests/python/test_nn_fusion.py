"""ug.nn.utils' conv/linear + batch norm fusion and skip_init against torch.nn.utils': the
fused weights and biases (and their requires_grad), the fused layer's output and gradients."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import assert_close, check_layer

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape)


def to_np(t):
    return t.detach().numpy()


def copy_state(u, t):
    u.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})


def bn_pair(cls, features, affine=True):
    """An eval batch norm with random running statistics and affine parameters, and its twin."""
    t = getattr(torch.nn, cls)(features, eps=1e-3, affine=affine).double()
    with torch.no_grad():
        t.running_mean.copy_(torch.tensor(rand(features)))
        t.running_var.copy_(torch.tensor(rand(features) ** 2 + 0.5))
        if affine:
            t.weight.copy_(torch.tensor(rand(features)))
            t.bias.copy_(torch.tensor(rand(features)))
    u = getattr(ug.nn, cls)(features, eps=1e-3, affine=affine).double()
    copy_state(u, t)
    return u.eval(), t.eval()


CONVS = [  # conv class, its arguments, the batch norm, input shape, transpose
    ("Conv2d", (3, 4, 3), "BatchNorm2d", (2, 3, 7, 7), False),
    ("Conv1d", (3, 4, 3), "BatchNorm1d", (2, 3, 9), False),
    ("ConvTranspose2d", (3, 4, 3), "BatchNorm2d", (2, 3, 5, 5), True),
]


@pytest.mark.parametrize("conv,args,bn,shape,transpose", CONVS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_fuse_conv_bn_eval_matches_torch(conv, args, bn, shape, transpose, bias, affine):
    t = getattr(torch.nn, conv)(*args, bias=bias).double().eval()
    u = getattr(ug.nn, conv)(*args, bias=bias).double().eval()
    copy_state(u, t)
    ub, tb = bn_pair(bn, args[1], affine)
    uf = ug.nn.utils.fuse_conv_bn_eval(u, ub, transpose=transpose)
    tf = torch.nn.utils.fuse_conv_bn_eval(t, tb, transpose=transpose)
    assert type(uf).__name__ == conv and uf is not u
    for name in ("weight", "bias"):
        assert_close(to_np(getattr(uf, name)), to_np(getattr(tf, name)), path=name)
        assert getattr(uf, name).requires_grad == getattr(tf, name).requires_grad
        assert isinstance(getattr(uf, name), ug.nn.Parameter)
    assert_close(to_np(u.weight), to_np(t.weight))  # the original is left as it was
    check_layer(uf, tf, rand(*shape))
    # The fused layer computes what the pair did.
    x = ug.tensor(rand(*shape))
    assert_close(to_np(uf(x)), to_np(ub(u(x))), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("bias", [True, False])
def test_fuse_linear_bn_eval_matches_torch(bias):
    t = torch.nn.Linear(5, 4, bias=bias).double().eval()
    u = ug.nn.Linear(5, 4, bias=bias, dtype=ug.float64).eval()
    copy_state(u, t)
    ub, tb = bn_pair("BatchNorm1d", 4)
    uf, tf = ug.nn.utils.fuse_linear_bn_eval(u, ub), torch.nn.utils.fuse_linear_bn_eval(t, tb)
    for name in ("weight", "bias"):
        assert_close(to_np(getattr(uf, name)), to_np(getattr(tf, name)), path=name)
        assert getattr(uf, name).requires_grad == getattr(tf, name).requires_grad
    check_layer(uf, tf, rand(3, 5))


def test_fuse_weights_functions_match_torch():
    rm, rv, g, beta, b = rand(4), rand(4) ** 2 + 0.1, rand(4), rand(4), rand(4)
    stats_t = [torch.tensor(a) for a in (rm, rv)]
    stats_u = [ug.tensor(a) for a in (rm, rv)]
    for transpose, shape in ((False, (4, 3, 2)), (True, (3, 4, 2))):  # a transposed conv's channels are dim 1
        w = rand(*shape)
        tw, tb = torch.nn.utils.fuse_conv_bn_weights(torch.tensor(w), torch.tensor(b), *stats_t, 3e-5,
                                                     torch.tensor(g), torch.tensor(beta), transpose)
        uw, ub = ug.nn.utils.fuse_conv_bn_weights(ug.tensor(w), ug.tensor(b), *stats_u, 3e-5, ug.tensor(g),
                                                  ug.tensor(beta), transpose)
        assert_close(to_np(uw), to_np(tw))
        assert_close(to_np(ub), to_np(tb))
    lw = rand(4, 6)
    tw, tb = torch.nn.utils.fuse_linear_bn_weights(torch.tensor(lw), None, *stats_t, 1e-5, torch.tensor(g),
                                                   torch.tensor(beta))
    uw, ub = ug.nn.utils.fuse_linear_bn_weights(ug.tensor(lw), None, *stats_u, 1e-5, ug.tensor(g), ug.tensor(beta))
    assert_close(to_np(uw), to_np(tw))
    assert_close(to_np(ub), to_np(tb))
    assert uw.requires_grad == tw.requires_grad and ub.requires_grad == tb.requires_grad


def test_fusion_needs_eval_and_running_statistics():
    conv, bn = ug.nn.Conv2d(3, 4, 3), ug.nn.BatchNorm2d(4)
    with pytest.raises(RuntimeError, match="eval"):
        ug.nn.utils.fuse_conv_bn_eval(conv, bn)
    with pytest.raises(RuntimeError, match="running_mean"):
        ug.nn.utils.fuse_conv_bn_eval(conv.eval(), ug.nn.BatchNorm2d(4, track_running_stats=False).eval())
    with pytest.raises(TypeError, match="BatchNorm"):
        ug.nn.utils.fuse_conv_bn_eval(conv.eval(), ug.nn.LayerNorm(4).eval())
    with pytest.raises(RuntimeError, match="out_features"):
        ug.nn.utils.fuse_linear_bn_eval(ug.nn.Linear(3, 5).eval(), ug.nn.BatchNorm1d(4).eval())


def test_skip_init_builds_the_layer():
    m = ug.nn.utils.skip_init(ug.nn.Linear, 5, 3, bias=False)
    t = torch.nn.utils.skip_init(torch.nn.Linear, 5, 3, bias=False)
    assert type(m) is ug.nn.Linear and tuple(m.weight.shape) == tuple(t.weight.shape) and m.bias is None
    with pytest.raises(TypeError, match="module class"):
        ug.nn.utils.skip_init(ug.nn.Linear(2, 2))
