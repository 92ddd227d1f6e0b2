"""ug.debugging: NaN/Inf checks on forward values, as tf.debugging offers."""
from . import _C


def check_numerics(tensor, message):
    """Returns tensor, or raises RuntimeError with `message` if it holds NaN or Inf."""
    return _C._debugging.check_numerics(tensor, message)


def enable_check_numerics():
    """From now on every op checks its output and raises naming itself on NaN/Inf."""
    _C._debugging.enable_check_numerics()


def disable_check_numerics():
    _C._debugging.disable_check_numerics()
