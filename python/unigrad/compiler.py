"""torch.compiler's names over the compiled mode (unigrad.compiled): reset drops every jitted
function's programs, is_compiling tells a trace from eager execution."""
from .compiled import clear_caches as reset
from .compiled import is_compiling

is_dynamo_compiling = is_compiling

__all__ = ["reset", "is_compiling", "is_dynamo_compiling"]
