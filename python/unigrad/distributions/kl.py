"""register_kl and kl_divergence's dispatch (torch.distributions.kl). The closed forms are in C++;
the ranking is here because Python subclasses (and their MRO) exist only on this side."""
import functools
import warnings

from .. import _C

_D = _C._distributions
# (type_p, type_q) -> fn in registration order, the built-in pairs (the C++ kl_divergence) first:
# torch's _KL_REGISTRY, whose order settles ties between pairs neither more specific.
_BUILTIN = {(getattr(_D, p), getattr(_D, q)): _D.kl_divergence for p, q in _D._kl_pairs()}
_REGISTRY = dict(_BUILTIN)


def register_kl(type_p, type_q):
    """Decorator registering fn(p, q) as KL(p || q) for p a type_p and q a type_q (subclasses
    included); kl_divergence uses the most specific registered pair, as torch's."""
    for t in (type_p, type_q):
        if not (isinstance(t, type) and issubclass(t, _D.Distribution)):
            raise TypeError(f"Expected a Distribution subclass but got {t}")

    def decorator(fn):
        _REGISTRY[type_p, type_q] = fn
        _lookup.cache_clear()  # a new pair may be more specific than a cached one
        return fn

    return decorator


def _le(a, b):
    """torch's _Match order: a at least as specific as b, first coordinate first."""
    for x, y in zip(a, b):
        if not issubclass(x, y):
            return False
        if x is not y:
            break
    return True


def _most_specific(matches):
    best = matches[0]
    for m in matches[1:]:
        if _le(m, best):
            best = m
    return best


@functools.lru_cache(maxsize=None)
def _lookup(type_p, type_q):
    matches = [m for m in _REGISTRY if issubclass(type_p, m[0]) and issubclass(type_q, m[1])]
    if not matches:
        return None
    left = _most_specific(matches)
    right_q, right_p = _most_specific([(q, p) for p, q in matches])
    if _REGISTRY[left] is not _REGISTRY[right_p, right_q]:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left[0].__name__}, {right_q.__name__})", RuntimeWarning, stacklevel=3)
    return _REGISTRY[left]


def kl_divergence(p, q):
    """KL(p || q) over the batch: a registered pair's function, or the closed form built in
    (NotImplementedError naming both types for a pair neither covers)."""
    fn = _lookup(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"[kl_divergence] no KL(p || q) is implemented for p a {type(p).__name__} "
                                  f"and q a {type(q).__name__}")
    return fn(p, q)
