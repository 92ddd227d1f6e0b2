"""The type stubs the build makes for unigrad._C with nanobind's stubgen (unigrad/_C/*.pyi,
beside the py.typed marker), and the docstrings and argument names they are made from."""
import ast
import os

import unigrad as ug

PACKAGE = os.path.dirname(ug.__file__)


def stub(*parts):
    path = os.path.join(PACKAGE, "_C", *parts)
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), path)


def find_class(tree, name):
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def methods(cls):
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def argument_names(fn):
    a = fn.args
    return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]


def test_the_package_ships_stubs_that_parse():
    assert os.path.isfile(os.path.join(PACKAGE, "py.typed"))
    top = stub("__init__.pyi")
    functions = {n.name: n for n in top.body if isinstance(n, ast.FunctionDef)}
    assert {"tensor", "zeros", "ones", "randn", "arange", "full"} <= set(functions)
    assert argument_names(functions["zeros"])[-3:] == ["dtype", "device", "requires_grad"]
    tensor = methods(find_class(top, "Tensor"))
    assert {"matmul", "backward", "reshape", "sum"} <= set(tensor)
    assert "inputs" in argument_names(tensor["backward"])
    assert "An n-dimensional array" in ast.get_docstring(find_class(top, "Tensor"))

    nn = stub("nn", "__init__.pyi")
    assert argument_names(methods(find_class(nn, "Linear"))["__init__"])[:4] == [
        "self", "in_features", "out_features", "bias"]
    assert "kernel_size" in argument_names(methods(find_class(nn, "Conv2d"))["__init__"])
    assert {"register_forward_hook", "forward", "state_dict"} <= set(methods(find_class(nn, "Module")))
    sgd = methods(find_class(stub("optim", "__init__.pyi"), "SGD"))["__init__"]
    assert "lr" in argument_names(sgd)
    keras_adam = methods(find_class(stub("optimizers.pyi"), "Adam"))["__init__"]
    assert argument_names(keras_adam)[:5] == ["self", "learning_rate", "beta_1", "beta_2", "epsilon"]


def test_docstrings_name_the_arguments():
    assert "in_features: int, out_features: int, bias: bool = True" in ug.nn.Linear.__init__.__doc__
    assert "kernel_size" in ug.nn.Conv2d.__init__.__doc__ and "torch.nn.Conv2d" in ug.nn.Conv2d.__doc__
    assert "requires_grad: bool = False" in ug.zeros.__doc__ and "tensor of zeros" in ug.zeros.__doc__
    assert "torch.nn.Module" in ug.nn.Module.__doc__
    assert "inputs" in ug.Tensor.backward.__doc__
    # The optimizers' defaults are the C++ option structs' (torch's): SGD's lr 1e-3, AdamW's decay 1e-2.
    assert "lr: float = 0.001" in ug.optim.SGD.__init__.__doc__
    assert "weight_decay: float = 0.01" in ug.optim.AdamW.__init__.__doc__
    assert "betas: tuple[float, float] = (0.9, 0.999)" in ug.optim.Adam.__init__.__doc__
    # ug.optimizers' are Keras's: epsilon 1e-7, AdamW's decay 0.004.
    assert "epsilon: float = 1e-07" in ug.optimizers.Adam.__init__.__doc__
    assert "weight_decay: float = 0.004" in ug.optimizers.AdamW.__init__.__doc__
    assert "min_lr: object = 0.0" in ug.optim.lr_scheduler.ReduceLROnPlateau.__init__.__doc__
