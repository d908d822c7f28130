"""Server cost of one Patch click on Knockout: CPU seconds and peak memory of an activation-patching grid on the
default model and on the Train page's largest, on the longest input the Train form allows.

    python tests/patching_bench.py

Each click runs in a forked child on one torch thread, as `probe_bench.py` measures the other probing clicks.
"""

from functools import partial

import torch
from probe_bench import measure

from transformer.knockout import grid_allowed
from transformer.limits import TRAIN_FORM_LIMITS
from transformer.model import ModelConfig, Transformer
from transformer.patching import patching_grid, stream_sites
from transformer.vocab import N_SPECIAL, Vocab

VOCAB = Vocab.digits(10)
LONGEST = TRAIN_FORM_LIMITS["max_len"][1]
CONFIGS = {  # the Train form's largest: every size at its bound, heads as many as d_model 128 takes
    "default model": ModelConfig(vocab_size=len(VOCAB)),
    "the Train page's largest": ModelConfig(
        vocab_size=N_SPECIAL + 10,
        d_model=TRAIN_FORM_LIMITS["d_model"][1],
        n_heads=TRAIN_FORM_LIMITS["n_heads"][1],
        n_layers=TRAIN_FORM_LIMITS["n_layers"][1],
        d_ff=TRAIN_FORM_LIMITS["d_ff"][1],
    ),
}


def main() -> None:
    clean = " ".join(str(i % 10) for i in range(LONGEST))
    corrupted = "9" + clean[1:]
    for name, config in CONFIGS.items():
        model = Transformer(config, rng=torch.Generator().manual_seed(0)).eval()
        assert grid_allowed(model)  # the Knockout page shows its patching section
        runs = 2 + 3 * config.n_layers * config.n_heads + len(stream_sites(model, LONGEST, LONGEST + 1))
        cpu, wall, mb = measure(partial(patching_grid, model, VOCAB, "reverse", clean, corrupted))
        print(f"{name}, {LONGEST} symbols, {runs} runs: {cpu:.2f} s CPU, {wall:.2f} s wall, peak +{mb:.0f} MB")


if __name__ == "__main__":
    main()
