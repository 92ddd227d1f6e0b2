"""ug.distribute: TensorFlow's tf.distribute strategies for Keras-style training
(ug::train::MirroredStrategy in C++).

A replica is one process of the MPI job (`ug launch -n N script.py`), not one device of one
process as in TensorFlow: every process runs the same script, and a model compiled inside
`strategy.scope()` trains data-parallel under fit (DistributedDataParallel's averaged
gradients, data sharded with a DistributedSampler, metrics averaged over the replicas, rank 0
alone printing and writing). docs/distributed.md lists where this differs from TensorFlow.
"""
import contextlib
import enum
import threading
import types

from . import _C
from .tree import tree_map

__all__ = ["MirroredStrategy", "MultiWorkerMirroredStrategy", "ReduceOp", "InputContext", "get_strategy",
           "has_strategy", "experimental"]


class ReduceOp(enum.Enum):
    """tf.distribute.ReduceOp: how strategy.reduce combines the replicas' values."""
    SUM = "SUM"
    MEAN = "MEAN"


def _op_name(reduce_op):
    return (reduce_op.value if isinstance(reduce_op, ReduceOp) else str(reduce_op)).upper()


class _Scopes(threading.local):
    """The strategies whose scope is open on this thread, innermost last (the C++ side keeps
    its own thread-local one, which compile reads)."""

    def __init__(self):
        self.stack = []


_scopes = _Scopes()


class MirroredStrategy:
    """tf.distribute.MirroredStrategy over the processes of the MPI job: joins the default
    process group (init_process_group("mpi") when this process has not joined one yet).
    `devices`, when given, must name one device per process (len == world size): each process
    trains on its own CPU; `cross_device_ops` is accepted for TensorFlow's signature (the
    reduction is MPI's all_reduce)."""

    def __init__(self, devices=None, cross_device_ops=None, group=None):
        self._strategy = _C.train._MirroredStrategy.make(group)
        if devices is not None and len(devices) != self.num_replicas_in_sync:
            raise ValueError(f"[{type(self).__name__}] one replica is one process here: {len(devices)} devices given "
                             f"for a job of {self.num_replicas_in_sync} processes (start it with "
                             f"`ug launch -n {len(devices)}`)")

    @property
    def num_replicas_in_sync(self):
        """The number of processes training together."""
        return self._strategy.num_replicas_in_sync

    @property
    def group(self):
        """The ug.distributed process group the replicas form."""
        return self._strategy.group

    @contextlib.contextmanager
    def scope(self):
        """model.compile inside it trains data-parallel under this strategy."""
        opened = self._strategy.scope()  # the C++ scope, which compile reads; closed when freed
        _scopes.stack.append(self)
        try:
            yield self
        finally:
            _scopes.stack.pop()
            del opened

    def run(self, fn, args=(), kwargs=None, options=None):
        """tf's strategy.run: fn on this replica's inputs (this process's), in a replica context:
        the strategy is the current one, and an optimizer's apply_gradients sums the gradients
        over the replicas first (average the loss over the global batch with
        ug.nn.compute_average_loss). Returns this replica's result."""
        context = self._strategy.replica_context()
        _scopes.stack.append(self)
        try:
            return fn(*args, **(kwargs or {}))
        finally:
            _scopes.stack.pop()
            del context

    def reduce(self, reduce_op, value, axis=None):
        """tf's strategy.reduce: SUM or MEAN of every replica's value (a tensor or a Python number,
        or a pytree of them; a number's result is a tensor of the default dtype); with an axis, over that axis
        too (MEAN: over all the replicas' elements)."""
        op = _op_name(reduce_op)

        def reduced(v):
            if isinstance(v, (int, float)) and not isinstance(v, bool):  # a step's loss.item(): a tensor, as TF's
                v = _C.tensor(float(v))
            return self._strategy.reduce(op, v, axis) if isinstance(v, _C.Tensor) else v
        return tree_map(reduced, value)

    def gather(self, value, axis):
        """tf's strategy.gather: every replica's value (a tensor, or a pytree of them) joined
        along axis, in replica order; the sizes along axis may differ between replicas."""
        return tree_map(lambda v: self._strategy.gather(v, axis) if isinstance(v, _C.Tensor) else v, value)

    def experimental_distribute_dataset(self, dataset, options=None):
        """Each global batch the dataset yields (a tensor, or a tuple/dict of them), split over the
        replicas: this replica's rows of each, in order (local_part)."""
        return _DistributedDataset(self._strategy, dataset)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """tf's: dataset_fn(input_context) builds this replica's input pipeline (one per process
        here), which yields its own batches as they are; input_context says which pipeline it is
        and gives the per-replica batch size."""
        n = self.num_replicas_in_sync
        return dataset_fn(InputContext(n, self.group.rank(), n))

    def experimental_local_results(self, value):
        """The values of this process's replicas: one, as one replica is one process here."""
        return (value,)


class InputContext:
    """tf.distribute.InputContext: what distribute_datasets_from_function tells dataset_fn."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size):
        """The global batch size split over the replicas; it must divide evenly."""
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"[InputContext] the global batch size {global_batch_size} is not divisible by "
                             f"num_replicas_in_sync {self.num_replicas_in_sync}")
        return global_batch_size // self.num_replicas_in_sync

    def __repr__(self):
        return (f"InputContext(num_input_pipelines={self.num_input_pipelines}, input_pipeline_id="
                f"{self.input_pipeline_id}, num_replicas_in_sync={self.num_replicas_in_sync})")


class _DistributedDataset:
    def __init__(self, strategy, dataset):
        self._strategy, self._dataset = strategy, dataset

    def __iter__(self):
        for element in self._dataset:
            yield tree_map(lambda t: self._strategy.local_part(t) if isinstance(t, _C.Tensor) else t, element)


class MultiWorkerMirroredStrategy(MirroredStrategy):
    """tf.distribute.MultiWorkerMirroredStrategy: the same as MirroredStrategy here (processes
    on one host or many, as mpirun places them). `cluster_resolver` and `communication_options`
    are accepted for TensorFlow's signature; TF_CONFIG is not read (MPI knows the workers)."""

    def __init__(self, cluster_resolver=None, communication_options=None, group=None):
        super().__init__(group=group)


def has_strategy():
    """Whether a strategy's scope is open on this thread (tf.distribute.has_strategy)."""
    return bool(_scopes.stack)


class _DefaultStrategy:
    """What get_strategy() returns outside every scope: one replica, a scope that does nothing,
    run calling fn, reduce over the axis alone."""
    num_replicas_in_sync = 1

    @contextlib.contextmanager
    def scope(self):
        yield self

    def run(self, fn, args=(), kwargs=None, options=None):
        return fn(*args, **(kwargs or {}))

    def reduce(self, reduce_op, value, axis=None):
        mean = _op_name(reduce_op) == "MEAN"
        if axis is None:
            return value
        return tree_map(lambda v: (v.mean(axis) if mean else v.sum(axis)) if isinstance(v, _C.Tensor) else v, value)

    def gather(self, value, axis):
        return value

    def experimental_distribute_dataset(self, dataset, options=None):
        return dataset

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        return dataset_fn(InputContext())

    def experimental_local_results(self, value):
        return (value,)


_default = _DefaultStrategy()


def get_strategy():
    """The strategy of the innermost open scope, else a default one-replica strategy."""
    return _scopes.stack[-1] if _scopes.stack else _default


experimental = types.SimpleNamespace(MultiWorkerMirroredStrategy=MultiWorkerMirroredStrategy)
