"""Checkpoints: ug.save / ug.load of nested values (torch.save's habit, without pickle) and
ug.train.save_checkpoint / load_checkpoint. Everything round-trips with its type; other tools
read the tensors; hostile files raise ValueError; and training resumed in a fresh process
matches an unbroken run bit for bit, at an epoch boundary or in the middle of an epoch."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import safetensors
import safetensors.torch
import torch

import unigrad as ug

HERE = os.path.dirname(os.path.abspath(__file__))


def same(a, b, where="obj"):
    """Equal values of the same types, tensors bit for bit, dict keys in the same order."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, ug.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert a.contiguous().numpy().tobytes() == b.contiguous().numpy().tobytes(), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, where


# ---- ug.save / ug.load ----------------------------------------------------------------------

def trained_objects(hidden=8):
    model = ug.nn.Sequential(ug.nn.Linear(3, hidden), ug.nn.ReLU(), ug.nn.Linear(hidden, 2))
    opt = ug.optim.Adam(model.parameters(), lr=1e-2)
    sched = ug.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    model(ug.randn(4, 3)).sum().backward()
    opt.step()
    sched.step()
    return model, opt, sched


def test_torchs_checkpoint_habit_round_trips(tmp_path):
    model, opt, sched = trained_objects()
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
            "epoch": 3, "step": 2811, "rng": ug.get_rng_state(),
            "note": {"lr": 0.1, "tags": ["a", "b"], "best": None, "ok": True, "shape": (2, 3)}}
    ug.save(ckpt, tmp_path / "ckpt.safetensors")
    back = ug.load(tmp_path / "ckpt.safetensors")
    same(back, ckpt)
    assert list(back["optimizer"]["state"]) == [0, 1, 2, 3]  # int keys stay ints
    assert back["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    fresh_model, fresh_opt, fresh_sched = trained_objects()
    fresh_model.load_state_dict(back["model"])
    fresh_opt.load_state_dict(back["optimizer"])
    fresh_sched.load_state_dict(back["scheduler"])
    same(fresh_opt.state_dict(), opt.state_dict())
    same(fresh_sched.state_dict(), sched.state_dict())


def test_any_key_and_value_round_trips(tmp_path):
    t = ug.arange(6.0).reshape(2, 3)
    obj = {"a.b": t, "a": {"b": t + 1, "c.d": [t + 2]}, 0: "int key", "0": "str key", -7: None, "": [],
           "floats": [0.1, 1e300, -0.0, float("inf"), float("-inf"), float("nan"), 3.0],
           "ints": [0, -1, 2**63 - 1, -2**63], "unicode": "héllo ✓ \u0000", "nested": ((), {}, [[[]]]),
           "bools": [True, False], "dtypes": [ug.ones(2, dtype=dt) for dt in (ug.int64, ug.float16, ug.bool)]}
    ug.save(obj, tmp_path / "x.safetensors")
    same(ug.load(tmp_path / "x.safetensors"), obj)
    ug.save([t, (t,)], tmp_path / "list.safetensors")
    same(ug.load(tmp_path / "list.safetensors"), [t, (t,)])
    ug.save(t, tmp_path / "t.safetensors")
    same(ug.load(tmp_path / "t.safetensors"), t)


def test_other_tools_read_the_tensors_under_dotted_names(tmp_path):
    model, opt, _ = trained_objects()
    path = tmp_path / "c.safetensors"
    ug.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 1}, path, metadata={"by": "me"})
    with safetensors.safe_open(str(path), "np") as f:
        assert "model.0.weight" in f.keys() and "optimizer.state.3.exp_avg_sq" in f.keys()
        np.testing.assert_array_equal(f.get_tensor("model.2.bias"), model.state_dict()["2.bias"].numpy())
        meta = f.metadata()
    assert meta["by"] == "me"
    tree = json.loads(meta["ug.tree"])
    assert tree["version"] == 1
    assert tree["root"]["dict"][2] == ["epoch", 1]
    # Names that would clash get a suffix; the skeleton still puts each tensor in its place.
    obj = {"a.b": ug.ones(1), "a": {"b": ug.zeros(1)}}
    ug.save(obj, path)
    assert sorted(ug.safetensors.load_file(path)) == ["a.b#1", "a.b#2"]
    same(ug.load(path), obj)


def test_a_flat_state_dict_is_still_a_plain_safetensors_file(tmp_path):
    model, _, _ = trained_objects()
    sd = model.state_dict()
    ug.save(sd, tmp_path / "m.safetensors")
    theirs = safetensors.torch.save({k: torch.from_numpy(v.numpy().copy()) for k, v in sd.items()})
    assert (tmp_path / "m.safetensors").read_bytes() == theirs
    assert ug.safetensors.load_metadata(tmp_path / "m.safetensors") == {}


def test_values_that_cannot_be_saved_raise_type_errors(tmp_path):
    path = tmp_path / "x.safetensors"
    with pytest.raises(TypeError, match=r"\[save\] cannot save obj\['a'\]\[1\], a object"):
        ug.save({"a": [1, object()]}, path)
    with pytest.raises(TypeError, match=r"has the key \(1, 2\), a tuple: dict keys must be str or int"):
        ug.save({(1, 2): 1}, path)
    with pytest.raises(TypeError, match="dict keys must be str or int"):
        ug.save({True: 1}, path)
    with pytest.raises(ValueError, match="does not fit in a 64-bit int"):
        ug.save({"big": 2**64}, path)
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="deeper than 200 levels"):
        ug.save(loop, path)
    with pytest.raises(ValueError, match="'ug.tree' is reserved"):
        ug.save({"a": 1}, path, metadata={"ug.tree": "{}"})
    assert not path.exists()


def hostile(tmp_path, skeleton, tensors=None):
    path = tmp_path / "bad.safetensors"
    text = skeleton if isinstance(skeleton, str) else json.dumps(skeleton)
    ug.safetensors.save_file(tensors or {}, path, metadata={"ug.tree": text})
    return path


@pytest.mark.parametrize("skeleton, message", [
    ("{not json", "not valid JSON"),
    ({"version": 2, "root": None}, "format version 2"),
    ({"root": None}, r"expected \{\"version\": 1"),
    ({"version": 1, "root": {"tensor": "w"}}, "refers to tensor \"w\", which the file does not hold"),
    ({"version": 1, "root": {"dict": [["a", 1], ["a", 2]]}}, "dict key \"a\" appears twice"),
    ({"version": 1, "root": {"dict": [[None, 1]]}}, "neither a string nor a 64-bit integer"),
    ({"version": 1, "root": {"dict": {"a": 1}}}, "not a list of \\[key, value\\] pairs"),
    ({"version": 1, "root": {"tuple": 5}}, "not a list"),
    ({"version": 1, "root": {"float": "1.5"}}, "not \"nan\""),
    ({"version": 1, "root": {"py/object": "os.system"}}, "unknown node kind \"py/object\""),
    ({"version": 1, "root": 2**63}, "does not fit in 64 bits"),
    ('{"version": 1, "root": ' + "[" * 100000 + "]" * 100000 + "}", "deeper than 200 levels"),
])
def test_hostile_skeletons_raise_value_errors(tmp_path, skeleton, message):
    path = hostile(tmp_path, skeleton)
    with pytest.raises(ug.errors.ValueError, match=rf"\[load\] '.*bad.safetensors': bad 'ug.tree' metadata: .*{message}"):
        ug.load(path)


def test_tensors_outside_the_skeleton_or_used_twice_are_refused(tmp_path):
    w = {"w": ug.ones(2)}
    with pytest.raises(ug.errors.ValueError, match="tensor 'w' is in the file but not in the tree"):
        ug.load(hostile(tmp_path, {"version": 1, "root": []}, w))
    with pytest.raises(ug.errors.ValueError, match="more than once"):
        ug.load(hostile(tmp_path, {"version": 1, "root": [{"tensor": "w"}, {"tensor": "w"}]}, w))


# ---- training resumed from a checkpoint ----------------------------------------------------

N, BATCH, EPOCHS = 48, 12, 4
STEPS = N // BATCH


def build(schedule, hidden=16):
    """The model, optimizer and schedule, constructed the same way by every run."""
    model = ug.nn.Sequential(ug.nn.Linear(6, hidden), ug.nn.ReLU(), ug.nn.Dropout(0.3), ug.nn.Linear(hidden, 3))
    opt = ug.optim.Adam(model.parameters(), lr=1e-2)
    if schedule == "step":
        sched = ug.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    else:
        sched = ug.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=EPOCHS * STEPS)
    return model, opt, sched


def train(model, opt, sched, schedule, order, epoch, step, stop=None):
    """Trains from (epoch, step) to the end, or up to the (epoch, step) `stop`. order "global":
    each epoch's order is drawn from the global generator at its start; "epoch": it is a
    permutation keyed by the epoch, so a resumed run can rebuild it mid-epoch."""
    x = ug.random.normal(ug.random.key(1), (N, 6))
    y = ug.random.randint(ug.random.key(2), (N,), 0, 3)
    for e in range(epoch, EPOCHS):
        if stop == (e, 0):  # before the epoch's shuffle draws from the generator
            return
        perm = ug.randperm(N) if order == "global" else ug.random.permutation(ug.random.fold_in(ug.random.key(3), e), N)
        for s in range(step if e == epoch else 0, STEPS):
            if (e, s) == stop:
                return
            idx = perm[s * BATCH:(s + 1) * BATCH]
            loss = ug.nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if schedule == "onecycle":
                sched.step()
        if schedule == "step":
            sched.step()


def resume(ckpt, out, schedule, order, how):
    """The second half, run in a fresh process: fresh objects (from another seed), loaded."""
    ug.manual_seed(12345)
    model, opt, sched = build(schedule)
    if how == "load_checkpoint":
        epoch, step, extra = ug.train.load_checkpoint(ckpt, model=model, optimizer=opt, scheduler=sched)
        assert extra == {"note": "halfway"}
    else:  # torch's habit, by hand
        state = ug.load(ckpt)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        ug.set_rng_state(state["rng"])
        epoch, step = state["epoch"], state["step"]
    train(model, opt, sched, schedule, order, epoch, step)
    ug.save({"model": model.state_dict(), "lr": sched.get_last_lr()}, out)


def run_in_fresh_process(*args):
    code = f"import sys; sys.path.insert(0, {HERE!r}); import test_checkpoint as t; t.resume(*sys.argv[1:])"
    subprocess.run([sys.executable, "-c", code, *map(str, args)], check=True, env=os.environ.copy())


@pytest.mark.parametrize("schedule, order, stop, how", [
    ("step", "global", (2, 0), "load_checkpoint"),
    ("onecycle", "global", (2, 0), "habit"),
    ("onecycle", "epoch", (2, 1), "load_checkpoint"),  # mid-epoch: the order depends on the epoch alone
    ("step", "epoch", (1, 3), "habit"),
])
def test_training_resumed_in_a_fresh_process_is_bit_identical(tmp_path, schedule, order, stop, how):
    ug.manual_seed(0)
    model, opt, sched = build(schedule)
    train(model, opt, sched, schedule, order, 0, 0)
    straight = {"model": model.state_dict(), "lr": sched.get_last_lr()}

    ug.manual_seed(0)
    model, opt, sched = build(schedule)
    train(model, opt, sched, schedule, order, 0, 0, stop=stop)
    ckpt = tmp_path / "half.safetensors"
    if how == "load_checkpoint":
        ug.train.save_checkpoint(ckpt, model=model, optimizer=opt, scheduler=sched, epoch=stop[0], step=stop[1],
                                 extra={"note": "halfway"})
    else:
        ug.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                 "epoch": stop[0], "step": stop[1], "rng": ug.get_rng_state()}, ckpt)
    run_in_fresh_process(ckpt, tmp_path / "resumed.safetensors", schedule, order, how)
    same(ug.load(tmp_path / "resumed.safetensors"), straight)


def test_the_generator_matters_to_the_test():
    """Without the generator's state (dropout masks, shuffles) a resumed run goes elsewhere."""
    ug.manual_seed(0)
    model, opt, sched = build("step")
    train(model, opt, sched, "step", "global", 0, 0)
    ug.manual_seed(0)
    other, other_opt, other_sched = build("step")
    train(other, other_opt, other_sched, "step", "global", 0, 0, stop=(2, 0))
    ug.manual_seed(1)
    train(other, other_opt, other_sched, "step", "global", 2, 0)
    assert not np.array_equal(other.state_dict()["0.weight"].numpy(), model.state_dict()["0.weight"].numpy())


# ---- save_checkpoint / load_checkpoint -----------------------------------------------------

def test_a_checkpoint_is_the_habit_dict(tmp_path):
    model, opt, sched = trained_objects()
    ug.train.save_checkpoint(tmp_path / "c.safetensors", model=model, optimizer=opt, scheduler=sched, epoch=3,
                             step=2811, extra={"best": float("inf")})
    back = ug.load(tmp_path / "c.safetensors")
    same(back, {"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "epoch": 3, "step": 2811, "rng": ug.get_rng_state(), "extra": {"best": float("inf")}})


def test_load_checkpoint_restores_state_and_generator(tmp_path):
    model, opt, sched = trained_objects()
    plateau = ug.optim.lr_scheduler.ReduceLROnPlateau(opt)  # its best is inf before any step
    ug.train.save_checkpoint(tmp_path / "c.safetensors", model=model, optimizer=opt, scheduler=plateau, step=5)
    want = ug.rand(3)
    fresh_model, fresh_opt, _ = trained_objects()
    fresh_plateau = ug.optim.lr_scheduler.ReduceLROnPlateau(fresh_opt, patience=3)
    fresh_plateau.step(0.5)
    assert ug.train.load_checkpoint(tmp_path / "c.safetensors", model=fresh_model, optimizer=fresh_opt,
                                    scheduler=fresh_plateau) == (0, 5, None)
    same(ug.rand(3), want)
    same(fresh_model.state_dict(), model.state_dict())
    same(fresh_opt.state_dict(), opt.state_dict())
    assert fresh_plateau.state_dict()["best"] == float("inf")
    # Only what is asked for is restored; the rest of the file is ignored.
    assert ug.train.load_checkpoint(tmp_path / "c.safetensors") == (0, 5, None)


def test_a_different_architecture_names_the_mismatched_keys(tmp_path):
    model, opt, _ = trained_objects(hidden=8)
    ug.train.save_checkpoint(tmp_path / "c.safetensors", model=model, optimizer=opt)
    bigger, _, _ = trained_objects(hidden=16)
    with pytest.raises(RuntimeError, match=r'size mismatch for "0.weight": expected shape \[16, 3\], got \[8, 3\]'):
        ug.train.load_checkpoint(tmp_path / "c.safetensors", model=bigger)
    other = ug.nn.Sequential(ug.nn.Linear(3, 8), ug.nn.Tanh(), ug.nn.Dropout(), ug.nn.Linear(8, 2))
    with pytest.raises(RuntimeError, match=r'missing keys: "3.weight", "3.bias". unexpected keys: "2.weight"'):
        ug.train.load_checkpoint(tmp_path / "c.safetensors", model=other)


def test_wrong_entries_and_arguments_raise_clear_errors(tmp_path):
    model, opt, sched = trained_objects()
    path = tmp_path / "c.safetensors"
    ug.train.save_checkpoint(path, model=model, optimizer=opt, scheduler=sched)
    good = ug.load(path)

    def load_spoiled(spoil):
        state = ug.load(path)
        spoil(state)
        ug.save(state, tmp_path / "spoiled.safetensors")
        ug.train.load_checkpoint(tmp_path / "spoiled.safetensors", model=model, optimizer=opt, scheduler=sched)

    with pytest.raises(ValueError, match=r"\[load_checkpoint\] '.*spoiled.safetensors': 'epoch' is a str, expected an int"):
        load_spoiled(lambda s: s.update(epoch="3"))
    with pytest.raises(ValueError, match="the checkpoint has no entry 'scheduler'"):
        load_spoiled(lambda s: s.pop("scheduler"))
    with pytest.raises(ValueError, match="'optimizer.state' has the key '0', expected parameter indices"):
        load_spoiled(lambda s: s["optimizer"].update(state={"0": s["optimizer"]["state"][0]}))
    with pytest.raises(ValueError, match="'model' entry '0.bias' is a list, expected a Tensor"):
        load_spoiled(lambda s: s["model"].update({"0.bias": [1.0]}))
    with pytest.raises(ValueError, match="loaded state 'exp_avg' of parameter 0 has shape \\[2\\]"):
        load_spoiled(lambda s: s["optimizer"]["state"][0].update(exp_avg=ug.zeros(2)))
    with pytest.raises(ValueError, match="loaded step counter of parameter 0 has shape \\[3\\], not a single number"):
        load_spoiled(lambda s: s["optimizer"]["state"][0].update(step=ug.zeros(3)))
    with pytest.raises(ValueError, match="state list 'base_lrs' has 0 values for 1 parameter groups"):
        load_spoiled(lambda s: s["scheduler"].update(base_lrs=[]))
    with pytest.raises(ValueError, match="'rng' is a float32 tensor"):
        load_spoiled(lambda s: s.update(rng=ug.zeros(2)))
    same(ug.load(path), good)  # nothing above touched the file
    with pytest.raises(TypeError, match=r"\[save_checkpoint\] optimizer must be a ug.optim.Optimizer or None, got str"):
        ug.train.save_checkpoint(path, model=model, optimizer="adam")
    with pytest.raises(TypeError, match=r"\[load_checkpoint\] model must be a ug.nn.Module"):
        ug.train.load_checkpoint(path, model=opt)
    with pytest.raises(TypeError, match=r"cannot save extra\['x'\], a builtin_function_or_method"):
        ug.train.save_checkpoint(path, model=model, extra={"x": len})
