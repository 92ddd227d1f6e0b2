"""PyTorch- and TensorFlow-style training steps inside the compiled mode (issue 15, item 4b):
`zero_grad(); loss.backward(); step()` under ug.compile / ug.jit, and GradientTape +
apply_gradients under ug.function. The parameters, their .grad and the optimizer's state are
implicit inputs and outputs of the program; after every call the model and the optimizer hold
what the same step run eagerly holds. Each test runs the step eagerly on one copy of a model
and compiled on another, from the same initial values, and compares them after every step."""
import warnings

import numpy as np
import pytest

import unigrad as ug

STEPS = 20


def close(a, b, tol):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=tol, atol=tol)


def twin_models(make, dtype=ug.float64):
    ug.manual_seed(0)
    eager = make().to(dtype)
    compiled = make().to(dtype)
    compiled.load_state_dict(eager.state_dict())
    return eager, compiled


def mlp():
    return ug.nn.Sequential(ug.nn.Linear(5, 16), ug.nn.Tanh(), ug.nn.Linear(16, 3))


def batches(n, dtype=ug.float64, batch=8):
    rng = np.random.default_rng(1)
    return [(ug.tensor(rng.standard_normal((batch, 5))).to(dtype), ug.tensor(rng.integers(0, 3, batch)))
            for _ in range(n)]


def same_state(eager, compiled, opt_e, opt_c, tol):
    for (name, a), (_, b) in zip(eager.named_parameters(), compiled.named_parameters()):
        close(a.detach(), b.detach(), tol)
        assert (a.grad is None) == (b.grad is None), name
        if a.grad is not None:
            close(a.grad, b.grad, tol)
    se, sc = opt_e.state_dict()["state"], opt_c.state_dict()["state"]
    assert se.keys() == sc.keys()
    for k in se:
        for key in se[k]:
            close(se[k][key], sc[k][key], tol)


def torch_step(model, opt, loss_fn=ug.nn.functional.cross_entropy):
    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


@pytest.mark.parametrize("make_opt", [
    lambda p: ug.optim.Adam(p, lr=1e-2),
    lambda p: ug.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
    lambda p: ug.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),  # its buffer is made at the first step
    lambda p: ug.optim.RMSprop(p, lr=1e-2),
    lambda p: ug.optim.Adagrad(p, lr=0.1),
    lambda p: ug.optim.NAdam(p, lr=1e-2, weight_decay=0.1),
    lambda p: ug.optim.RAdam(p, lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True),
    lambda p: ug.optim.Adamax(p, lr=1e-2),
    lambda p: ug.optim.Adadelta(p, weight_decay=0.1),
    lambda p: ug.optim.Rprop(p),
    lambda p: ug.optim.ASGD(p, lr=0.05, t0=1),
    lambda p: ug.optim.Adafactor(p, weight_decay=0.1),
], ids=["adam", "adamw", "sgd-momentum", "rmsprop", "adagrad", "nadam", "radam", "adamax", "adadelta", "rprop", "asgd",
        "adafactor"])
def test_the_torch_style_step_compiled_holds_what_eager_holds(make_opt):
    eager, compiled = twin_models(mlp)
    opt_e, opt_c = make_opt(eager.parameters()), make_opt(compiled.parameters())
    step_e, step_c = torch_step(eager, opt_e), ug.compile(torch_step(compiled, opt_c))
    for x, y in batches(STEPS):
        loss = step_c(x, y)
        close(loss, step_e(x, y), 1e-12)
        same_state(eager, compiled, opt_e, opt_c, 1e-12)
        # The first call's loss (the traced run's) was the only one that kept its graph.
        assert loss.grad_fn is None and not loss.requires_grad
    # One program for every step, once the optimizer's state exists (SGD makes its momentum
    # buffer at the first step, so that step is a program of its own).
    assert step_c.cache_info().traces <= 2
    assert step_c.cache_info().hits >= STEPS - 2


def test_float32_steps_match_eager_within_1e_6():
    eager, compiled = twin_models(mlp, ug.float32)
    opt_e, opt_c = ug.optim.Adam(eager.parameters(), lr=1e-3), ug.optim.Adam(compiled.parameters(), lr=1e-3)
    step_e, step_c = torch_step(eager, opt_e), ug.compile(torch_step(compiled, opt_c))
    for x, y in batches(STEPS, ug.float32):
        step_e(x, y)
        step_c(x, y)
    same_state(eager, compiled, opt_e, opt_c, 1e-6)


def test_gradients_accumulate_across_calls_without_zero_grad():
    eager, compiled = twin_models(mlp)
    opt_e, opt_c = ug.optim.SGD(eager.parameters(), lr=0.05), ug.optim.SGD(compiled.parameters(), lr=0.05)

    def accumulate(model):
        def step(x, y):
            loss = ug.nn.functional.cross_entropy(model(x), y) / 4
            loss.backward()
            return loss
        return step

    acc_e, acc_c = accumulate(eager), ug.jit(accumulate(compiled))
    for i, (x, y) in enumerate(batches(12)):
        acc_e(x, y)
        acc_c(x, y)
        same_state(eager, compiled, opt_e, opt_c, 1e-12)
        if i % 4 == 3:  # the step and zero_grad run eagerly, outside the program
            for opt in (opt_e, opt_c):
                opt.step()
                opt.zero_grad()
            same_state(eager, compiled, opt_e, opt_c, 1e-12)
    assert acc_c.cache_info().traces == 1


def test_zero_grad_to_zeros_and_gradient_clipping_inside_the_step():
    eager, compiled = twin_models(mlp)
    opt_e, opt_c = ug.optim.Adam(eager.parameters(), lr=1e-2), ug.optim.Adam(compiled.parameters(), lr=1e-2)

    def clipped(model, opt):
        def step(x, y):
            opt.zero_grad(set_to_none=False)
            loss = ug.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            ug.nn.utils.clip_grad_norm_(model.parameters(), 0.05)  # in place on the .grad
            opt.step()
            return loss
        return step

    step_e, step_c = clipped(eager, opt_e), ug.compile(clipped(compiled, opt_c))
    for x, y in batches(STEPS):
        close(step_c(x, y), step_e(x, y), 1e-12)
        same_state(eager, compiled, opt_e, opt_c, 1e-12)


def test_a_learning_rate_schedule_between_compiled_steps_is_followed():
    eager, compiled = twin_models(mlp)
    opt_e, opt_c = ug.optim.SGD(eager.parameters(), lr=0.1), ug.optim.SGD(compiled.parameters(), lr=0.1)
    sched_e = ug.optim.lr_scheduler.StepLR(opt_e, step_size=3, gamma=0.5)
    sched_c = ug.optim.lr_scheduler.StepLR(opt_c, step_size=3, gamma=0.5)
    step_e, step_c = torch_step(eager, opt_e), ug.compile(torch_step(compiled, opt_c))
    for x, y in batches(10):
        step_e(x, y)
        step_c(x, y)
        sched_e.step()
        sched_c.step()
        same_state(eager, compiled, opt_e, opt_c, 1e-12)
    assert step_c.cache_info().traces == 1


def test_the_tensorflow_style_step_under_function():
    eager, compiled = twin_models(mlp)
    opt_e, opt_c = ug.optimizers.Adam(learning_rate=1e-2), ug.optimizers.Adam(learning_rate=1e-2)

    def tf_step(model, opt):
        def step(x, y):
            with ug.GradientTape() as tape:
                loss = ug.nn.functional.cross_entropy(model(x), y)
            variables = list(model.parameters())
            opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss
        return step

    step_e, step_c = tf_step(eager, opt_e), ug.function(tf_step(compiled, opt_c))
    for x, y in batches(STEPS):
        close(step_c(x, y), step_e(x, y), 1e-12)
        for a, b in zip(eager.parameters(), compiled.parameters()):
            close(a.detach(), b.detach(), 1e-12)
    assert opt_c.iterations == opt_e.iterations == STEPS


def test_a_step_that_trains_then_evaluates_sees_the_updated_parameters():
    eager, compiled = twin_models(mlp)
    opt_e, opt_c = ug.optim.SGD(eager.parameters(), lr=0.5), ug.optim.SGD(compiled.parameters(), lr=0.5)

    def train_then_eval(model, opt):
        def step(x, y):
            torch_step(model, opt)(x, y)
            with ug.no_grad():
                return ug.nn.functional.cross_entropy(model(x), y)  # after the update
        return step

    step_e, step_c = train_then_eval(eager, opt_e), ug.compile(train_then_eval(compiled, opt_c))
    for x, y in batches(5):
        close(step_c(x, y), step_e(x, y), 1e-12)
        same_state(eager, compiled, opt_e, opt_c, 1e-12)


def test_a_compiled_module_trained_by_an_eager_loop():
    eager, compiled = twin_models(mlp)
    fast = ug.compile(compiled)
    opt_e, opt_c = ug.optim.Adam(eager.parameters(), lr=1e-2), ug.optim.Adam(compiled.parameters(), lr=1e-2)
    for x, y in batches(5):
        for model, opt in ((eager, opt_e), (fast, opt_c)):
            opt.zero_grad()
            ug.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        same_state(eager, compiled, opt_e, opt_c, 1e-12)


def test_a_step_with_batch_norm_and_dropout_holds_what_eager_holds():
    # Implicit state beyond the parameters: BatchNorm's running statistics and batch counter
    # (closed over, written by the step) and the global generator, which a compiled dropout
    # advances exactly as the eager one does. Each step starts both runs from one seed.
    def make():
        return ug.nn.Sequential(ug.nn.Linear(5, 16), ug.nn.BatchNorm1d(16), ug.nn.ReLU(), ug.nn.Dropout(0.3),
                                ug.nn.Linear(16, 3))
    eager, compiled = twin_models(make)
    # SGD, not Adam: the first Linear's bias has a gradient of exactly zero through BatchNorm,
    # rounding noise of 1e-17 that Adam would scale up to ±lr in either run.
    opt_e = ug.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    opt_c = ug.optim.SGD(compiled.parameters(), lr=0.1, momentum=0.9)
    step_e, step_c = torch_step(eager, opt_e), ug.compile(torch_step(compiled, opt_c))
    for i, (x, y) in enumerate(batches(STEPS)):
        ug.manual_seed(100 + i)
        loss_c = step_c(x, y)
        state_c = ug.get_rng_state()
        ug.manual_seed(100 + i)
        close(loss_c, step_e(x, y), 1e-12)
        assert ug.get_rng_state().tolist() == state_c.tolist()
        same_state(eager, compiled, opt_e, opt_c, 1e-12)
        for (name, a), (_, b) in zip(eager.named_buffers(), compiled.named_buffers()):
            close(a, b, 1e-12)
    assert compiled[1].num_batches_tracked.item() == STEPS
    assert step_c.cache_info().traces <= 2  # SGD makes its momentum buffer at the first step


def test_a_cumulative_batch_norm_follows_the_batch_count():
    # momentum=None averages with 1 / num_batches_tracked: the program computes it from the
    # live count at every run, not the trace's.
    def make():
        return ug.nn.Sequential(ug.nn.Linear(5, 4), ug.nn.BatchNorm1d(4, momentum=None))
    eager, compiled = twin_models(make)
    fast = ug.compile(compiled)
    for x, _ in batches(5):
        close(fast(x), eager(x), 1e-12)
        for (name, a), (_, b) in zip(eager.named_buffers(), compiled.named_buffers()):
            close(a, b, 1e-12)
    assert compiled[1].num_batches_tracked.item() == 5
    assert fast.cache_info().traces == 1


def test_an_update_compiled_apart_reads_the_gradients_accumulated_before_each_call():
    # Gradient accumulation with the step compiled on its own: the .grad it reads was left by
    # backward() outside the program, so a run reads the live .grad, not the trace's (which the
    # program once held as a constant, repeating the first update).
    eager, compiled = twin_models(mlp)
    opt_e, opt_c = ug.optim.Adam(eager.parameters(), lr=1e-2), ug.optim.Adam(compiled.parameters(), lr=1e-2)

    def update(opt):
        def step():
            opt.step()
            opt.zero_grad()
        return step

    update_e, update_c = update(opt_e), ug.compile(update(opt_c))
    for i, (x, y) in enumerate(batches(12)):
        for model in (eager, compiled):
            (ug.nn.functional.cross_entropy(model(x), y) / 3).backward()
        if i % 3 == 2:
            update_e()
            update_c()
        same_state(eager, compiled, opt_e, opt_c, 1e-12)
    assert update_c.cache_info().traces == 1


def test_an_update_compiled_apart_steps_only_the_parameters_that_have_a_gradient():
    # The eager part leaves the first layer without a .grad every other call (it is not used):
    # eagerly the step skips it (no weight decay, no momentum), so the program is keyed by which
    # parameters have a .grad instead of stepping the trace's set with zeros.
    eager, compiled = twin_models(mlp)

    def make_opt(model):
        return ug.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1)
    opt_e, opt_c = make_opt(eager), make_opt(compiled)

    def update(opt):
        def step():
            opt.step()
            opt.zero_grad()
        return step

    update_e, update_c = update(opt_e), ug.compile(update(opt_c))
    for i, (x, y) in enumerate(batches(8)):
        for model in (eager, compiled):
            hidden = model[0](x) if i % 2 == 0 else x @ model[0].weight.detach().t()
            ug.nn.functional.cross_entropy(model[2](model[1](hidden)), y).backward()
        update_e()
        update_c()
        same_state(eager, compiled, opt_e, opt_c, 1e-12)
    assert update_c.cache_info().traces == 2


def test_switching_train_and_eval_between_calls_of_a_compiled_step_retraces():
    # The mode of a module the step closes over is guarded, as torch.compile guards it: BatchNorm
    # takes its running statistics and Dropout does nothing in eval mode, and the eval program
    # reads the running statistics the training program has written since it was traced.
    def make():
        return ug.nn.Sequential(ug.nn.Linear(5, 16), ug.nn.BatchNorm1d(16), ug.nn.ReLU(), ug.nn.Dropout(0.3),
                                ug.nn.Linear(16, 3))
    eager, compiled = twin_models(make)
    opt_e = ug.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    opt_c = ug.optim.SGD(compiled.parameters(), lr=0.1, momentum=0.9)
    step_e, step_c = torch_step(eager, opt_e), ug.compile(torch_step(compiled, opt_c))
    for i, (x, y) in enumerate(batches(12)):
        for model in (eager, compiled):
            model.train(i % 3 != 2)
        ug.manual_seed(100 + i)
        loss_c = step_c(x, y)
        ug.manual_seed(100 + i)
        close(loss_c, step_e(x, y), 1e-12)
        same_state(eager, compiled, opt_e, opt_c, 1e-12)
        for (name, a), (_, b) in zip(eager.named_buffers(), compiled.named_buffers()):
            close(a, b, 1e-12)
    assert step_c.cache_info().traces <= 3  # a momentum buffer made at the first step, then eval


def test_freezing_a_parameter_between_calls_of_a_compiled_step_retraces():
    # requires_grad is guarded, and a frozen parameter is still read live: the frozen program
    # sees the updates the unfrozen one made since.
    eager, compiled = twin_models(mlp)
    opt_e = ug.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    opt_c = ug.optim.SGD(compiled.parameters(), lr=0.1, momentum=0.9)
    step_e, step_c = torch_step(eager, opt_e), ug.compile(torch_step(compiled, opt_c))
    for i, (x, y) in enumerate(batches(10)):
        for model in (eager, compiled):
            model[0].weight.requires_grad_(i % 4 < 2)
        close(step_c(x, y), step_e(x, y), 1e-12)
        same_state(eager, compiled, opt_e, opt_c, 1e-12)
    assert step_c.cache_info().traces == 2


class Scaled(ug.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = ug.nn.Linear(5, 3)
        self.scale = 1.0

    def forward(self, x):
        return self.lin(x) * self.scale


@pytest.mark.parametrize("compile_module", [False, True], ids=["step", "module"])
def test_a_python_attribute_changed_between_calls_retraces(compile_module):
    # A float hyper-parameter of a module is part of the signature (torch.compile guards on it),
    # whether the module is compiled itself or closed over by a compiled step.
    eager, compiled = twin_models(Scaled)
    opt_e, opt_c = ug.optim.SGD(eager.parameters(), lr=0.1), ug.optim.SGD(compiled.parameters(), lr=0.1)
    step_e = torch_step(eager, opt_e)
    step_c = torch_step(ug.compile(compiled), opt_c) if compile_module else ug.compile(torch_step(compiled, opt_c))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ug.compiled.RetraceWarning)
        for i, (x, y) in enumerate(batches(6)):
            for model in (eager, compiled):
                model.scale = 1.0 + (i % 3) / 2
            close(step_c(x, y), step_e(x, y), 1e-12)
            same_state(eager, compiled, opt_e, opt_c, 1e-12)


def test_hooks_and_parametrizations_added_or_removed_after_compiling_are_followed():
    # torch.compile guards on hooks; a compiled module once kept running the hooks of its trace
    model = ug.nn.Sequential(ug.nn.Linear(3, 4), ug.nn.ReLU(), ug.nn.Linear(4, 2))
    compiled = ug.compile(model)
    x = ug.randn(5, 3)
    close(compiled(x), model(x), 0)
    handles = [model[2].register_forward_hook(lambda m, i, out: out * 2),
               model[0].register_forward_pre_hook(lambda m, i: (i[0] + 1,))]
    with pytest.warns(ug.compiled.RetraceWarning, match=r"module.2 \(forward hooks\) changed from static \(0,\) to "
                                                        r"static \(\)"):
        for handle in handles:
            close(compiled(x), model(x), 0)
            handle.remove()
    close(compiled(x), model(x), 0)
    assert compiled.cache_info().traces == 3
    # so is a parametrization (it registers its tensors and hooks from C++)
    with pytest.warns(ug.compiled.RetraceWarning, match="module.0.parametrizations"):
        ug.nn.utils.parametrizations.orthogonal(model[0])
        close(compiled(x), model(x), 1e-6)
        ug.nn.utils.parametrize.remove_parametrizations(model[0], "weight")
        close(compiled(x), model(x), 0)


def test_backward_in_an_exported_function_is_refused(tmp_path):
    class TrainsWhileExported(ug.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ug.nn.Linear(3, 1)

        def forward(self, x):
            loss = self.lin(x).sum()
            loss.backward()
            return loss

    with pytest.raises(RuntimeError, match=r"backward\(\) inside an exported function"):
        ug.onnx.export(TrainsWhileExported(), (ug.randn(2, 3),), str(tmp_path / "f.onnx"))


def mlp_with_batch_norm_and_dropout():
    # BatchNorm after the Tanh: no parameter before it has a gradient of exactly zero, which
    # Adam would turn from rounding noise into ±lr.
    return ug.nn.Sequential(ug.nn.Linear(5, 16), ug.nn.Tanh(), ug.nn.BatchNorm1d(16), ug.nn.Dropout(0.2),
                            ug.nn.Linear(16, 3))


@pytest.mark.parametrize("make", [mlp, mlp_with_batch_norm_and_dropout], ids=["mlp", "batch_norm-dropout"])
@pytest.mark.parametrize("accumulate", [1, 3])
def test_keras_fit_with_jit_compile_matches_eager_fit(accumulate, make):
    rng = np.random.default_rng(2)
    x, y = ug.tensor(rng.standard_normal((100, 5))), ug.tensor(rng.integers(0, 3, 100))
    runs, calls = {}, {False: 0, True: 0}
    for jit in (False, True):
        def loss(out, target):
            calls[jit] += 1  # a Python side effect: it happens while traced, not when the program runs
            return ug.nn.functional.cross_entropy(out, target)

        ug.manual_seed(0)
        model = make().to(ug.float64)
        model.compile("adam", loss, ["accuracy"], gradient_accumulation_steps=accumulate, jit_compile=jit)
        history = model.fit(x, y, batch_size=16, epochs=3, verbose=0)
        runs[jit] = (history.history, [p.detach() for p in model.parameters()])
    # 7 batches an epoch (the last of 4): eagerly the loss runs 21 times; compiled, for the
    # batches of the first (eager) optimizer step and in the traces of the two batch shapes
    assert calls == {False: 21, True: accumulate + 2}
    for key in runs[False][0]:
        close(runs[True][0][key], runs[False][0][key], 1e-12)
    for a, b in zip(runs[True][1], runs[False][1]):
        close(a, b, 1e-12)
