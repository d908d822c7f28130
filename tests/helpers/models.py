"""Models and checkpoint files for the tests: untrained models, a real checkpoint file and ways to tamper with it,
files a page must refuse (`HOSTILE_FILES`), and the largest task a task file may hold with a checkpoint carrying it."""

import io
import random
from functools import cache
from string import ascii_letters, digits

import torch

import transformer.checkpoint as ckpt
from transformer.checkpoint import Checkpoint, checkpoint_bytes
from transformer.limits import MAX_SEQ_LEN, MAX_TASK_FILE_BYTES, MAX_TASK_PAIRS
from transformer.model import ModelConfig, Transformer
from transformer.pairs import TaskPairs, split_pairs
from transformer.tasks import DataConfig
from transformer.vocab import Vocab


def random_model(seed: int = 0, **changes) -> Transformer:
    """An untrained model of ModelConfig's defaults with `changes`, its weights drawn from `seed`, in eval mode."""
    torch.manual_seed(seed)
    return Transformer(ModelConfig(**changes)).eval()


def hooks_left(model: Transformer) -> int:
    """How many forward hooks remain on the model's modules (a probe must remove every hook it adds)."""
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def random_checkpoint(**changes) -> Checkpoint:
    """An untrained model of ModelConfig's defaults with `changes` (seed 0), in hand as if loaded, for reverse."""
    torch.manual_seed(0)
    config = ModelConfig(**changes)
    return Checkpoint(
        Transformer(config).eval(), Vocab.digits(10), config, DataConfig(task="reverse", max_len=8), [], {}
    )


TASK = DataConfig(task="sort", min_len=2, max_len=8, n_symbols=10, seed=3, n_valid=50)
VOCAB = Vocab.digits(10)
HISTORY = [{"step": 0, "loss": 2.5, "accuracy": 0.0}, {"step": 100, "loss": 0.25, "accuracy": 0.875}]
TRAIN_CONFIG = {"lr": 1e-3, "batch_size": 64, "betas": [0.9, 0.98], "schedule": "noam", "clip": None}


def make_model(**overrides) -> Transformer:
    """A model of ModelConfig's defaults with `overrides`, its weights drawn from seed 0."""
    torch.manual_seed(0)
    return Transformer(ModelConfig(**overrides))


@cache
def real_bytes(**overrides) -> bytes:
    """A checkpoint file of `make_model(**overrides)` on TASK."""
    return checkpoint_bytes(make_model(**overrides), VOCAB, TASK, HISTORY, TRAIN_CONFIG)


def payload() -> dict:
    """A real checkpoint's content, to tamper with."""
    return torch.load(io.BytesIO(real_bytes()), weights_only=True)


def saved(obj) -> bytes:
    """`obj` as torch saves it."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def tampered(change) -> bytes:
    """A real checkpoint file whose content `change` has changed in place."""
    content = payload()
    change(content)
    return saved(content)


def set_in(part: str, key: str, value):
    """A change for `tampered`: content[part][key] = value."""
    return lambda content: content[part].__setitem__(key, value)


# Files that pass every check of the parts one by one, and would still break a page, hold a server's memory, or
# give NaN.


def task_longer_than_the_model(content):
    content["model_config"]["max_len"] = TASK.max_len  # BOS + 8 target tokens need 9 positions


def huge_embeddings(content):
    content["state_dict"]["embed.lut.weight"] *= 1e30  # finite, but attention scores overflow to NaN


RARE = VOCAB.symbol_id(9)  # a symbol the task's longest input, 0 1 ... 7, never reads


def huge_rare_symbol(content):
    content["state_dict"]["embed.lut.weight"][RARE] *= 1e30  # finite, but attention overflows wherever 9 is read


def huge_rare_symbol_in_a_narrow_model(content):
    content["model_config"]["max_len"] = TASK.max_len + 1  # reads 8 symbols at most: the probe takes two rows
    huge_rare_symbol(content)


BIG = {"d_model": 128, "n_heads": 4, "d_ff": 512, "n_layers": 3}  # about 1.2 million weights


def views_of_one_storage() -> bytes:
    """A checkpoint of a large model whose tensors are all views of one small storage: a tiny file."""
    content = payload()
    content["model_config"].update(BIG)
    with torch.device("meta"):
        shapes = {name: t.shape for name, t in Transformer(ModelConfig(**content["model_config"])).state_dict().items()}
    storage = torch.randn(max(s.numel() for s in shapes.values()), generator=torch.Generator().manual_seed(0)) / 50
    content["state_dict"] = {name: storage[: shape.numel()].view(shape) for name, shape in shapes.items()}
    return saved(content)


def one_tensor_for_every_matrix() -> bytes:
    """A checkpoint of a large model whose same-shaped weights are all one tensor, stored once."""
    content = payload()
    content["model_config"].update(BIG)
    model = make_model(**BIG)
    first = {}  # shape -> the first tensor of that shape
    content["state_dict"] = {n: first.setdefault(t.shape, t) for n, t in ckpt._cpu_weights(model).items()}
    return saved(content)


def transposed(content):
    name = "encoder.layers.0.self_attn.out_proj.weight"  # square: its transpose has the right shape
    content["state_dict"][name] = content["state_dict"][name].t()


HOSTILE_FILES = {  # name -> (make the file, what the refusal says)
    "task longer than the model": (
        lambda: tampered(task_longer_than_the_model),
        r"the task.s sequences have up to 8 symbols but model_config.max_len 8 fits at most 7 tokens",
    ),
    "views of one storage": (views_of_one_storage, "does not own exactly its bytes"),
    "one tensor for many weights": (
        one_tensor_for_every_matrix,
        "hold 199,309 weights but model_config describes 1,391,885",
    ),
    "too few weights": (
        lambda: tampered(set_in("state_dict", "embed.lut.weight", torch.zeros(13, 16))),
        "some are missing, smaller than the model's, or share one tensor",
    ),
    "a transposed view": (lambda: tampered(transposed), "out_proj.weight does not own exactly its bytes"),
    "finite weights, NaN outputs": (lambda: tampered(huge_embeddings), "outputs are NaN or infinite on a probe batch"),
    "finite weights, NaN outputs on one symbol": (
        lambda: tampered(huge_rare_symbol),
        "outputs are NaN or infinite on a probe batch",
    ),
    "finite weights, NaN outputs on one symbol, a model shorter than the symbols": (
        lambda: tampered(huge_rare_symbol_in_a_narrow_model),
        "outputs are NaN or infinite on a probe batch",
    ),
}


@cache
def largest_checkpoint() -> tuple[bytes, DataConfig, Vocab]:
    """A checkpoint carrying the largest task a task file may hold (`largest_pairs`: 1 MB of 64-symbol pairs)."""
    task = DataConfig.from_pairs(largest_pairs())
    vocab = Vocab(task.pairs.symbols)
    model = make_model(vocab_size=len(vocab), max_len=task.max_len + 1)
    return checkpoint_bytes(model, vocab, task), task, vocab


@cache
def largest_pairs(length: int = MAX_SEQ_LEN) -> TaskPairs:
    """A task as large as a task file may be: pairs of `length` one-character symbols (a source and its reverse), as
    many as MAX_TASK_FILE_BYTES of text and MAX_TASK_PAIRS allow."""
    rng, size, found = random.Random(0), 0, []
    while len(found) < MAX_TASK_PAIRS:
        source = " ".join(rng.choice(ascii_letters + digits) for _ in range(length))
        if (size := size + 2 * len(source) + 2) > MAX_TASK_FILE_BYTES:  # a line: source, comma, target, newline
            break
        found.append((source, source[::-1]))
    return split_pairs("largest.csv", tuple(dict.fromkeys(c for s, _ in found for c in s.split(" "))), found)
