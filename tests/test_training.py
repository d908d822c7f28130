"""The trainer: it solves a task, stops when asked or when a budget is spent, and fails loudly."""

import copy
import threading
import time

import pytest
import torch
import torch.nn.functional as F

from transformer import training
from transformer.device import training_clock
from transformer.model import ModelConfig, Transformer
from transformer.run_configs import default_configs
from transformer.tasks import Batch, DataConfig, TaskData
from transformer.training import (
    METRIC_COLUMNS,
    TrainConfig,
    Trainer,
    TrainingDiverged,
    evaluate,
    exact_match,
)

COPY = DataConfig(task="copy", min_len=4, max_len=4, seed=0)


def test_copy_is_solved_on_held_out_data_and_training_stops_there():
    trainer = Trainer(ModelConfig(), COPY, TrainConfig(steps=600, eval_every=10))
    rows = []
    result = trainer.run(rows.append)
    assert result.reason == "solved" and result.steps < 600
    # the kept model is the one that solved it: re-score it from scratch on the whole held-out set
    vocab = trainer.vocab
    assert exact_match(trainer.model.eval(), trainer.valid, vocab.bos_id, vocab.eos_id) == 1.0
    assert rows[-1]["exact_match"] == 1.0 and rows[-1]["step"] == result.steps
    assert set(rows[0]) == set(METRIC_COLUMNS)
    steps = [r["step"] for r in rows]
    assert steps == sorted(steps) and rows[0]["train_loss"] > rows[-1]["train_loss"]


def test_the_check_that_stops_a_run_keeps_the_scores_evaluate_gives_its_model():
    trainer = Trainer(ModelConfig(), COPY, TrainConfig(steps=600, eval_every=10))
    rows = []
    result = trainer.run(rows.append)
    vocab = trainer.vocab
    scores = evaluate(trainer.model, trainer.valid, vocab.bos_id, vocab.eos_id, decode=False)
    assert result.reason == "solved" and trainer.held_out_check.scores == scores and scores["exact_match"] == 1.0
    assert {name: rows[-1][name] for name in scores} == scores


def test_a_check_after_a_miss_scores_the_missed_rows_first_and_gives_the_whole_sets_verdict():
    """Snapshots of a run on its way to solving copy: each check's verdict is that of the whole held-out set, and
    a check after a miss passes the model the missed rows first, on their own."""
    trainer = Trainer(ModelConfig(), COPY, TrainConfig(steps=600, early_stop=False))
    check = training.HeldOutCheck(trainer.valid, trainer.vocab.pad_id)
    pad, verdicts, probed = trainer.vocab.pad_id, [], 0
    while not verdicts or not verdicts[-1][1]:
        assert trainer.step < 600
        for _ in range(10):
            trainer.step += 1
            batch = trainer.data.train_batch(64)
            trainer.forward_backward(batch)
            trainer.apply_update(trainer.train_config.lr_at(trainer.step))
        model = trainer.model  # the weight average, in eval mode
        with torch.no_grad():
            right = training.teacher_forced_exact(model(trainer.valid.src, trainer.valid.tgt_in), trainer.valid, pad)
        missed_before = check.missed
        sizes: list[int] = []
        hook = model.register_forward_pre_hook(lambda _, args, sizes=sizes: sizes.append(args[0].size(0)))
        verdicts.append((check(model), bool(right.all())))
        hook.remove()
        if missed_before is not None:
            assert sizes[0] == len(missed_before)
            probed += len(missed_before) < 250  # a few rows, not a chunk's worth
        if not verdicts[-1][0]:
            assert not right[check.missed].any()  # the rows it names were wrong
    assert all(got == want for got, want in verdicts)
    assert probed >= 1 and [want for _, want in verdicts].count(False) >= 2 and verdicts[-1] == (True, True)
    assert check.scores == evaluate(model, trainer.valid, trainer.vocab.bos_id, trainer.vocab.eos_id, decode=False)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_train_pages_default_run_solves_all_1000_held_out_sequences(seed):
    """The Train page's defaults stop at 100% on their held-out set, 1,000 sequences re-scored by greedy decoding,
    well inside their step budget (about 1.5 s of training each on a 2-core VM, one torch thread)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the app trains
    try:
        trainer = Trainer(*default_configs(seed, device="cpu"))
        result = trainer.run()
    finally:
        torch.set_num_threads(threads)
    vocab = trainer.vocab
    assert result.reason == "solved" and result.steps < trainer.train_config.steps // 2, result
    assert len(trainer.valid.src) == 1000 and result.exact_match == 1.0
    assert exact_match(trainer.model.eval(), trainer.valid, vocab.bos_id, vocab.eos_id) == 1.0


def test_a_rows_training_loss_is_the_mean_of_the_last_row_s_worth_of_steps():
    trainer = Trainer(ModelConfig(), COPY, TrainConfig(steps=20, early_stop=False, eval_every=10))
    rows = list(trainer.train())
    losses = trainer.step_losses
    assert len(losses) == 20 and all(isinstance(loss, float) for loss in losses)
    assert [row["step"] for row in rows] == [10, 20, 20]  # step 20's row again, scored on the whole held-out set
    assert [row["train_loss"] for row in rows] == pytest.approx([sum(losses[:10]) / 10, *[sum(losses[10:]) / 10] * 2])
    # a last row 3 steps after the one before averages the last 10 steps too, not 3 (lucky) steps alone
    trainer = Trainer(ModelConfig(), COPY, TrainConfig(steps=23, early_stop=False, eval_every=10))
    rows, losses = list(trainer.train()), trainer.step_losses
    assert [row["step"] for row in rows] == [10, 20, 23]
    assert [row["train_loss"] for row in rows] == pytest.approx([sum(losses[i - 10 : i]) / 10 for i in (10, 20, 23)])


@pytest.mark.parametrize("causal_mask", [True, False])
def test_exact_match_without_decoding_agrees_with_greedy_decoding(causal_mask):
    """Teacher-forced exact-match (used for the curves) equals greedy decoding's on half-trained models, whose
    rows are partly right: row by row with the causal mask; without it, decoding is what gets scored."""
    data = DataConfig(task="reverse", min_len=1, max_len=8, seed=0)
    # raw weights (without the mask, rows are mixed) on a gentle schedule: the checks find rows partly right
    train = TrainConfig(steps=10**6, early_stop=False, ema_decay=0, batch_size=128, lr=5e-3, warmup=100)
    trainer = Trainer(ModelConfig(causal_mask=causal_mask), data, train)
    vocab, fractions = trainer.vocab, []
    for steps in (60, 120, 200):
        trainer.train_config.steps = steps
        trainer.run()
        fast = evaluate(trainer.model, trainer.valid, vocab.bos_id, vocab.eos_id, decode=False)["exact_match"]
        greedy = exact_match(trainer.model.eval(), trainer.valid, vocab.bos_id, vocab.eos_id)
        assert fast == greedy
        fractions.append(greedy)
    assert any(0 < f < 1 for f in fractions), fractions  # the agreement was tested on mixed rows


def test_the_kept_model_is_the_running_average_of_the_trained_weights():
    trainer = Trainer(ModelConfig(), COPY, TrainConfig(steps=1, early_stop=False, ema_decay=0.99))
    start = [p.detach().clone() for p in trainer.network.parameters()]
    trainer.run()
    d = min(0.99, 2 / 11)  # the decay after step 1, still warming up
    for average, before, after in zip(trainer.model.parameters(), start, trainer.network.parameters()):
        torch.testing.assert_close(average, d * before + (1 - d) * after)
    assert not torch.equal(start[0], next(trainer.network.parameters()))  # the step moved the weights
    raw = Trainer(ModelConfig(), COPY, TrainConfig(steps=1, ema_decay=0))
    assert raw.model is raw.network


def test_a_run_whose_budget_ends_as_it_gets_every_held_out_sequence_right_ends_solved(monkeypatch):
    """The held-out check runs at most every 5th step: a run whose last step makes it right before a check came ends
    solved, not out of steps at 100%. A run that trains every step never checks, so it says only that it ran out."""
    solved = Trainer(ModelConfig(), COPY, TrainConfig(steps=600, eval_every=10)).run()
    assert solved.reason == "solved"
    monkeypatch.setattr(Trainer, "_solved", lambda self: False)  # the check that would stop it never comes
    late = Trainer(ModelConfig(), COPY, TrainConfig(steps=solved.steps, eval_every=10)).run()
    assert (late.reason, late.steps, late.exact_match) == ("solved", solved.steps, 1.0)
    every = Trainer(ModelConfig(), COPY, TrainConfig(steps=solved.steps, eval_every=10, early_stop=False)).run()
    assert (every.reason, every.exact_match) == ("step budget", 1.0)


@pytest.mark.parametrize("ends", ["stopped", "step budget"])
def test_a_run_that_ends_at_a_row_s_step_ends_on_that_row_scored_as_its_result(ends):
    """A student stopped at step 429 of 3,000: the result said 67.4% on the whole held-out set, the exported rows
    ended on the probe's 67.2% at the same step. The last row is that row scored again, the history keeps it once."""
    steps = 30 if ends == "step budget" else 10**6
    trainer = Trainer(ModelConfig(), COPY, TrainConfig(steps=steps, early_stop=False, eval_every=10, eval_size=7))
    rows = list(trainer.train(lambda: trainer.step == 30))
    result = trainer.result
    assert (result.reason, result.steps) == (ends, 30) and [row["step"] for row in rows] == [10, 20, 30, 30]
    whole = evaluate(trainer.model, trainer.valid, trainer.vocab.bos_id, trainer.vocab.eos_id)
    assert (rows[-1]["exact_match"], rows[-1]["token_acc"]) == (result.exact_match, result.token_acc)
    assert (result.exact_match, result.token_acc) == (whole["exact_match"], whole["token_acc"])
    assert [row["step"] for row in trainer.history] == [10, 20, 30] and trainer.history[-1] == rows[-1]
    scores = set(whole)  # exact match, token accuracy, validation loss
    assert {k: v for k, v in rows[-1].items() if k not in scores} == {
        k: v for k, v in rows[2].items() if k not in scores
    }


def test_without_early_stopping_it_trains_to_the_step_budget():
    result = Trainer(ModelConfig(), COPY, TrainConfig(steps=40, early_stop=False, eval_every=20)).run()
    assert (result.steps, result.reason) == (40, "step budget")


def test_schedule_warms_up_then_decays():
    cfg = TrainConfig(lr=1e-2, warmup=100)
    assert cfg.lr_at(50) == pytest.approx(5e-3)
    assert cfg.lr_at(100) == pytest.approx(1e-2)
    assert cfg.lr_at(400) == pytest.approx(5e-3)
    assert TrainConfig(lr=1e-2, warmup=100, schedule="constant").lr_at(400) == pytest.approx(1e-2)


def test_divergence_is_a_clear_error_not_a_nan_curve(monkeypatch):
    trainer = Trainer(ModelConfig(), COPY, TrainConfig(steps=50))
    with torch.no_grad():
        trainer.network.generator.proj.bias.fill_(float("nan"))
    with pytest.raises(TrainingDiverged, match="learning rate"):
        trainer.run()


def test_stop_and_time_budget():
    stop = threading.Event()
    stop.set()
    assert Trainer(ModelConfig(), COPY, TrainConfig()).run(stop=stop.is_set).reason == "stopped"
    result = Trainer(ModelConfig(), COPY, TrainConfig(time_budget_s=0.3, early_stop=False, steps=10**6)).run()
    assert result.reason == "time budget" and result.seconds < 3


def test_on_one_cpu_thread_a_busy_machine_does_not_spend_a_run_s_time_budget(monkeypatch):
    """Training time is the training thread's own CPU time (`training_clock`): time the thread spends off its core
    (here asleep between rows, as when the server's other work holds it) is not training, so a run on a busy server
    reaches the steps it reaches on a quiet one. By the wall clock, this run's 2.4 s of sleep would spend its 2 s."""
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)  # the lab's training workers compute on one thread
    config = TrainConfig(steps=40, eval_every=5, early_stop=False, time_budget_s=2.0, device="cpu")
    trainer = Trainer(ModelConfig(d_model=16, n_heads=2, n_layers=1, d_ff=32), COPY, config)
    result = trainer.run(on_row=lambda row: time.sleep(0.3))  # 8 rows: 2.4 s off the core
    assert result.reason == "step budget" and result.steps == 40 and result.seconds < 2.0


def test_the_training_clock_is_the_wall_clock_off_a_single_cpu_thread(monkeypatch):
    """A GPU's work, or several CPU threads', is on no one thread's clock."""
    assert training_clock(torch.device("cuda")) is time.perf_counter
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    assert training_clock(torch.device("cpu")) is time.perf_counter
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert training_clock(torch.device("cpu")) is time.thread_time


@pytest.mark.parametrize(
    "bad",
    [
        dict(lr=0),
        dict(steps=0),
        dict(label_smoothing=1.0),
        dict(schedule="cosine"),
        dict(ema_decay=1.0),
        dict(ema_decay=-0.1),
        dict(batch_size=10**9),
        dict(eval_size=10**9),
        dict(seed=2**32),
    ],
)
def test_bad_train_settings_are_refused(bad):
    with pytest.raises(ValueError):
        TrainConfig(**bad)


def test_a_huge_model_is_refused_before_it_is_built(monkeypatch):
    monkeypatch.setattr(training, "Transformer", lambda config: pytest.fail("model built"))
    with pytest.raises(ValueError, match="the most this lab builds"):
        Trainer(ModelConfig(d_model=4096, n_heads=1, d_ff=8192, n_layers=8), COPY, TrainConfig())


def one_step(**settings) -> tuple[Trainer, Transformer, Batch]:
    """A trainer after one step of raw weights, its network as it was before, and the batch it trained on."""
    config = TrainConfig(steps=1, eval_every=1, ema_decay=0, early_stop=False, **settings)
    trainer = Trainer(ModelConfig(), COPY, config)
    before = copy.deepcopy(trainer.network)
    trainer.run()
    return trainer, before, TaskData(COPY).train_batch(trainer.train_config.batch_size)


@pytest.mark.parametrize("clip", [0.0, 0.01])
def test_gradients_are_clipped_to_the_max_norm(clip):
    trainer, _, _ = one_step(clip_grad=clip)
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in trainer.network.parameters()]))
    assert norm <= 0.01 * (1 + 1e-4) if clip else norm > 0.1  # the gradient of a fresh model is far above 0.01


@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_the_training_loss_uses_label_smoothing(smoothing):
    trainer, before, batch = one_step(label_smoothing=smoothing)
    logits = before(batch.src, batch.tgt_in).flatten(0, 1)

    def loss(eps):
        return F.cross_entropy(logits, batch.tgt_out.flatten(), ignore_index=0, label_smoothing=eps).item()

    assert trainer.history[0]["train_loss"] == pytest.approx(loss(smoothing), rel=1e-5)
    assert loss(0.3) != pytest.approx(loss(0.0), rel=1e-3)  # far apart enough to tell the settings apart


@pytest.mark.parametrize("smoothing, vocab_size", [(0.1, 13), (0.3, 20)])
def test_the_label_smoothing_floor_is_the_lowest_loss_any_logits_reach(smoothing, vocab_size):
    floor = training.smoothed_loss_floor(smoothing, vocab_size)
    target = torch.tensor([2])

    def loss(logits):
        return F.cross_entropy(logits[None], target, label_smoothing=smoothing).item()

    right, other = 1 - smoothing + smoothing / vocab_size, smoothing / vocab_size
    best = torch.full((vocab_size,), other).index_fill(0, target, right).log()  # logits of the smoothed target itself
    assert loss(best) == pytest.approx(floor, abs=1e-6)
    generator = torch.Generator().manual_seed(0)
    assert all(loss(best + 0.5 * torch.randn(vocab_size, generator=generator)) > floor for _ in range(20))
    assert loss(torch.zeros(vocab_size).index_fill(0, target, 50.0)) > floor  # all-in on the right token
    assert training.smoothed_loss_floor(0.0, vocab_size) == 0.0


def test_the_optimizer_follows_the_schedule():
    trainer = Trainer(ModelConfig(), COPY, TrainConfig(steps=150, warmup=100, eval_every=1000, early_stop=False))
    rates, step = [], trainer.optimizer.step
    trainer.optimizer.step = lambda lr: (rates.append(lr), step(lr))
    trainer.run()
    assert rates == [trainer.train_config.lr_at(s) for s in range(1, 151)]
    assert trainer.optimizer.t == 150


def test_the_seed_alone_sets_the_starting_weights():
    first = Trainer(ModelConfig(), COPY, TrainConfig(seed=5)).network.state_dict()
    torch.manual_seed(123)
    torch.rand(5)  # whatever ran before must not matter
    again = Trainer(ModelConfig(), COPY, TrainConfig(seed=5)).network.state_dict()
    other = Trainer(ModelConfig(), COPY, TrainConfig(seed=6)).network.state_dict()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)


def test_token_accuracy_counts_real_tokens_only():
    torch.manual_seed(0)
    model = Transformer(ModelConfig())
    batch = TaskData(DataConfig(task="reverse", min_len=1, max_len=8)).valid
    predicted = model.eval()(batch.src, batch.tgt_in).argmax(-1)
    real = batch.tgt_out != 0
    model.train()
    scores = evaluate(model, batch, 1, 2)
    right = int(((predicted == batch.tgt_out) & real).sum())
    assert scores["token_acc"] == right / int(real.sum())  # the counts' own ratio, exactly: 999/1000 reads 0.999
    assert model.training  # evaluate hands the model back in the mode it found it in


def test_model_and_data_must_fit_together():
    with pytest.raises(ValueError, match="vocab_size"):
        Trainer(ModelConfig(vocab_size=20), COPY, TrainConfig())
    with pytest.raises(ValueError, match="max_len"):
        Trainer(ModelConfig(max_len=4), COPY, TrainConfig())


def final_weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    trainer.run()
    return trainer.network.state_dict()


def test_runs_side_by_side_in_threads_are_each_what_their_seed_makes_them_alone():
    """Starting weights, data and dropout masks come from each run's own generators: two runs training at once in
    one process, while a third draws from PyTorch's process-wide generator, end with the weights each has alone."""
    model = ModelConfig(dropout=0.1)
    configs = [TrainConfig(steps=40, early_stop=False, eval_every=20, seed=seed) for seed in (1, 2)]
    alone = [final_weights(Trainer(model, COPY, c)) for c in configs]
    busy = threading.Event()

    def global_draws():
        while not busy.is_set():
            torch.rand(100)
            torch.nn.functional.dropout(torch.ones(100), 0.5)

    trainers = [Trainer(model, COPY, c) for c in configs]
    threads = [threading.Thread(target=t.run) for t in trainers] + [threading.Thread(target=global_draws)]
    for thread in threads:
        thread.start()
    for thread in threads[:2]:
        thread.join()
    busy.set()
    threads[2].join()
    for trainer, weights in zip(trainers, alone):
        together = trainer.network.state_dict()
        assert all(torch.equal(together[k], weights[k]) for k in weights)
    assert not torch.equal(alone[0]["generator.proj.bias"], alone[1]["generator.proj.bias"])


def test_dropout_masks_come_from_the_run_generator():
    from transformer.dropout import dropout, dropout_rng

    x = torch.ones(1000)
    with dropout_rng(torch.Generator().manual_seed(3)):
        first = dropout(x, 0.25, training=True)
    with dropout_rng(torch.Generator().manual_seed(3)):
        torch.rand(10)  # the process-wide generator moves; the run's does not
        again = dropout(x, 0.25, training=True)
    assert torch.equal(first, again)
    assert first.unique().tolist() == pytest.approx([0.0, 1 / 0.75])  # kept ones are scaled by 1 / (1 - p)
    assert 0.2 < (first == 0).float().mean() < 0.3
