"""The serving layer on threads: a run as pages read it, its controls, its watchers, and the registry that joins
identical runs, queues distinct ones and moves chains on (tests/serving/test_worker.py runs the same in processes)."""

import re
import threading
import time
from dataclasses import replace

import pytest
import torch

from tests.helpers import wait_until
from tests.helpers.serving import ENDLESS, ZH, alone, same_weights, settings
from transformer.i18n import Message
from transformer.model import ModelConfig, Transformer
from transformer.serving import (
    CONNECTED_GRACE,
    AddressBusy,
    AlreadyTraining,
    QueueFull,
    Run,
    RunRegistry,
    ServerSettings,
    network_address,
    run_key,
)
from transformer.serving import registry as registry_module
from transformer.serving import run as run_module
from transformer.serving import worker as worker_module
from transformer.serving import worker_link as worker_link_module
from transformer.tasks import DataConfig, TaskData
from transformer.training import TrainConfig


def quick(seed: int = 0, **train) -> tuple[ModelConfig, DataConfig, TrainConfig]:
    """`settings` with a held-out set of 50: a run's last evaluation is quick, also on a busy machine."""
    model, data, train_config = settings(seed, **train)
    return model, replace(data, n_valid=50), train_config


def make_registry(
    slots: int = 1, max_queue: int = 2, idle_timeout_s: float = 30.0, keep_finished: int = 16, **server
) -> RunRegistry:
    """A registry training on server threads; `server` sets other ServerSettings fields."""
    server_settings = ServerSettings(slots, max_queue, idle_timeout_s, worker_processes=False, **server)
    return RunRegistry(server_settings, keep_finished)


@pytest.fixture
def registry():
    registry = make_registry()
    yield registry
    registry.close()  # leaves nothing training behind a failed test


# ------------------------------------------------------------------------------------------------- one run


def test_a_run_trains_in_the_background_and_pages_read_a_model_of_their_own(registry):
    run = registry.submit("a", *settings(steps=600, eval_every=10, record_attention=True))
    assert run.wait_until_done(60)
    assert run.error is None and run.result.reason == "solved" and run.status == "done"
    model = run.model()
    assert isinstance(model, Transformer) and not model.training
    assert not any(p.requires_grad for p in model.parameters())  # read-only: no page can train it
    assert len(run.rows) >= 1 and len(run.losses) == run.result.steps
    assert run.attention[0]["step"] == 0 and run.attention[-1]["maps"]["cross"][0].shape[0] == ModelConfig().n_heads
    assert run.data().valid.src.shape[0] > 0  # the held-out set the rows score, built where a page asks


def test_a_run_ending_on_a_row_s_step_keeps_one_row_there_scored_as_its_result(registry):
    """The row made at the last step scored the probe; the run's result scores the whole held-out set. The exports
    read the rows: a run stopped there ended its rows on another figure than its result."""
    run = registry.submit("a", *quick(steps=30, eval_every=10, eval_size=3, early_stop=False))
    assert run.wait_until_done(60) and run.result.reason == "step budget"
    assert [row["step"] for row in run.rows] == [10, 20, 30] and len(run.dynamics) == 3
    assert (run.rows[-1]["exact_match"], run.rows[-1]["token_acc"]) == (run.result.exact_match, run.result.token_acc)


def test_a_stopped_run_keeps_its_model_and_frees_its_slot():
    registry = make_registry(max_queue=0)
    try:
        run = registry.submit("a", *settings(**ENDLESS))
        with pytest.raises(QueueFull):  # the one slot is taken and nothing may wait: refused at once
            registry.submit("b", *settings(seed=1))
        assert run.wait_until_moving(20)
        registry.leave("a", run)
        assert run.wait_until_done(20) and run.result.reason == "stopped" and run.model() is not None
        assert run.left  # its watcher's Stop: what another tab of theirs says ended it
        after = registry.submit("b", *settings(seed=1, steps=5, early_stop=False))  # the slot came back
        assert after.wait_until_done(20) and after.result.steps == 5
    finally:
        registry.close()


def test_an_unwatched_run_stops_by_itself():
    registry = make_registry(idle_timeout_s=0.3)
    try:
        run = registry.submit("a", *settings(**ENDLESS))
        assert run.wait_until_done(10) and run.result.reason == "stopped"
        assert not run.left  # nobody pressed Stop: it lapsed
    finally:
        registry.close()


def test_a_watcher_still_connected_keeps_a_run_going_for_a_while_unpolled():
    """A browser short of CPU polls late: while its page is connected, the run waits CONNECTED_GRACE idle
    timeouts for it; once the page disconnects, the plain idle timeout applies."""
    registry = make_registry(idle_timeout_s=0.4)
    connected = threading.Event()
    connected.set()
    try:
        run = registry.submit("slow", *settings(**ENDLESS), connected=connected.is_set)
        time.sleep(0.8)  # two idle timeouts without a poll
        assert not run.done and run.watchers() == ["slow"]
        connected.clear()  # the tab closed
        assert run.wait_until_done(10) and run.result.reason == "stopped" and run.watchers() == []
        assert (
            run.unwatched
            == "no page checked on it for 0 s after its connection dropped, as when a tab closes or a laptop sleeps"
        )
    finally:
        registry.close()


def test_a_closed_page_stops_counting_as_an_open_one_at_once_while_it_still_keeps_the_run():
    """ "Same settings as 1 classmate" counts open pages: a classmate's closed tab leaves that count at once, while
    the run still waits its idle timeout for the tab to come back (a reload)."""
    registry = make_registry(idle_timeout_s=60)
    tab = threading.Event()
    tab.set()
    try:
        run = registry.submit("ada", *settings(**ENDLESS), connected=lambda: True)
        assert registry.submit("bo", *settings(**ENDLESS), connected=tab.is_set) is run  # the same run, joined
        assert run.open_pages() == 2 and sorted(run.watchers()) == ["ada", "bo"]
        tab.clear()  # Bo's tab closed
        wait_until(
            lambda: run.open_pages() == 1, timeout=run_module.OPEN_PAGE_POLL_S + 10
        )  # within seconds of its last poll
        assert sorted(run.watchers()) == ["ada", "bo"]  # while the run still waits for Bo's tab to come back
    finally:
        registry.close()


def test_a_run_wakes_the_pages_still_watching_it_as_it_ends(monkeypatch):
    """Each watcher's `wake` is called once, after the run reads done: not for a watcher that left, nor for one that
    lapsed (no poll for its idle timeout, its page gone). A touch without a wake keeps the one given before."""
    clock = [0.0]
    monkeypatch.setattr(run_module.time, "monotonic", lambda: clock[0])
    run, woken = Run(*settings(), idle_timeout_s=60), []
    run.touch("gone", wake=lambda: woken.append("gone"))
    clock[0] = 1000.0  # "gone" has not polled for 1,000 s
    run.touch("ada", wake=lambda: woken.append(("ada", run.done)))
    run.touch("bo", lambda: True, wake=lambda: woken.append("bo"))
    run.touch("bo")  # its next poll
    run.touch("cy", wake=lambda: woken.append("cy"))
    run.forget("cy")
    assert woken == []
    run.end(None, "an error")
    assert woken == [("ada", True), "bo"]


def test_a_connected_watcher_that_never_polls_again_still_goes():
    registry = make_registry(idle_timeout_s=0.2)
    try:
        began = time.monotonic()
        run = registry.submit("hung", *settings(**ENDLESS), connected=lambda: True)
        assert run.wait_until_done(10)
        assert time.monotonic() - began >= CONNECTED_GRACE * 0.2 and run.result.reason == "stopped"
        assert (
            run.unwatched == f"no page checked on it for {CONNECTED_GRACE * 0.2:.0f} s, though a page of it stayed open"
        )
    finally:
        registry.close()


def test_a_diverging_run_ends_with_a_message(registry, monkeypatch):
    init_weights = Transformer.init_weights

    def poisoned(model, rng=None):
        init_weights(model, rng)
        with torch.no_grad():
            model.generator.proj.bias.fill_(float("inf"))

    monkeypatch.setattr(Transformer, "init_weights", poisoned)
    run = registry.submit("a", *settings(steps=50))
    assert run.wait_until_done(20)
    assert "loss became" in run.error and run.result is None
    assert isinstance(run.error, Message) and "时损失变成了" in ZH(run.error)  # still a Message past the worker's pipe


def test_an_unforeseen_error_in_training_ends_the_run_with_what_it_was(registry, monkeypatch):
    def broken(trainer, control=None):
        raise RuntimeError("boom")

    monkeypatch.setattr(worker_module.Trainer, "train", broken)
    run = registry.submit("a", *settings(steps=5))
    assert run.wait_until_done(20) and run.result is None
    assert run.error == "training failed: RuntimeError('boom')" and ZH(run.error) == "训练失败：RuntimeError('boom')"


def test_a_run_whose_worker_cannot_start_ends_with_a_message(monkeypatch):
    monkeypatch.setattr(worker_link_module.WorkerLink, "wait_ready", lambda self, timeout_s=0: False)
    registry = make_registry()
    try:
        run = registry.submit("a", *settings(steps=5))
        assert run.wait_until_done(20) and run.error == "the training process could not start"
        assert ZH(run.error) == "训练进程无法启动"
        later = registry.submit("b", *settings(seed=1, steps=5))  # the slot is not stuck: the next run is told too
        assert later.wait_until_done(20) and later.error == "the training process could not start"
    finally:
        registry.close()


def test_waiting_until_a_run_moves_ends_at_its_first_step_or_its_end(registry):
    queued = make_registry(max_queue=1)
    try:
        queued.submit("x", *settings(**ENDLESS))
        waiting = queued.submit("y", *settings(seed=1))
        assert waiting.status == "queued" and waiting.wait_until_moving(0.1) is False  # not started: no wait
    finally:
        queued.close()
    run = registry.submit("a", *settings(**ENDLESS))
    assert run.wait_until_moving(20) and run.losses
    registry.leave("a", run)
    assert run.wait_until_done(20)
    failing = registry.submit("b", ModelConfig(vocab_size=20), *settings()[1:])  # fails in set-up
    began = time.monotonic()
    assert failing.wait_until_moving(20) and time.monotonic() - began < 10  # ended with the run, not the timeout
    assert failing.wait_until_done(10) and "vocab_size" in failing.error and not failing.losses


def test_a_run_reads_paused_only_once_it_holds_between_two_steps(registry, monkeypatch):
    in_step, go_on = threading.Event(), threading.Event()
    draw = TaskData.train_batch
    run = registry.submit("a", *settings(**ENDLESS))
    wait_until(lambda: run.status == "training")

    def held_draw(data, n):  # the step in flight waits here until the test lets it go on
        in_step.set()
        go_on.wait(10)
        return draw(data, n)

    monkeypatch.setattr(TaskData, "train_batch", held_draw)
    try:
        assert in_step.wait(10)
        run.pause()
        time.sleep(0.2)
        assert run.status == "training"  # the step in flight may still solve the task: not paused yet
        go_on.set()
        wait_until(lambda: run.status == "paused")
        held = run.step
        time.sleep(0.3)
        assert run.step == held and run.status == "paused"
        run.resume()
        assert run.status == "training"  # at once, not when the worker next reports
    finally:
        go_on.set()
        registry.leave("a", run)
    assert run.wait_until_done(20)


def test_a_step_longer_than_the_silence_limit_is_not_taken_for_a_hung_worker(registry, monkeypatch):
    monkeypatch.setattr(worker_link_module, "SILENCE_LIMIT_S", 2.0)
    monkeypatch.setattr(worker_module, "ALIVE_EVERY_S", 0.1)
    draw, slowed = TaskData.train_batch, threading.Event()

    def slow_draw(data, n):  # one step, like a long held-out evaluation on a busy server, outlasts the limit
        if not slowed.is_set():
            slowed.set()
            time.sleep(5.0)
        return draw(data, n)

    monkeypatch.setattr(TaskData, "train_batch", slow_draw)
    run = registry.submit("a", *quick(steps=5))
    assert run.wait_until_done(30) and slowed.is_set(), (run.error, run.result)
    assert run.error is None and run.result is not None


@pytest.mark.parametrize("torch_threads", [1, 2])
def test_a_run_on_a_server_thread_computes_on_the_servers_torch_threads(torch_threads, monkeypatch):
    """torch keeps a thread count per thread, a new thread starting from the last count any thread set: whatever
    the server's threads set last, a run trains on the count its settings give, as in a worker process."""
    draw, counts = TaskData.train_batch, []

    def counting_draw(data, n):
        counts.append(torch.get_num_threads())
        return draw(data, n)

    monkeypatch.setattr(TaskData, "train_batch", counting_draw)
    before = torch.get_num_threads()
    elsewhere = threading.Thread(target=torch.set_num_threads, args=(3 - torch_threads,))
    elsewhere.start()  # another of the server's threads sets the other count last
    elsewhere.join()
    registry = make_registry(torch_threads=torch_threads)
    try:
        run = registry.submit("a", *quick(steps=3))
        assert run.wait_until_done(30) and run.error is None
    finally:
        registry.close()
        torch.set_num_threads(before)
    assert counts and set(counts) == {torch_threads}


def test_a_paused_and_stepped_run_ends_with_the_weights_of_an_unpaused_one(registry):
    configs = (ModelConfig(dropout=0.1), settings()[1], TrainConfig(steps=60, early_stop=False, eval_every=20, seed=4))
    run = registry.submit("a", *configs)
    run.pause()  # before its first step: sent to the worker as it takes the run
    wait_until(lambda: run.status == "paused")
    time.sleep(0.3)
    assert run.step == 0
    run.step_row()
    wait_until(lambda: run.status == "paused" and run.step == 20)
    time.sleep(0.3)
    assert run.step == 20 and len(run.rows) == 1  # one metric row's worth, then held again
    run.resume()
    assert run.wait_until_done(20)
    assert run.result.steps == 60 and run.result.seconds < 5  # the pauses spent no training time
    assert same_weights(run.model(), alone(*configs)[0].model) and len(run.losses) == 60


def test_a_pause_past_its_limit_ends_the_run(registry, monkeypatch):
    monkeypatch.setattr(worker_module, "MAX_ONE_PAUSE_S", 0.2)
    run = registry.submit("a", *settings(**ENDLESS))
    run.pause()
    assert run.wait_until_done(10) and run.result.reason == "stopped" and run.result.steps == 0
    assert run.notice == "a pause lasted over 0.2 s, the longest one pause may last"
    assert ZH(run.notice) == "一次暂停超过了 0.2 秒，这是单次暂停的最长时限"


def pause_and_step_until_done(run, pause_s: float, timeout_s: float) -> None:
    """Pause `run` for `pause_s`, then Step, over and over, as a student holding a slot would, until it ends.
    Fails when it has not ended after `timeout_s`."""
    began, pauses = time.monotonic(), 0
    while not run.done:
        assert time.monotonic() - began < timeout_s, f"still {run.status} after {pauses} pauses"
        run.pause()
        wait_until(lambda: run.status == "paused" or run.done)
        time.sleep(pause_s)
        held_at = run.step
        run.step_row()  # it trains to its next metric row, and pauses there again
        pauses += 1
        wait_until(lambda held_at=held_at: run.step > held_at or run.done, timeout=60)


@pytest.mark.parametrize(
    "cap, notice",
    [
        ({"max_total_pause_s": 2.0}, "it was paused for over 2 s in all, the most one run may be paused"),
        ({"max_run_s": 3.0}, "it held a training slot for over 3 s by the clock, the most one run may"),
    ],
)
def test_pause_and_step_over_and_over_end_the_run_at_a_cap_with_its_model_kept(cap, notice):
    registry = make_registry(idle_timeout_s=3600, **cap)  # nobody polls the run: only a cap can end it
    try:
        run = registry.submit("a", *quick(**ENDLESS, eval_every=5))  # its time budget is 300 s of training
        assert run.wait_until_moving(20)
        pause_and_step_until_done(run, pause_s=0.2, timeout_s=120)  # no one pause comes near either cap
        assert run.error is None and run.result.reason == "stopped" and run.model() is not None
        assert run.notice == notice
    finally:
        registry.close()


def test_a_run_that_trains_unpaused_ends_at_its_wall_time_cap_too():
    registry = make_registry(idle_timeout_s=3600, max_run_s=1.0)
    try:
        run = registry.submit("a", *quick(**ENDLESS))
        assert run.wait_until_done(20) and run.result.reason == "stopped"  # its time budget is 300 s of training
        assert run.notice == "it held a training slot for over 1 s by the clock, the most one run may"
        after = registry.submit("b", *quick(seed=1, steps=5, early_stop=False))
        wait_until(lambda: after.status != "queued")  # its slot is free again
    finally:
        registry.close()


# ------------------------------------------------------------------------------------------------ registry


def test_the_same_settings_are_one_run_and_a_joined_run_ends_as_one_trained_alone():
    registry = make_registry(slots=2)
    try:
        other = registry.submit("c", *settings(seed=9, **ENDLESS))  # a distinct run trains beside it all along
        first = registry.submit("a", *settings(steps=60, early_stop=False))
        second = registry.submit("b", *settings(steps=60, early_stop=False))
        assert second is first and sorted(first.watchers()) == ["a", "b"]
        assert first.wait_until_done(60) and not other.done
        assert same_weights(first.model(), alone(*settings(steps=60, early_stop=False))[0].model)
        assert registry.submit("late", *settings(steps=60, early_stop=False)) is first  # ended on its own terms
    finally:
        registry.close()


def test_a_run_with_an_owner_joins_only_runs_of_that_owner():
    """A class student's run is their seat's: one who takes a removed student's place and seed trains anew."""
    registry = make_registry(slots=2)
    try:
        mine = registry.submit("a", *quick(steps=30), owner=("class", 1))
        assert registry.submit("b", *quick(steps=30), owner=("class", 2)) is not mine
        assert registry.submit("c", *quick(steps=30)) is not mine and mine.wait_until_done(60)  # nobody's run
        assert registry.submit("a again", *quick(steps=30), owner=("class", 1)) is mine  # a reload: their own
    finally:
        registry.close()


def test_runs_that_differ_in_any_setting_are_never_joined():
    model, data, train = settings(**ENDLESS)
    keys = {
        run_key(model, data, train),
        run_key(ModelConfig(dropout=0.1), data, train),
        run_key(model, DataConfig(task="copy", min_len=4, max_len=4, seed=1), train),
        run_key(model, data, TrainConfig(seed=1, **ENDLESS)),
        run_key(model, data, TrainConfig(lr=1e-3, **ENDLESS)),
    }
    assert len(keys) == 5
    assert run_key(model, data, TrainConfig(device="auto", **ENDLESS)) == run_key(
        model, data, TrainConfig(device="cpu", **ENDLESS)
    )  # on a CPU-only machine "auto" is the CPU


def test_distinct_runs_queue_first_come_first_served_and_start_on_their_own(registry):
    first = registry.submit("a", *settings(seed=0, steps=30, early_stop=False))
    second = registry.submit("b", *settings(seed=1, steps=30, early_stop=False))
    third = registry.submit("c", *settings(seed=2, steps=30, early_stop=False))
    assert first.status != "queued" and second.status == third.status == "queued"
    assert registry.place(second).position == 1 and registry.place(third).position == 2
    assert registry.place(third).wait_s >= registry.place(second).wait_s > 0
    assert registry.place(first) is None
    with pytest.raises(QueueFull, match="^2 runs are already waiting for a training slot") as full:
        registry.submit("d", *settings(seed=3))
    assert ZH(full.value) == "已有 2 次训练在等待训练名额，这是这台服务器队列的上限"
    assert third.wait_until_done(60)  # each started when the one before it ended
    assert first.result.steps == second.result.steps == third.result.steps == 30
    assert first.started_at < second.started_at < third.started_at


def test_one_watcher_has_one_run_at_a_time(registry):
    registry.submit("a", *settings(seed=0, **ENDLESS))
    with pytest.raises(AlreadyTraining, match="your run in another tab is still training or queued") as busy:
        registry.submit("a", *settings(seed=1))
    assert ZH(busy.value) == "你在另一个标签页中的训练仍在进行或排队：请先在那里停止它"
    assert registry.submit("a", *settings(seed=0, **ENDLESS)).watchers() == ["a"]  # the same run again: joined


def test_leaving_a_shared_run_leaves_it_training_until_the_last_watcher_leaves(registry):
    run = registry.submit("a", *settings(**ENDLESS))
    registry.submit("b", *settings(**ENDLESS))
    registry.leave("a", run)
    time.sleep(0.3)
    assert not run.done and run.watchers() == ["b"]
    registry.leave("b", run)
    assert run.wait_until_done(20) and run.result.reason == "stopped"
    fresh = registry.submit("c", *settings(**ENDLESS))  # a stopped run is not joined: it ended on someone's say
    assert fresh is not run
    wait_until(lambda: fresh.status != "queued")  # its slot came back
    assert fresh.wait_until_moving(20)


def test_a_queued_runs_wait_counts_down_what_the_budgets_of_a_run_past_a_typical_length_leave_it(registry, monkeypatch):
    monkeypatch.setattr(registry_module, "DEFAULT_RUN_S", 0.1)  # a typical run: far shorter than this one
    long = registry.submit("a", *settings(seed=0, steps=10**6, time_budget_s=30.0, early_stop=False))
    queued = registry.submit("b", *settings(seed=1, steps=30, early_stop=False))
    assert long.wait_until_moving(30.0)
    wait_until(lambda: time.perf_counter() - long.started_at > registry_module.DEFAULT_RUN_S)  # past a typical run
    first = registry.place(queued).wait_s
    held = time.perf_counter() - long.started_at
    assert 30.0 - held <= first <= 30.0  # what the long run's 30 s time budget leaves it, not a typical run's 0.1 s
    wait_until(lambda: registry.place(queued).wait_s < first - 0.5)  # and it counts down
    registry.leave("a", long)


def test_before_a_run_of_its_kind_finishes_a_queued_run_expects_its_kind_to_take_as_long_as_one_has_trained(
    registry, monkeypatch
):
    monkeypatch.setattr(registry_module, "DEFAULT_RUN_S", 0.1)  # no run has finished on this server
    kind = dict(steps=10**6, time_budget_s=30.0, early_stop=False)  # a class's runs: one kind, a seed each
    first = registry.submit("a", *settings(seed=0, **kind))
    ahead, behind = (registry.submit(watcher, *settings(seed=seed, **kind)) for watcher, seed in (("b", 1), ("c", 2)))
    assert first.wait_until_moving(30.0)
    wait_until(lambda: time.perf_counter() - first.started_at > 1.0)
    held = time.perf_counter() - first.started_at
    assert registry.place(behind).wait_s - registry.place(ahead).wait_s >= held  # the run ahead takes that long too
    assert not registry.place(behind).known  # and the page says the wait is not known yet
    for watcher, run in (("a", first), ("b", ahead), ("c", behind)):
        registry.leave(watcher, run)


def test_leaving_the_queue_and_going_idle_both_free_the_place(registry):
    registry.submit("a", *settings(seed=0, **ENDLESS))
    left = registry.submit("b", *settings(seed=1))
    gone = registry.submit("c", *settings(seed=2))
    registry.leave("b", left)
    assert registry.place(left) is None and registry.place(gone).position == 1
    registry.settings = replace(registry.settings, idle_timeout_s=0.2)
    gone.idle_timeout_s = 0.2  # nobody polls "c" any more
    time.sleep(0.3)
    assert registry.place(gone) is None
    for run in (left, gone):  # ended without training, never started, and each says why
        assert run.status == "done" and run.done and run.started_at is None
    assert (
        left.withdrawn == "everyone watching it left the queue" and ZH(left.withdrawn) == "观看这次训练的人都已离开队列"
    )
    assert gone.withdrawn.startswith("no page checked on it for 0 s")
    assert (
        ZH(gone.withdrawn) == "连接断开后 0 秒内没有页面查看它，比如关闭了标签页或笔记本电脑进入了休眠"
    )  # the one reason


def test_a_queued_run_nobody_watches_is_withdrawn_not_trained_when_a_slot_frees():
    registry = make_registry(idle_timeout_s=0.2, max_queue=1)
    try:
        registry.submit("a", *settings(seed=0, **ENDLESS), connected=lambda: True)
        queued = registry.submit("b", *settings(seed=1))
        assert queued.wait_until_done(5) and queued.withdrawn and queued.started_at is None
    finally:
        registry.close()


def test_a_queued_run_keeps_its_place_while_its_page_is_connected(registry):
    registry.submit("a", *settings(seed=0, **ENDLESS))
    connected = {"slow": True, "closed": False}
    slow = registry.submit("slow", *settings(seed=1), connected=lambda: connected["slow"])
    closed = registry.submit("closed", *settings(seed=2), connected=lambda: connected["closed"])
    registry.settings = replace(registry.settings, idle_timeout_s=0.3)
    slow.idle_timeout_s = closed.idle_timeout_s = 0.3
    time.sleep(0.5)  # neither page polled for longer than the idle timeout
    assert registry.place(slow).position == 1 and registry.place(closed) is None
    assert closed.withdrawn.startswith("no page checked on it for 0 s after its connection dropped")
    connected["slow"] = False
    assert registry.place(slow) is None


def test_no_run_is_left_training_when_every_watcher_has_gone():
    registry = make_registry(slots=2, max_queue=4, idle_timeout_s=0.5)
    try:
        runs = [registry.submit(str(seed), *settings(seed=seed, **ENDLESS)) for seed in range(4)]
        wait_until(lambda: all(run.status == "training" for run in runs[:2]))
        wait_until(lambda: all(run.done for run in runs), timeout=15)  # nobody touches them: idle
        assert all(run.result.reason == "stopped" for run in runs[:2])
        assert all(run.withdrawn and run.started_at is None for run in runs[2:])  # left the queue, never started
        assert registry.watching() == 0
    finally:
        registry.close()


def test_finished_runs_kept_for_joining_are_bounded(monkeypatch):
    monkeypatch.setattr(registry_module, "MAX_FINISHED_WEIGHTS", 10**9)
    registry = make_registry(max_queue=8, keep_finished=2)
    try:
        runs = []
        for seed in range(4):
            runs.append(registry.submit("a", *settings(seed=seed, steps=5, early_stop=False)))
            assert runs[-1].wait_until_done(20)
        assert registry.submit("b", *settings(seed=3, steps=5, early_stop=False)) is runs[3]
        again = registry.submit("b", *settings(seed=0, steps=5, early_stop=False))
        assert again is not runs[0]  # forgotten: trained anew
        assert again.wait_until_done(20)
    finally:
        registry.close()


def test_a_chain_moves_on_by_itself_and_a_stopped_chain_starts_nothing_more(registry):
    short = [settings(seed=seed, steps=5, early_stop=False) for seed in (0, 1)]
    chain = registry.submit_chain("a", short)
    wait_until(lambda: chain.done, timeout=30)  # no page polled it: the registry started the second run
    assert [run.result.steps for run in chain.runs] == [5, 5] and chain.error is None
    endless = registry.submit_chain("b", [settings(seed=2, **ENDLESS), settings(seed=3)])
    assert endless.current.wait_until_moving(20)
    registry.stop_chain(endless)
    assert endless.current.wait_until_done(20) and endless.done and len(endless.runs) == 1


def test_identical_chains_share_their_runs_and_one_student_leaving_leaves_it_to_the_other(registry):
    configs = [settings(**ENDLESS), settings(seed=1)]
    mine, yours = registry.submit_chain("a", configs), registry.submit_chain("b", configs)
    other = registry.submit_chain("c", [settings(seed=7, **ENDLESS)])
    assert mine.current is yours.current and sorted(mine.current.watchers()) == ["a", "b"]
    assert other.current.status == "queued" and registry.place(other.current).position == 1
    registry.stop_chain(mine)
    time.sleep(0.3)
    assert not yours.current.done and not yours.done
    registry.stop_chain(yours)  # the last one: it stops, and the queued run takes the slot
    wait_until(lambda: other.current.status != "queued")
    assert other.current.wait_until_moving(20) and yours.current.done


# ------------------------------------------------------------------------------------- one network address


def test_one_address_may_have_so_many_runs_training_or_queued_and_joining_is_free():
    registry = make_registry(max_queue=5, idle_timeout_s=3600, runs_per_address=2)
    try:
        mine = [registry.submit(f"window{i}", *quick(seed=i, **ENDLESS), address="203.0.113.7") for i in range(2)]
        with pytest.raises(
            AddressBusy, match="2 runs from your network address are already training or queued"
        ) as busy:
            registry.submit("window2", *quick(seed=2, **ENDLESS), address="203.0.113.7")
        assert ZH(busy.value) == "来自你的网络地址的 2 次训练已在进行或排队，这是这台服务器对一个地址接受的上限"
        assert registry.submit("window3", *quick(seed=1, **ENDLESS), address="203.0.113.7") is mine[1]  # joined
        other = registry.submit("b", *quick(seed=3, **ENDLESS), address="198.51.100.1")  # another address
        unknown = registry.submit("c", *quick(seed=4, **ENDLESS))  # no address known: not bounded by one
        assert other.status == unknown.status == "queued"
        registry.leave("window1", mine[1])
        registry.leave("window3", mine[1])  # one of the address's runs left the queue: its place is free again
        assert registry.submit("window2", *quick(seed=2, **ENDLESS), address="203.0.113.7").status == "queued"
    finally:
        registry.close()


def test_a_free_slot_takes_a_run_from_an_address_with_none_training_before_more_of_one_address():
    registry = make_registry(slots=2, max_queue=4, idle_timeout_s=3600)  # nobody polls these runs
    try:
        windows = [registry.submit(f"w{i}", *quick(seed=i, **ENDLESS), address="203.0.113.7") for i in range(3)]
        other = registry.submit("b", *quick(seed=3, **ENDLESS), address="198.51.100.1")
        assert registry.place(windows[2]).position == 1 and registry.place(other).position == 2  # both slots taken
        registry.leave("w0", windows[0])
        wait_until(lambda: other.status != "queued", timeout=60)  # the other address went first
        assert windows[2].status == "queued"
        registry.leave("b", other)
        wait_until(lambda: windows[2].status != "queued", timeout=60)  # then the one address's next run
    finally:
        registry.close()


@pytest.mark.parametrize(
    "peer, forwarded_for, address",
    [
        ("81.2.69.160", None, "81.2.69.160"),  # straight from the student
        ("81.2.69.160", "93.184.216.34", "81.2.69.160"),  # a public peer's header is not believed
        ("10.0.0.5", None, "10.0.0.5"),  # a student on the school's network
        ("10.0.0.5", "198.51.100.9, 198.51.100.1", "198.51.100.1"),  # a proxy on a private network: what it saw
        (None, "198.51.100.1", "198.51.100.1"),  # a proxy on this host
        (None, "2001:db8::1", "2001:db8::1"),
        (None, None, None),  # this host, no proxy: unknown
        (None, "not an address", None),
        ("10.0.0.5", "<img src=x>", "10.0.0.5"),
    ],
)
def test_the_network_address_of_a_page(peer, forwarded_for, address):
    assert network_address(peer, forwarded_for) == address


def test_the_server_log_has_a_line_when_a_run_is_queued_starts_and_ends(caplog):
    """What an operator reads, and how the load test times runs on the server: one line per event, the run named by
    task, lengths and seed, its end with how it ended."""
    log = run_module.log
    log.addHandler(caplog.handler)
    registry = make_registry(max_queue=1)
    try:
        first = registry.submit("a", *quick(seed=3, **ENDLESS))
        second = registry.submit("b", *quick(seed=4, **ENDLESS))  # queued behind the first, then withdrawn
        assert first.wait_until_moving(20)
        registry.leave("b", second)
        assert second.wait_until_done(20)
        registry.leave("a", first)
        assert first.wait_until_done(20)
    finally:
        registry.close()
        log.removeHandler(caplog.handler)
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0] == "run queued: copy 4-4 seed 3"
    assert lines[1].startswith("run started: copy 4-4 seed 3, ") and lines[1].endswith(" s after it was queued")
    ended = next(line for line in lines if line.startswith("run ended: copy 4-4 seed 3"))
    assert re.fullmatch(
        r"run ended: copy 4-4 seed 3, [\d.]+ s after it was queued: stopped at step \d+ after [\d.]+ s of training",
        ended,
    ), ended
    withdrawn = next(line for line in lines if line.startswith("run ended: copy 4-4 seed 4"))
    assert withdrawn.endswith(": left the queue (everyone watching it left the queue)"), withdrawn


@pytest.mark.parametrize("address", ["http://ray-head:6379", "ray head:6379"])
def test_a_malformed_ray_address_is_refused_at_start_in_the_log_and_runs_train_on_the_servers_workers(
    address, caplog, monkeypatch
):
    def asked(*_: object) -> None:
        raise AssertionError("a malformed address is never asked for its CPUs")

    monkeypatch.setattr(registry_module, "RayGateway", asked)
    run_module.log.addHandler(caplog.handler)
    registry = RunRegistry(replace(ServerSettings.from_env({"LAB_RAY_ADDRESS": address}), worker_processes=False))
    try:
        assert registry.ray_address is None and registry.wait_ready(30.0)
        run = registry.submit("a", *quick(steps=5, early_stop=False))
        assert run.wait_until_done(30.0) and run.error is None and run.result.steps == 5
    finally:
        registry.close()
        run_module.log.removeHandler(caplog.handler)
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0] == f"LAB_RAY_ADDRESS '{address}' is not host:port (the Ray head's address) or auto"
    assert lines[1].startswith("training on this server's own workers, ")


def test_a_run_s_kind_for_wait_estimates_is_every_setting_but_the_seed():
    kind = lambda seed, **train: registry_module.run_kind(Run(*settings(seed, **train), 30.0))  # noqa: E731
    assert kind(1) == kind(2) != kind(1, steps=999)  # a class's runs are one kind; other budgets another
