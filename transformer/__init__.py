"""A faithful, inspectable encoder-decoder Transformer for the classroom."""

from .checkpoint import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint
from .decoding import greedy_decode
from .device import pick_device
from .masks import causal_mask, decoder_mask, padding_mask
from .model import ModelConfig, Transformer
from .tasks import TASKS, DataConfig, TaskData, register_task
from .training import TrainConfig, Trainer, TrainingDiverged
from .vocab import Vocab

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "DataConfig",
    "ModelConfig",
    "TASKS",
    "TaskData",
    "TrainConfig",
    "Trainer",
    "TrainingDiverged",
    "Transformer",
    "Vocab",
    "causal_mask",
    "decoder_mask",
    "greedy_decode",
    "load_checkpoint",
    "padding_mask",
    "pick_device",
    "register_task",
    "save_checkpoint",
]
