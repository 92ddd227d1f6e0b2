"""Training end to end: the articles' MLP trained with Adam and cross-entropy matches torch
step for step, and the imperative (backward + step) and functional (init/apply +
value_and_grad + optax-style update) styles reach the same parameters."""
import numpy as np
import torch

import unigrad as ug

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 32, 784)).astype(np.float32)  # 5 batches of 32
Y = RNG.integers(0, 10, (5, 32))


def ug_mlp():
    return ug.nn.Sequential(ug.nn.Linear(784, 128), ug.nn.ReLU(), ug.nn.Linear(128, 10))


def test_mlp_adam_cross_entropy_matches_torch_step_for_step():
    tm = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    um = ug_mlp()
    um.load_state_dict({k: ug.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    topt, uopt = torch.optim.Adam(tm.parameters(), lr=1e-3), ug.optim.Adam(um.parameters(), lr=1e-3)
    tloss_fn, uloss_fn = torch.nn.CrossEntropyLoss(), ug.nn.CrossEntropyLoss()
    for x, y in zip(X, Y):
        topt.zero_grad()
        tl = tloss_fn(tm(torch.tensor(x)), torch.tensor(y))
        tl.backward()
        topt.step()
        uopt.zero_grad()
        ul = uloss_fn(um(ug.tensor(x)), ug.tensor(y))
        ul.backward()
        uopt.step()
        np.testing.assert_allclose(ul.item(), tl.item(), rtol=1e-5)
    # Adam's step is about lr * g / |g| whatever g's size: for the few elements whose gradient
    # is near zero, float32 rounding differences in it move the update by part of one step
    # (lr = 1e-3). So: every element within one step, and all but 0.1% within 2e-5.
    for (name, tp), (_, up) in zip(tm.named_parameters(), um.named_parameters()):
        diff = np.abs(up.detach().numpy() - tp.detach().numpy())
        assert diff.max() <= 1e-3, name
        assert (diff > 2e-5 + 1e-4 * np.abs(tp.detach().numpy())).mean() <= 1e-3, name


def test_functional_and_imperative_training_reach_the_same_parameters():
    model = ug_mlp()
    params = model.init(ug.random.key(0), ug.ones(1, 784))

    # Functional (JAX + optax): parameters passed in and out, the module untouched.
    def loss_fn(p, x, y):
        return ug.nn.functional.cross_entropy(model.apply(p, x), y)

    opt = ug.optim.Adam(lr=1e-3)
    state = opt.init(params)
    p = params
    for x, y in zip(X, Y):
        loss, grads = ug.value_and_grad(loss_fn)(p, ug.tensor(x), ug.tensor(y))
        updates, state = opt.update(grads, state, p)
        p = ug.optim.apply_updates(p, updates)

    # Imperative (PyTorch): the same start, backward and step.
    model.load_state_dict(params)
    imperative = ug.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in zip(X, Y):
        imperative.zero_grad()
        ug.nn.functional.cross_entropy(model(ug.tensor(x)), ug.tensor(y)).backward()
        imperative.step()
    for name, q in model.named_parameters():
        np.testing.assert_allclose(p[name].numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-7, err_msg=name)


def test_python_subclassed_model_trains_and_loss_falls():
    class Net(ug.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = ug.nn.Sequential(ug.nn.Linear(2, 32), ug.nn.Tanh(), ug.nn.Linear(32, 2))

        def forward(self, x):
            return self.body(x)

    ug.manual_seed(0)
    net = Net()
    x = ug.randn(256, 2)
    y = ((x[:, 0] * x[:, 1]) > 0).to(ug.int64)
    opt = ug.optim.Adam(net.parameters(), lr=0.05)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = ug.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]
    accuracy = float((net(x).argmax(1) == y).to(ug.float32).mean().item())
    assert accuracy > 0.9
