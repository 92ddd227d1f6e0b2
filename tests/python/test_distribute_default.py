"""ug.distribute in one process, outside every strategy's scope, against TensorFlow's default
strategy and tf.distribute.InputContext (the many-process strategies: test_distributed.py)."""
import numpy as np
import pytest

import unigrad as ug


def test_input_context_as_tensorflow(tf):
    for pipelines, pipeline, replicas, global_batch in [(1, 0, 1, 8), (2, 1, 4, 8), (3, 2, 3, 12)]:
        ours = ug.distribute.InputContext(pipelines, pipeline, replicas)
        theirs = tf.distribute.InputContext(pipelines, pipeline, replicas)
        for field in ("num_input_pipelines", "input_pipeline_id", "num_replicas_in_sync"):
            assert getattr(ours, field) == getattr(theirs, field)
        assert ours.get_per_replica_batch_size(global_batch) == theirs.get_per_replica_batch_size(global_batch)
    with pytest.raises(ValueError, match="the global batch size 9 is not divisible by num_replicas_in_sync 4"):
        ug.distribute.InputContext(1, 0, 4).get_per_replica_batch_size(9)
    with pytest.raises(ValueError):
        tf.distribute.InputContext(1, 0, 4).get_per_replica_batch_size(9)


def test_the_default_strategy_as_tensorflows(tf):
    """One replica: gather and reduce leave the value (reduce over an axis sums or averages it),
    run calls the function, and distribute_datasets_from_function hands dataset_fn the context
    of one pipeline, as TensorFlow's default strategy does."""
    assert not ug.distribute.has_strategy() and not tf.distribute.has_strategy()
    ours, theirs = ug.distribute.get_strategy(), tf.distribute.get_strategy()
    assert ours.num_replicas_in_sync == theirs.num_replicas_in_sync == 1
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(ours.gather(ug.tensor(x), axis=0).numpy(),
                                  theirs.gather(tf.constant(x), axis=0).numpy())
    for op in ("SUM", "MEAN"):
        np.testing.assert_allclose(ours.reduce(op, ug.tensor(x), axis=1).numpy(),
                                   theirs.reduce(op, tf.constant(x), axis=1).numpy(), rtol=1e-15)
    assert ours.run(lambda a, b: a + b, args=(1, 2)) == theirs.run(lambda a, b: a + b, args=(1, 2)) == 3
    seen = {}

    def dataset_fn(context, key):
        seen[key] = (context.num_input_pipelines, context.input_pipeline_id, context.num_replicas_in_sync,
                     context.get_per_replica_batch_size(4))
        return [x]

    assert ours.distribute_datasets_from_function(lambda c: dataset_fn(c, "ug")) == [x]
    theirs.distribute_datasets_from_function(lambda c: tf.data.Dataset.from_tensors(dataset_fn(c, "tf")[0]))
    assert seen["ug"] == seen["tf"] == (1, 0, 1, 4)
