"""ug.autograd.functional: torch.autograd.functional's vjp, jvp, jacobian, hessian, vhp and
hvp, with torch's arguments, results and errors.

Each runs func once on the inputs (detached copies that require grad, or views that keep the
caller's graph when create_graph) and differentiates with ug.autograd.grad, as torch does: jvp
and hvp by the double-backward trick, jacobian row by row (vectorize=True: ug.func.jacrev or,
with strategy="forward-mode", ug.func.jacfwd, all rows at once). A result is a tensor or a
tuple as the inputs and outputs are; create_graph=False gives detached results, and
strict=True raises where an output does not depend on an input instead of giving zeros.
"""
from .. import _C
from . import enable_grad
from . import grad as _grad



def _as_tuple(x, what, op):
    is_tuple = isinstance(x, tuple)
    xs = x if is_tuple else (x,)
    for i, t in enumerate(xs):
        if not isinstance(t, _C.Tensor):
            where = f"{what}[{i}]" if is_tuple else what
            raise TypeError(f"[autograd.functional.{op}] expected {where} to be a Tensor, got {type(t).__name__}")
    return is_tuple, xs


def _untuple(xs, is_tuple):
    """Inverse of _as_tuple; is_tuple a pair (outputs, inputs) for jacobian's nested results."""
    if isinstance(is_tuple, tuple):
        if not is_tuple[1]:
            xs = tuple(x[0] for x in xs)
        return xs if is_tuple[0] else xs[0]
    return xs if is_tuple else xs[0]


def _prepare(xs, create_graph, need_graph):
    """Inputs as func sees them: views keeping the caller's graph when create_graph, else
    detached copies that require grad when need_graph."""
    out = []
    for x in xs:
        if create_graph and x.requires_grad:
            out.append(x.view_as(x))
        else:
            out.append(x.detach().requires_grad_(need_graph))
    return tuple(out)


def _finish(xs, create_graph):
    return tuple(x if create_graph else x.detach() for x in xs)


def _check_requires_grad(xs, what, strict, op):
    if not strict:
        return
    for i, x in enumerate(xs):
        if x is None or not x.requires_grad:
            raise RuntimeError(f"[autograd.functional.{op}] {what} {i} of the user-provided function does not "
                               "require gradients: in strict mode it must be computed in a differentiable way "
                               "from the inputs")


def _check_v(v, like, is_tuple, op):
    if len(v) != len(like):
        raise RuntimeError(f"[autograd.functional.{op}] v has {len(v)} tensors where {len(like)} are expected")
    for i, (a, b) in enumerate(zip(v, like)):
        if tuple(a.shape) != tuple(b.shape):
            where = f"entry {i} of v" if is_tuple else "v"
            raise RuntimeError(f"[autograd.functional.{op}] mismatch in shape: {where} has shape {list(a.shape)} "
                               f"where {list(b.shape)} is expected")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """ug.autograd.grad over the outputs that require grad; None for an input none reaches.
    grad_outputs None: the outputs have one element each."""
    keep = [i for i, o in enumerate(outputs) if o is not None and o.requires_grad]
    if not keep:
        return (None,) * len(inputs)
    gouts = None if grad_outputs is None else [grad_outputs[i] for i in keep]
    return _grad([outputs[i] for i in keep], list(inputs), gouts, retain_graph=retain_graph,
                 create_graph=create_graph, allow_unused=True)


def _zeros_for_none(grads, refs, strict, message):
    """Each None gradient as zeros like its reference; strict: a RuntimeError, message(i)."""
    out = []
    for i, (g, r) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(message(i))
            g = _ug().zeros_like(r)
        out.append(g)
    return tuple(out)


def _independent(op, what):
    return lambda i: (f"[autograd.functional.{op}] the output of the user-provided function is independent of "
                      f"{what} {i}: not allowed in strict mode")


def _ug():
    import unigrad

    return unigrad


def _single_element_v(xs, what, op):
    if len(xs) != 1 or xs[0].numel() != 1:
        raise RuntimeError(f"[autograd.functional.{op}] v can only be None if the {what} is a single Tensor "
                           "with a single element")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at inputs, one entry per input."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs", "vjp")
        _check_requires_grad(outputs, "output", strict, "vjp")
        if v is None:
            _single_element_v(outputs, "output of the user-provided function", "vjp")
        else:
            _, v = _as_tuple(v, "v", "vjp")
            _check_v(v, outputs, is_outputs_tuple, "vjp")
        grads = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _zeros_for_none(grads, inputs, strict, _independent("vjp", "input"))
    return _untuple(_finish(outputs, create_graph), is_outputs_tuple), _untuple(_finish(result, create_graph),
                                                                               is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, one entry per output, by the
    double-backward trick (the vjp is linear in its cotangent u, so d(u^T J)/du applied to v is
    J v)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, True)
        if v is None:
            _single_element_v(inputs, "input to the user-provided function", "jvp")
        else:
            _, v = _as_tuple(v, "v", "jvp")
            _check_v(v, inputs, is_inputs_tuple, "jvp")
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs", "jvp")
        _check_requires_grad(outputs, "output", strict, "jvp")
        us = tuple(_ug().zeros_like(o).requires_grad_(True) for o in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, us, create_graph=True)
        grads = _autograd_grad(grad_inputs, us, v, create_graph=create_graph)
        result = _zeros_for_none(grads, outputs, strict, lambda i: (
            f"[autograd.functional.jvp] output {i} of the user-provided function does not depend on the inputs "
            "along v (its gradient is independent of its cotangent): not allowed in strict mode"))
    return _untuple(_finish(outputs, create_graph), is_outputs_tuple), _untuple(_finish(result, create_graph),
                                                                               is_outputs_tuple)


def _rows(out, inputs, create_graph, strict, index):
    """d out / d inputs, one ug.autograd.grad per element of out: a tensor
    out.shape + input.shape per input."""
    per_input = [[] for _ in inputs]
    flat = out.reshape(-1)
    for j in range(flat.numel()):
        row = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
        for k, (g, x) in enumerate(zip(row, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(f"[autograd.functional.jacobian] output {index} of the user-provided "
                                       f"function is independent of input {k}: not allowed in strict mode")
                g = _ug().zeros_like(x)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(f"[autograd.functional.jacobian] the jacobian of the user-provided function is "
                                   f"independent of input {k}: not allowed in strict mode when create_graph=True")
            per_input[k].append(g)
    ug = _ug()
    return tuple((ug.stack(rows, 0) if rows else ug.zeros((0,) + tuple(x.shape), dtype=x.dtype))
                 .reshape(tuple(out.shape) + tuple(x.shape)) for rows, x in zip(per_input, inputs))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """d func(inputs) / d inputs: out.shape + input.shape for each (output, input) pair, nested
    outputs outside, inputs inside, each level a tuple only where func returns one or takes one."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f'[autograd.functional.jacobian] strategy must be "reverse-mode" or "forward-mode", '
                         f'got "{strategy}"')
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError('[autograd.functional.jacobian] strategy="forward-mode" needs vectorize=True')
    if vectorize and strict:
        raise RuntimeError("[autograd.functional.jacobian] strict=True and vectorize=True are not supported together")
    if strategy == "forward-mode" and create_graph:
        raise NotImplementedError('[autograd.functional.jacobian] create_graph=True and strategy="forward-mode" '
                                  "are not supported together")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, True)
        if vectorize:
            return _vectorized(func, inputs, is_inputs_tuple, create_graph, strategy)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs", "jacobian")
        _check_requires_grad(outputs, "output", strict, "jacobian")
        jac = tuple(_finish(_rows(out, inputs, create_graph, strict, i), create_graph)
                    for i, out in enumerate(outputs))
    return _untuple(jac, (is_outputs_tuple, is_inputs_tuple))


def _vectorized(func, inputs, is_inputs_tuple, create_graph, strategy):
    ug = _ug()
    transform = ug.func.jacfwd if strategy == "forward-mode" else ug.func.jacrev
    seen = []

    def checked(*xs):
        out = func(*xs)
        seen.append(_as_tuple(out, "outputs", "jacobian")[0])
        return out

    jac = transform(checked, argnums=tuple(range(len(inputs))))(*inputs)
    is_outputs_tuple = seen[0]
    nested = jac if is_outputs_tuple else (jac,)
    nested = tuple(_finish(row, create_graph) for row in nested)
    return _untuple(nested, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The second derivatives of a function with a single-element output: input_i.shape +
    input_j.shape for each pair, as tuples of tuples where func takes a tuple."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def single_output(*xs):
        out = func(*xs)
        is_out_tuple, outs = _as_tuple(out, "outputs", "hessian")
        _check_requires_grad(outs, "output", strict, "hessian")
        if is_out_tuple:
            raise RuntimeError("[autograd.functional.hessian] the function must return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("[autograd.functional.hessian] the Tensor the function returns must have a single "
                               f"element, got shape {list(out.shape)}")
        return out.reshape(())

    def jac_func(*xs):
        if outer_jacobian_strategy == "forward-mode":
            xs = tuple(x.requires_grad_(True) for x in xs)
        jac = jacobian(single_output, xs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict, "hessian")
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _untuple(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_output(func, inputs, create_graph, strict, v, op):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", op)
    inputs = _prepare(inputs, create_graph, True)
    if v is None:
        _single_element_v(inputs, "input to the user-provided function", op)
    else:
        _, v = _as_tuple(v, "v", op)
        _check_v(v, inputs, is_inputs_tuple, op)
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs", op)
    _check_requires_grad(outputs, "output", strict, op)
    if is_outputs_tuple:
        raise RuntimeError(f"[autograd.functional.{op}] the function must return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"[autograd.functional.{op}] the Tensor the function returns must have a single element, "
                           f"got shape {list(outputs[0].shape)}")
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict, op)
    return is_inputs_tuple, inputs, v, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a function with a single-element output."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _scalar_output(func, inputs, create_graph, strict, v, "vhp")
        grads = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _zeros_for_none(grads, inputs, strict, _independent("vhp", "input"))
    return _finish(outputs, create_graph)[0], _untuple(_finish(result, create_graph), is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a function with a single-element output, by the double-backward
    trick (equal to vhp wherever the second derivatives are symmetric)."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _scalar_output(func, inputs, create_graph, strict, v, "hvp")
        us = tuple(_ug().zeros_like(x).requires_grad_(True) for x in inputs)
        double_back = _autograd_grad(jac, inputs, us, create_graph=True)
        grads = _autograd_grad(double_back, us, v, create_graph=create_graph)
        result = _zeros_for_none(grads, inputs, strict, _independent("hvp", "input"))
    return _finish(outputs, create_graph)[0], _untuple(_finish(result, create_graph), is_inputs_tuple)
