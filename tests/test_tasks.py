from collections import Counter
from dataclasses import replace

import pytest
import torch

from transformer.pairs import pairs_from_rows
from transformer.task import REGISTRY, register_task
from transformer.tasks import (
    TASKS,
    Batch,
    DataConfig,
    TaskData,
    example_pair,
    get_task,
    longest_sequence,
    task_names,
)
from transformer.vocab import Vocab


def sources_of(batch: Batch) -> list[list[int]]:
    """Symbol-index sequences in batch.src (PAD only pads, so dropping it is safe)."""
    return [[t - 3 for t in row if t != 0] for row in batch.src.tolist()]


def targets_of(batch: Batch) -> list[list[int]]:
    return [[t - 3 for t in row[: row.index(2)]] for row in batch.tgt_out.tolist()]


@pytest.fixture
def custom_task():
    @register_task("double", "Say every symbol twice.")
    def double(seq: list[int], n_symbols: int) -> list[int]:
        return [s for s in seq for _ in range(2)]

    yield "double"
    del REGISTRY["double"]


@pytest.mark.parametrize(
    "task, seq, n_symbols, expected",
    [
        ("copy", [3, 1, 2], 4, [3, 1, 2]),
        ("reverse", [3, 1, 2, 2], 4, [2, 2, 1, 3]),
        ("sort", [3, 1, 2, 1], 4, [1, 1, 2, 3]),
        ("increment", [3, 1, 0], 4, [0, 2, 1]),
        ("swap_pairs", [1, 2, 3, 4, 5], 9, [2, 1, 4, 3, 5]),
        ("swap_pairs", [1, 2, 3, 4], 9, [2, 1, 4, 3]),
        ("swap_pairs", [7], 9, [7]),
    ],
)
def test_task_outputs(task, seq, n_symbols, expected):
    assert get_task(task).fn(seq, n_symbols) == expected


def test_get_task_lists_valid_names():
    with pytest.raises(ValueError, match="reverse"):
        get_task("revers")


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(task="nope"),
        dict(min_len=0),
        dict(max_len=65),
        dict(min_len=5, max_len=4),
        dict(min_len=2.0),
        dict(max_len=True),
        dict(n_symbols=1),
        dict(n_symbols=101),
        dict(n_valid=0),
        dict(n_valid=10**9),
        dict(seed=-1),
        dict(seed=2**32),
    ],
)
def test_config_rejects_bad_settings(kwargs):
    with pytest.raises(ValueError):
        DataConfig(**kwargs)


def test_deterministic():
    a, b = TaskData(DataConfig(seed=3)), TaskData(DataConfig(seed=3))
    assert torch.equal(a.valid.src, b.valid.src) and torch.equal(a.valid.tgt_out, b.valid.tgt_out)
    for _ in range(5):
        x, y = a.train_batch(32), b.train_batch(32)
        assert torch.equal(x.src, y.src) and torch.equal(x.tgt_in, y.tgt_in) and torch.equal(x.tgt_out, y.tgt_out)
    c = TaskData(DataConfig(seed=4))
    assert not torch.equal(a.valid.src[:, :5], c.valid.src[:, :5])
    assert not torch.equal(a.train_batch(32).src, c.train_batch(32).src)
    # at one fixed length no held-out redraw can tell the seeds apart: only the training stream's own seed can
    d, e = TaskData(DataConfig(min_len=10, max_len=10, seed=3)), TaskData(DataConfig(min_len=10, max_len=10, seed=4))
    assert not torch.equal(d.train_batch(32).src, e.train_batch(32).src)


@pytest.mark.parametrize(
    "config",
    [
        DataConfig(n_symbols=3, min_len=1, max_len=2),
        DataConfig(n_symbols=2, min_len=1, max_len=4, n_valid=10),
        DataConfig(n_symbols=10, min_len=1, max_len=16),
    ],
)
def test_training_never_sees_held_out(config):
    data = TaskData(config)
    held_out = set(map(tuple, data.valid_sources))
    assert len(held_out) == len(data.valid_sources)  # distinct
    assert sources_of(data.valid) == data.valid_sources
    seen = Counter()
    for _ in range(100):
        seen.update(map(tuple, sources_of(data.train_batch(64))))
    assert not held_out & set(seen)
    assert {len(s) for s in seen} == set(range(config.min_len, config.max_len + 1))
    # at most half of each length is held out, and training draws all the rest (checked where few exist)
    for length in [n for n in range(config.min_len, config.max_len + 1) if config.n_symbols**n <= 16]:
        held = sum(len(s) == length for s in held_out)
        drawn = sum(len(s) == length for s in seen)
        assert 0 < held <= config.n_symbols**length // 2
        assert drawn == config.n_symbols**length - held


def test_held_out_size():
    data = TaskData(DataConfig(n_symbols=10, min_len=1, max_len=16, n_valid=1000))
    assert len(data.valid_sources) == len(data.valid.src) == 1000
    lengths = Counter(map(len, data.valid_sources))
    assert lengths[1] == 5 and lengths[2] == 50 and min(lengths[n] for n in range(3, 17)) >= 60
    # fewer than n_valid when each length may only give up half of its 2**L sequences
    small = TaskData(DataConfig(n_symbols=2, min_len=1, max_len=3, n_valid=1000))
    assert len(small.valid_sources) == 1 + 2 + 4


@pytest.mark.parametrize("task", sorted(TASKS))
def test_batch_layout(task):
    data = TaskData(DataConfig(task=task, min_len=1, max_len=9, n_symbols=7))
    for batch in (data.train_batch(50), data.valid):
        assert all(t.dtype == torch.int64 for t in (batch.src, batch.tgt_in, batch.tgt_out))
        sources = sources_of(batch)
        assert batch.src.shape[1] == max(map(len, sources))
        for src, tgt_in, tgt_out, seq in zip(
            batch.src.tolist(), batch.tgt_in.tolist(), batch.tgt_out.tolist(), sources
        ):
            target = [s + 3 for s in data.task.fn(seq, 7)]
            assert src == [s + 3 for s in seq] + [0] * (len(src) - len(seq))
            assert tgt_out == target + [2] + [0] * (len(tgt_out) - len(target) - 1)
            assert tgt_in == [1] + target + [0] * (len(tgt_in) - len(target) - 1)
        assert batch.n_tokens == int((batch.tgt_out != 0).sum())


def test_fixed_length_batches_have_no_padding():
    data = TaskData(DataConfig(min_len=5, max_len=5))
    batch = data.train_batch(64)
    assert batch.src.shape == (64, 5) and batch.tgt_in.shape == batch.tgt_out.shape == (64, 6)
    for t in (batch.src, batch.tgt_in, batch.tgt_out, data.valid.src, data.valid.tgt_out):
        assert not (t == 0).any()


def test_custom_task_end_to_end(custom_task):
    data = TaskData(DataConfig(task=custom_task, min_len=2, max_len=6, n_valid=50))
    batch = data.train_batch(16)
    assert batch.tgt_out.shape[1] == 2 * max(map(len, sources_of(batch))) + 1
    assert targets_of(batch) == [[s for s in seq for _ in range(2)] for seq in sources_of(batch)]
    assert data.make_batch([[1, 2]]).tgt_out.tolist() == [[4, 4, 5, 5, 2]]


def test_task_may_modify_its_input():
    @register_task("in_place_reverse", "Reverse, in place.")
    def in_place_reverse(seq: list[int], n_symbols: int) -> list[int]:
        seq.reverse()
        return seq

    try:
        data = TaskData(DataConfig(task="in_place_reverse", n_valid=20))
        assert sources_of(data.valid) == data.valid_sources
        assert targets_of(data.valid) == [s[::-1] for s in data.valid_sources]
        sources = [[1, 2, 3]]
        data.make_batch(sources)
        assert sources == [[1, 2, 3]]
    finally:
        del REGISTRY["in_place_reverse"]


@pytest.mark.parametrize("bad_output", [lambda s, n: [n], lambda s, n: [-1], lambda s, n: [0.5], lambda s, n: None])
def test_bad_task_output_is_reported(bad_output):
    register_task("broken", "Returns nonsense.")(bad_output)
    try:
        with pytest.raises(ValueError, match="broken"):
            TaskData(DataConfig(task="broken"))
    finally:
        del REGISTRY["broken"]


def test_make_batch():
    data = TaskData(DataConfig(task="reverse"))
    batch = data.make_batch([[3, 1, 2], [9]])
    assert batch.src.tolist() == [[6, 4, 5], [12, 0, 0]]
    assert batch.tgt_in.tolist() == [[1, 5, 4, 6], [1, 12, 0, 0]]
    assert batch.tgt_out.tolist() == [[5, 4, 6, 2], [12, 2, 0, 0]]
    assert batch.n_tokens == 6
    assert data.make_batch([list(range(10)) * 7]).src.shape == (1, 70)  # longer than training is allowed
    for bad in ([], [[]], [[1], []], [[10]], [[-1]], [["1"]], [[1.0]], [[2**70]], ["12"]):
        with pytest.raises(ValueError):
            data.make_batch(bad)


def test_vocab_must_match_config():
    letters = Vocab(list("abcde"))
    assert TaskData(DataConfig(n_symbols=5), letters).vocab == letters
    assert TaskData(DataConfig(n_symbols=5)).vocab == Vocab.digits(5)
    with pytest.raises(ValueError):
        TaskData(DataConfig(n_symbols=6), letters)


def test_fresh_examples():
    data = TaskData(DataConfig(n_symbols=3, min_len=1, max_len=3))
    a, b = data.fresh_examples(500, seed=1), data.fresh_examples(500, seed=1)
    assert a.src.shape[0] == 500 and torch.equal(a.src, b.src)
    assert not torch.equal(a.src, data.fresh_examples(500, seed=2).src)
    assert not set(map(tuple, sources_of(a))) & set(map(tuple, data.valid_sources))
    # not a replay of the training stream of the same seed
    assert not torch.equal(data.fresh_examples(500, seed=0).src, data.train_batch(500).src)


def test_batch_size_must_be_positive():
    data = TaskData(DataConfig())
    with pytest.raises(ValueError):
        data.train_batch(0)
    with pytest.raises(ValueError):
        data.fresh_examples(0, seed=1)


def test_batch_to_device():
    batch = TaskData(DataConfig()).train_batch(4).to("meta")
    assert {t.device.type for t in (batch.src, batch.tgt_in, batch.tgt_out)} == {"meta"}
    assert batch.n_tokens > 0


PAIRS = [("a b", "b a"), ("b", "b"), ("a", "a"), ("b b a", "a b b"), ("a a", "a a"), ("b a", "a b")]
PAIRS += [("a b a", "a b a"), ("b a b", "b a b"), ("a a a", "a a a"), ("b b b", "b b b"), ("a b b", "b b a")]


def examples():
    return pairs_from_rows([(f"line {i}", s, t) for i, (s, t) in enumerate(PAIRS, 1)], "flip")


def test_a_task_from_examples_holds_out_its_held_out_pairs_and_trains_on_the_rest():
    pairs = examples()
    config = DataConfig.from_pairs(pairs, seed=4)
    assert (config.task, config.min_len, config.max_len, config.n_symbols) == ("pairs", 1, 3, 2)
    data = TaskData(config)
    vocab = data.vocab
    assert vocab.symbols == pairs.symbols and data.valid.src.size(0) == config.n_valid == len(pairs.held_out)

    def decoded(batch):
        return [(vocab.decode(s), vocab.decode(t)) for s, t in zip(batch.src.tolist(), batch.tgt_out.tolist())]

    assert decoded(data.valid) == list(pairs.held_out)
    trained = set(decoded(data.train_batch(500)))
    assert trained == set(pairs.train)  # every training pair drawn, no held-out one
    assert set(decoded(data.fresh_examples(50, seed=1))) <= set(pairs.train)
    with pytest.raises(ValueError, match="flip has no pair with the source 'a b a b'"):
        data.make_batch([[0, 1, 0, 1]])


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(task="reverse"), "only it comes with its pairs"),
        (dict(pairs=None), "only it comes with its pairs"),
        (dict(max_len=4), "takes its lengths, symbols and held-out set from its pairs"),
        (dict(n_valid=1), "takes its lengths, symbols and held-out set from its pairs"),
    ],
)
def test_a_task_from_examples_takes_its_data_settings_from_its_pairs(changes, message):
    with pytest.raises(ValueError, match=message):
        replace(DataConfig.from_pairs(examples()), **changes)


def test_gallery_and_built_in_tasks_are_chosen_by_name():
    assert task_names()[:5] == list(TASKS) and "add" in task_names() and "translate" in task_names()
    with pytest.raises(ValueError, match="choose one of: copy, .*, add, translate"):
        get_task("pairs")  # a task from examples is no name to choose


@pytest.mark.parametrize(
    "config",
    [DataConfig(task=t, min_len=3, max_len=6, n_symbols=4) for t in task_names()] + [DataConfig.from_pairs(examples())],
)
def test_an_example_pair_fits_and_is_right(config):
    data = TaskData(config)
    for seed in range(5):
        for longest in (False, True):
            source, target = example_pair(config, 6, seed, longest)
            assert target == data.task.target(source, config.n_symbols)
            assert max(len(source), len(target)) <= 6 or config.task == "count"  # count's output is the alphabet
            assert config.min_len <= len(source) <= config.max_len
    assert example_pair(config, 6, 3) == example_pair(config, 6, 3)
    fitting = [n for n in range(3, 7) if data.task.longest_target(n, config.n_symbols) <= 6]
    longest = max(len(s) for s in data.task.targets) if config.pairs else max(fitting)
    assert len(example_pair(config, 6, 0, longest=True)[0]) == longest


def test_the_longest_sequence_counts_targets_too():
    assert longest_sequence(DataConfig(task="repeat", min_len=1, max_len=5)) == 10
    assert longest_sequence(DataConfig(task="brackets", min_len=2, max_len=6, n_symbols=2)) == 6
    assert longest_sequence(DataConfig.from_pairs(examples())) == 3


WORDS = [(f"line {i}", f"{a} {b}", f"{b.upper()} {a.upper()} X") for i, (a, b) in enumerate(zip("abcdef", "fedcba"), 1)]


@pytest.mark.parametrize(
    "config",
    [DataConfig(task=t, min_len=3, max_len=6, n_symbols=4) for t in task_names()]
    + [DataConfig.from_pairs(pairs_from_rows(WORDS, "words"))],
)
def test_a_task_says_exactly_the_symbols_its_sources_hold_and_those_its_targets_may_hold(config):
    data, n = TaskData(config), config.n_symbols
    batch = data.train_batch(512)
    drawn = {s for source in (*data.valid_sources, *sources_of(batch)) for s in source}
    assert drawn == set(data.task.source_symbols(n)), data.vocab.tokens(data.vocab.symbol_id(s) for s in drawn)
    written = {s for target in (*targets_of(data.valid), *targets_of(batch)) for s in target}
    assert written <= set(data.task.target_symbols(n)), data.vocab.tokens(data.vocab.symbol_id(s) for s in written)
    if config.pairs is not None:
        assert written == set(data.task.target_symbols(n))
