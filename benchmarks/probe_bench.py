"""Worst server cost of one probing click on the largest model the limits allow: CPU seconds and peak memory; and
the peak memory of a training worker on the largest run a page allows.

    python benchmarks/probe_bench.py

Each click runs in a forked child on one torch thread, as the app computes (`LAB_TORCH_THREADS` = 1), and does what
its page does: a request past `MAX_PROBE_COST` is refused before it runs. Its CPU time is the child's; its peak
memory the child's peak resident set (Linux's VmHWM, reset when the click starts) above its resident set then.
Knockout runs on the models whose grid costs most (a narrow one with many heads on the Train form's longest inputs,
the Train form's largest on its default inputs, uploaded ones on long inputs or wide), each made never to end its
output, so decoding runs every step.
A worker's peak is a fresh process's, training the largest run MAX_RUN_TRAIN_BYTES allows for a few steps.
"""

import os
import pickle
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root: the package

import torch  # noqa: E402

from transformer.checkpoint import check_model_size  # noqa: E402
from transformer.decoding import beam_search, decode_all_steps, teacher_forced  # noqa: E402
from transformer.inspection import module_table  # noqa: E402
from transformer.knockout import all_heads, compare_outputs, grid_allowed, knockout_grid, score  # noqa: E402
from transformer.lengths import inputs_within_budget, score_lengths  # noqa: E402
from transformer.limits import MAX_PROBE_COST, check_probe_cost  # noqa: E402
from transformer.mask_experiments import attention_before_after  # noqa: E402
from transformer.model import ModelConfig, Transformer  # noqa: E402
from transformer.run_configs import run_configs  # noqa: E402
from transformer.tasks import DataConfig  # noqa: E402
from transformer.vocab import Vocab  # noqa: E402

# The most layers MAX_WEIGHTS allows a model of the widest run settings (RUN_LIMITS): 10 pairs of d_model 256.
CONFIG = ModelConfig(d_model=256, n_heads=8, d_ff=1024, n_layers=10, max_len=256)
TASK = DataConfig(task="reverse", min_len=1, max_len=10)
LONGEST = 64  # the longest source a task allows


def clicks(model: Transformer, vocab: Vocab) -> dict[str, Callable[[], object]]:
    src = torch.randint(3, CONFIG.vocab_size, (1, LONGEST))
    tgt = torch.randint(3, CONFIG.vocab_size, (1, LONGEST + 1))
    lengths = range(1, 2 * TASK.max_len + 1)  # the Length test page's default range
    n = inputs_within_budget(CONFIG, lengths, 100)
    beams = [w for w in range(8, 0, -1) if _fits(w)]  # the widest beam the Decoding page runs on this model
    return {
        f"Length test, lengths 1-{lengths[-1]}, {n} inputs each (budgeted from 100)": lambda: score_lengths(
            model, vocab, TASK, lengths, n
        ),
        f"Decoding, greedy trace of a {LONGEST}-token source": lambda: (
            decode_all_steps(model, src, 1, 2, LONGEST + 5, "greedy", 1.0, None, 1, 0),
            teacher_forced(model, src, tgt[0]),
        ),
        f"Decoding, beam {beams[0]} (the widest the budget allows) trace of a {LONGEST}-token source": lambda: (
            decode_all_steps(model, src, 1, 2, LONGEST + 5, "beam", 1.0, None, beams[0], 0),
            beam_search(model, src, 1, 2, LONGEST + 5, beams[0]),
            teacher_forced(model, src, tgt[0]),
        ),
        "Masking lab, attention before and after": lambda: attention_before_after(model, src, tgt),
        "Anatomy, module table": lambda: module_table(model, src, tgt),
    }


KNOCKOUT_MODELS = {  # name: (model, held-out task)
    "narrow model, 8 heads x 3 layers, inputs up to 24": (
        ModelConfig(vocab_size=13, d_model=8, n_heads=8, n_layers=3, d_ff=16),
        DataConfig(task="reverse", min_len=1, max_len=24),
    ),
    "the Train form's largest model, inputs up to 8": (
        ModelConfig(vocab_size=13, d_model=128, n_heads=8, n_layers=3, d_ff=512),
        DataConfig(task="reverse", min_len=6, max_len=8),
    ),
    "an uploaded model on a task's longest inputs, 64": (
        ModelConfig(vocab_size=13, d_model=32, n_heads=4, n_layers=1, d_ff=128, max_len=70),
        DataConfig(task="reverse", min_len=1, max_len=64),
    ),
    "an uploaded wide model, d_model 256, inputs up to 16": (
        ModelConfig(vocab_size=13, d_model=256, n_heads=4, n_layers=1, d_ff=1024),
        DataConfig(task="reverse", min_len=1, max_len=16),
    ),
}
# The largest run MAX_RUN_TRAIN_BYTES lets the Train form start: its largest model on its longest inputs.
LARGEST_RUN = (
    {"task": "reverse", "min_len": 1, "max_len": 24, "n_symbols": 30, "seed": 0},
    {"d_model": 128, "n_heads": 8, "n_layers": 3, "d_ff": 512, "dropout": 0.1},
    {"batch_size": 33, "steps": 5000, "time_budget_s": 120.0, "ema_decay": 0.99, "device": "cpu"},
)


def knockout_clicks(vocab: Vocab) -> dict[str, Callable[[], object]]:
    """The Knockout page's two clicks (the grid; every cross-attention head removed together) on each model."""
    found = {}
    for name, (config, task) in KNOCKOUT_MODELS.items():
        torch.manual_seed(0)
        model = Transformer(config).eval()
        with torch.no_grad():
            model.generator.proj.bias[vocab.eos_id] = -1e4  # never ends its output
        assert grid_allowed(model, task), name
        grid = knockout_grid(model, vocab, task)
        cross = [h for h in all_heads(model) if h.kind == "cross"]
        found[f"Knockout grid, {name} ({grid.n} held-out sequences)"] = lambda m=model, t=task: knockout_grid(
            m, vocab, t
        )
        found[f"Knockout, cross-attention removed, {name}"] = lambda m=model, g=grid, c=cross: (
            score(m, g.batch, vocab, c),
            compare_outputs(m, g.batch, vocab, c),
        )
    return found


WORKER = """
import pickle, sys, torch  # noqa: E402
from transformer.training import Trainer, warm_up  # noqa: E402
torch.set_num_threads(1)
warm_up().join()
configs, steps = pickle.load(sys.stdin.buffer)
trainer = Trainer(*configs)
for _ in trainer.train(lambda: trainer.step >= steps):
    pass
print(next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) / 1024)
"""


def worker_peak_mb(steps: int = 10) -> float:
    """Peak resident MB of a fresh process that imports what a worker imports, warms up as one does, and trains
    LARGEST_RUN for `steps` steps, then scores its held-out set."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    work = pickle.dumps((run_configs({**LARGEST_RUN[0], **LARGEST_RUN[1], **LARGEST_RUN[2]}), steps))
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run([sys.executable, "-c", WORKER], input=work, capture_output=True, env=env, check=True)
    return float(done.stdout)


def _fits(beam: int) -> bool:
    try:
        check_probe_cost(CONFIG, beam, LONGEST + 5, passes=3)  # as the Decoding page checks
    except ValueError:
        return False
    return True


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field)) / 1024


def measure(click: Callable[[], object]) -> tuple[float, float, float]:
    """CPU seconds, wall seconds and peak MB above the parent's resident set, of `click` run in a forked child."""
    read, write = os.pipe()
    if (pid := os.fork()) == 0:
        torch.set_num_threads(1)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets the peak resident set to the current one
        base_mb = _status_mb("VmRSS:")
        cpu, wall = time.process_time(), time.perf_counter()
        click()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        peak = _status_mb("VmHWM:") - base_mb
        os.write(write, f"{cpu} {wall} {peak}".encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    return tuple(map(float, os.read(read, 200).split()))


def main() -> None:
    check_model_size(CONFIG)
    torch.manual_seed(0)
    model, vocab = Transformer(CONFIG).eval(), Vocab.digits(10)
    print(f"model: {model.num_parameters():,} parameters ({CONFIG}); MAX_PROBE_COST {MAX_PROBE_COST:,}")
    worst_cpu = worst_mb = 0.0
    with torch.no_grad():
        for name, click in {**clicks(model, vocab), **knockout_clicks(vocab)}.items():
            cpu, wall, mb = measure(click)
            worst_cpu, worst_mb = max(worst_cpu, cpu), max(worst_mb, mb)
            print(f"{name}: {cpu:.2f} s CPU, {wall:.2f} s wall, peak +{mb:.0f} MB")
    print(f"worst click: {worst_cpu:.2f} s CPU, peak +{worst_mb:.0f} MB")
    peak = worker_peak_mb()
    print(f"training worker, largest allowed run ({LARGEST_RUN}): peak {peak:.0f} MB; two slots {2 * peak:.0f} MB")


if __name__ == "__main__":
    main()
