"""ctc_loss and nn.CTCLoss against PyTorch: padded and concatenated targets, unbatched input,
every reduction, another blank, repeated labels, empty targets, impossible alignments with and
without zero_infinity, float32 and float64; the gradient in the logits (through log_softmax)
against torch and finite differences, and in log_probs as torch gives it (exp(log_probs) minus
the posteriors); and the errors for bad input."""
import numpy as np
import pytest
import torch

import unigrad as ug
from reference import Arg, arr, check, check_grad, check_op

T, N, C = 12, 3, 5
TARGETS = np.array([[1, 2, 2, 3], [4, 1, 0, 0], [3, 3, 3, 1]])  # repeated labels need blanks between
INPUT_LENGTHS, TARGET_LENGTHS = [12, 9, 7], [4, 2, 3]


def F(m):
    return torch.nn.functional if m is torch else ug.nn.functional


def ints(values):
    return Arg(np.asarray(values, np.int64))


def concatenated(targets, target_lengths):
    return np.concatenate([row[:n] for row, n in zip(targets, target_lengths)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("layout", ["padded", "concatenated"])
def test_matches_torch_through_log_softmax(reduction, layout, dtype):
    targets = TARGETS if layout == "padded" else concatenated(TARGETS, TARGET_LENGTHS)
    check_grad(lambda m, x, t, il, tl: F(m).ctc_loss(x.log_softmax(2), t, il, tl, reduction=reduction),
               arr((T, N, C), dtype), ints(targets), ints(INPUT_LENGTHS), ints(TARGET_LENGTHS))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_probs_gradient_is_torchs(dtype):
    # torch's gradient in log_probs is exp(log_probs) minus the posteriors, not the derivative in
    # log_probs alone (which finite differences would give): the vjp is compared with torch's
    log_probs = Arg(torch.tensor(arr((T, N, C), dtype).array).log_softmax(2).numpy())
    for blank, targets in [(0, TARGETS), (4, np.where(TARGETS == 4, 0, TARGETS))]:
        check_op(lambda m, lp, t, il, tl: F(m).ctc_loss(lp, t, il, tl, blank=blank), log_probs, ints(targets),
                 ints(INPUT_LENGTHS), ints(TARGET_LENGTHS), only=("forward", "vjp"))


def test_unbatched_empty_targets_and_tuples():
    check_grad(lambda m, x, t: F(m).ctc_loss(x.log_softmax(1), t, (10,), (3,), reduction="none"),
               arr((T, C), "float64"), ints([2, 2, 1]))
    check_grad(lambda m, x, t: F(m).ctc_loss(x.log_softmax(2), t, [12, 5, 0], [2, 0, 0], reduction="sum"),
               arr((T, N, C), "float64"), ints(TARGETS[:, :2]))


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_impossible_alignments(zero_infinity):
    # [3, 3, 3] needs five steps: four are too few and its loss is infinite; [4, 1, 0] holds the
    # blank as a label, which torch lets the alignment reach in three steps
    targets, input_lengths = ints(TARGETS), ints([12, 3, 4])
    for reduction in ("none", "sum"):
        check(lambda m, x, t, il, tl: F(m).ctc_loss(x.log_softmax(2), t, il, tl, reduction=reduction,
                                                     zero_infinity=zero_infinity),
              arr((T, N, C)), targets, input_lengths, ints([4, 3, 3]))
    if zero_infinity:
        check_grad(lambda m, x, t, il, tl: F(m).ctc_loss(x.log_softmax(2), t, il, tl, zero_infinity=True),
                   arr((T, N, C), "float64"), targets, input_lengths, ints([4, 3, 3]))


def test_layer_matches_torch():
    for kwargs in [{}, {"blank": 4, "reduction": "sum"}, {"reduction": "none", "zero_infinity": True}]:
        targets = np.where(TARGETS == 4, 0, TARGETS) if kwargs.get("blank") == 4 else TARGETS
        check(lambda m, x, t: (ug.nn.CTCLoss if m is ug else torch.nn.CTCLoss)(**kwargs)(
            x.log_softmax(2), t, INPUT_LENGTHS, TARGET_LENGTHS), arr((T, N, C)), ints(targets))


def test_bad_input_raises_like_torch():
    x = arr((T, N, C))
    cases = [lambda m, x: F(m).ctc_loss(x.log_softmax(2), m.tensor(TARGETS), m.tensor([13, 9, 7]),
                                        m.tensor(TARGET_LENGTHS)),
             lambda m, x: F(m).ctc_loss(x.log_softmax(2), m.tensor(TARGETS), m.tensor(INPUT_LENGTHS),
                                        m.tensor([5, 2, 3])),
             lambda m, x: F(m).ctc_loss(x.log_softmax(2), m.tensor(TARGETS), m.tensor(INPUT_LENGTHS),
                                        m.tensor(TARGET_LENGTHS), blank=5),
             lambda m, x: F(m).ctc_loss(x.log_softmax(2), m.tensor(TARGETS), m.tensor(INPUT_LENGTHS),
                                        m.tensor(TARGET_LENGTHS), reduction="max")]
    for f in cases:
        check(f, x)
    with pytest.raises(RuntimeError, match=r"\[ctc_loss\] Expected input_lengths to have value at most 12, but got"):
        ug.nn.functional.ctc_loss(ug.zeros(T, N, C), ug.tensor(TARGETS), ug.tensor([13, 9, 7]),
                                  ug.tensor(TARGET_LENGTHS))
    with pytest.raises(IndexError, match=r"\[ctc_loss\] target labels must lie in \[0, 5\)"):
        ug.nn.functional.ctc_loss(ug.zeros(T, N, C), ug.tensor(TARGETS + 2), ug.tensor(INPUT_LENGTHS),
                                  ug.tensor(TARGET_LENGTHS))
    with pytest.raises(ValueError, match=r"\[ctc_loss\] expected log_probs \[T, N, C\].*\[12\]"):
        ug.nn.functional.ctc_loss(ug.zeros(T), ug.tensor(TARGETS), ug.tensor(INPUT_LENGTHS), ug.tensor(TARGET_LENGTHS))
    with pytest.raises(TypeError, match=r"\[ctc_loss\] expected targets of an integer dtype, got float32"):
        ug.nn.functional.ctc_loss(ug.zeros(T, N, C), ug.zeros(N, 4), ug.tensor(INPUT_LENGTHS),
                                  ug.tensor(TARGET_LENGTHS))
