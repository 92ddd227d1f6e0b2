"""Every transform of every op in op_table.py: one test per (op, transform), through
reference.check_op. A transform a row switches off is skipped with its reason (pytest -rs
lists them); one the exporter rejects is checked to be rejected still, and its jit must compile
all the same (the program calls the op back) unless the row switches jit off with a reason; a
known bug is a strict xfail whose reason is its reproduction."""
import os
import re
import tempfile

import pytest

import unigrad as ug
from op_table import OPS, REJECTS
from reference import TRANSFORMS, OpModule, check_op, switched_off


def cases():
    for op in OPS:
        for transform in TRANSFORMS:
            marks = [pytest.mark.xfail(strict=True, reason=op.xfail[transform])] if transform in op.xfail else []
            yield pytest.param(op, transform, id=f"{op.name}-{transform}", marks=marks)


def still_rejected(op):
    """The exporter refuses the op with the row's message: once it exports it, the row must
    switch onnx on."""
    module = OpModule(op.fn, op.inputs)
    message = re.escape(op.off["onnx"][len(REJECTS):])
    with tempfile.TemporaryDirectory() as tmp, pytest.raises(ValueError, match=message):
        ug.onnx.export(module, module.tensor_inputs(), os.path.join(tmp, "m.onnx"))


@pytest.mark.parametrize("op,transform", list(cases()))
def test_op(op, transform):
    reason = switched_off(op.off, transform)
    rejected = op.off.get("onnx", "").startswith(REJECTS)
    if transform == "onnx" and rejected:
        still_rejected(op)
    elif reason:
        pytest.skip(f"{transform} off: {reason}")
    else:
        # An op without an ONNX form compiles all the same: the program calls it back
        # (graph::Replay), running eager's kernels, so its outputs are eager's bit for bit. A
        # program runs under vmap wherever the function does.
        options = {"jit_exact": rejected, "jit_vmap": True, **op.options}
        check_op(op.fn, *op.inputs, only=(transform,), off=op.off, **options)


def test_op_names_are_unique():
    names = [op.name for op in OPS]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


# Ops that need a process group of several ranks: test_distributed.py runs them under mpirun,
# eagerly and compiled (a program calls them back at every call; wait_tensor is the compiled DDP
# step's wait for a bucket's all_reduce).
ACROSS_PROCESSES = {"all_reduce", "broadcast", "wait_tensor"}


def test_op_table_covers_registered_ops():
    # Every op's OpDef registers its name (ug._C.registered_ops()): each must be run by a row.
    names = set(ug._C.registered_ops())
    covered = {name for op in OPS for name in op.ops}
    assert ACROSS_PROCESSES <= names
    missing = names - covered - ACROSS_PROCESSES
    assert not missing, f"registered ops no row of op_table.py runs: {sorted(missing)}"
