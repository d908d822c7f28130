"""The gallery's tasks: each target checked against an oracle written on the text, the sources each task draws, its
held-out set, and its stated default run, which solves its task (benchmarks/gallery_bench.py gives the figures).
"""

import re
from collections import Counter
from dataclasses import replace

import pytest
import torch

from transformer.evaluation import exact_match
from transformer.gallery import BRACKETS, SOURCE_WORDS, TARGET_WORDS, balanced
from transformer.run_configs import run_configs
from transformer.tasks import GALLERY, DataConfig, TaskData, get_task, task_names
from transformer.training import Trainer

TRANSLATION = {s: t for kind in SOURCE_WORDS for s, t in zip(SOURCE_WORDS[kind], TARGET_WORDS[kind])}


def add(source: str, base: int) -> str:
    a, b = source.replace(" ", "").split("+")
    total, digits = int(a, base) + int(b, base), []
    while True:
        total, digit = divmod(total, base)
        digits.append(str(digit))
        if not total:
            return " ".join(reversed(digits))


def translate(source: str, n: int) -> str:
    words = source.split()
    verb = next(i for i, w in enumerate(words) if w in SOURCE_WORDS["verb"])
    subject, obj = words[:verb], words[verb + 1 :]
    phrase = lambda p: [TRANSLATION[p[-1]], *(TRANSLATION[w] for w in p[:-1])]  # noqa: E731
    return " ".join([*phrase(subject), *phrase(obj), TRANSLATION[words[verb]]])


def dedup(source: str, n: int) -> str:
    kept = []
    for w in source.split():
        if w not in kept:
            kept.append(w)
    return " ".join(kept)


def count(source: str, n: int) -> str:
    seen = Counter(source.split())
    return " ".join(str(seen["abcdefghij"[i]]) for i in range(n))


def brackets(source: str, n: int) -> str:
    text = source.replace(" ", "")
    while any(pair in text for pair in ("()", "[]", "{}", "<>")):
        text = re.sub(r"\(\)|\[\]|\{\}|<>", "", text)
    return "no" if text else "yes"


def caesar(source: str, n: int) -> str:
    key, *letters = [ord(c) - ord("a") for c in source.split()]
    return " ".join(chr(ord("a") + (c + key) % n) for c in letters)


def repeat(source: str, n: int) -> str:
    return " ".join(w for w in source.split() for _ in range(2))


ORACLES = {"add": add, "translate": translate, "dedup": dedup, "count": count, "brackets": brackets}
ORACLES |= {"caesar": caesar, "repeat": repeat}


def default_data(name: str, **changes) -> DataConfig:
    d = GALLERY[name].defaults
    return DataConfig(name, d["min_len"], d["max_len"], d["n_symbols"], **changes)


def test_eleven_or_more_tasks_by_name_and_each_gallery_task_has_an_oracle_here():
    assert len(task_names()) >= 12 and set(GALLERY) == set(ORACLES)
    assert all(get_task(name) is GALLERY[name] for name in GALLERY)


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_every_drawn_pair_is_right(name):
    config = default_data(name, n_valid=300)
    data = TaskData(config)
    vocab, oracle = data.vocab, ORACLES[name]
    for batch in (data.valid, data.train_batch(300), data.fresh_examples(100, seed=5)):
        for src, tgt in zip(batch.src.tolist(), batch.tgt_out.tolist()):
            source, target = vocab.decode(src), vocab.decode(tgt)
            assert target == oracle(source, config.n_symbols), source
            assert config.min_len <= len(source.split()) <= config.max_len
            assert len(target.split()) <= data.task.longest_target(len(source.split()), config.n_symbols)


@pytest.mark.parametrize(
    "name, n_symbols, length, draws",
    [("add", 3, 4, 3000), ("add", 2, 5, 3000), ("translate", 2, 4, 20000), ("translate", 2, 7, 40000)]
    + [("brackets", 2, 4, 3000), ("count", 3, 3, 3000), ("caesar", 3, 3, 3000), ("dedup", 2, 4, 3000)],
)
def test_each_task_draws_exactly_as_many_different_sources_as_it_says(name, n_symbols, length, draws):
    task = get_task(name)
    rows = task.rows(length, draws, n_symbols, torch.Generator().manual_seed(0))
    assert rows.shape == (draws, length)
    assert len(torch.unique(rows, dim=0)) == task.n_sources(length, n_symbols)
    for row in rows[:200].tolist():
        task.target(row, n_symbols)  # every drawn source has a target


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_training_never_sees_the_held_out_set(name):
    d = GALLERY[name].defaults
    config = DataConfig(name, d["min_len"], min(d["max_len"], d["min_len"] + 2), d["n_symbols"], n_valid=200)
    data = TaskData(config)
    held_out = set(map(tuple, data.valid_sources))
    assert len(held_out) == len(data.valid_sources)
    for length in range(config.min_len, config.max_len + 1):
        assert sum(len(s) == length for s in held_out) <= data.task.n_sources(length, config.n_symbols) // 2
    for _ in range(20):
        drawn = data.train_batch(64).src.tolist()
        assert not {tuple(t - 3 for t in row if t) for row in drawn} & held_out


def test_about_half_the_brackets_balance_at_even_lengths_and_many_no_is_a_near_miss():
    data = TaskData(DataConfig("brackets", 6, 6, 4, n_valid=10))
    sources = [[t - 3 for t in row] for row in data.train_batch(2000).src.tolist()]
    answers = [balanced(s) for s in sources]
    assert 0.35 < sum(answers) / len(answers) < 0.65
    near_misses = [
        s for s, yes in zip(sources, answers) if not yes and Counter(s[i] // 2 for i in range(6)) == {0: 2, 1: 4}
    ]
    assert near_misses  # unbalanced, though they hold as many of each kind as a balanced row could
    assert BRACKETS[:4] == data.vocab.symbols[:4] and data.vocab.symbols[4:] == ("yes", "no")


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(task="add", min_len=2), "add takes inputs of 3 to 64 symbols"),
        (dict(task="add", n_symbols=11), "add takes 2 to 10 digits"),
        (dict(task="translate", max_len=8), "translate takes inputs of 3 to 7 symbols"),
        (dict(task="count", max_len=10), "count takes inputs of 1 to 9"),
        (dict(task="brackets", n_symbols=5), "brackets takes 2, 4, 6 or 8 bracket symbols"),
        (dict(task="caesar", min_len=1), "caesar takes inputs of 2 to 64"),
        (dict(task="repeat", max_len=33), "repeat takes inputs of 1 to 32"),
    ],
)
def test_settings_a_task_is_not_defined_for_are_refused_with_what_to_set(changes, message):
    with pytest.raises(ValueError, match=message):
        DataConfig(**{"min_len": 3, "max_len": 5, "n_symbols": 4, **changes})


@pytest.mark.parametrize(
    "name, source",
    [("add", "1 2 3"), ("add", "+ 1 2"), ("add", "1 + 2 + 3"), ("translate", "cat dog sees"), ("caesar", "a")]
    + [("translate", "big sees cat"), ("count", "a b c d")],
)
def test_a_typed_source_the_task_has_no_target_for_gets_a_reason(name, source):
    task = get_task(name)
    n = 3 if name == "count" else 10
    vocab_symbols = task.symbols(n)
    with pytest.raises(ValueError):
        task.target([vocab_symbols.index(w) if w in vocab_symbols else n + 1 for w in source.split()], n)


@pytest.mark.parametrize("name", sorted(GALLERY))
def test_each_default_run_builds_with_its_step_budget_and_a_one_line_description(name):
    task = GALLERY[name]
    model, data, train = run_configs({**task.default_run, "device": "cpu"}, shared=False)
    assert data.task == name and train.steps == task.defaults["steps"] and train.early_stop
    assert "\n" not in task.description and len(task.description) < 250
    trainer = Trainer(model, data, train)
    assert len(trainer.vocab) == model.vocab_size  # the model's vocabulary is the task's


def description_examples(name: str) -> list[tuple[list[str], list[str]]]:
    """The `source → target` examples of a task's description: the symbols of its default run just before each
    arrow, and those after it up to the first that ends a clause (a comma or full stop) or is no symbol."""
    symbols = set(get_task(name).symbols(GALLERY[name].defaults["n_symbols"]))
    words, examples = GALLERY[name].description.split(), []
    for at in (i for i, w in enumerate(words) if w == "→"):
        start = at
        while start > 0 and words[start - 1] in symbols:
            start -= 1
        target = []
        for word in words[at + 1 :]:
            if word.rstrip(",.") not in symbols:
                break
            target.append(word.rstrip(",."))
            if word != target[-1]:
                break
        examples.append((words[start:at], target))
    return examples


@pytest.mark.parametrize("name", sorted(GALLERY))
def test_each_example_of_a_description_holds_in_the_task_s_default_run(name):
    task, n_symbols = get_task(name), GALLERY[name].defaults["n_symbols"]
    symbols = task.symbols(n_symbols)
    examples = description_examples(name)
    assert examples and all(source and target for source, target in examples), examples
    for source, target in examples:
        assert [symbols[i] for i in task.target([symbols.index(w) for w in source], n_symbols)] == target


QUICK_DEFAULT_RUNS = ("translate", "dedup", "caesar", "repeat")  # seconds each; the others take 5-30 s (benchmarks.md)
# Count's default run stops at its step budget a few held-out inputs short on some seeds, by the processor's rounding:
# seeds 0-2 at 99.8 / 99.7 / 99.9% on an Intel Xeon, seed 1 at 99.4% on an AMD EPYC (docs/benchmarks.md).
NEARLY = {"count": 0.99}  # the share of its held-out set such a run gets right at least


def default_run_marks(name: str, seed: int) -> tuple:
    """Seed 0 of the quick default runs runs with the suite, the others with `-m slow`."""
    return () if name in QUICK_DEFAULT_RUNS and seed == 0 else (pytest.mark.slow,)


@pytest.mark.heavy
@pytest.mark.parametrize(
    "name, seed",
    [pytest.param(name, seed, marks=default_run_marks(name, seed)) for name in sorted(GALLERY) for seed in (0, 1, 2)],
)  # fmt: skip
def test_each_default_run_solves_its_held_out_set_within_half_its_step_budget(name, seed):
    """Each gallery task's default run, built as the Train form builds it and trained on one torch thread as the app
    trains, gets every held-out sequence right, re-scored by greedy decoding, in at most half its step budget (count
    at least NEARLY all of them by its budget). Seed 0 of the quick ones runs with the suite; every task and seeds 0-2
    with `-m slow`."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model, data, train = run_configs({**GALLERY[name].default_run, "seed": seed, "device": "cpu"})
        trainer = Trainer(model, data, replace(train, time_budget_s=float("inf")))  # steps, not the machine's load
        result = trainer.run()
    finally:
        torch.set_num_threads(threads)
    vocab = trainer.vocab
    decoded = exact_match(trainer.model.eval(), trainer.valid, vocab.bos_id, vocab.eos_id)
    if name in NEARLY and result.reason != "solved":
        assert result.reason == "step budget" and decoded >= NEARLY[name], result
        return
    assert result.reason == "solved" and result.steps <= GALLERY[name].defaults["steps"] // 2, result
    assert decoded == 1.0
