"""A faithful, inspectable encoder-decoder Transformer for the classroom.

The public names load on first use (PEP 562), so a module that needs no torch, such as `transformer.i18n`, imports
without it: the app's Home page paints in its reader's language before torch has loaded.
"""

from importlib import import_module

_WHERE = {  # public name -> the module that defines it
    "Checkpoint": "checkpoint",
    "CheckpointError": "checkpoint",
    "load_checkpoint": "checkpoint",
    "save_checkpoint": "checkpoint",
    "greedy_decode": "decoding",
    "pick_device": "device",
    "causal_mask": "masks",
    "decoder_mask": "masks",
    "padding_mask": "masks",
    "ModelConfig": "model",
    "Transformer": "model",
    "TASKS": "tasks",
    "DataConfig": "tasks",
    "TaskData": "tasks",
    "register_task": "tasks",
    "TrainConfig": "training",
    "Trainer": "training",
    "TrainingDiverged": "training",
    "Vocab": "vocab",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> object:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_WHERE[name]}", __name__), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
