"""Whether N runs' forward and backward passes cost less written out by hand over stacked weights than one by one.

    python benchmarks/hand_batched_bench.py [--runs 1 4 8 16 30] [--rounds 40] [--repeats 3]

`train_together` batches runs under `torch.func.vmap` (docs/benchmarks.md, "Batched runs"). This measures the other
way: every run's weights stacked on a leading run axis and the Train page's default model (post-norm, sinusoidal
positions, one layer a stack) written out over them, each linear map one `baddbmm` for all runs, each other op one
call for all runs. Runs s = 0..N-1 are the Train page's default run with seed s, each on its own first training
batch. First it proves the written-out pass is the model's: each run's loss and every gradient equal those of its
own `Trainer.forward_backward` (`torch.testing.assert_close`, float32). Then it times, on one torch thread, the N
runs' passes one after another against the one written-out pass, --rounds rounds each, --repeats times with the side
that goes first alternating, and prints each side's CPU ms per model-step (one run's pass), the median of the
repeats, and their ratio. Only the pass is compared: a run's update, checks and rows are its own either way.
"""

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer.batched import BATCH_PARTS, stacked  # noqa: E402 (the repository root goes on the path first)
from transformer.kernels import softmax  # noqa: E402
from transformer.run_configs import default_configs  # noqa: E402
from transformer.training import Trainer  # noqa: E402


def default_runs(n: int) -> tuple[list[Trainer], list]:
    """The Train page's default run for seeds 0..n-1, and each one's first training batch."""
    runs = [Trainer(*default_configs(seed, device="cpu")) for seed in range(n)]
    return runs, [run.next_batch()[0] for run in runs]


def stacked_weights(runs: list[Trainer]) -> dict[str, torch.Tensor]:
    """Each parameter of the runs' networks, (N, *shape), a leaf of its own."""
    named = [dict(run.network.named_parameters()) for run in runs]
    return {name: torch.stack([n[name].detach() for n in named]).requires_grad_() for name in named[0]}


def linear(x: torch.Tensor, w: dict, name: str, rows: slice = slice(None)) -> torch.Tensor:
    """x (N, M, d_in) through each run's nn.Linear `name` (its output rows `rows`): (N, M, d_out)."""
    weight, bias = w[f"{name}.weight"][:, rows], w[f"{name}.bias"][:, rows]
    return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))


def layer_norm(x: torch.Tensor, w: dict, name: str) -> torch.Tensor:
    mean, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + 1e-5) * w[f"{name}.weight"].unsqueeze(1) + w[f"{name}.bias"].unsqueeze(1)


def attention(
    q_in: torch.Tensor, kv_in: torch.Tensor, w: dict, name: str, bias: torch.Tensor, n: int, b: int, heads: int
) -> torch.Tensor:
    """Multi-head attention of each run: q_in (N, B*Tq, d), kv_in (N, B*Tk, d), bias (N*B, 1, Tq or 1, Tk)."""
    d = q_in.size(-1)
    q = linear(q_in, w, f"{name}.in_proj", slice(0, d))
    k, v = linear(kv_in, w, f"{name}.in_proj", slice(d, 3 * d)).split(d, -1)

    def split(t: torch.Tensor) -> torch.Tensor:  # (N*B, h, T, d_k)
        return t.reshape(n * b, -1, heads, d // heads).transpose(1, 2)

    scores = split(q) @ split(k).transpose(-1, -2) / math.sqrt(d // heads) + bias
    out = softmax(scores) @ split(v)  # the model's own softmax, written out below 16 keys
    return linear(out.transpose(1, 2).reshape(n, -1, d), w, f"{name}.out_proj")


def losses(w: dict, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor, like: Trainer) -> torch.Tensor:
    """Each run's mean cross-entropy on its batch: src, tgt_in, tgt_out (N, B, T), PAD-padded. (N,)"""
    config, (n, b, s), t = like.network.config, src.shape, tgt_in.size(2)
    pe, pad, heads = like.network.positional.pe, config.pad_id, config.n_heads
    masked = torch.tensor(float("-inf"))
    src_bias = torch.where(src != pad, 0.0, masked).reshape(n * b, 1, 1, s)
    tgt_bias = torch.where((tgt_in != pad).reshape(n * b, 1, 1, t), 0.0, masked)
    tgt_bias = tgt_bias + torch.full((t, t), float("-inf")).triu(1)

    def embed(ids: torch.Tensor) -> torch.Tensor:
        table = w["embed.lut.weight"]  # (N, V, d)
        rows = torch.gather(table, 1, ids.reshape(n, -1, 1).expand(-1, -1, table.size(-1)))
        return rows * math.sqrt(config.d_model) + pe[: ids.size(2)].repeat(b, 1)

    x = embed(src)
    for i in range(config.n_layers):
        at = f"encoder.layers.{i}"
        x = layer_norm(x + attention(x, x, w, f"{at}.self_attn", src_bias, n, b, heads), w, f"{at}.sublayer.0.norm")
        ff = linear(torch.relu(linear(x, w, f"{at}.feed_forward.w_1")), w, f"{at}.feed_forward.w_2")
        x = layer_norm(x + ff, w, f"{at}.sublayer.1.norm")
    y = embed(tgt_in)
    for i in range(config.n_layers):
        at = f"decoder.layers.{i}"
        y = layer_norm(y + attention(y, y, w, f"{at}.self_attn", tgt_bias, n, b, heads), w, f"{at}.sublayer.0.norm")
        y = layer_norm(y + attention(y, x, w, f"{at}.cross_attn", src_bias, n, b, heads), w, f"{at}.sublayer.1.norm")
        ff = linear(torch.relu(linear(y, w, f"{at}.feed_forward.w_1")), w, f"{at}.feed_forward.w_2")
        y = layer_norm(y + ff, w, f"{at}.sublayer.2.norm")
    logits = linear(y, w, "generator.proj")  # (N, B*T, V)
    each = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=pad, reduction="none").view(n, -1)
    return each.sum(1) / (tgt_out != pad).reshape(n, -1).sum(1)


def written_out_pass(runs: list[Trainer], batches: list, w: dict) -> torch.Tensor:
    """The N runs' losses, their gradients in `w`'s .grad."""
    parts = [stacked([getattr(batch, part) for batch in batches], runs[0].vocab.pad_id) for part in BATCH_PARTS]
    for weight in w.values():
        weight.grad = None
    each = losses(w, *parts, runs[0])
    each.sum().backward()  # a run's loss depends on its own weights alone: the sum's gradient is each run's own
    return each.detach()


def check_equal(n: int) -> None:
    """Each run's loss and gradients from the written-out pass equal those of its own pass through the model."""
    runs, batches = default_runs(n)
    w = stacked_weights(runs)
    each = written_out_pass(runs, batches, w)
    for i, (run, batch) in enumerate(zip(runs, batches)):
        loss, _ = run.forward_backward(batch)
        torch.testing.assert_close(each[i], torch.tensor(loss))
        for name, p in run.network.named_parameters():
            torch.testing.assert_close(w[name].grad[i], p.grad, msg=lambda m, name=name: f"{name}: {m}")


def cpu_ms(work: Callable[[], object], rounds: int) -> float:
    """CPU ms of one call of `work`, over `rounds` calls after a first that warms it."""
    work()  # warm
    began = time.process_time()
    for _ in range(rounds):
        work()
    return (time.process_time() - began) * 1e3 / rounds


def median_ms(n: int, rounds: int, repeats: int) -> tuple[float, float]:
    """CPU ms per model-step of n runs' passes one by one and written out, each the median of `repeats`."""
    runs, batches = default_runs(n)
    w = stacked_weights(runs)
    sides = {
        "one by one": (lambda: [run.forward_backward(batch) for run, batch in zip(runs, batches)], []),
        "written out": (lambda: written_out_pass(runs, batches, w), []),
    }
    for repeat in range(repeats):
        for work, times in list(sides.values())[:: 1 if repeat % 2 == 0 else -1]:  # who goes first alternates
            times.append(cpu_ms(work, max(3, rounds // n)) / n)
    return tuple(statistics.median(times) for _, times in sides.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[1, 4, 8, 16, 30])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    check_equal(4)
    print("The written-out pass equals each run's own: losses and every gradient (4 runs, float32).")
    print(f"load average before: {os.getloadavg()[0]:.2f}; torch {torch.__version__}, 1 thread")
    print("| N | One by one, CPU ms per model-step | Written out, CPU ms per model-step | One by one / written out |")
    print("|---|---|---|---|")
    for n in args.runs:
        one, together = median_ms(n, args.rounds, args.repeats)
        print(f"| {n} | {one:.2f} | {together:.2f} | {one / together:.2f} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
