"""The compiled mode: ug.jit (jax.jit), ug.function (tf.function) and ug.compile (torch.compile),
one machinery over the C++ compiler (ug/compiler). A jitted function is traced once per call
signature into a graph of the ops it ran, and later calls run that graph from C++ without
calling the Python function again: its Python side effects (print, appending to a list) happen
while it is traced, as in JAX.

The signature of a call is every tensor argument's dtype, shape and device, the arguments'
tree structure, the value of every other argument (numbers, strings, objects: static, as
torch.compile and tf.function specialise on them where JAX traces numbers; pass a number as a
tensor to keep it out of the key) and the default dtype (ug.set_default_dtype), which the
factories and Python floats in the body take. NumPy arrays and NumPy scalars (np.float32(1)) are
tensor arguments, as jax.jit and tf.function convert them: each call copies them into tensors
with ug.tensor's dtypes (float64 stays float64, where JAX without x64 makes float32). Static
arguments (static_argnums, static_argnames) must be hashable, as jax.jit's. Up to `cache_size`
programs are kept; from the third trace of a function on, each trace warns (RetraceWarning)
naming the argument that changed, from what to what.

A function whose trace returns no tensors and writes no state returns what it returned, its
Python numbers as 0-d tensors (as jax.jit returns arrays): `ug.jit(lambda x: 3.0)(x)` is
tensor(3.), a function returning None returns None.

Tensors the function reads without taking them as arguments are constants of the program, as in
JAX, except parameters (leaf tensors that require grad) and the state of modules passed as
arguments or given to ug.compile: those are read as they are at every call, so optimizer steps
taken outside the compiled function are seen.

What a trace assumes of the modules the function reaches (through its closure, the globals it
names, a bound method's instance, a module argument) is guarded as torch.compile guards it: each
module's training mode, its forward hooks, its plain attributes (a float hyper-parameter), its
layer's settings and its parameters' requires_grad are part of the signature, so `model.eval()`,
`model.scale = 2.0`, a hook registered or `p.requires_grad_(False)` between calls traces again instead of running a program made for the
old values. The guards are read again only when Python changed some module or requires_grad
(_jit.state_epoch), so a call that hits pays one counter read.
"""
import collections
import functools
import inspect
import reprlib
import threading
import types
import warnings
import weakref

import numpy as np

from . import _C
from .tree import dict_keys, dict_maker, node_unflatten, tree_flatten, tree_map, tree_unflatten

_jit = _C._jit
_Tensor = _C.Tensor
_describe = _jit.describe

CacheInfo = collections.namedtuple("CacheInfo", "hits misses traces size capacity")


class RetraceWarning(UserWarning):
    """A jitted function was traced again (past its second trace) for a new signature."""


_tracing = threading.local()  # depth of the traces running on this thread
_jitted = weakref.WeakSet()  # every JitFunction alive, for clear_caches


def clear_caches():
    """jax.clear_caches (torch.compiler.reset): every jitted function drops its programs, so
    that its next call traces again."""
    for jitted in list(_jitted):
        jitted.cache_clear()


def is_compiling():
    """torch.compiler.is_compiling: whether this code runs inside the trace of a jitted function
    (ug.jit, ug.function, ug.compile), rather than eagerly."""
    return getattr(_tracing, "depth", 0) > 0


class disable_jit:
    """jax.disable_jit: inside `with ug.disable_jit():` (or a function it decorates) jitted
    functions (ug.jit, ug.function, ug.compile) call their Python body, op by op, instead of a
    program: print, `.item()`, `if x.sum() > 0` and breakpoints work as in eager code, for
    debugging. Nothing is traced or cached meanwhile. disable=False turns compilation back on
    inside an outer disable_jit. Per thread, as JAX's; the C++ ug::DisableJitGuard is the same
    switch."""

    def __init__(self, disable=True):
        self._setting, self._previous = int(bool(disable)), []

    def __enter__(self):
        self._previous.append(_jit.exchange_jit_disabled(self._setting))
        return self

    def __exit__(self, *exc):
        _jit.exchange_jit_disabled(self._previous.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def disabled(*args, **kwargs):
            with disable_jit(bool(self._setting)):
                return fn(*args, **kwargs)
        return disabled


def run_functions_eagerly(run_eagerly):
    """tf.config.run_functions_eagerly: with True, every jitted function (ug.function, ug.jit,
    ug.compile, and ug::jit in C++) calls its body instead of a program, on every thread, until
    set back to False; disable_jit(False) still compiles inside."""
    _jit.run_functions_eagerly(bool(run_eagerly))


def functions_run_eagerly():
    """tf.config.functions_run_eagerly: the setting of run_functions_eagerly."""
    return _jit.functions_run_eagerly()


_STATIC_TYPES = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis))
_NUMPY_TYPES = (np.ndarray, np.number, np.bool_)  # np.float64 is a float too: tested first


def _from_numpy(value):
    """A NumPy array or scalar argument as the tensor the program takes: a copy (the caller may
    write into the array between calls), with ug.tensor's dtypes."""
    if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
        value = np.ascontiguousarray(value)  # from_numpy takes no negative strides
    return _C.tensor(value)


def _number_as_tensor(value):
    if isinstance(value, _NUMPY_TYPES):
        return _from_numpy(value)
    return _C.tensor(value) if isinstance(value, (bool, int, float)) else value


def _check_hashable(label, value):
    """jax.jit's check: a static argument keys the programs, so it must be hashable."""
    try:
        hash(value)
    except TypeError as e:
        raise ValueError(f"[jit] static argument {label} must be hashable (static_argnums and static_argnames key "
                         f"the compiled programs by value), got {type(value).__name__} {value!r}: {e}; pass a hashable "
                         "value (a tuple rather than a list), or pass it as a non-static argument") from None


def _plain(value):
    """Whether a static argument is a plain value, compared by its repr."""
    if isinstance(value, _STATIC_TYPES) or isinstance(value, _C.dtype):
        return True
    return isinstance(value, (tuple, frozenset)) and all(isinstance(v, _STATIC_TYPES) for v in value)


def _static_key(value, tokens):
    """How a static argument enters a signature: its repr when it is a plain value; else, as
    jax.jit's static arguments, its equality class (hash and ==: equal objects share a program),
    numbered in `tokens` (a _StaticTokens); an unhashable object by its identity (two different
    objects never share a program: the cached program keeps the object alive, so that its id
    cannot pass to another one)."""
    if _plain(value):
        return f"static {value!r}"
    try:
        token = tokens.number(value)
    except TypeError:
        return f"static {type(value).__qualname__} object at {id(value):#x}"
    return f"static {type(value).__qualname__} #{token}: {reprlib.repr(value)}"


class _StaticTokens:
    """Numbers for the equality classes of a function's object-valued static arguments. A
    number is never given twice: forgetting the classes (past `limit` of them) only costs
    traces, never hands a program to an unequal object."""

    def __init__(self, limit=64):
        self._numbers, self._next, self._limit = {}, 0, limit

    def number(self, value):
        number = self._numbers.get(value)
        if number is None:
            if len(self._numbers) >= self._limit:
                self._numbers.clear()
            number = self._numbers[value] = self._next
            self._next += 1
        return number


def _module_guards(label, module):
    """The signature parts of what a trace assumes of a module: each submodule's training mode,
    forward hooks, plain attributes and layer settings (its extra_repr), each parameter's
    requires_grad."""
    parts = []
    for name, sub in module.named_modules():
        where = f"{label}.{name}" if name else label
        parts.append((f"{where} (training)", f"static {sub.training!r}"))
        parts.append((f"{where} (forward hooks)", f"static {tuple(sub._hook_ids())!r}"))
        settings = sub.extra_repr()
        if settings:
            parts.append((f"{where} ({type(sub).__name__})", f"static {settings}"))
        for k, v in sorted(vars(sub).items()):
            if _plain(v) and not k.startswith("__"):
                parts.append((f"{where}.{k}", f"static {v!r}"))
    for name, p in module.named_parameters():
        parts.append((f"{label}.{name} (requires_grad)", f"static {p.requires_grad!r}"))
    return parts


def _reached(fun):
    """(label, object) for the modules, optimizers and tensors `fun` reaches without taking them
    as arguments: in its closure, its defaults, the globals its code names, a bound method's
    instance, a partial's arguments, an optimizer's parameters, an object's attributes (two
    levels deep), each once."""
    found, seen = [], set()

    def code_names(code):
        names = set(code.co_names)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                names |= code_names(c)
        return names

    def visit(obj, label, depth):
        if id(obj) in seen or depth > 4:
            return
        seen.add(id(obj))
        if isinstance(obj, (_C.nn.Module, _C.Tensor)):
            found.append((label, obj))
        elif isinstance(obj, JitFunction):
            visit(obj._fun, label, depth)
        elif isinstance(obj, functools.partial):
            visit(obj.func, label, depth)
            for i, a in enumerate(obj.args):
                visit(a, f"{label}.args[{i}]", depth + 1)
            for k, a in obj.keywords.items():
                visit(a, f"{label}.{k}", depth + 1)
        elif isinstance(obj, types.MethodType):
            visit(obj.__self__, f"{label}.__self__", depth + 1)
            visit(obj.__func__, label, depth)
        elif isinstance(obj, types.FunctionType):
            code = obj.__code__
            for name, cell in zip(code.co_freevars, obj.__closure__ or ()):
                try:
                    visit(cell.cell_contents, name, depth + 1)
                except ValueError:  # an empty cell
                    pass
            for i, d in enumerate(obj.__defaults__ or ()):
                visit(d, f"{label}.__defaults__[{i}]", depth + 1)
            for name in sorted(code_names(code)):
                if name in obj.__globals__:
                    visit(obj.__globals__[name], name, depth + 1)
        elif isinstance(obj, _C.optim.Optimizer):
            found.append((label, obj))
            for g, group in enumerate(obj.param_groups):
                for i, p in enumerate(group["params"]):
                    visit(p, f"{label}.param_groups[{g}][{i}]", depth + 1)
        elif isinstance(obj, (list, tuple, dict)) and len(obj) > 256:
            return  # data (a vocabulary, a dataset's rows), not where a model is kept
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                visit(v, f"{label}[{i}]", depth + 1)
        elif isinstance(obj, dict):
            for k, v in obj.items():
                visit(v, f"{label}[{k!r}]", depth + 1)
        elif hasattr(obj, "__dict__") and not isinstance(obj, (type, types.ModuleType)) and depth < 3:
            for k, v in vars(obj).items():
                visit(v, f"{label}.{k}", depth + 1)

    visit(fun, "", 0)
    return found


def _has_grads(params):
    """Which of the parameters have a .grad, as a signature's description."""
    return "static " + "".join("1" if p.grad is not None else "0" for p in params)


def _guards(fun):
    """The signature parts guarding what a trace of `fun` assumes of the modules and tensors it
    reaches (see the module's docstring)."""
    parts = []
    for label, obj in _reached(fun):
        if isinstance(obj, _C.nn.Module):
            parts += _module_guards(f"closure {label}", obj)
        elif isinstance(obj, _C.Tensor) and obj.requires_grad:  # a parameter: its gradient is traced
            parts.append((f"closure {label} (requires_grad)", "static True"))
    return parts


def _module_state(obj):
    """A module's parameters and buffers under unique names, read live by the program."""
    named = list(obj.named_parameters()) + list(obj.named_buffers())
    prefix = f"m{id(obj):x}."
    return [(prefix + name, t) for name, t in named]


def _autocast_part():
    """The autocast regions open, as a signature part (none outside them): a program traced in
    one holds its casts, and one traced outside holds none (torch.compile guards on them too)."""
    regions = [f"{device} {_C._amp.get_autocast_dtype(device)!r}" for device in ("cpu", "cuda")
               if _C._amp.is_autocast_enabled(device)]
    return (("autocast", ", ".join(regions)),) if regions else ()


class _NotFast(Exception):
    """A call the fast key cannot describe (an object as a static argument): _Call keys it."""


def _fast_part(tree, tensors):
    """A hashable token of one argument's structure and leaves, appending its tensors in
    tree_flatten's order (dict keys sorted)."""
    kind = type(tree)
    if kind is _Tensor:
        tensors.append(tree)
        return _describe(tree)
    if kind is dict:
        keys = sorted(tree)
        return (dict, tuple(keys), tuple([_fast_part(tree[k], tensors) for k in keys]))
    if tree is None:
        return None
    if isinstance(tree, (tuple, list)):
        return (kind, tuple([_fast_part(v, tensors) for v in tree]))
    if isinstance(tree, _C.Tensor):  # a subclass (a Parameter)
        tensors.append(tree)
        return (kind, _describe(tree))
    if isinstance(tree, _NUMPY_TYPES):
        t = _from_numpy(tree)
        tensors.append(t)
        return _describe(t)
    return _fast_static(tree)


def _builder(treedef, leaves):
    """A function of an iterator over a program's output tensors that builds the function's
    result (treedef over `leaves`, None where a tensor goes), generated once per program: a call
    then rebuilds its result without walking the tree."""
    names = {}
    leaf_iter = iter(leaves)

    def name(value):
        names[f"v{len(names)}"] = value
        return f"v{len(names) - 1}"

    def expr(d):
        if d.kind == "leaf":
            v = next(leaf_iter)
            return "next(it)" if v is None else name(v)
        if d.kind == "none":
            return "None"
        items = [expr(c) for c in d.children]
        if d.kind == "list":
            return "[" + ", ".join(items) + "]"
        if d.kind == "tuple":
            return "(" + "".join(i + ", " for i in items) + ")"
        if d.kind == "namedtuple":
            return name(d.meta) + "(" + ", ".join(items) + ")"
        if d.kind == "custom":  # a registered node type: its unflatten(aux, children)
            return name(node_unflatten(d.meta[0])) + "(" + name(d.meta[1]) + ", [" + ", ".join(items) + "])"
        items = "{" + ", ".join(f"{name(k)}: {i}" for k, i in zip(dict_keys(d), items)) + "}"
        make = dict_maker(d)  # an OrderedDict or a defaultdict: made from the plain dict
        return f"{name(make)}({items})" if make else items

    return eval(f"lambda it: {expr(treedef)}", names)  # noqa: S307 (source made above from names only)


def _fast_static(value):
    # The type keeps 1, 1.0 and True apart, as their reprs in _Call's key do.
    if not _plain(value):
        raise _NotFast
    return (type(value), value)


class _Call:
    """One call split into what the program takes (tensor leaves) and what keys it."""

    def __init__(self, jitted, args, kwargs):
        self.args, self.kwargs = list(args), dict(kwargs)
        self._tokens = jitted._static_tokens
        # the factories and Python floats in the body take the default dtype (torch.compile guards on it)
        self.parts = [("default dtype", f"{_C.get_default_dtype()!r}"), *jitted._guard]
        self.tensors, self.slots, self.state, self.objects = [], [], [], []
        for i, a in enumerate(self.args):
            label = jitted._arg_label(i)
            self._add(label, a, ("arg", i), static=i in jitted._static_nums)
        for k in sorted(self.kwargs):
            self._add(k, self.kwargs[k], ("kw", k), static=k in jitted._static_names)
        self.parts.append(("tensor arguments sharing memory", _jit.aliasing(self.tensors)))

    def _add(self, label, value, where, static):
        if static:
            _check_hashable(label, value)
            self._static(label, value)
            return
        leaves, treedef = tree_flatten(value)
        if treedef.kind != "leaf":
            self.parts.append((f"{label} (structure)", repr(treedef)))
        for n, leaf in enumerate(leaves):
            leaf_label = label if treedef.kind == "leaf" else f"{label}[{n}]"
            if isinstance(leaf, _NUMPY_TYPES):
                leaf = _from_numpy(leaf)
            if isinstance(leaf, _C.Tensor):
                self.parts.append((leaf_label, _jit.describe(leaf)))
                self.tensors.append(leaf)
                self.slots.append((where, n, treedef.kind == "leaf"))
            else:
                self._static(leaf_label, leaf)

    def _static(self, label, value):
        self.parts.append((label, _static_key(value, self._tokens)))
        if not _plain(value):
            self.objects.append(value)
        if isinstance(value, _C.nn.Module):
            self.state += _module_state(value)
            self.parts += _module_guards(label, value)

    def rebuild(self, tensors):
        """The call's arguments with its tensor leaves replaced by `tensors`."""
        args, kwargs = list(self.args), dict(self.kwargs)
        leaves = {}
        for (where, n, alone), t in zip(self.slots, tensors):
            leaves.setdefault(where, {})[n] = (t, alone)
        for where, repl in leaves.items():
            kind, key = where
            container = args if kind == "arg" else kwargs
            if next(iter(repl.values()))[1]:
                container[key] = repl[0][0]
                continue
            flat, treedef = tree_flatten(container[key])
            for n, (t, _) in repl.items():
                flat[n] = t
            container[key] = tree_unflatten(treedef, flat)
        return args, kwargs


class JitFunction:
    """A function compiled per call signature (see the module's docstring)."""

    def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=(), cache_size=8,
                 state=None, name=None, reduce_retracing=False, donate_argnames=(), numbers_as_tensors=False):
        if not callable(fun):
            raise TypeError(f"[jit] expected a function, got {type(fun).__name__}")
        functools.update_wrapper(self, fun, updated=())
        self._fun = fun
        # jax.jit and tf.function return a number among the outputs as an array (a tensor);
        # torch.compile returns it as it is
        self._numbers_as_tensors = numbers_as_tensors
        self._static_tokens = _StaticTokens()
        self._state = state  # a function giving [(name, tensor)] read live (ug.compile's module)
        self._params = _signature_params(fun)
        _check_static_positions(fun, self._params, static_argnums, static_argnames)
        self._static_nums, self._static_names = self._positions_and_names(static_argnums, static_argnames)
        self._donate_nums, self._donate_names = self._donation(donate_argnums, donate_argnames)
        self._donating = bool(self._donate_nums or self._donate_names)
        self._fast_key_of = _jit.FastKey(self._static_nums, self._static_names, self._donate_nums,
                                         self._donate_names)
        label = getattr(fun, "__qualname__", None) or type(fun).__name__
        self._cache = _jit.ProgramCache(name or label, cache_size, reduce_retracing)
        self._relaxed = reduce_retracing
        self._capacity = cache_size
        # _fast_key -> (the call's signature, made once, the _builder of the results of the
        # program it runs: filed under the traced signature, which differs where
        # reduce_retracing serves a traced size); emptied at every trace, so that a builder is
        # always the one of the program the signature finds
        self._fast = {}
        # signature -> (output treedef, output leaves with None for tensors, the static objects
        # keyed by identity, kept alive with the program, the _builder of the result)
        self._outputs = {}
        # signature -> (the _builder of the result, the static objects) of the calls whose trace
        # computed nothing: no program, the trace's result
        self._nothing = {}
        # the guards' parts (_guards) as at _jit.state_epoch() == self._epoch
        self._epoch, self._guard = None, ()
        # the parameters whose having a .grad keys the programs: None until a program's
        # optimizer step reads a .grad from before the call (an update compiled apart from an
        # eager backward, which steps only the parameters that have one)
        self._grad_params = None
        _jitted.add(self)

    def _grad_part(self):
        """The signature parts of the call's context: the autocast regions open, and which
        closure parameters have a .grad where a program's step reads them."""
        context = _autocast_part()
        if self._grad_params is None:
            return context
        return (*context, ("closure parameters with a .grad", _has_grads(self._grad_params)))

    def _check_guards(self):
        """Reads the guards again when Python changed a module or a requires_grad since they were
        last read; a change empties the fast keys, so that the next call keys itself anew."""
        epoch = _jit.state_epoch()
        if epoch == self._epoch:
            return
        guard = tuple(_guards(self._fun))
        if guard != self._guard:
            self._guard = guard
            self._fast.clear()
        self._epoch = epoch

    def _positions_and_names(self, argnums, argnames):
        """The arguments given by position and by name, each completed by the other, as jax.jit
        reads static_argnums/static_argnames and donate_argnums/donate_argnames."""
        nums = {argnums} if isinstance(argnums, int) else set(argnums)
        nums = {n + len(self._params) if n < 0 else n for n in nums}  # counted from the end, as in JAX
        names = {argnames} if isinstance(argnames, str) else set(argnames)
        for i, p in enumerate(self._params):
            if p in names:
                nums.add(i)
            if i in nums:
                names.add(p)
        return frozenset(nums), frozenset(names)

    def _donation(self, argnums, argnames):
        """The donated positions and names (a name donates its position too, as in jax.jit)."""
        nums, names = self._positions_and_names(argnums, argnames)
        if nums & self._static_nums or names & self._static_names:
            both = sorted(names & self._static_names) or sorted(nums & self._static_nums)
            raise ValueError(f"[jit] static and donated arguments cannot intersect: {both} are both")
        return nums, names

    def _donated(self, tensors, candidates):
        """The indices in `tensors` (the call's tensor leaves) whose buffers the run takes: the
        leaves of the donated arguments (`candidates`) held by the caller alone. A donated
        tensor that the call also passes elsewhere raises, as jax.jit does; one held elsewhere
        too (a module's parameter, a view, a tensor autograd keeps) is not usable and stays the
        caller's, with jax.jit's warning."""
        if not candidates:
            return []
        if len(set(map(id, tensors))) != len(tensors):
            counts = collections.Counter(map(id, tensors))
            for n in candidates:
                if counts[id(tensors[n])] > 1:
                    raise ValueError(f"[jit] a donated tensor ({_describe(tensors[n])}) is passed "
                                     f"{counts[id(tensors[n])]} times in one call: its buffer can be donated once "
                                     "and then not read (as jax.jit)")
        donatable = _jit.donatable
        donated = [n for n in candidates if donatable(tensors[n])]
        if len(donated) != len(candidates):
            warnings.warn("Some donated buffers were not usable: "
                          + ", ".join(_describe(tensors[n]) for n in candidates if n not in donated)
                          + " (held elsewhere too: a module's parameter, a view or a tensor autograd keeps); "
                          "they stay the caller's", UserWarning, stacklevel=3)
        return donated

    def _candidates(self, call):
        """The indices of the donated arguments' tensors among a _Call's tensor leaves."""
        if not self._donating:
            return []
        return [n for n, ((kind, key), _, _) in enumerate(call.slots)
                if key in (self._donate_nums if kind == "arg" else self._donate_names)]

    def _run(self, program, tensors, candidates):
        donated = self._donated(tensors, candidates)
        return program.call_donating(tensors, donated) if donated else program(tensors)

    def _arg_label(self, i):
        return self._params[i] if i < len(self._params) else f"args[{i}]"

    def __get__(self, obj, objtype=None):
        """As a method: the instance is the first, static argument."""
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if getattr(_tracing, "depth", 0) or _jit.jit_disabled():  # inside another trace: inlined, as in JAX
            return self._fun(*args, **kwargs)
        self._check_guards()
        grads = self._grad_part()
        fast = self._fast_key(args, kwargs)
        missed = False  # the fast path's lookup counted this call's miss (its program was dropped)
        if fast is not None:
            fast_key = (fast[0], grads) if grads else fast[0]
            hit = self._fast.get(fast_key)
            if hit is not None:
                program = self._cache.find(hit[0])
                if program is not None:
                    return hit[1](iter(self._run(program, fast[1], fast[2]) if fast[2] else program(fast[1])))
                missed = True
        call = _Call(self, args, kwargs)
        key = tuple(call.parts) + grads
        if key in self._nothing:
            return self._nothing[key][0](iter(()))
        program = None if missed else self._cache.find(list(key))
        traced_key = key
        if program is None:
            program, traced, key = self._trace(call, key)
            if program is None:
                return self._nothing[key][0](iter(()))
            if key != traced_key:
                fast = None  # keyed by its .grads from now on: the next call files its fast key
            traced_key = key
            # A step that writes state (PyTorch style) took its first step while traced.
            if program.writes_state:
                tensors = traced
                for n in self._donated(call.tensors, self._candidates(call)):
                    _jit.delete(call.tensors[n])
            else:
                tensors = self._run(program, call.tensors, self._candidates(call))
        else:
            tensors = self._run(program, call.tensors, self._candidates(call))
            if self._relaxed:  # a program for any size there may come from a trace at another size
                traced_key = tuple(tuple(part) for part in self._cache.traced_for(list(key)))
        if fast is not None:
            if len(self._fast) >= 4 * self._capacity:
                self._fast.clear()
            self._fast[fast_key] = (_jit.Signature(list(key)), self._outputs[traced_key][3])
        return self._results(traced_key, tensors)

    def _fast_key(self, args, kwargs):
        """(key, tensor leaves, indices of the donated arguments' leaves) of a call from its
        arguments' structure, tensor signatures and plain static values: the same information
        as _Call's signature, made without its strings, so that a call hitting the cache costs a
        dict lookup (None: the call holds an object as a static argument, and _Call keys it).
        The C++ key (_jit.FastKey: bytes) takes plain trees of tensors and plain values; this
        walk (a tuple key, never equal to bytes) takes subclasses and namedtuples."""
        fast = self._fast_key_of(args, kwargs)
        if fast is not None:
            return fast
        tensors, donated = [], []
        try:
            parts = []
            for i, a in enumerate(args):
                start = len(tensors)
                parts.append(_fast_static(a) if i in self._static_nums else _fast_part(a, tensors))
                if i in self._donate_nums:
                    donated += range(start, len(tensors))
            for k in sorted(kwargs):
                v, start = kwargs[k], len(tensors)
                parts.append((k, _fast_static(v) if k in self._static_names else _fast_part(v, tensors)))
                if k in self._donate_names:
                    donated += range(start, len(tensors))
        except _NotFast:
            return None
        parts.append(_jit.aliasing(tensors))  # arguments sharing memory trace another program
        return tuple(parts), tensors, donated

    def _results(self, key, tensors):
        return self._outputs[key][3](iter(tensors))

    def _live_state(self, call):
        # The modules the function reaches are read live, frozen parameters and buffers (running
        # statistics read in eval mode) included: a later call may run after they changed.
        state = (self._state() if self._state else []) + call.state + self._cache.lifted()
        for _, obj in _reached(self._fun):
            if isinstance(obj, _C.nn.Module):
                state += _module_state(obj)
        return list(dict(state).items())

    def _trace(self, call, key):
        box = {}

        def flat_fn(tensors):
            args, kwargs = call.rebuild(tensors)
            out = self._fun(*args, **kwargs)
            leaves, treedef = tree_flatten(out)
            box["out"] = (treedef, [None if isinstance(v, _C.Tensor) else v for v in leaves])
            return [v for v in leaves if isinstance(v, _C.Tensor)]

        if self._grad_params is None:
            params = [p for _, opt in _reached(self._fun) if isinstance(opt, _C.optim.Optimizer)
                      for group in opt.param_groups for p in group["params"]]
            before = _has_grads(params)
        _tracing.depth = getattr(_tracing, "depth", 0) + 1
        # A vmap around the trace (vmap of jit) batches the inputs: the program runs on them.
        _tracing.outer_level = max((_C._functional.batch_level(t) for t in call.tensors), default=0)
        try:
            program, traced = _jit.Program.trace_with_outputs(flat_fn, call.tensors, self._live_state(call),
                                                              self._relaxed)
        except ValueError as e:
            # A function computing nothing (it returned None or strings, and wrote no state) has
            # no program: its calls return what its trace returned, as jax.jit's do.
            if "out" not in box or None in box["out"][1] or "writes no state" not in str(e):
                raise
            if len(self._nothing) >= self._capacity:
                self._nothing.clear()
            self._nothing[key] = (self._result_builder(box["out"]), call.objects)
            self._outputs[key] = (*box["out"], call.objects, self._nothing[key][0])
            return None, [], key
        finally:
            _tracing.depth -= 1
            _tracing.outer_level = 0
        if self._grad_params is None and program.outside_grads:
            known = {p.data_ptr() for p in params}
            extra = [p for p in program.outside_grads if p.data_ptr() not in known]
            self._grad_params = params + extra
            key = key + (("closure parameters with a .grad", before + "1" * len(extra)),)
        warning = self._cache.insert(list(key), program)
        self._outputs[key] = (*box["out"], call.objects, self._result_builder(box["out"]))
        self._fast.clear()
        for k in [k for k in self._outputs if self._cache.why_not(list(k))]:
            del self._outputs[k]  # dropped from the bounded cache
        if warning:
            warnings.warn(warning, RetraceWarning, stacklevel=3)
        return program, traced, key

    def _result_builder(self, out):
        """The _builder of a trace's result; where the trace returned no tensor, or returned
        numbers and the front end is jax.jit's or tf.function's, one that gives the numbers as
        new 0-d tensors at each call, as jax.jit(lambda x: (x, 3.0)) returns arrays."""
        build = _builder(*out)
        numbers = any(isinstance(v, (bool, int, float, *_NUMPY_TYPES)) for v in out[1])
        if None in out[1] and not (numbers and self._numbers_as_tensors):  # the program's outputs fill these
            return build
        return lambda it: tree_map(_number_as_tensor, build(it))

    def lower(self, *args, **kwargs):
        """The program a call with these arguments runs (traced now if it is not cached), as a
        Lowered (jax.jit(f).lower(*args))."""
        self._check_guards()
        call = _Call(self, args, kwargs)
        key = tuple(call.parts) + self._grad_part()
        program = self._cache.find(list(key)) or (None if key in self._nothing else self._trace(call, key)[0])
        if program is None:
            raise ValueError("[jit] the function returns no tensors and writes no state: it has no program")
        return Lowered(self, program, call, key)

    def explain(self, *args, **kwargs):
        """'hit: ...' when a call with these arguments runs a cached program, else 'miss: ' and why."""
        self._check_guards()
        key = tuple(_Call(self, args, kwargs).parts) + self._grad_part()
        why = "" if key in self._nothing else self._cache.why_not(list(key))
        return "hit: a cached program runs" if not why else f"miss: {why}"

    def cache_info(self):
        return CacheInfo(*self._cache.info())

    def experimental_get_tracing_count(self):
        """tf.function's: how many times the function has been traced (cache_info().traces)."""
        return self.cache_info().traces

    def cache_clear(self):
        self._cache.clear()
        self._outputs.clear()
        self._fast.clear()
        self._nothing.clear()


class Lowered:
    """jax.jit(f).lower(*args), JAX's ahead-of-time path: the program a call with these arguments
    runs. The program's own methods answer through it (as_text, node_types, save, ...), and it
    prints as its text; compile() gives the callable that runs it."""

    def __init__(self, jitted, program, call, key):
        self._jitted, self._program, self._call, self._key = jitted, program, call, key

    def __getattr__(self, name):
        return getattr(self._program, name)

    def __str__(self):
        return self._program.as_text()

    def compile(self):
        return Compiled(self._jitted, self._program, self._call, self._key)


class Compiled(Lowered):
    """Lowered.compile(): called as JAX's Compiled is, with the lowered call's arguments less its
    static ones (those stay as lowered). Arguments of another signature (shapes, dtypes,
    structure) raise TypeError naming the argument, where the jitted function would trace again."""

    def compile(self):
        return self

    def __call__(self, *args, **kwargs):
        jitted, lowered = self._jitted, self._call
        given, full = list(args), []
        for i, a in enumerate(lowered.args):
            if i in jitted._static_nums:
                full.append(a)
            elif given:
                full.append(given.pop(0))
            else:
                raise TypeError(f"[jit] the compiled program takes the lowered call's arguments less the static ones: "
                                f"{jitted._arg_label(i)} is missing")
        full += given
        kwargs = {**{k: v for k, v in lowered.kwargs.items() if k in jitted._static_names}, **kwargs}
        parts = tuple(_Call(jitted, full, kwargs).parts) + jitted._grad_part()
        if parts != self._key:
            was, now = dict(self._key), dict(parts)
            label = next((k for k in {**was, **now} if was.get(k) != now.get(k)), "the arguments")
            raise TypeError(f"[jit] the compiled program was lowered for {label}: {was.get(label, 'nothing')}, "
                            f"called with {now.get(label, 'nothing')}; lower and compile it again for these")
        return jitted(*full, **kwargs)


def make_jaxpr(fun, static_argnums=()):
    """jax.make_jaxpr: a function of fun's arguments giving the program fun compiles to on them (a
    Lowered, printed as the program's text)."""
    jitted = JitFunction(fun, static_argnums=static_argnums)
    return functools.wraps(fun)(lambda *args, **kwargs: jitted.lower(*args, **kwargs))


def _check_static_positions(fun, params, argnums, argnames):
    """jax.jit's check that static_argnums and static_argnames name arguments fun takes (a
    function of *args or **kwargs takes any)."""
    try:
        kinds = {p.name: p.kind for p in inspect.signature(fun).parameters.values()}
    except (TypeError, ValueError):  # builtins without a signature
        return
    name = getattr(fun, "__qualname__", type(fun).__name__)
    if inspect.Parameter.VAR_POSITIONAL not in kinds.values():
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        if any(not -len(params) <= n < len(params) for n in nums):
            raise ValueError(f"[jit] '{name}' has static_argnums={nums}, but takes only {len(params)} positional "
                             f"argument{'s' if len(params) != 1 else ''} {tuple(params)}")
    if inspect.Parameter.VAR_KEYWORD not in kinds.values():
        names = (argnames,) if isinstance(argnames, str) else tuple(argnames)
        taken = {k for k, kind in kinds.items() if kind not in (inspect.Parameter.VAR_POSITIONAL,
                                                                 inspect.Parameter.POSITIONAL_ONLY)}
        unknown = sorted(set(names) - taken)
        if unknown:
            raise ValueError(f"[jit] '{name}' has static_argnames {unknown} that it does not take as keyword "
                             f"arguments (it takes {sorted(taken)})")


def _signature_params(fun):
    try:
        return [p.name for p in inspect.signature(fun).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):  # builtins without a signature
        return []


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(), donate_argnames=(), cache_size=8):
    """jax.jit: ug.jit(f, static_argnums=...) or @ug.jit / @ug.jit(static_argnames=...).

    The tensors of donated arguments (donate_argnums / donate_argnames) give their buffers to
    the run, which may write its results into them; the caller's tensors are then deleted
    (`x.is_deleted()`), as donated jax.Arrays are."""
    def wrap(f):
        return JitFunction(f, static_argnums, static_argnames, donate_argnums, cache_size,
                           donate_argnames=donate_argnames, numbers_as_tensors=True)
    return wrap if fun is None else wrap(fun)


def explain(fun, *args, **kwargs):
    """Whether fun (a jitted function) runs a cached program for these arguments, and if not, why."""
    if not isinstance(fun, JitFunction):
        raise TypeError(f"[jit.explain] expected a jitted function, got {type(fun).__name__}")
    return fun.explain(*args, **kwargs)


def save(fun, path, *example_args, **example_kwargs):
    """Writes the program fun runs on these example arguments as an ONNX file (the role of
    TorchScript, SavedModel and paddle.jit.save): ug.onnx.load, `ug serve` and ONNX Runtime run it.
    Where the program calls unigrad back only for ops that have an ONNX form in a file (a strided
    view such as diagonal, which a program keeps a view), the function is written as
    ug.onnx.export writes it, traced on the same arguments. A ConcreteFunction (ug.function's
    get_concrete_function) takes no examples: its specs give them, and its sizes of None are
    symbolic in the file (unless the program calls unigrad back, which writes the examples')."""
    from .tf_function import ConcreteFunction  # tf_function builds on this module

    if isinstance(fun, ConcreteFunction):
        if example_args or example_kwargs:
            raise TypeError("[jit.save] a ConcreteFunction's specs give its arguments: pass none")
        fun, example_args, example_kwargs = fun.saved_call()
    if isinstance(fun, CompiledModule):
        program = fun._forward.lower(fun._orig_mod.training, *example_args, **example_kwargs)
        traced = None if fun._orig_mod.training else fun._orig_mod  # ug.onnx.export runs eval mode
    else:
        jitted = fun if isinstance(fun, JitFunction) else JitFunction(fun)
        program = jitted.lower(*example_args, **example_kwargs)
        traced = None if jitted._static_nums or jitted._static_names else jitted._fun
    called_back = program.called_back()
    if (called_back and traced is not None and not example_kwargs and example_args
            and all(isinstance(a, _C.Tensor) for a in example_args)
            and set(called_back) <= set(_C.onnx.exportable_ops())):
        _C.onnx.export(traced, tuple(example_args), str(path))
        return
    program.save(str(path))


jit.save = save
jit.explain = explain


class ShapeDtypeStruct:
    """jax.ShapeDtypeStruct: the shape and dtype of an array that is not computed (eval_shape's
    arguments and results)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(int(d) for d in shape), dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return functools.reduce(lambda a, b: a * b, self.shape, 1)

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={str(self.dtype).removeprefix('unigrad.')})"


def eval_shape(fun, *args, **kwargs):
    """jax.eval_shape: the shapes and dtypes of fun's results, as a tree of ShapeDtypeStruct (its
    other leaves as they are), for arguments given as tensors or ShapeDtypeStructs. fun is traced
    as ug.jit traces it, so what needs a traced tensor's value (`if x.sum() > 0`) raises as under
    jit; unlike JAX's, the trace computes once on zeros, and a function that writes state (a
    PyTorch-style step) takes that step."""
    def concrete(leaf):
        return _C.zeros(*leaf.shape, dtype=leaf.dtype) if isinstance(leaf, ShapeDtypeStruct) else leaf

    args, kwargs = tree_map(concrete, (args, kwargs))
    return _traced_structs(JitFunction(fun), args, kwargs)


def _traced_structs(jitted, args, kwargs):
    """Traces jitted on these arguments (a new program, or a more general one) and gives the
    trace's results as a tree of ShapeDtypeStruct (its other leaves as they are)."""
    jitted._check_guards()  # the modules' guards key the program, as at a call
    call = _Call(jitted, args, kwargs)
    _, traced, key = jitted._trace(call, tuple(call.parts) + jitted._grad_part())
    treedef, leaves = jitted._outputs[key][:2]
    shapes = iter(ShapeDtypeStruct(t.shape, t.dtype) for t in traced)
    return tree_unflatten(treedef, [next(shapes) if v is None else v for v in leaves])


def block_until_ready(tree):
    """jax.block_until_ready: returns tree. unigrad's CPU ops have finished when they return."""
    return tree


_C.Tensor.block_until_ready = block_until_ready  # a JAX array's method


class CompiledModule:
    """torch.compile(model): the module's forward, compiled per signature and per training mode,
    reading the module's parameters and buffers live. Attributes are the module's."""

    def __init__(self, module):
        self._orig_mod = module
        self._forward = JitFunction(lambda training, *a, **k: module(*a, **k), static_argnums=(0,),
                                    state=lambda: _module_state(module), name=type(module).__name__)

    def __call__(self, *args, **kwargs):
        return self._forward(self._orig_mod.training, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._orig_mod, name)

    def cache_info(self):
        return self._forward.cache_info()


def compile(model=None, *, fullgraph=True, dynamic=False, backend="unigrad", mode=None):
    """torch.compile: a module becomes a CompiledModule, a function a jitted function."""
    def wrap(m):
        if isinstance(m, _C.nn.Module):
            return CompiledModule(m)
        return JitFunction(m)
    return wrap if model is None else wrap(model)


__all__ = ["jit", "compile", "explain", "save", "JitFunction", "CompiledModule",
           "RetraceWarning", "CacheInfo", "disable_jit", "run_functions_eagerly", "functions_run_eagerly",
           "ShapeDtypeStruct", "eval_shape", "block_until_ready", "clear_caches", "is_compiling", "Lowered",
           "Compiled", "make_jaxpr"]
