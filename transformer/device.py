"""Which device to compute on: CUDA if there is one, else Apple's MPS, else the CPU; and the clock a run's training
time is read on there."""

import time
from collections.abc import Callable

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
        raise ValueError(Message(N_("CUDA was asked for but no CUDA GPU is available: use auto or cpu")))
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(Message(N_("MPS was asked for but is not available on this machine: use auto or cpu")))
    return device


def device_label(device: torch.device) -> str:
    """A human name for a device: the GPU's name, or "CPU"."""
    if device.type == "cuda":
        return f"GPU: {torch.cuda.get_device_name(device)}"
    return "Apple GPU (MPS)" if device.type == "mps" else "CPU"


def training_clock(device: torch.device) -> Callable[[], float]:
    """The clock a run's training time (its time budget, its seconds, its pace) is read on. On a CPU with one torch
    thread, as the lab's training workers compute, the calling thread's own CPU time: other work on the machine
    (other runs, the server drawing 30 pages, a browser beside it) does not spend it, so a budget buys a run the
    steps it takes on a quiet machine and a class's runs end alike however busy their server. Elsewhere (a GPU, or
    several CPU threads, whose work no one thread's clock holds) the wall clock."""
    if device.type == "cpu" and torch.get_num_threads() == 1:
        return time.thread_time
    return time.perf_counter
