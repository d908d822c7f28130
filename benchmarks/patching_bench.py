"""Server cost of one Patch click on Knockout: CPU seconds and peak memory of an activation-patching grid on the
default model and on the Train page's largest, on the longest input the Train form allows; and on uploaded models
of a few widths, as deep as MAX_LAYERS: the costliest grid the bound allows each width, of as many layers and
symbols as fit (a grid of 64 layers of the narrowest is refused before it runs).

    python benchmarks/patching_bench.py

Each click runs in a forked child on one torch thread, as `probe_bench.py` measures the other probing clicks.
"""

import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root: the package

import torch  # noqa: E402
from probe_bench import measure  # noqa: E402

from transformer.knockout import all_heads  # noqa: E402
from transformer.limits import MAX_LAYERS, MAX_SEQ_LEN, patching_cost  # noqa: E402
from transformer.model import ModelConfig, Transformer  # noqa: E402
from transformer.patching import check_patching_cost, patching_grid, stream_sites  # noqa: E402
from transformer.settings import TRAIN_FORM_LIMITS  # noqa: E402
from transformer.vocab import N_SPECIAL, Vocab  # noqa: E402

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


UPLOADED = {  # name: (d_model, n_heads, d_ff) of uploaded models, 1 to MAX_LAYERS layers, inputs up to MAX_SEQ_LEN
    "narrow, d_model 8, 1 head": (8, 1, 8),
    "narrow, d_model 8, 8 heads": (8, 8, 16),
    "wide, d_model 256, 8 heads": (256, 8, 1024),
}


def uploaded(width: tuple[int, int, int], n_layers: int) -> Transformer:
    """A model of `width` (UPLOADED's) with `n_layers` layers a stack."""
    d_model, n_heads, d_ff = width
    config = ModelConfig(
        vocab_size=N_SPECIAL + 10,
        d_model=d_model,
        n_heads=n_heads,
        n_layers=n_layers,
        d_ff=d_ff,
        max_len=MAX_SEQ_LEN + 1,
    )
    return Transformer(config, rng=torch.Generator().manual_seed(0)).eval()


def runs(model: Transformer, length: int) -> int:
    """Forward passes of a grid on a `length`-symbol input of reverse: every patch site, clean and corrupted."""
    return 2 + len(all_heads(model)) + len(stream_sites(model, length, length + 1))


def allowed(model: Transformer, length: int) -> bool:
    try:
        check_patching_cost(model, length, length + 1)
    except ValueError:
        return False
    return True


def pair(length: int) -> tuple[str, str]:
    """A clean input of `length` symbols and the same with its first symbol changed."""
    clean = " ".join(str(i % 10) for i in range(length))
    return clean, "9" + clean[1:]


def costliest_grid(width: tuple[int, int, int]) -> tuple[Transformer, int]:
    """The model of `width` and input length whose grid costs most (`patching_cost`) of those the bound allows."""
    grids = []
    for n_layers in range(1, MAX_LAYERS + 1):
        model = uploaded(width, n_layers)
        fits = [(model, length) for length in range(1, MAX_SEQ_LEN + 1) if allowed(model, length)]
        if not fits:  # nor any deeper model
            break
        grids += fits
    return max(grids, key=lambda grid: patching_cost(grid[0].config, runs(*grid), grid[1]))


def main() -> None:
    for name, config in CONFIGS.items():
        model = Transformer(config, rng=torch.Generator().manual_seed(0)).eval()
        assert allowed(model, LONGEST)
        cpu, wall, mb = measure(partial(patching_grid, model, VOCAB, "reverse", *pair(LONGEST)))
        print(
            f"{name}, {LONGEST} symbols, {runs(model, LONGEST)} runs: {cpu:.2f} s CPU, {wall:.2f} s wall, "
            f"peak +{mb:.0f} MB"
        )
    deepest = uploaded(UPLOADED["narrow, d_model 8, 1 head"], MAX_LAYERS)
    assert not allowed(deepest, 1)
    print(f"narrow, d_model 8, 1 head, {MAX_LAYERS} layers, 1 symbol, {runs(deepest, 1)} runs: refused")
    for name, width in UPLOADED.items():
        model, length = costliest_grid(width)
        cpu, wall, mb = measure(partial(patching_grid, model, VOCAB, "reverse", *pair(length)))
        print(
            f"{name}: its costliest allowed grid, {model.config.n_layers} layers, {length} symbols, "
            f"{runs(model, length)} runs: {cpu:.2f} s CPU, {wall:.2f} s wall, peak +{mb:.0f} MB"
        )


if __name__ == "__main__":
    main()
