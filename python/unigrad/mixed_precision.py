"""ug.mixed_precision (also ug.keras.mixed_precision): Keras's dtype policies.

    ug.mixed_precision.set_global_policy("mixed_float16")

Layers with weights built afterwards (Dense, Linear, the convolutions) keep float32 weights and
compute in float16; compile() then fit() run the forward pass and the loss under autocast and
scale the float16 loss, as Keras's LossScaleOptimizer does. As in Keras, the policy a model was
built under decides, not the one at compile(). "float16", "bfloat16" and "float64" give Dense
weights and outputs of that dtype. The policy lives in C++ (ug::mixed_precision).
"""
from . import _C

_amp = _C._amp


class Policy:
    """keras.mixed_precision.Policy: name, compute_dtype, variable_dtype (dtype names)."""

    def __init__(self, name):
        self.name, self.compute_dtype, self.variable_dtype = _amp.policy(name)

    def __repr__(self):
        return f'<DTypePolicy "{self.name}">'

    def __eq__(self, other):
        return isinstance(other, Policy) and other.name == self.name


def set_global_policy(policy):
    """A policy name ("mixed_float16", "mixed_bfloat16", "float32", ...) or a Policy."""
    _amp.set_global_policy(policy.name if isinstance(policy, Policy) else policy)


def global_policy():
    return Policy(_amp.global_policy()[0])


# Keras 2's spellings.
DTypePolicy = Policy
LossScaleOptimizer = _C.optimizers.LossScaleOptimizer  # Keras 3 has it here too
