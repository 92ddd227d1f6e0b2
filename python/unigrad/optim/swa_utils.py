"""ug.optim.swa_utils: stochastic weight averaging and EMA, as torch.optim.swa_utils. SWALR is a
scheduler in C++ (ug::optim::lr_scheduler::SWALR); AveragedModel wraps any module, Python ones
included, so it is a Python module, as DataParallel is."""
import copy

from .. import _C
from ..autograd import no_grad
from ..nn import Module

SWALR = _C.optim.swa_utils.SWALR


def get_ema_multi_avg_fn(decay=0.999):
    """An AveragedModel multi_avg_fn keeping an exponential moving average: ema += (1 - decay) * (current - ema)."""

    def ema_update(ema_param_list, current_param_list, _):
        with no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                # lerp for floating tensors, as torch's _foreach_lerp_; integer ones by the formula
                if p_ema.is_floating_point():
                    p_ema.lerp_(p_model, 1 - decay)
                else:
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An AveragedModel multi_avg_fn keeping the running mean: avg += (current - avg) / (num_averaged + 1)."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with no_grad():
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                if not p_avg.is_floating_point():  # torch's integer path, addcdiv, refuses them too
                    raise RuntimeError(f"[swa_update] cannot average a {p_avg.dtype} tensor in place (an integer "
                                       "division); leave the buffers out (use_buffers=False)")
                weight = 1 / (num_averaged + 1)
                p_avg.lerp_(p_model, weight.item() if isinstance(weight, _C.Tensor) else weight)

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An AveragedModel avg_fn: decay * ema + (1 - decay) * current."""

    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """An AveragedModel avg_fn: averaged + (current - averaged) / (num_averaged + 1)."""

    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of model whose parameters (and buffers, with use_buffers) update_parameters(model)
    averages over the calls: the running mean by default (SWA), or avg_fn(averaged, current,
    num_averaged) per tensor, or multi_avg_fn(averaged_list, current_list, num_averaged) per
    call. n_averaged, a buffer, counts the calls; the first copies the model. Without use_buffers
    the buffers are copied from model at each call, and update_bn recomputes batch-norm
    statistics. Calling it runs the copy (torch.optim.swa_utils.AveragedModel)."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if not isinstance(model, Module):
            raise TypeError(f"[AveragedModel] expected a Module, got {type(model).__name__}")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module.to(device)
        self.register_buffer("n_averaged", _C.tensor(0, dtype=_C.int64, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tensors(self, model):
        return [*model.parameters(), *model.buffers()] if self.use_buffers else list(model.parameters())

    def update_parameters(self, model):
        """Folds model's current parameters (and buffers, with use_buffers) into the average."""
        averaged = [p.detach() for p in self._tensors(self.module)]
        current = [p.detach().to(a.device) for p, a in zip(self._tensors(model), averaged)]
        if len(current) != len(averaged):
            raise ValueError(f"[AveragedModel.update_parameters] model has {len(current)} tensors to average, "
                             f"the averaged copy {len(averaged)}")
        n = self.n_averaged
        with no_grad():
            if n.item() == 0:
                for a, c in zip(averaged, current):
                    a.copy_(c)
            elif self.multi_avg_fn is not None:
                groups = {}  # torch calls multi_avg_fn once per (device, dtype), in first-seen order
                for a, c in zip(averaged, current):
                    group = groups.setdefault((str(a.device), a.dtype), ([], []))
                    group[0].append(a)
                    group[1].append(c)
                for group_averaged, group_current in groups.values():
                    self.multi_avg_fn(group_averaged, group_current, n)
            else:
                # torch on the CPU, without foreach kernels: avg_fn, or the running mean, tensor by tensor
                avg_fn = self.avg_fn or get_swa_avg_fn()
                for a, c in zip(averaged, current):
                    a.copy_(avg_fn(a, c, n))
            if not self.use_buffers:  # the buffers follow the model's
                for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                    b_avg.detach().copy_(b_model.detach().to(b_avg.device))
            n.add_(1)


def update_bn(loader, model, device=None):
    """Recomputes model's batch-norm running statistics as plain averages over one pass of loader
    (each batch a tensor, or a list or tuple whose first item is the input), in training mode;
    the momenta and the training flag are put back after (torch.optim.swa_utils.update_bn)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _C.nn._BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


__all__ = ["AveragedModel", "SWALR", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]
