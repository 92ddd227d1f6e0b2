"""ug.nn.utils.rnn: PackedSequence and pack_padded_sequence, pad_packed_sequence, pad_sequence,
pack_sequence, unpad_sequence, unpack_sequence, as torch.nn.utils.rnn (ug::nn::utils::rnn in
C++). PackedSequence is a named tuple, as torch's: the functions and the recurrent layers
take and return it."""
from typing import NamedTuple, Optional

from ... import _C
from ..._export import export

__all__ = export(_C.nn._rnn, globals())


class _PackedSequenceFields(NamedTuple):
    data: "_C.Tensor"
    batch_sizes: "_C.Tensor"
    sorted_indices: Optional["_C.Tensor"]
    unsorted_indices: Optional["_C.Tensor"]


class PackedSequence(_PackedSequenceFields):
    """Variable-length sequences, packed time-major (torch.nn.utils.rnn.PackedSequence): data
    [sum of lengths, *] holds step 0 of every sequence, then step 1 of those that have one, ...;
    batch_sizes (int64, CPU) how many sequences have each step; sorted_indices the batch order by
    decreasing length and unsorted_indices its inverse (None when the batch came sorted). Made
    by pack_padded_sequence and pack_sequence rather than by hand."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = sorted_indices.argsort()
        if batch_sizes is None:  # torch's PackedSequence((data, batch_sizes))
            if not isinstance(data, (list, tuple)) or len(data) != 2:
                raise TypeError("PackedSequence expects (data, batch_sizes, ...) or a pair (data, batch_sizes)")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """data.to(*args, **kwargs); the indices follow data to its device, batch_sizes stays on the CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "dtype")}

        def move(t):
            return None if t is None else t.to(data.device, **kwargs)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self, *args, **kwargs):
        return self.to(*args, device="cpu", **kwargs)

    def cuda(self, *args, **kwargs):
        return self.to(*args, device="cuda", **kwargs)

    def double(self):
        return self.to(dtype=_C.float64)

    def float(self):
        return self.to(dtype=_C.float32)

    def half(self):
        return self.to(dtype=_C.float16)

    def bfloat16(self):
        return self.to(dtype=_C.bfloat16)

    @property
    def is_cuda(self):
        return self.data.is_cuda


__all__ += ["PackedSequence"]
