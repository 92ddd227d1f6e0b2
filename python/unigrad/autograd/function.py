"""ug.autograd.function: torch.autograd.function's names (the implementation, shared with
JAX's custom_vjp/custom_jvp and TensorFlow's custom_gradient, is unigrad.custom_gradients)."""
from ..custom_gradients import Function, FunctionCtx, once_differentiable  # noqa: F401

PyLayer = Function  # PaddlePaddle's paddle.autograd.PyLayer
