"""Re-exports the public names of a unigrad._C submodule into a Python package module."""
import types


def export(source, namespace):
    """Copies source's public functions and classes (not its submodules) into namespace."""
    names = [k for k, v in vars(source).items() if not k.startswith("_") and not isinstance(v, types.ModuleType)]
    namespace.update({k: getattr(source, k) for k in names})
    return names
