"""JAX's functional index updates: `x.at[idx].set(v)`, `.add`, `.subtract`, `.multiply`, `.divide`,
`.power`, `.min`, `.max`, `.apply` and `.get`. Each gives a new tensor (x is unchanged), records
gradients and traces under ug.jit and vmap: it is one gather or scatter over the flat positions of
the elements the index selects (an index tensor of arange's positions, indexed as x would be).

As in JAX, repeated indices accumulate for add, multiply, min and max, and out-of-bounds indices
follow `mode`: updates drop them by default ("drop"; "clip" clamps them), get clamps them by
default ("clip"; "fill" gives fill_value there); "promise_in_bounds" indexes as x[idx] does,
which raises on an index out of bounds.
"""
from . import _C

_Tensor = _C.Tensor


class _IndexUpdateHelper:
    """x.at: x.at[idx] is the reference the updates act on."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor

    def __getitem__(self, index):
        return _IndexUpdateRef(self.tensor, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.tensor!r})"


def _fill_default(dtype):
    """JAX's fill for get(mode="fill"): NaN, the most negative signed integer, True."""
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == _C.bool:
        return True
    return _C.iinfo(dtype).min if _C.iinfo(dtype).min < 0 else _C.iinfo(dtype).max


def _is_mask(c):
    return isinstance(c, _Tensor) and c.dtype == _C.bool


def _may_repeat(c):
    """Whether an index component can name one position twice: an integer tensor or sequence."""
    if isinstance(c, _Tensor):
        return not _is_mask(c)
    return isinstance(c, (list, tuple)) or hasattr(c, "__array__")


def _integers(c, device):
    """An integer index component as an int64 tensor (lists and arrays as torch indexes them)."""
    if isinstance(c, _Tensor):
        return c.to(_C.int64)
    return _C.as_tensor(c, device=device).to(_C.int64)


class _IndexUpdateRef:
    """x.at[idx]: the methods give x with the elements x[idx] updated."""

    __slots__ = ("tensor", "index")

    def __init__(self, tensor, index):
        self.tensor, self.index = tensor, index

    def __repr__(self):
        return f"_IndexUpdateRef({self.tensor!r}, {self.index!r})"

    def _positions(self, mode):
        """(the flat positions of the selected elements, shaped as x[idx]; which are in bounds, or
        None where all are)."""
        t = self.tensor
        index = self.index if isinstance(self.index, tuple) else (self.index,)
        used = sum(c.dim() if _is_mask(c) else 1 for c in index if c is not None and c is not Ellipsis)
        dims, dim, padded, new_index = list(t.shape), 0, list(t.shape), []
        for c in index:
            if c is None:
                new_index.append(c)
                continue
            if c is Ellipsis:
                dim += t.dim() - used
                new_index.append(c)
                continue
            if isinstance(c, slice) or _is_mask(c):
                dim += c.dim() if _is_mask(c) else 1
                new_index.append(c)
                continue
            if dim >= t.dim():
                raise IndexError(f"[at] too many indices for a tensor of shape {list(t.shape)}")
            n = dims[dim]
            if isinstance(c, bool):
                raise IndexError("[at] a bool index is not supported; use a bool tensor mask")
            if isinstance(c, int):
                c = c + n if c < 0 else c
                if mode == "clip":
                    c = min(max(c, 0), n - 1)
            else:
                c = _integers(c, t.device)
                c = _C.where(c < 0, c + n, c)
                if mode == "clip":
                    c = c.clamp(0, n - 1)
            if mode in ("drop", "fill"):
                # An index out of bounds reads the slot past the end, where the positions hold -1.
                c = (c if 0 <= c < n else n) if isinstance(c, int) else _C.where((c >= 0) & (c < n), c, n)
                padded[dim] = n + 1
            new_index.append(c)
            dim += 1
        positions = _C.arange(t.numel(), device=t.device).reshape(t.shape)
        if padded == dims:
            return positions[tuple(new_index)], None
        held = _C.full(padded, -1, dtype=_C.int64, device=t.device)
        held[tuple(slice(0, n) for n in dims)] = positions
        selected = held[tuple(new_index)]
        return selected, selected >= 0

    def _slots(self, mode):
        """x flat (with one slot more where some positions are out of bounds) and the positions,
        those out of bounds sent to that slot."""
        flat = self.tensor.reshape(-1)
        positions, valid = self._positions(mode)
        if valid is None:
            return flat, positions, False
        spare = _C.zeros(1, dtype=flat.dtype, device=flat.device)
        return _C.cat([flat, spare]), _C.where(valid, positions, flat.shape[0]), True

    def _scatter(self, values, combine, mode):
        t = self.tensor
        flat, positions, extra = self._slots(mode or "drop")
        values = _C.as_tensor(values, device=t.device).to(t.dtype)
        values = values.broadcast_to(positions.shape).reshape(-1)
        out = combine(flat, positions.reshape(-1), values)
        return (out[:-1] if extra else out).reshape(t.shape)

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None):
        """x[idx], indices out of bounds clamped (mode "clip", the default) or filled (mode "fill")."""
        t = self.tensor
        if mode == "promise_in_bounds":
            return t[self.index]
        if mode not in (None, "clip", "fill"):
            raise ValueError(f"[at.get] mode must be 'clip', 'fill' or 'promise_in_bounds', got {mode!r}")
        if mode != "fill":
            positions, _ = self._positions("clip")
            return t.reshape(-1).take(positions)
        flat, positions, extra = self._slots("fill")
        if extra:
            fill = _fill_default(t.dtype) if fill_value is None else fill_value
            flat = _C.cat([flat[:-1], _C.full((1,), fill, dtype=t.dtype, device=t.device)])
        return flat.take(positions)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with x[idx] = values (where indices repeat, one of their values)."""
        return self._scatter(values, lambda f, p, v: f.scatter(0, p, v), self._update_mode(mode))

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with x[idx] += values, every repeat of an index adding."""
        return self._scatter(values, lambda f, p, v: f.scatter_add(0, p, v), self._update_mode(mode))

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return self.add(-_C.as_tensor(values, device=self.tensor.device), mode=mode)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with x[idx] *= values, every repeat of an index multiplying."""
        return self._scatter(values, lambda f, p, v: f.scatter_reduce(0, p, v, "prod"), self._update_mode(mode))

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with x[idx] /= values: x over ones multiplied by values there, as JAX computes it."""
        t = self.tensor
        return t / _IndexUpdateRef(_C.ones_like(t), self.index).multiply(values, mode=mode)

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with x[idx] **= values (x ** 1 elsewhere, which is x)."""
        t = self.tensor
        return t ** _IndexUpdateRef(_C.ones_like(t), self.index).multiply(values, mode=mode)

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return self._scatter(values, lambda f, p, v: f.scatter_reduce(0, p, v, "amin"), self._update_mode(mode))

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return self._scatter(values, lambda f, p, v: f.scatter_reduce(0, p, v, "amax"), self._update_mode(mode))

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x with func (elementwise) applied to the elements x[idx], as JAX does: once for every
        time an index occurs."""
        t = self.tensor
        flat, positions, extra = self._slots(self._update_mode(mode))
        positions = positions.reshape(-1)
        index = self.index if isinstance(self.index, tuple) else (self.index,)
        may_repeat = not unique_indices and any(_may_repeat(c) for c in index)
        repeats = 1
        if may_repeat:
            if _C._autograd.capturing():
                raise ValueError("[at.apply] under ug.jit an index tensor may repeat an index, and func is "
                                 "applied once per repeat, which the trace cannot count: pass "
                                 "unique_indices=True where it does not repeat")
            counts = _C.zeros(flat.shape[0], dtype=_C.int64, device=t.device).scatter_add(
                0, positions, _C.ones_like(positions))
            repeats = int(counts.max().item())
        else:
            counts = None
        selected = flat.take(positions)
        for k in range(repeats):
            applied = func(selected)
            selected = applied if counts is None else _C.where(counts.take(positions) > k, applied, selected)
        out = flat.scatter(0, positions, selected)
        return (out[:-1] if extra else out).reshape(t.shape)

    @staticmethod
    def _update_mode(mode):
        if mode not in (None, "drop", "clip", "promise_in_bounds"):
            raise ValueError(f"[at] mode must be 'drop', 'clip' or 'promise_in_bounds' for an update, got {mode!r}")
        return "drop" if mode is None else mode


_Tensor.at = property(_IndexUpdateHelper, doc="JAX's functional index updates: x.at[idx].set(v), .add(v), ...")
