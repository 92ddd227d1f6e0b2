"""ug.data: data sets, samplers, DataLoader, the tf.data-style Pipeline and file readers
(ug::data in C++)."""
from .. import _C
from .._export import export

__all__ = export(_C.data, globals())


class IterableDataset:
    """A data set read as a stream (torch.utils.data.IterableDataset): subclass it with
    __iter__. A DataLoader batches what one iterator yields; with num_workers > 0 one worker
    thread pulls from it ahead of the training loop (threads share the iterator, so nothing
    is duplicated and no get_worker_info sharding is needed)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class ChainDataset(IterableDataset):
    """IterableDatasets one after the other (torch.utils.data.ChainDataset); its len() is the
    sum of theirs."""

    def __init__(self, datasets):
        super().__init__()
        self.datasets = datasets

    def _parts(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"[ChainDataset] expected IterableDatasets, got a {type(d).__name__}")
            yield d

    def __iter__(self):
        for d in self._parts():
            yield from d

    def __len__(self):
        return sum(len(d) for d in self._parts())


__all__ += ["IterableDataset", "ChainDataset"]
from . import transforms  # noqa: E402,F401
