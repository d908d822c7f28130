"""Which device to compute on: CUDA if there is one, else Apple's MPS, else the CPU."""

import torch

from .i18n import N_, Message


def pick_device(name: str = "auto") -> torch.device:
    """`"auto"` picks CUDA, then MPS, then CPU; any other name ("cpu", "cuda", "cuda:1", "mps") is checked and used.

    ValueError for any other device, including those PyTorch names but this lab never computes on ("xpu", "hpu").
    """
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    unknown = ValueError(Message(N_("unknown device {name}: use auto, cpu, cuda or mps"), name=repr(name[:20])))
    try:
        device = torch.device(name)
    except RuntimeError:
        raise unknown from None
    if device.type not in ("cpu", "cuda", "mps"):
        raise unknown
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(N_("CUDA was asked for but no CUDA GPU is available: use auto or cpu"))
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(N_("MPS was asked for but is not available on this machine: use auto or cpu"))
    return device


def device_label(device: torch.device) -> str:
    """A human name for a device: the GPU's name, or "CPU"."""
    if device.type == "cuda":
        return f"GPU: {torch.cuda.get_device_name(device)}"
    return "Apple GPU (MPS)" if device.type == "mps" else "CPU"
