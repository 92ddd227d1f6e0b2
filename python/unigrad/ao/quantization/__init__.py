"""ug.ao.quantization (torch.ao.quantization; also ug.quantization): post-training dynamic
quantization. quantize_dynamic swaps each Linear for ug.ao.nn.quantized.dynamic.Linear: an int8
weight, and an input quantized to uint8 from its own range at each call (ug::quantization in C++)."""
import copy

from ... import _C


class QConfig:
    """What quantize_dynamic does to a layer: its weight's int8 scale per tensor, or per output
    channel (torch's default_dynamic_qconfig and per_channel_dynamic_qconfig)."""

    def __init__(self, per_channel):
        self.per_channel = per_channel

    def __repr__(self):
        return "per_channel_dynamic_qconfig" if self.per_channel else "default_dynamic_qconfig"


default_dynamic_qconfig = QConfig(per_channel=False)
per_channel_dynamic_qconfig = QConfig(per_channel=True)


def _type_name(t):
    return t if isinstance(t, str) else getattr(t, "__name__", repr(t))


def quantize_dynamic(model, qconfig_spec=None, dtype=_C.int8, mapping=None, inplace=False):
    """torch.ao.quantization.quantize_dynamic: a copy of model (model itself when inplace) whose
    layers of the types in qconfig_spec (a set of classes or names, or a dict from them to
    default_dynamic_qconfig / per_channel_dynamic_qconfig; default {ug.nn.Linear}) are replaced by
    their dynamically quantized form, at any depth. Only Linear has one, with dtype ug.qint8
    (ug.int8); other types or dtypes raise TypeError naming them."""
    if mapping is not None:
        raise TypeError("quantize_dynamic: a custom mapping is not supported (Linear maps to "
                        "ug.ao.nn.quantized.dynamic.Linear)")
    spec = {"Linear": default_dynamic_qconfig} if qconfig_spec is None else qconfig_spec
    if not isinstance(spec, dict):
        spec = dict.fromkeys(spec, default_dynamic_qconfig)
    for qconfig in spec.values():
        if not isinstance(qconfig, QConfig):
            raise TypeError(f"quantize_dynamic: qconfig_spec's values must be default_dynamic_qconfig or "
                            f"per_channel_dynamic_qconfig, got {qconfig!r}")
    per_channel = {q.per_channel for q in spec.values()}
    if len(per_channel) > 1:
        raise ValueError("quantize_dynamic: qconfig_spec mixes per-tensor and per-channel qconfigs")
    if not inplace:
        model = copy.deepcopy(model)
    return _C.quantization.quantize_dynamic(model, {_type_name(t) for t in spec}, dtype, True,
                                            per_channel.pop() if per_channel else False)


__all__ = ["QConfig", "default_dynamic_qconfig", "per_channel_dynamic_qconfig", "quantize_dynamic"]
