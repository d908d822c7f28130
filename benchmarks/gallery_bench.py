"""Every gallery task solved by its default run: the settings it states (`transformer.gallery`, each task's
`defaults`), built as the Train form builds them and trained on the CPU until all its held-out sequences are right
or its step budget runs out. Prints a line per task and seed (steps, training seconds, the process's CPU
seconds, held-out exact match re-scored by greedy decoding and, for a task with an ideal cross-attention, its best
head's alignment score averaged over the first ALIGNED held-out sequences) and, last, the rows as JSON. Exits 1 if
any run is left unsolved.

    python benchmarks/gallery_bench.py [--tasks add translate ...] [--seeds 0 1 2] [--threads 2] [--probe TEXT]
"""

import argparse
import itertools
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer.alignment import head_labels, head_scores, source_positions  # noqa: E402 (the root goes first)
from transformer.evaluation import exact_match  # noqa: E402
from transformer.run_configs import run_configs  # noqa: E402
from transformer.serving.worker import keep_freed_memory  # noqa: E402
from transformer.tasks import GALLERY  # noqa: E402
from transformer.training import Trainer  # noqa: E402

ALIGNED = 200  # held-out sequences whose cross-attention is scored


def alignment(trainer: Trainer, name: str) -> dict | None:
    """The best cross-attention head of the trained model and its mean alignment score over ALIGNED held-out
    sequences (`transformer.alignment`); None for a task without an ideal cross-attention."""
    sources = trainer.data.valid_sources[:ALIGNED]
    if source_positions(name, sources[0]) is None:
        return None
    batch = trainer.data.make_batch(sources)
    with torch.no_grad():
        _, maps = trainer.model.eval()(batch.src, batch.tgt_in, return_attention=True)
    scores = []
    for i, source in enumerate(sources):
        queries = int((batch.tgt_in[i] != trainer.vocab.pad_id).sum())  # BOS and the target
        scores.append(head_scores(name, source, [layer[i, :, :queries, : len(source)] for layer in maps["cross"]]))
    mean = torch.stack(scores).mean(dim=0)  # (layers, heads)
    best = int(mean.flatten().argmax())
    return {"head": head_labels(*mean.shape)[best], "score": round(float(mean.flatten()[best]), 3)}


def probe(trainer: Trainer, text: str) -> list[str]:
    """Where each cross-attention head of the trained model looks most, at each output token of `text` (teacher
    forced on its target): one line per head, the source symbols in output order."""
    vocab = trainer.vocab
    ids = vocab.encode(text)
    target = trainer.data.task.target([vocab.symbol_index(i) for i in ids], trainer.data.config.n_symbols)
    tgt_in = torch.tensor([[vocab.bos_id, *(vocab.symbol_id(s) for s in target)]])
    with torch.no_grad():
        _, maps = trainer.model.eval()(torch.tensor([ids]), tgt_in, return_attention=True)
    words = text.split()
    lines = [f"{text} -> {' '.join(vocab.symbols[s] for s in target)}"]
    heads = torch.cat(maps["cross"]).flatten(0, 1)  # (layers x heads, T, S)
    for label, weights in zip(head_labels(len(maps["cross"]), maps["cross"][0].size(1)), heads):
        lines.append(f"  {label}: " + " ".join(words[j] for j in weights[: len(target)].argmax(dim=-1).tolist()))
    return lines


def solve(name: str, seed: int, text: str | None = None) -> dict:
    """Train task `name`'s default run with `seed`; its steps, seconds and held-out exact match (and `probe` of
    `text`, when given)."""
    settings = {**GALLERY[name].default_run, "seed": seed, "device": "cpu"}
    model, data, train = run_configs(settings)
    trainer = Trainer(model, data, replace(train, time_budget_s=float("inf")))  # only the step budget ends it
    began = time.process_time()
    result = trainer.run()
    cpu_s = time.process_time() - began
    if text is not None:
        print("\n".join(probe(trainer, text)), flush=True)
    vocab, held_out = trainer.vocab, trainer.data.valid
    return {
        "task": name,
        "seed": seed,
        "steps": result.steps,
        "budget": settings["steps"],
        "seconds": round(result.seconds, 2),
        "cpu_s": round(cpu_s, 2),
        "held_out": held_out.src.size(0),
        "exact_match": exact_match(trainer.model, held_out, vocab.bos_id, vocab.eos_id),
        "parameters": trainer.model.num_parameters(),
        "alignment": alignment(trainer, name),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", choices=list(GALLERY), default=list(GALLERY))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--probe", metavar="TEXT", help="an input of the tasks: print where each head looks for it")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    keep_freed_memory()  # the allocator as a training worker sets it
    rows = []
    for name, seed in itertools.product(args.tasks, args.seeds):
        row = solve(name, seed, args.probe)
        rows.append(row)
        aligned = row["alignment"]
        print(
            f"{name:<10} seed {seed:<3} {row['steps']:>5} of {row['budget']} steps  {row['seconds']:>6.2f} s  "
            f"CPU {row['cpu_s']:>6.2f} s  "
            f"held-out {row['exact_match']:.1%} of {row['held_out']}"
            + (f"  best head {aligned['head']} aligned {aligned['score']:.2f}" if aligned else ""),
            flush=True,
        )
    print(json.dumps(rows))
    return 0 if all(row["exact_match"] == 1.0 for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
