"""Keras's model.compile / fit / evaluate / predict and ug.callbacks: fit reaches the same
parameters as the hand-written loop bit for bit, a Keras-style MLP learns Fashion-MNIST,
gradient accumulation equals one large batch, clipping matches torch's clip_grad_norm_, each
callback does what Keras's does, the progress output in both modes, and bad arguments."""
import io
import os
import sys

import numpy as np
import pytest
import torch

import unigrad as ug

FASHION = "/usr/share/datasets/fashion-mnist"
RNG = np.random.default_rng(0)
X = RNG.standard_normal((96, 4)).astype(np.float32)
Y = X[:, :3].argmax(1)  # learnable: the largest of the first three features


class MLP(ug.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = ug.nn.Linear(4, 8)
        self.fc2 = ug.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(ug.tanh(self.fc1(x)))


def mlp_pair():
    ug.manual_seed(1)
    a = MLP()
    b = MLP()
    b.load_state_dict(a.state_dict())
    return a, b


def params(m):
    return [p.detach().numpy().copy() for p in m.parameters()]


def manual_fit(model, opt, loss_fn, batches, epochs):
    for _ in range(epochs):
        for x, y in batches:
            opt.zero_grad()
            loss = loss_fn(model(ug.tensor(x)), ug.tensor(y))
            loss.backward()
            opt.step()


def batches_of(x, y, size):
    return [(x[i:i + size], y[i:i + size]) for i in range(0, len(x), size)]


@pytest.mark.parametrize("data", ["arrays", "iterable"])
def test_fit_equals_the_hand_written_loop_bit_for_bit(data):
    a, b = mlp_pair()
    a.compile(optimizer=ug.optim.SGD(a.parameters(), lr=0.1, momentum=0.9), loss=ug.nn.CrossEntropyLoss(),
              metrics=["accuracy"])
    if data == "arrays":
        history = a.fit(X, Y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    else:
        history = a.fit(batches_of(X, Y, 16), epochs=3, verbose=0)
    manual_fit(b, ug.optim.SGD(b.parameters(), lr=0.1, momentum=0.9), ug.nn.CrossEntropyLoss(), batches_of(X, Y, 16), 3)
    for pa, pb in zip(params(a), params(b)):
        np.testing.assert_array_equal(pa, pb)
    assert history.epoch == [0, 1, 2]
    assert list(history.history) == ["loss", "accuracy"]  # Keras 3 logs no learning rate of its own
    assert a.training


def test_named_optimizer_and_loss_equal_kerass_adam_and_cross_entropy():
    a, b = mlp_pair()
    a.compile(optimizer="adam", loss="sparse_categorical_crossentropy")  # logits: no softmax at the end
    a.fit(X, Y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    adam = ug.optimizers.Adam()  # Keras's Adam, as "adam" names in Keras
    adam.build(list(b.parameters()))
    manual_fit(b, adam, ug.nn.functional.cross_entropy, batches_of(X, Y, 32), 2)
    for pa, pb in zip(params(a), params(b)):
        np.testing.assert_array_equal(pa, pb)


def test_fit_reads_a_dict_pipeline_in_order_as_mindspore():
    # MindSpore's Model.train feeds a data set's columns ("data", "label") in order.
    a, b = mlp_pair()
    for m in (a, b):
        m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    a.fit(ug.data.from_tensor_slices({"data": X, "label": Y}).batch(16), epochs=2, verbose=0)
    b.fit(ug.data.from_tensor_slices((X, Y)).batch(16), epochs=2, verbose=0)
    for pa, pb in zip(params(a), params(b)):
        np.testing.assert_array_equal(pa, pb)


def test_shuffling_is_seeded_by_manual_seed():
    runs = []
    for _ in range(2):
        a, _ = mlp_pair()
        a.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        ug.manual_seed(5)
        a.fit(X, Y, batch_size=8, epochs=2, verbose=0)
        runs.append(params(a))
    for pa, pb in zip(*runs):
        np.testing.assert_array_equal(pa, pb)


def fashion(split, n):
    prefix = "train" if split == "train" else "t10k"
    x = ug.data.read_idx(os.path.join(FASHION, f"{prefix}-images-idx3-ubyte.gz")).numpy()[:n]
    y = ug.data.read_idx(os.path.join(FASHION, f"{prefix}-labels-idx1-ubyte.gz")).numpy()[:n]
    return x.astype(np.float32) / 255, y.astype(np.int64)


def test_keras_mlp_learns_fashion_mnist():
    x, y = fashion("train", 5000)
    xt, yt = fashion("test", 1000)
    ug.manual_seed(0)
    model = ug.nn.Sequential([ug.nn.Flatten(), ug.nn.Dense(128, activation="relu"), ug.nn.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, epochs=2, validation_split=0.1, verbose=0)
    assert history.history["loss"][1] < history.history["loss"][0]
    loss, accuracy = model.evaluate(xt, yt, verbose=0)
    assert accuracy > 0.75, accuracy
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    probs = model.predict(xt[:4], verbose=0).numpy()
    np.testing.assert_allclose(probs.sum(1), 1, rtol=1e-5)


def test_string_losses_read_probabilities_after_a_softmax_and_logits_otherwise():
    ug.manual_seed(0)
    logits = ug.nn.Sequential(ug.nn.Linear(4, 3))
    probs = ug.nn.Sequential(logits[0], ug.nn.Softmax(dim=-1))
    for m in (logits, probs):
        m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    want = torch.nn.functional.cross_entropy(torch.tensor(logits(ug.tensor(X)).detach().numpy()), torch.tensor(Y)).item()
    assert logits.evaluate(X, Y, verbose=0) == pytest.approx(want, rel=1e-5)
    assert probs.evaluate(X, Y, verbose=0) == pytest.approx(want, rel=1e-5)
    # from_logits=True forces logits: the softmax output is then read as logits (another value).
    probs.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", from_logits=True)
    assert probs.evaluate(X, Y, verbose=0) != pytest.approx(want, rel=1e-3)


def test_callable_losses_and_metrics():
    a, _ = mlp_pair()

    def half_mse(output, target):
        return ((output - target) ** 2).mean() / 2

    def max_output(output, target):
        return output.max()

    target = np.eye(3, dtype=np.float32)[Y]
    a.compile(optimizer="sgd", loss=half_mse, metrics=["mae", max_output])
    logs = a.evaluate(X, target, verbose=0, return_dict=True)
    out = a(ug.tensor(X)).detach().numpy()
    assert list(logs) == ["loss", "mae", "max_output"]
    assert logs["mae"] == pytest.approx(np.abs(out - target).mean(), rel=1e-5)
    assert logs["loss"] == pytest.approx(((out - target) ** 2).mean() / 2, rel=1e-5)


def test_gradient_accumulation_equals_one_large_batch():
    a, b = mlp_pair()
    a.compile(optimizer=ug.optim.SGD(a.parameters(), lr=0.5, momentum=0.9), loss="sparse_categorical_crossentropy",
              gradient_accumulation_steps=4)
    b.compile(optimizer=ug.optim.SGD(b.parameters(), lr=0.5, momentum=0.9), loss="sparse_categorical_crossentropy")
    a.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    b.fit(X, Y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    for pa, pb in zip(params(a), params(b)):
        np.testing.assert_allclose(pa, pb, atol=1e-6)


@pytest.mark.parametrize("kind", ["global_clipnorm", "clipnorm", "clipvalue"])
def test_clipping_matches_torch(kind):
    a, _ = mlp_pair()
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    t.load_state_dict({k.replace("fc1", "0").replace("fc2", "2"): torch.tensor(v.numpy()) for k, v in a.state_dict().items()})
    a.compile(optimizer=ug.optim.SGD(a.parameters(), lr=1.0), loss=ug.nn.CrossEntropyLoss(), **{kind: 0.05})
    a.fit(X, Y, batch_size=32, epochs=1, shuffle=False, verbose=0)
    opt = torch.optim.SGD(t.parameters(), lr=1.0)
    for x, y in batches_of(X, Y, 32):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(t(torch.tensor(x)), torch.tensor(y)).backward()
        if kind == "global_clipnorm":
            torch.nn.utils.clip_grad_norm_(t.parameters(), 0.05)
        elif kind == "clipnorm":
            for p in t.parameters():
                torch.nn.utils.clip_grad_norm_([p], 0.05)
        else:
            torch.nn.utils.clip_grad_value_(t.parameters(), 0.05)
        opt.step()
    for pa, pt in zip(params(a), t.parameters()):
        np.testing.assert_allclose(pa, pt.detach().numpy(), rtol=1e-5, atol=1e-6)


class Script(ug.callbacks.Callback):
    """Records the calls and puts a scripted val_loss into each epoch's logs."""

    def __init__(self, val_losses=()):
        super().__init__()
        self.val_losses = list(val_losses)
        self.calls = []
        self.weights = []

    def on_train_begin(self, logs=None):
        self.calls.append("train_begin")

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(f"epoch_begin {epoch}")

    def on_train_batch_end(self, batch, logs=None):
        self.calls.append(f"batch_end {batch} {sorted(logs)}")

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(f"epoch_end {epoch}")
        if self.val_losses:
            logs["val_loss"] = self.val_losses[epoch]
        self.weights.append({k: v.detach().numpy().copy() for k, v in self.model.state_dict().items()})

    def on_train_end(self, logs=None):
        self.calls.append("train_end")


def compiled(**kwargs):
    ug.manual_seed(1)
    m = MLP()
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", **kwargs)
    return m


def test_user_callback_order_logs_and_stop_training():
    m = compiled(metrics=["accuracy"])
    rec = Script()
    m.fit(X[:32], Y[:32], batch_size=16, epochs=2, verbose=0, callbacks=[rec])
    assert rec.calls == ["train_begin", "epoch_begin 0", "batch_end 0 ['accuracy', 'loss']",
                         "batch_end 1 ['accuracy', 'loss']", "epoch_end 0", "epoch_begin 1",
                         "batch_end 0 ['accuracy', 'loss']", "batch_end 1 ['accuracy', 'loss']", "epoch_end 1",
                         "train_end"]
    assert rec.model is m
    assert rec.params == {"epochs": 2, "steps": 2, "verbose": 0}

    class StopAfterThreeBatches(ug.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 2:
                self.model.stop_training = True

    history = m.fit(X, Y, batch_size=8, epochs=5, verbose=0, callbacks=[StopAfterThreeBatches()])
    assert history.epoch == [0]
    assert m.stop_training


def test_early_stopping_stops_at_the_right_epoch_and_restores_the_best_weights(capsys):
    m = compiled()
    rec = Script([1.0, 0.5, 0.6, 0.7, 0.4, 0.3])
    stop = ug.callbacks.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True, verbose=1)
    history = m.fit(X, Y, epochs=6, verbose=0, callbacks=[rec, stop])
    assert history.epoch == [0, 1, 2, 3]
    assert history.history["val_loss"] == [1.0, 0.5, 0.6, 0.7]
    assert stop.stopped_epoch == 3 and stop.best_epoch == 1 and stop.best == 0.5
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), rec.weights[1][k])
    out = capsys.readouterr().out
    assert "Epoch 4: early stopping" in out
    assert "Restoring model weights from the end of the best epoch: 2." in out


def test_model_checkpoint_writes_the_best_epochs(tmp_path):
    m = compiled()
    rec = Script([0.9, 0.7, 0.8, 0.5])
    path = str(tmp_path / "ckpt" / "w.{epoch:02d}-{val_loss:.2f}.safetensors")
    best = ug.callbacks.ModelCheckpoint(path, save_best_only=True)
    every = ug.callbacks.ModelCheckpoint(tmp_path / "last.safetensors")
    m.fit(X, Y, epochs=4, verbose=0, callbacks=[rec, best, every])
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["w.01-0.90.safetensors", "w.02-0.70.safetensors",
                                                     "w.04-0.50.safetensors"]
    assert best.best == 0.5
    saved = ug.load(str(tmp_path / "ckpt" / "w.02-0.70.safetensors"))
    for k, v in rec.weights[1].items():
        np.testing.assert_array_equal(saved[k].numpy(), v)
    last = ug.load(str(tmp_path / "last.safetensors"))
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(last[k].numpy(), v.numpy())
    full = ug.callbacks.ModelCheckpoint(tmp_path / "run.ckpt", save_weights_only=False)
    m.fit(X, Y, epochs=2, verbose=0, callbacks=[full])
    state = ug.load(str(tmp_path / "run.ckpt"))
    assert set(state) == {"model", "optimizer", "epoch", "step", "rng", "extra"} and state["epoch"] == 2
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(state["model"][k].numpy(), v.numpy())
    assert state["optimizer"]["param_groups"][0]["lr"] == 0.01


def test_learning_rate_scheduler_sets_the_lr():
    m = compiled()
    history = m.fit(X, Y, epochs=4, verbose=0, callbacks=[
        ug.callbacks.LearningRateScheduler(lambda epoch, lr: lr if epoch < 2 else lr * 0.5)])
    assert history.history["learning_rate"] == [0.01, 0.01, 0.005, 0.0025]
    history = m.fit(X, Y, epochs=2, verbose=0,
                    callbacks=[ug.callbacks.LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1))])
    assert history.history["learning_rate"] == [0.1, 0.05]
    opt = ug.optim.SGD(m.parameters(), lr=1.0)
    m.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    m.fit(X, Y, epochs=1, verbose=0, callbacks=[ug.callbacks.LearningRateScheduler(lambda epoch, lr: 0.25)])
    assert opt.param_groups[0]["lr"] == 0.25


def test_reduce_lr_on_plateau():
    m = compiled(learning_rate=1.0)
    rec = Script([1.0] * 6)
    plateau = ug.callbacks.ReduceLROnPlateau(factor=0.5, patience=2, min_lr=0.3)
    history = m.fit(X, Y, epochs=6, verbose=0, callbacks=[rec, plateau])
    assert history.history["learning_rate"] == [1.0, 1.0, 1.0, 0.5, 0.5, 0.3]


def test_csv_logger(tmp_path):
    m = compiled(metrics=["accuracy"])
    path = tmp_path / "log.csv"
    history = m.fit(X, Y, epochs=2, verbose=0, validation_data=(X, Y), callbacks=[ug.callbacks.CSVLogger(str(path))])
    h = history.history
    rows = [f"{e},{h['accuracy'][e]!r},{h['loss'][e]!r},{h['val_accuracy'][e]!r},{h['val_loss'][e]!r}"
            for e in range(2)]  # Keras 3 logs no learning rate without a callback that changes it
    assert path.read_text() == "epoch,accuracy,loss,val_accuracy,val_loss\n" + "\n".join(rows) + "\n"
    m.fit(X, Y, epochs=1, verbose=0, callbacks=[ug.callbacks.CSVLogger(path, separator=";", append=True)])
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and lines[3].startswith("0;")


def test_tensorboard_callback_writes_keras_runs_and_tags(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    m = compiled(metrics=["accuracy"])
    history = m.fit(X, Y, epochs=3, verbose=0, validation_data=(X, Y),
                    callbacks=[ug.callbacks.TensorBoard(log_dir=str(tmp_path))])
    h = history.history
    for run, prefix in (("train", ""), ("validation", "val_")):
        acc = EventAccumulator(str(tmp_path / run))
        acc.Reload()
        for metric in ("loss", "accuracy"):
            events = acc.Scalars("epoch_" + metric)
            assert [e.step for e in events] == [0, 1, 2]
            np.testing.assert_allclose([e.value for e in events], h[prefix + metric], rtol=1e-6)
    acc = EventAccumulator(str(tmp_path / "train"))
    acc.Reload()
    assert [e.value for e in acc.Scalars("epoch_learning_rate")] == pytest.approx([0.01] * 3)


def test_progress_prints_a_line_per_epoch_when_not_a_terminal(capsys):
    m = compiled(metrics=["accuracy"])
    m.fit(X, Y, batch_size=32, epochs=2, validation_data=(X, Y))
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 4 and "\r" not in out
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2"
    assert lines[1].startswith("3/3 - ") and "/step - " in lines[1] and "samples/s" in lines[1]
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
        assert f" - {key}: " in lines[1]
    m.fit(X, Y, epochs=1, verbose=0)
    assert capsys.readouterr().out == ""


def test_progress_redraws_a_bar_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    monkeypatch.setattr(sys, "stdout", term)
    m = compiled()
    m.fit(X, Y, batch_size=32, epochs=1)
    out = term.getvalue()
    assert out.startswith("Epoch 1/1\n\r1/3 [=========>....................] - ETA: ")
    assert "\r3/3 [==============================] - " in out and out.endswith("\n")
    term.seek(0)
    term.truncate(0)
    m.fit(X, Y, batch_size=32, epochs=1, verbose=2)  # verbose=2: one line per epoch even on a terminal
    assert "\r" not in term.getvalue()


def test_predict_runs_without_autograd_in_eval_mode_and_without_compile():
    ug.manual_seed(0)
    m = ug.nn.Sequential(ug.nn.Linear(4, 5), ug.nn.Dropout(0.5))
    out = m.predict(X, batch_size=10, verbose=0)
    assert tuple(out.shape) == (96, 5) and not out.requires_grad
    assert m.training
    np.testing.assert_allclose(out.numpy(), m[0](ug.tensor(X)).detach().numpy(), rtol=1e-6)
    out = m.predict(batches_of(X, Y, 40), verbose=0)  # (x, y) batches: y is ignored
    assert tuple(out.shape) == (96, 5)


def test_bad_arguments():
    m = MLP()
    with pytest.raises(RuntimeError, match="compile"):
        m.fit(X, Y, verbose=0)
    with pytest.raises(ValueError, match='"adam", "adamw", "sgd", "rmsprop", "adagrad"'):
        m.compile(optimizer="adamax", loss="mse")
    with pytest.raises(ValueError, match='"sparse_categorical_crossentropy"'):
        m.compile(optimizer="adam", loss="cross_entropy")
    with pytest.raises(ValueError, match='"sparse_categorical_accuracy"'):
        m.compile(optimizer="adam", loss="mse", metrics=["f1"])
    with pytest.raises(ValueError, match="loss is required"):
        m.compile(optimizer="adam")
    with pytest.raises(TypeError, match="optimizer"):
        m.compile(optimizer=torch.optim.SGD(torch.nn.Linear(1, 1).parameters()), loss="mse")
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="size mismatch between tensors: their first dimensions are 96, 95"):
        m.fit(X, Y[:95], verbose=0)
    with pytest.raises(ValueError, match="y is required"):
        m.fit(X, verbose=0)
    with pytest.raises(ValueError, match="y must not be given"):
        m.fit(batches_of(X, Y, 8), Y, verbose=0)
    with pytest.raises(ValueError, match="verbose"):
        m.fit(X, Y, verbose=3)
    with pytest.raises(ValueError, match=r"\(x, y\) or \(x, y, sample_weight\), got 4 tensors"):
        m.fit([(X, Y, Y, Y)], verbose=0)
    with pytest.raises(TypeError, match="Callback"):
        m.fit(X, Y, verbose=0, callbacks=[lambda: None])
