"""Every bound the lab puts on untrusted input (files, links, typed text, command-line values) and on the work one
request may do, but a run's settings' own bounds, which their entries in `settings` hold. The validators of each
format check numbers against these before anything is allocated or run.

This module imports nothing from the package but `i18n` (which imports none of it), so every module can import it.
"""

from __future__ import annotations

import math
from typing import Protocol

from .i18n import N_, Message

# ---- files
UPLOAD_BYTES = 5 * 2**20  # the app's uploader (`.streamlit/config.toml`: maxUploadSize = 5)
MAX_CHECKPOINT_BYTES = 8 * 2**20  # refuse bigger checkpoint files before reading them
MAX_JSON_BYTES = UPLOAD_BYTES  # experiment files
MAX_HISTORY_ROWS = 100_000
MAX_PLAIN_ITEMS = 1_000_000  # values in one plain (non-tensor) part of a checkpoint
MAX_PLAIN_DEPTH = 20  # nesting of dicts and lists in one plain part
MAX_INPUT_LINES = 100_000  # lines of a `predict --input` file
MAX_INPUT_BYTES = 16 * 2**20  # bytes of a `predict --input` file
MAX_EXPERIMENT_ROWS = 10_000  # entries of one list in an experiment file (metric rows, snapshot steps)
MAX_EXPERIMENT_SNAPSHOTS = 1000  # attention snapshots of one variant in an experiment file
MAX_EXPERIMENT_STEP = 10**7  # a step number in an experiment file

# ---- models
MAX_WEIGHTS = 20_000_000  # parameters + positional table of a loadable model: at most 80 MB to allocate
MAX_LAYERS = 64
MAX_POSITIONS = 256  # max_len: tasks go up to 64 symbols; pages draw (max_len x max_len) masks

# ---- vocabularies and sequences
MAX_SYMBOLS = 100  # symbols of a vocabulary
MAX_SYMBOL_CHARS = 16  # characters of one symbol
MAX_SEQ_LEN = 64  # longest source sequence of a task
MAX_TOKEN_CHARS = 10  # characters of one token in an experiment file's probe

# ---- tasks from examples: a CSV or TSV file of (source, target) pairs, or a table of them typed on the Train page
MAX_TASK_FILE_MB = 1  # a task file; its pairs' text, in a checkpoint or a class, stays within it too...
MAX_TASK_FILE_BYTES = MAX_TASK_FILE_MB * 10**6  # ...in megabytes as the app's uploader counts them on Linux and macOS
MAX_TASK_PAIRS = 10_000  # pairs of a task from examples: rows of a task file
MAX_TABLE_PAIRS = 200  # rows of the table typed on Train or Teacher: Streamlit's editor costs the square of its rows
MIN_TASK_PAIRS = 5  # enough to keep one held out and still train on four
MAX_TASK_LINE_CHARS = 2 * MAX_SEQ_LEN * (MAX_SYMBOL_CHARS + 1) + 8  # a longest source and target, quotes and a comma

# ---- data and training
MAX_VALID = 10_000  # largest held-out set: it is scored in one forward pass
MAX_SEED = 2**32 - 1
MAX_BATCH = 8192  # sequences in one training batch or held-out probe
# A training setting's own bounds, the run's and the Train form's, are in its entry in `transformer/settings.py`
# (`RUN_LIMITS`, `TRAIN_FORM_LIMITS` there).
MAX_VARIANTS = 4  # variants of one Compare experiment
# The command line, on the user's own machine, may train longer and bigger than a page.
MAX_CLI_STEPS = 1_000_000
MAX_TIME_BUDGET_S = 24 * 3600
MAX_TRAIN_BYTES = 4 * 2**30  # activations one training step keeps for the backward pass
# The same for a run on the shared server (the Train form, a class's settings, Compare's links): two training slots
# of the largest such run, and the server, stay under 2 GB (`python benchmarks/probe_bench.py`, docs/benchmarks.md).
MAX_RUN_TRAIN_BYTES = 64 * 2**20
MAX_THREADS = 256

# ---- probing
MAX_PER_LENGTH = 1000  # inputs scored per length by a length test
INPUTS_PER_LENGTH = (25, 50, 100)  # the Length test page's choices: 100 at each of 63 lengths decode in about 3 s
MAX_FRESH = MAX_VALID  # fresh sequences `evaluate --n` scores, in one forward pass
MAX_BEAM = 32  # beam width
# A sampling temperature, wherever it comes from. logits / temperature must stay finite in float32: at 1e-39 every
# logit of 1 or more is inf and the distribution NaN, at 0.01 only logits past 3e36 overflow. The upper bound keeps
# it a number (at inf every distribution is uniform).
SAMPLING_TEMPERATURES = (0.01, 100.0)
# The Decoding page's settings (its widgets and its link read their bounds from here).
DECODING_TEMPERATURES = (0.1, 3.0)  # within SAMPLING_TEMPERATURES
DECODING_BEAM_WIDTHS = (1, 8)  # within MAX_BEAM
DECODING_SEEDS = (0, 2**31 - 1)
MAX_DECODE_STEPS = 1000  # the step a Decoding link opens: more than any model here decodes
# Multiply-adds one probing request may cost: about 3 s of CPU on one core of a loaded 2-core machine
# (`python benchmarks/probe_bench.py`, see docs/security.md).
MAX_PROBE_COST = 10_000_000_000
# Forward passes one activation-patching grid may run (one per patch site, and the clean and corrupted runs).
MAX_PATCH_RUNS = 1000
# What scoring held-out sequences costs beyond its multiply-adds (`evaluation_cost`), in multiply-add equivalents,
# fitted to one-thread CPU times of 138 models and samples (d_model 8-256, 1-16 heads, 1-4 layers, lengths 4-48,
# 2-1000 sequences, none ending its output early) on the lab's 2-core machine, 2026-11-25: the estimate is within
# 0.45x-2.5x of the time.
STEP_COST = 12_000_000  # each decoder layer at each decoding step: the fixed cost of a dozen small tensor ops
STEP_WEIGHT_COST = 400  # and per d_model^2 of the weights that step reads, whatever the batch
HEAD_COST = 50_000  # each (token, layer, head): the attention weights' softmax, masking and reshapes
DECODE_ROWS = 250  # sequences one pass of `evaluation.evaluate` (teacher-forced, then greedy) takes at once
# One Knockout grid (every head removed in turn): about 1.4 s of one quiet core by that fit; the costliest grids
# the limits allow took 1.4-1.8 s of CPU on the loaded lab machine (`python benchmarks/probe_bench.py`). Past it a grid
# scores fewer held-out sequences; a grid that costs more even on MIN_GRID_SAMPLE of them is refused.
MAX_GRID_COST = 60_000_000_000
MIN_GRID_SAMPLE = 10
# What each pass of an activation-patching grid costs beyond its multiply-adds (`patching_cost`), in the multiply-add
# equivalents of `evaluation_cost` (about 43 billion a second), fitted to one-thread CPU times (`time.process_time`)
# of 42 grids (d_model 8-256, 1-16 heads, 1-64 layers, inputs of 1-60 symbols, 12-963 passes) on the lab's 2-core
# machine, 2026-11-27: the estimate is within 0.64x-1.26x of the time. A grid is bounded by MAX_GRID_COST, as a
# Knockout grid is: the costliest allowed took 1.4-2.1 s of CPU (`python benchmarks/patching_bench.py`).
PATCH_RUN_COST = 8_000_000  # each pass: its hook, the answer's log-probability, the embeddings and the generator
PATCH_LAYER_COST = 6_000_000  # each encoder and decoder layer pair it runs through: a few dozen small tensor ops
PATCH_WEIGHT_COST = 10  # and each weight of that pair: a pass over a few tokens reads weights more than it multiplies

# ---- links
MAX_PARAM_CHARS = 200  # a longer value in a link is refused, not cut


class _Sizes(Protocol):
    d_model: int
    d_ff: int
    n_heads: int
    n_layers: int
    vocab_size: int


def forward_cost(config: _Sizes, n_sequences: int, length: int) -> int:
    """Multiply-adds of one teacher-forced pass over `n_sequences` sources of `length` tokens and targets one
    longer; greedy decoding with the key/value cache costs about the same."""
    d, S, T = config.d_model, length, length + 1
    feed_forward = 2 * d * config.d_ff
    encoder = S * (4 * d * d + feed_forward + 2 * S * d)  # projections, FFN, scores and weighted sums
    decoder = T * (8 * d * d + feed_forward + 2 * T * d + 2 * S * d)
    generator = T * d * config.vocab_size
    return n_sequences * (config.n_layers * (encoder + decoder) + generator)


def evaluation_cost(config: _Sizes, n_sequences: int, length: int, recompute: bool = False) -> int:
    """Multiply-add equivalents of scoring `n_sequences` sources of `length` tokens as `evaluation.evaluate` does: one
    teacher-forced pass, then greedy decoding of length + 1 steps, DECODE_ROWS sequences at a time. `recompute`:
    decoding runs the decoder over the whole prefix at each step instead of reading a key/value cache."""
    T = length + 1
    decoded = T * (T + 1) // 2 if recompute else T  # decoder positions computed per sequence while decoding
    arithmetic = forward_cost(config, n_sequences, length) * (T + decoded) / T
    steps = math.ceil(n_sequences / DECODE_ROWS) * T * config.n_layers
    fixed = steps * (STEP_COST + STEP_WEIGHT_COST * config.d_model**2)
    heads = HEAD_COST * n_sequences * (T + decoded) * config.n_layers * config.n_heads
    return int(arithmetic + fixed + heads)


def check_probe_cost(config: _Sizes, n_sequences: int, length: int, passes: int = 1) -> None:
    """ValueError if the request costs more than MAX_PROBE_COST, saying how much smaller it must be."""
    cost = forward_cost(config, n_sequences, length) * passes
    if cost > MAX_PROBE_COST:
        factor = math.ceil(cost / MAX_PROBE_COST)
        template = N_(
            "this request would cost about {cost:,.0f} billion multiply-adds, {factor}x the {most:,.0f} billion one "
            "request may do on this shared server: ask for less"
        )
        raise ValueError(Message(template, cost=cost / 1e9, factor=factor, most=MAX_PROBE_COST / 1e9))


def patching_cost(config: _Sizes, runs: int, length: int) -> int:
    """Multiply-add equivalents of an activation-patching grid of `runs` teacher-forced passes over one source of
    `length` tokens: each pass's multiply-adds, its fixed cost, and per layer a fixed cost and its weights'."""
    d = config.d_model
    layer_weights = 12 * d * d + 4 * d * config.d_ff  # one encoder and one decoder layer: attention and FFN
    per_layer = PATCH_LAYER_COST + PATCH_WEIGHT_COST * layer_weights
    return runs * (forward_cost(config, 1, length) + PATCH_RUN_COST + config.n_layers * per_layer)


def train_activation_bytes(config: _Sizes, batch_size: int, length: int) -> int:
    """About how many bytes of float32 activations one training step on sources of `length` tokens keeps for the
    backward pass: per token and layer the projections, the FFN's inner layer and the attention weights."""
    d, ff, H, S, T = config.d_model, config.d_ff, config.n_heads, length, length + 1
    encoder = S * (12 * d + 2 * ff + H * S)
    decoder = T * (20 * d + 2 * ff + H * (T + S))
    return 4 * batch_size * (config.n_layers * (encoder + decoder) + 3 * T * config.vocab_size)


def check_train_memory(config: _Sizes, batch_size: int, length: int, lower: str | None = None) -> None:
    """ValueError if one training step would keep more than MAX_RUN_TRAIN_BYTES of activations
    (`train_activation_bytes`), saying to lower the settings `lower` names (a sentence marked with N_; None: the
    Train form's)."""
    size = train_activation_bytes(config, batch_size, length)
    if size > MAX_RUN_TRAIN_BYTES:
        fits = MAX_RUN_TRAIN_BYTES // train_activation_bytes(config, 1, length)
        if lower is not None:
            what = Message(lower)
        elif fits:
            batch = N_(
                "the batch size (to {fits} at most with these settings), the longest input, d_model, d_ff, heads "
                "or layers"
            )
            what = Message(batch, fits=fits)
        else:
            what = Message(N_("the batch size, the longest input, d_model, d_ff, heads or layers"))
        template = N_(
            "one training step would keep about {size:,.0f} MB of activations, over the {most:,.0f} MB a run may "
            "use on this shared server: lower {what}"
        )
        raise ValueError(Message(template, size=size / 2**20, most=MAX_RUN_TRAIN_BYTES / 2**20, what=what))


# ---- classes
# What one teacher's class may hold on a shared server: every write to the class database is checked against these.
MAX_CLASSES = 200  # classes one server holds at once
MAX_STUDENTS = 60  # students in one class
MAX_NAME_CHARS = 40  # a student's display name
MAX_NAME_KEY_CHARS = 3 * MAX_NAME_CHARS  # the name as classes compare names (`name_key`): NFKC lengthens some letters
MAX_TITLE_CHARS = 80  # a class's title
MAX_BROWSER_CHARS = 64  # the opaque browser id a page passes
MAX_REJOIN_CHARS = 20  # a typed rejoin code (six symbols, with any spaces or dashes a student adds)
MAX_GROUPS = 4  # groups of one assignment
MAX_LABEL_CHARS = 30  # a group's label
MAX_RUN_ROWS = 400  # metric rows kept per run: a longer run is thinned to this many
MAX_ERROR_CHARS = 300  # a failed run's message, cut to this
# A lab report's data (`transformer.report_data`), as a class keeps one per student: about 8 KB at the Train form's
# defaults; the attention maps it keeps are cut to MAX_REPORT_WEIGHTS numbers (cross-attention first).
MAX_REPORT_CHARS = 256 * 2**10
MAX_REPORT_WEIGHTS = 16_000
RETENTION_DAYS = (1, 90)  # how long a class is kept; 14 days unless the teacher says
DEFAULT_RETENTION_DAYS = 14
# What one person may do to the classes (docs/security.md). Attempts are counted in the class database, so a bound
# holds across the replicas that share it; the waits are each server's own.
CLASS_CREATIONS = {"browser": (3, 3600), "address": (10, 3600), "server": (30, 3600)}  # (classes, within seconds)
WRONG_KEYS_PER_BROWSER = (5, 300)  # wrong teacher keys one browser may send; more are refused unchecked
FREE_MISSES = (30, 600)  # unknown class codes or wrong keys from one network address before its checks wait turns
MISS_SPACING_S = 1.0  # past FREE_MISSES, an address's checks that can miss take turns this far apart
KEY_CHECKS_AT_ONCE = 1  # teacher-key checks (scrypt: 16 MiB, about 50 ms) one server runs at once
LOST_AFTER_S = 60  # a queued or training run that no server has reported on for this long reads "lost"
HEARD_EVERY_S = 10  # how often a server reports on the runs it holds whose state has not changed
PURGE_EVERY_S = 600  # how often a server deletes expired classes and attempts past their window
ENDED_RUN_KEPT_S = 600  # a browser's ended run, kept this long for a reload to take back its outcome and model
