"""ug.optimizers (Keras's optimizers, ug::optim::keras) against Keras 3.15 on TensorFlow 2.21,
step by step: the same variables and gradients, apply_gradients each step, the variables and
the optimizer's own variables compared after every step, in float32 and float64. Also
compile(optimizer="adam") is Keras's Adam, and ug.optim.Adam stays torch's."""
import numpy as np
import pytest
import torch

import unigrad as ug

SHAPES = [(4, 3), (7,)]
STEPS = 6
# Each rule is evaluated with Keras's operations in Keras's order, so the steps are TensorFlow's
# to the bit; only global_clipnorm's sum of squares is added in another order: its scale moves
# by an ulp or so (~1e-7) each step, which the momentum carries along for six steps.
TOL = {"float32": dict(rtol=1e-5, atol=1e-12), "float64": dict(rtol=1e-14, atol=1e-20)}


def arrays(dtype, seed, shapes=SHAPES):
    # Magnitudes from 1e-5 to 1, so that epsilon matters for some elements.
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * 10.0 ** rng.uniform(-5, 0, s)).astype(dtype) for s in shapes]


# (name, keyword arguments), the same for keras.optimizers and ug.optimizers.
CASES = [
    ("SGD", {}),
    ("SGD", dict(learning_rate=0.1, momentum=0.9)),
    ("SGD", dict(learning_rate=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(learning_rate=0.1, momentum=0.5, weight_decay=0.1)),
    ("SGD", dict(learning_rate=0.1, momentum=0.9, global_clipnorm=0.5)),
    ("Adam", {}),
    ("Adam", dict(learning_rate=0.01, amsgrad=True)),
    ("Adam", dict(learning_rate=0.01, beta_1=0.8, beta_2=0.99, epsilon=1e-3, weight_decay=0.05)),
    ("Adam", dict(learning_rate=0.01, clipnorm=0.5)),
    ("AdamW", {}),
    ("AdamW", dict(learning_rate=0.01, weight_decay=0.1, amsgrad=True)),
    ("RMSprop", {}),
    ("RMSprop", dict(learning_rate=0.01, momentum=0.9, centered=True)),
    ("RMSprop", dict(learning_rate=0.01, rho=0.5, weight_decay=0.01, clipvalue=0.1)),
    ("Adagrad", {}),
    ("Adagrad", dict(learning_rate=0.1, initial_accumulator_value=0.5, epsilon=1e-3)),
]


def run_pair(keras, name, kwargs, dtype, skip=()):
    """Both optimizers over the same variables and gradients; `skip` holds the (step, variable)
    pairs without a gradient. Compares the variables and the optimizer variables each step."""
    if dtype == "float64":
        # On TensorFlow, Keras holds the learning rate in a float32 variable and casts SGD's
        # momentum, Adam's betas (in beta ** t), weight_decay and Adagrad's initial value to
        # the variable's dtype through float32 (tf.cast of a Python float): a float64 run gives
        # both optimizers those values rounded to float32, so that both compute with the same
        # numbers.
        config = getattr(keras.optimizers, name)().get_config()
        cast = ("learning_rate", "momentum", "beta_1", "beta_2", "weight_decay", "initial_accumulator_value")
        kwargs = dict(kwargs, **{k: float(np.float32(kwargs.get(k, config.get(k))))
                                 for k in cast if kwargs.get(k, config.get(k)) is not None})
    kopt = getattr(keras.optimizers, name)(**kwargs)
    uopt = getattr(ug.optimizers, name)(**kwargs)
    init = arrays(dtype, 0)
    kvars = [keras.Variable(a, dtype=dtype) for a in init]
    uvars = [ug.tensor(a).requires_grad_() for a in init]
    for step in range(STEPS):
        grads = arrays(dtype, 100 + step)
        given = [(step, i) not in skip for i in range(len(grads))]
        kopt.apply_gradients([(keras.ops.convert_to_tensor(g) if k else None, v) for g, k, v in zip(grads, given, kvars)])
        uopt.apply_gradients([(ug.tensor(g) if k else None, v) for g, k, v in zip(grads, given, uvars)])
        for k, u in zip(kvars, uvars):
            np.testing.assert_allclose(u.detach().numpy(), k.numpy(), **TOL[dtype], err_msg=f"{name} step {step}")
    assert uopt.iterations == int(kopt.iterations.numpy())
    compare_slots(kopt, uopt, uvars, dtype)
    return kopt, uopt


# Keras's optimizer variables are named after the slot (momentum, velocity, ...) and the
# variable; ug keeps the same slot names in each parameter's state.
def compare_slots(kopt, uopt, uvars, dtype):
    slots = {}
    for v in kopt.variables:
        for slot in ("velocity_hat", "average_gradient", "accumulator", "velocity", "momentum"):
            if v.path.split("/")[-1].endswith(slot):
                slots.setdefault(slot, []).append(v.numpy())
                break
    assert slots or not uopt.state[uvars[0]].keys() - {"step"}
    for slot, values in slots.items():
        assert len(values) == len(uvars), slot
        for value, u in zip(values, uvars):
            np.testing.assert_allclose(uopt.state[u][slot].numpy(), value, **TOL[dtype], err_msg=slot)
    assert set(uopt.state[uvars[0]]) == set(slots) | {"step"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, kwargs", CASES, ids=[f"{n}-{','.join(k) or 'defaults'}" for n, k in CASES])
def test_steps_equal_keras(keras, name, kwargs, dtype):
    run_pair(keras, name, kwargs, dtype)


@pytest.mark.filterwarnings("ignore:Gradients do not exist")  # Keras's note on each missing gradient
@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_a_variable_without_a_gradient_steps_at_the_optimizers_iteration(keras, name):
    # Keras counts the optimizer's steps: a variable that missed some is at the same step as the rest.
    kwargs = dict(learning_rate=0.01, momentum=0.9) if name != "Adam" else {}
    run_pair(keras, name, kwargs, "float64", skip={(0, 1), (1, 1), (3, 0)})


def test_the_defaults_are_keras(keras):
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad"):
        config = getattr(keras.optimizers, name)().get_config()
        opt = getattr(ug.optimizers, name)()
        assert opt.learning_rate == pytest.approx(config["learning_rate"], rel=1e-7), name
        for key, value in opt.defaults.items():
            if key in config:
                expected = 0.0 if config[key] is None else config[key]  # None is stored as 0
                assert value == expected if isinstance(value, bool) else value == pytest.approx(expected), (name, key)
    assert ug.optimizers.Adam().defaults["epsilon"] == 1e-7
    assert ug.optimizers.RMSprop().defaults["rho"] == 0.9
    assert ug.optimizers.AdamW().defaults["weight_decay"] == 0.004


def test_epsilon_is_where_keras_adds_it_and_ug_optim_adam_stays_torchs(keras):
    # Gradients of 1e-6: epsilon (1e-7 on sqrt(v) in Keras, 1e-8 on the corrected sqrt(v) in
    # torch) changes the step by far more than the tolerance.
    grad = np.full(5, 1e-6, np.float32)
    kvar = keras.Variable(np.zeros(5, np.float32))
    keras.optimizers.Adam(learning_rate=2**-10).apply_gradients([(keras.ops.convert_to_tensor(grad), kvar)])
    uvar = ug.zeros(5).requires_grad_()
    ug.optimizers.Adam(learning_rate=2**-10).apply_gradients([(ug.tensor(grad), uvar)])
    np.testing.assert_allclose(uvar.detach().numpy(), kvar.numpy(), **TOL["float32"])

    tvar = torch.zeros(5, requires_grad=True)
    tvar.grad = torch.tensor(grad)
    torch.optim.Adam([tvar], lr=2**-10, foreach=False).step()
    uvar = ug.zeros(5).requires_grad_()
    uvar.grad = ug.tensor(grad)
    ug.optim.Adam([uvar], lr=2**-10).step()
    np.testing.assert_allclose(uvar.detach().numpy(), tvar.detach().numpy(), **TOL["float32"])
    assert ug.optim.Adam([uvar]).defaults["eps"] == 1e-8
    assert not np.allclose(tvar.detach().numpy(), kvar.numpy(), rtol=0.5)


def test_build_apply_gradients_and_the_training_loop():
    w = ug.tensor([1.0, -2.0]).requires_grad_()
    opt = ug.optimizers.SGD(learning_rate=0.5)
    assert not opt.built and opt.iterations == 0
    opt.zero_grad()  # nothing to clear yet
    with pytest.raises(RuntimeError, match=r"\[SGD.step\] .*build"):
        opt.step()
    opt.build([w])
    opt.build([ug.ones(3)])  # built already: Keras ignores it
    assert opt.built and len(opt.param_groups[0]["params"]) == 1
    (w * w).sum().backward()
    opt.step()
    assert w.tolist() == [0.0, 0.0] and opt.iterations == 1
    opt.learning_rate = 0.25
    assert opt.param_groups[0]["lr"] == 0.25 and opt.learning_rate == 0.25
    # A scheduler drives it as any optimizer.
    sched = ug.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    sched.step()
    assert opt.learning_rate == 0.125
    state = opt.state_dict()
    again = ug.optimizers.SGD()
    with pytest.raises(ValueError, match=r"\[SGD\] .* the optimizer has 0 \(a Keras optimizer needs build\(variables\) first\)"):
        again.load_state_dict(state)
    again.build([w])
    again.load_state_dict(state)
    assert again.iterations == 1 and again.learning_rate == 0.125


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"\[Adam\] only one of clipnorm, clipvalue and global_clipnorm"):
        ug.optimizers.Adam(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(ValueError, match=r"\[SGD\] momentum must be in \[0, 1\], got 1.5"):
        ug.optimizers.SGD(momentum=1.5)
    with pytest.raises(ValueError, match=r"\[RMSprop\] rho must be in \[0, 1\), got 1"):
        ug.optimizers.RMSprop(rho=1.0)
    with pytest.raises(ValueError, match=r"\[Adagrad\] learning_rate must be non-negative, got -1"):
        ug.optimizers.Adagrad(learning_rate=-1.0)
    with pytest.raises(ValueError, match=r"\[AdamW\] clipnorm must be positive, got 0"):
        ug.optimizers.AdamW(clipnorm=0.0)
    opt = ug.optimizers.Adam()
    with pytest.raises(ValueError, match=r"\[Adam.apply_gradients\] gradient of shape \[3\] for a variable of shape \[2\]"):
        opt.apply_gradients([(ug.ones(3), ug.ones(2).requires_grad_())])
    with pytest.raises(TypeError, match=r"\[Adam\] parameters must be floating \(float16, bfloat16, float32 or "
                                        r"float64\), got int64"):
        ug.optimizers.Adam().apply_gradients([(ug.ones(2, dtype=ug.int64), ug.ones(2, dtype=ug.int64))])


class MLP(ug.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = ug.nn.Dense(8, activation="tanh")
        self.fc2 = ug.nn.Dense(3)

    def forward(self, x):
        return self.fc2(self.fc1(x))


@pytest.mark.parametrize("name", ["adam", "adamw", "sgd", "rmsprop", "adagrad"])
def test_compile_by_name_is_kerass_optimizer(name):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = x[:, :3].argmax(1)
    ug.manual_seed(0)
    a = MLP()
    a(ug.ones(1, 4))  # sizes the lazy Dense layers
    b = MLP()
    b(ug.ones(1, 4))
    b.load_state_dict(a.state_dict())
    a.compile(optimizer=name, loss="sparse_categorical_crossentropy")
    a.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    keras_name = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "rmsprop": "RMSprop", "adagrad": "Adagrad"}[name]
    opt = getattr(ug.optimizers, keras_name)()
    for _ in range(2):
        for i in range(0, 64, 16):
            loss = ug.nn.functional.cross_entropy(b(ug.tensor(x[i:i + 16])), ug.tensor(y[i:i + 16]))
            variables = list(b.parameters())
            opt.apply_gradients(zip(ug.autograd.grad(loss, variables), variables))
    for pa, pb in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(pa.detach().numpy(), pb.detach().numpy())


def test_compile_takes_a_keras_optimizer_object_and_builds_it_at_the_first_step():
    opt = ug.optimizers.RMSprop(learning_rate=0.01, momentum=0.9)
    model = ug.nn.Sequential([ug.nn.Dense(4, activation="relu"), ug.nn.Dense(2)])  # sized by the first batch
    model.compile(optimizer=opt, loss="mse")
    assert not opt.built
    model.fit(np.ones((8, 3), np.float32), np.zeros((8, 2), np.float32), batch_size=4, verbose=0)
    assert opt.built and opt.iterations == 2
    assert len(opt.param_groups[0]["params"]) == 4


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_loss_scale_optimizer_is_keras(keras, name):
    # Scaled gradients, some steps with an inf or a NaN: the skipped steps, the scale halving and
    # doubling (growth every 2 finite steps here) and the variables, step by step, as Keras 3's.
    kwargs = dict(learning_rate=0.1, momentum=0.9) if name == "SGD" else dict(learning_rate=0.01)
    kopt = keras.optimizers.LossScaleOptimizer(getattr(keras.optimizers, name)(**kwargs), initial_scale=8.0,
                                               dynamic_growth_steps=2)
    uopt = ug.optimizers.LossScaleOptimizer(getattr(ug.optimizers, name)(**kwargs), initial_scale=8.0,
                                            dynamic_growth_steps=2)
    assert ug.mixed_precision.LossScaleOptimizer is ug.optimizers.LossScaleOptimizer
    start = arrays("float32", 0)
    kvars = [keras.Variable(a) for a in start]
    uvars = [ug.tensor(a) for a in start]
    bad = {2: np.inf, 3: np.nan, 6: -np.inf}
    for step in range(9):
        grads = [g * float(uopt.dynamic_scale) for g in arrays("float32", step + 1)]
        if step in bad:
            grads[step % 2].flat[1] = bad[step]
        kopt.apply_gradients(zip([keras.ops.convert_to_tensor(g) for g in grads], kvars))
        uopt.apply_gradients(zip([ug.tensor(g) for g in grads], uvars))
        assert float(uopt.dynamic_scale) == float(kopt.dynamic_scale.numpy()), step
        assert uopt.iterations == int(kopt.iterations.numpy()), step
        for k, u in zip(kvars, uvars):
            # dividing by a power of two is exact, so the steps are the inner optimizers' (TOL above)
            np.testing.assert_allclose(u.numpy(), k.numpy(), **TOL["float32"])
    assert float(uopt.scale_loss(ug.tensor(3.0))) == 3.0 * float(uopt.dynamic_scale)
    assert uopt.scale_loss(ug.tensor(3.0, dtype=ug.float16)).dtype == ug.float32  # as Keras's float32 scale


def test_a_loss_scaled_custom_loop_trains_under_mixed_float16():
    # TensorFlow's mixed-precision guide's custom loop: scale_loss, tape.gradient, apply_gradients.
    ug.manual_seed(0)
    ug.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = ug.keras.Sequential([ug.keras.layers.Dense(16, activation="relu"), ug.keras.layers.Dense(1)])
        x = ug.randn(64, 4)
        y = x.sum(1, keepdim=True)
        opt = ug.optimizers.LossScaleOptimizer(ug.optimizers.Adam(0.01))
        losses = []
        for _ in range(60):
            with ug.GradientTape() as tape:
                loss = ((model(x).float() - y) ** 2).mean()
                scaled = opt.scale_loss(loss)
            grads = tape.gradient(scaled, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            losses.append(float(loss))
    finally:
        ug.mixed_precision.set_global_policy("float32")
    assert all(v.dtype == ug.float32 for v in model.trainable_variables)
    assert losses[-1] < 0.1 * losses[0], losses[::10]
    with pytest.raises(ValueError, match="dynamic=False is not supported"):
        ug.optimizers.LossScaleOptimizer(ug.optimizers.SGD(), dynamic=False)


def test_a_loss_scaled_step_compiles_and_skips_at_every_run():
    # ug.function on the custom step: the program decides at each run whether a step is skipped
    # (the scale and its count are tensors), so it follows the eager loop exactly.
    def run(compiled):
        ug.manual_seed(0)
        model = ug.keras.Sequential([ug.keras.layers.Dense(8, activation="relu"), ug.keras.layers.Dense(1)])
        model(ug.ones(2, 4))
        opt = ug.optimizers.LossScaleOptimizer(ug.optimizers.Adam(0.01), initial_scale=4.0, dynamic_growth_steps=2)

        def step(x, y, poison):
            with ug.GradientTape() as tape:
                scaled = opt.scale_loss(((model(x) - y) ** 2).mean() * poison)
            grads = tape.gradient(scaled, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))

        step = ug.function(step) if compiled else step
        x = ug.randn(16, 4, generator=ug.Generator().manual_seed(1))
        scales = []
        for i in range(8):
            step(x, x.sum(1, keepdim=True), ug.tensor(float("inf") if i in (2, 5) else 1.0))
            scales.append(float(opt.dynamic_scale))
        return scales, opt.iterations, [v.numpy() for v in model.trainable_variables]

    (eager_scales, eager_steps, eager), (scales, steps, compiled) = run(False), run(True)
    assert scales == eager_scales == [4.0, 8.0, 4.0, 4.0, 8.0, 4.0, 4.0, 8.0]
    assert steps == eager_steps == 6
    for a, b in zip(compiled, eager):
        np.testing.assert_array_equal(a, b)  # the same ops in the same order
