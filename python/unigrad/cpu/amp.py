"""ug.cpu.amp: torch.cpu.amp's names (torch.amp's with device_type="cpu")."""
from .. import amp as _amp

autocast, GradScaler = _amp.on_device("cpu")
