"""torch's top-level forms of ug.nn.functional's ops (torch.layer_norm, torch.dropout, ...). They
are ATen's signatures, not torch.nn.functional's: other positional orders, required flags, and
the reduction as an int (0 none, 1 mean, 2 sum). Each one calls the functional op it names.

The losses' reduction defaults to 0, none: torch 2.13's top-level losses reduce nothing unless
told, though its stubs write reduction=1 (ATen's Mean)."""
from . import _C

F = _C.nn.functional
_REDUCTIONS = ("none", "mean", "sum")


def _reduction(op, reduction):
    # bool is an int to Python but not to torch's int argument
    if not isinstance(reduction, int) or isinstance(reduction, bool):
        raise TypeError(f"[{op}] reduction must be an int (0 none, 1 mean, 2 sum) as torch.{op}'s, "
                        f"not {type(reduction).__name__}")
    if reduction not in (0, 1, 2):
        raise ValueError(f"[{op}] reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction}")
    return _REDUCTIONS[reduction]


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """torch.layer_norm: F.layer_norm; cudnn_enable has no effect."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """torch.group_norm: F.group_norm; cudnn_enabled has no effect."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """torch.batch_norm: F.batch_norm with weight and bias first and every argument required."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    """torch.instance_norm: F.instance_norm with weight and bias first and every argument required."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def dropout(input, p, train):
    """torch.dropout: F.dropout(input, p, training=train)."""
    return F.dropout(input, p, train)


def alpha_dropout(input, p, train):
    """torch.alpha_dropout: F.alpha_dropout(input, p, training=train)."""
    return F.alpha_dropout(input, p, train)


def feature_alpha_dropout(input, p, train):
    """torch.feature_alpha_dropout: F.feature_alpha_dropout(input, p, training=train)."""
    return F.feature_alpha_dropout(input, p, train)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding: F.embedding with the weight first; a negative padding_idx means none."""
    return F.embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def kl_div(input, target, reduction=0, *, log_target=False):
    return F.kl_div(input, target, reduction=_reduction("kl_div", reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return F.binary_cross_entropy_with_logits(
        input, target, weight, reduction=_reduction("binary_cross_entropy_with_logits", reduction),
        pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction("margin_ranking_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, reduction=0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction("ctc_loss", reduction), zero_infinity)


def constant_pad_nd(input, pad, value=0):
    """torch.constant_pad_nd: F.pad(input, pad, value=value); negative pads crop."""
    return F.pad(input, pad, "constant", value)


def fill(input, value):
    """A tensor of input's shape and dtype holding value, a number or a 0-d tensor (torch.fill). As
    torch's, input's gradient is zero and a tensor value's the sum of the incoming gradient."""
    if not isinstance(value, _C.Tensor):
        filled = _C.full_like(input, value)
    elif value.dim() != 0:
        raise RuntimeError(f"[fill] only supports a 0-dimension value tensor, got one with {value.dim()} "
                           f"dimensions (shape {list(value.shape)})")
    else:
        filled = value.to(input.dtype).expand(tuple(input.shape))
    # where keeps input in the graph, so it gets a zero gradient rather than none
    return _C.where(_C.ones_like(input, dtype=_C.bool), filled, input)


def ger(input, vec2):
    """torch.ger, the older name of outer."""
    return input.outer(vec2)


def conv_tbc(input, weight, bias, pad=0):
    """torch.conv_tbc: a 1-d convolution of input (time, batch, in_channels) with weight (kernel_width,
    in_channels, out_channels), giving (time, batch, out_channels); F.conv1d on the permuted tensors."""
    if input.dim() != 3 or weight.dim() != 3 or bias.dim() != 1:
        raise RuntimeError(f"[conv_tbc] expected a 3-d input, a 3-d weight and a 1-d bias, got shapes "
                           f"{list(input.shape)}, {list(weight.shape)}, {list(bias.shape)}")
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


FUNCTIONS = {name: fn for name, fn in globals().items()
             if callable(fn) and not name.startswith("_") and fn.__module__ == __name__}
FUNCTIONS["rms_norm"] = F.rms_norm  # the same signature as torch's
