"""A task from examples: its pairs, vocabulary and held-out split, and its bounds wherever it comes from."""

import copy
from dataclasses import replace

import pytest

import transformer.pairs as pairs_module
from tests.helpers.models import largest_pairs
from transformer.limits import MAX_SEQ_LEN, MAX_SYMBOLS, MAX_TASK_PAIRS, MIN_TASK_PAIRS
from transformer.pairs import HELD_OUT_EVERY, TaskPairs, pairs_from_rows, split_pairs, task_name
from transformer.tasks import DataConfig, TaskData, longest_sequence, task_of


def rows(pairs: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    return [(f"line {i}", source, target) for i, (source, target) in enumerate(pairs, 1)]


WORDS = [("one two", "1 2"), ("two one", "2 1"), ("three", "3"), ("one three", "1 3"), ("two", "2"), ("one", "1")]


def test_pairs_keep_their_text_and_their_vocabulary_in_order_of_first_appearance():
    task = pairs_from_rows(rows(WORDS), "numbers.csv")
    assert task.name == "numbers.csv"
    assert task.symbols == ("one", "two", "1", "2", "three", "3")
    assert sorted((*task.train, *task.held_out)) == sorted(WORDS)
    assert (task.min_len, task.max_len, task.longest_target) == (1, 2, 2)


def test_one_pair_in_five_is_held_out_the_same_way_every_time_and_never_trained_on():
    pairs = [(f"{a} {b}", f"{b} {a}") for a in "abcdefg" for b in "abcdefg"]  # 49 distinct pairs
    task = pairs_from_rows(rows(pairs), "swap")
    assert len(task.held_out) == len(pairs) // HELD_OUT_EVERY
    assert not {s for s, _ in task.train} & {s for s, _ in task.held_out}
    assert pairs_from_rows(rows(pairs), "swap") == task
    assert [p for p in pairs if p in task.train] == list(task.train)  # file order kept


def test_a_pair_given_twice_counts_once_and_a_source_with_two_targets_is_refused():
    twice = pairs_from_rows(rows([*WORDS, WORDS[0], WORDS[2], WORDS[0]]), "twice")
    assert len(twice.train) + len(twice.held_out) == len(WORDS) and twice.repeated == 3
    assert twice == pairs_from_rows(rows(WORDS), "twice")  # the same task, however often its pairs were given
    with pytest.raises(ValueError, match="line 7: the source one two has the target 2 1 here but 1 2 at line 1"):
        pairs_from_rows(rows([*WORDS, ("one  two", "2 1")]), "contradiction")


@pytest.mark.parametrize(
    "pairs, message",
    [
        (WORDS[: MIN_TASK_PAIRS - 1], f"at least {MIN_TASK_PAIRS} different pairs"),
        ([*WORDS, ("", "1")], "line 7: the source is empty"),
        ([*WORDS, ("one", "   ")], "line 7: the target is empty"),
        ([*WORDS, ("one " * (MAX_SEQ_LEN + 1), "1")], f"line 7: the source has {MAX_SEQ_LEN + 1} symbols"),
        ([*WORDS, ("x" * 17, "1")], "line 7: symbol 'xxxxx.*longer than 16"),
        ([*WORDS, ("BOS", "1")], "line 7: symbol 'BOS' is reserved"),
        ([*WORDS, ("a\x07b", "1")], "line 7: .*control characters"),
    ],
)
def test_bad_rows_are_refused_with_where_and_why(pairs, message):
    with pytest.raises(ValueError, match=message):
        pairs_from_rows(rows(pairs), "bad")


def test_the_vocabulary_and_the_pairs_are_bounded_as_they_are_read():
    many_symbols = [(f"s{i}", f"t{i}") for i in range(MAX_SYMBOLS // 2 + 1)]
    with pytest.raises(ValueError, match=f"line {MAX_SYMBOLS // 2 + 1}: more than {MAX_SYMBOLS} different symbols"):
        pairs_from_rows(rows(many_symbols), "symbols")

    def endless():  # a reader that would never stop: the bound stops it
        i = 0
        while True:
            i += 1
            yield f"line {i}", f"{i % 50} {i // 50 % 50}", "x"

    with pytest.raises(ValueError, match=f"line {MAX_TASK_PAIRS + 1}: more than {MAX_TASK_PAIRS:,} pairs"):
        pairs_from_rows(endless(), "endless")


def test_round_trip_through_plain_data():
    task = pairs_from_rows(rows(WORDS), "numbers")
    assert TaskPairs.from_dict(task.to_dict()) == task
    as_tuples = {**task.to_dict(), "train": tuple(map(tuple, task.train))}  # as dataclasses.asdict writes it
    assert TaskPairs.from_dict(as_tuples) == task


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.update(extra=1), "exactly"),
        (lambda d: d.update(train=[["one", "1"]] * (MAX_TASK_PAIRS + 1)), f"{MAX_TASK_PAIRS:,} pairs"),
        (lambda d: d.update(train=[["one", "1"]] * 10**6), f"at most {MAX_TASK_PAIRS:,} pairs"),
        (lambda d: d.update(train=[["one", "1", "x"]]), r"\[source, target\]"),
        (lambda d: d.update(train=[["one " * 2000, "1"]]), "at most"),
        (lambda d: d.update(held_out=[]), "at least one held out"),
        (lambda d: d.update(name="a\nb"), "one line"),
        (lambda d: d.update(symbols=[*d["symbols"], "unused"]), "symbols no pair uses"),
        (lambda d: d.update(symbols=d["symbols"][1:]), "not 1 to 64 symbols of its vocabulary"),
        (lambda d: d.update(held_out=[d["train"][0]]), "given twice"),
    ],
)
def test_stored_pairs_are_checked_before_they_are_used(change, message):
    stored = pairs_from_rows(rows(WORDS), "numbers").to_dict()
    change(stored)
    with pytest.raises(ValueError, match=message):
        TaskPairs.from_dict(stored)


def test_split_holds_out_at_least_one_pair():
    task = split_pairs("five", ("a", "b"), [("a", "b"), ("b", "a"), ("a a", "b"), ("b b", "a"), ("a b", "a")])
    assert len(task.held_out) == 1 and len(task.train) == 4


@pytest.mark.parametrize(
    "text, name", [("pairs.csv", "pairs.csv"), ("\x1b[31mred\x1b[0m", "[31mred[0m"), ("\n\t", "my task")]
)
def test_task_names_are_printable_text(text, name):
    assert task_name(text) == name
    assert len(task_name("x" * 100)) == 40


def test_the_task_of_pairs_is_built_once_and_every_reader_shares_it(monkeypatch):
    built, real = [], pairs_module.PairsTask.__init__
    monkeypatch.setattr(pairs_module.PairsTask, "__init__", lambda self, p: built.append(1) or real(self, p))
    config = DataConfig.from_pairs(copy.copy(largest_pairs()))  # a copy: no task yet; checked against it: built
    assert len(built) == 1
    source = TaskData(config).valid_sources[0]
    longest_sequence(config), task_of(replace(config, seed=4)).target(source, config.n_symbols)
    assert len(built) == 1 and task_of(config) is config.pairs.task


def test_a_large_task_scores_as_many_held_out_pairs_as_a_named_task_of_its_lengths():
    """Scoring at a run's end, its metric rows, Knockout and Decoding read the held-out batch: for the largest task
    it is the one of a named task at the same lengths (DataConfig.n_valid spread over the held-out pairs)."""
    pairs = largest_pairs(24)  # 10,000 pairs, 2,000 of them held out
    own, named = TaskData(DataConfig.from_pairs(pairs)), TaskData(DataConfig("reverse", 24, 24, 62))
    assert len(pairs.held_out) > DataConfig.n_valid
    assert own.valid.src.shape == named.valid.src.shape and own.valid.tgt_out.shape == named.valid.tgt_out.shape
    held_out, trained = {s for s, _ in pairs.held_out}, {s for s, _ in pairs.train}
    scored = {own.vocab.decode([i + 3 for i in s]) for s in own.valid_sources}
    assert len(scored) == DataConfig.n_valid and scored <= held_out and not scored & trained
