"""A faithful, inspectable encoder-decoder Transformer for the classroom.

The public names load on first use (PEP 562), so a module that needs no torch, such as `transformer.i18n`, imports
without it: the app's Home page paints in its reader's language before torch has loaded.
"""

from .lazy import lazy_exports

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
    "register_task": "task",
    "TrainConfig": "training",
    "Trainer": "training",
    "TrainingDiverged": "training",
    "Vocab": "vocab",
}
__all__ = sorted(_WHERE)

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
