"""Runs trained together (`transformer.batched`) against the same runs trained alone.

In float64 a run trained together is its run alone: the same steps to solve, the same curves and weights to within
what float64 rounding, amplified by training, can reach (assert_close's float64 tolerances, 1e-7, nine orders of
magnitude above its rounding). In float32, as the app trains, batched kernels sum in another order and training
amplifies the difference as it does between one and two threads, so float32 is compared on one step.
"""

import dataclasses
import math
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch

from transformer.batched import TogetherPass, together_key, train_together
from transformer.run_configs import default_configs
from transformer.training import Trainer, TrainingDiverged

TIMINGS = {"tokens_per_s", "elapsed_s"}  # a row's clock readings: the rest of it is arithmetic
SHORT = {"min_len": 3, "max_len": 5}  # short inputs: runs that solve in about 100 steps


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread, as the app's workers train: two threads meeting at every small batched operation on a
    busy 2-core machine make each step tens of times slower (docs/benchmarks.md, batched runs)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@contextmanager
def in_float64() -> Iterator[None]:
    """Models built inside have their weights in float64."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def runs(*settings: dict, steps: int | None = None) -> list[Trainer]:
    """A Train-page run for each of `settings` (a seed and any setting changes), on the CPU, with no time budget:
    what ends a run here is its steps, whatever the machine's load; `steps` its step budget when given."""
    trainers = [Trainer(*default_configs(device="cpu", **changes)) for changes in settings]
    for run in trainers:
        budget = {"time_budget_s": math.inf, **({"steps": steps} if steps else {})}
        run.train_config = dataclasses.replace(run.train_config, **budget)
    return trainers


@pytest.mark.heavy
def test_runs_trained_together_solve_in_the_steps_and_along_the_curves_of_their_runs_alone():
    # Different seeds, input lengths (so batches are padded to the widest) and peak learning rates: only the shape
    # is shared.
    settings = [{"seed": 0, **SHORT}, {"seed": 1, **SHORT, "lr": 0.02}, {"seed": 2, "min_len": 4, "max_len": 7}]
    with in_float64():
        alone, together = runs(*settings), runs(*settings)
        for run in alone:
            run.run()
        rows = list(train_together(together, [None] * len(together)))
    assert {i for i, _ in rows} == {0, 1, 2}
    for one, other in zip(alone, together):
        assert (other.result.steps, other.result.reason) == (one.result.steps, "solved")
        assert other.result.exact_match == one.result.exact_match == 1.0
        torch.testing.assert_close(other.step_losses, one.step_losses)
        assert len(other.history) == len(one.history)
        for row, same in zip(other.history, one.history):
            torch.testing.assert_close({k: v for k, v in row.items() if k not in TIMINGS},
                                       {k: v for k, v in same.items() if k not in TIMINGS})  # fmt: skip
        torch.testing.assert_close(other.kept_weights(), one.kept_weights())
    for i, run in enumerate(together):  # each run's rows came out as its own, in order
        assert [row["step"] for j, row in rows if j == i and row is not None] == [row["step"] for row in run.history]
        ends = [n for n, (j, row) in enumerate(rows) if j == i and row is None]
        assert len(ends) == 1 and all(n < ends[0] for n, (j, _) in enumerate(rows) if j == i and n != ends[0])


def test_one_batched_step_gives_each_run_its_own_loss_logits_and_gradients_in_float32():
    settings = [{"seed": 0}, {"seed": 1, "min_len": 2, "max_len": 9}, {"seed": 2}]
    together, alone = runs(*settings), runs(*settings)
    batches = [run.next_batch()[0] for run in together]
    for run in alone:
        run.next_batch()
    passes = TogetherPass(together[0])(together, batches)
    for run, batch, (loss, logits) in zip(alone, batches, passes):
        expected_loss, expected_logits = run.forward_backward(batch)
        assert math.isclose(loss, expected_loss, rel_tol=1.3e-6)  # float32's assert_close tolerance
        torch.testing.assert_close(logits, expected_logits.detach())
    for one, other in zip(alone, together):
        torch.testing.assert_close(other.weights.grad, one.weights.grad)


def test_each_run_together_keeps_its_own_controls_and_ends_alone():
    together = runs({"seed": 0, **SHORT}, {"seed": 1, **SHORT}, {"seed": 2, **SHORT}, {"seed": 3, **SHORT})
    held_at = []

    def held_then_stopped() -> bool | None:  # run 1: held for 10 rounds at step 5, then stopped at step 20
        if together[1].step == 5 and len(held_at) < 10:
            held_at.append(together[1].step)
            return None
        return together[1].step >= 20

    together[3].weights.data.fill_(math.nan)  # run 3's loss is not a number from its first step
    controls = [None, held_then_stopped, lambda: True, None]
    ended = list(train_together(together, controls))
    assert together[0].result.reason == "solved" and together[0].result.steps > 20
    assert held_at == [5] * 10  # held rounds took no step of run 1 while run 0 went on
    assert (together[1].result.reason, together[1].result.steps) == ("stopped", 20)
    assert (together[2].result.reason, together[2].result.steps) == ("stopped", 0)
    assert isinstance(together[3].error, TrainingDiverged) and not hasattr(together[3], "result")
    assert {i for i, row in ended if row is not None} == {0, 1}  # run 2 took no step and run 3 ended in error
    assert sorted(i for i, row in ended if row is None) == [0, 1, 2, 3]  # each run's end, once


def test_a_run_trains_with_others_only_on_the_same_shape_without_dropout():
    model, _, train = default_configs(0, device="cpu")
    key = together_key(model, train)
    assert key is not None
    assert together_key(model, dataclasses.replace(train, lr=0.01, seed=5)) == key  # schedules and seeds differ
    assert together_key(model, dataclasses.replace(train, batch_size=32)) != key
    assert together_key(dataclasses.replace(model, d_model=64), train) != key
    assert together_key(dataclasses.replace(model, dropout=0.1), train) is None
    assert together_key(dataclasses.replace(model, architecture="gru"), train) is None


@pytest.mark.parametrize("tie_weights", [True, False])
def test_tied_or_untied_weights_train_together_as_alone(tie_weights: bool):
    settings = [{"seed": 0, **SHORT, "tie_weights": tie_weights}, {"seed": 1, **SHORT, "tie_weights": tie_weights}]
    with in_float64():
        alone, together = runs(*settings, steps=30), runs(*settings, steps=30)
        for run in alone:
            run.run()
        list(train_together(together, [None, None]))
    for one, other in zip(alone, together):
        torch.testing.assert_close(other.step_losses, one.step_losses)
        torch.testing.assert_close(other.kept_weights(), one.kept_weights())
