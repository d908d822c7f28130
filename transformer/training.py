"""Training: a step loop that streams metric rows and stops early once the held-out set is solved."""

import atexit
import copy
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F

from .checkpoint import check_model_size
from .config_checks import require_all
from .device import pick_device, training_clock
from .dropout import dropout_rng
from .dynamics import Dynamics
from .evaluation import HeldOutCheck, evaluate, exact_match, rows_of, teacher_forced_exact
from .i18n import N_, Message
from .limits import MAX_BATCH
from .model import ModelConfig, Transformer
from .optimizer import Adam, gradients_into_one_tensor, into_one_tensor
from .recurrent import build_model
from .tasks import MAX_SEED, Batch, DataConfig, TaskData

MetricRow = dict[str, float]
AVERAGE_CHECK_FROM = 0.8  # the network's share of its batch right from which the average is checked too
METRIC_COLUMNS = ("step", "train_loss", "val_loss", "token_acc", "exact_match", "lr", "tokens_per_s", "elapsed_s")


class RunFailed(RuntimeError):
    """A run ended early, for a reason its message tells the student."""


class TrainingDiverged(RunFailed):
    """The loss stopped being a finite number."""


@dataclass
class TrainConfig:
    """Optimizer, schedule and budgets. The batch and schedule are those that solve the Train page's default run
    (reverse, lengths 6-8, the default model) soonest, picked by `benchmarks/schedule_sweep.py` (docs/benchmarks.md)."""

    steps: int = 2000  # step budget
    time_budget_s: float = 300.0  # seconds of training, on `training_clock`
    batch_size: int = 64
    lr: float = 0.03  # peak learning rate, reached at the end of warm-up
    warmup: int = 60  # steps of linear warm-up
    schedule: Literal["noam", "constant"] = "noam"  # after warm-up: the paper's 1/sqrt(step) decay, or flat
    label_smoothing: float = 0.0
    clip_grad: float = 1.0  # max gradient norm; 0 turns clipping off
    ema_decay: float = 0.99  # evaluate and keep a running average of the weights (see WeightAverage); 0: raw weights
    seed: int = 0
    early_stop: bool = True  # end as soon as held-out exact-match reaches 100%
    eval_every: int = 25  # steps between metric rows
    eval_size: int = 256  # held-out sequences scored for each row (the early-stop check uses all of them)
    record_attention: bool = False  # keep attention maps of a probe input at each row
    device: str = "auto"

    def __post_init__(self) -> None:
        require_all(
            (self.steps >= 1, "steps must be at least 1"),
            (self.time_budget_s > 0, "time_budget_s must be positive"),
            (1 <= self.batch_size <= MAX_BATCH, f"batch_size must be in 1..{MAX_BATCH}"),
            (0 < self.lr <= 1, "lr must be in (0, 1]"),
            (self.warmup >= 0, "warmup must be >= 0"),
            (self.schedule in ("noam", "constant"), "schedule must be noam or constant"),
            (0 <= self.label_smoothing < 1, "label_smoothing must be in [0, 1)"),
            (self.clip_grad >= 0, "clip_grad must be >= 0"),
            (0 <= self.ema_decay < 1, "ema_decay must be in [0, 1)"),
            (self.eval_every >= 1, "eval_every must be at least 1"),
            (1 <= self.eval_size <= MAX_BATCH, f"eval_size must be in 1..{MAX_BATCH}"),
            (0 <= self.seed <= MAX_SEED, f"seed must be in 0..{MAX_SEED}"),
        )

    def lr_at(self, step: int) -> float:
        """Learning rate at 1-based `step`: linear warm-up to `lr`, then `lr * sqrt(warmup / step)` for noam.

        This is the paper's schedule, d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), with its peak set directly
        to `lr` instead of by d_model^-0.5 * warmup^-0.5, which ties the peak to the warm-up length (0.023 at
        d_model 32 with 60 warm-up steps instead of the paper's 4000). With no warm-up the rate is `lr` throughout.
        """
        if step <= self.warmup:
            return self.lr * step / self.warmup
        return self.lr * math.sqrt(self.warmup / step) if self.schedule == "noam" and self.warmup else self.lr


def suggested_lr(d_model: int, n_layers: int) -> float:
    """The peak learning rate for a model this wide and deep, which the Train page uses when the student leaves its
    field empty: TrainConfig's 0.03 up to the default model (d_model 32, one layer per stack), then inversely
    proportional to d_model x layers, since wider and deeper post-norm stacks stop learning at high peaks (0.0025 at
    d_model 128 with 3 layers, which learns nothing at 0.01). From `benchmarks/schedule_sweep.py`
    (docs/benchmarks.md)."""
    return TrainConfig.lr * min(1.0, 32 / (d_model * n_layers))


def smoothed_loss_floor(label_smoothing: float, vocab_size: int) -> float:
    """The lowest training loss label smoothing allows: the entropy of the smoothed target distribution.

    `F.cross_entropy(..., label_smoothing=eps)` trains towards 1 - eps + eps/V on the right token and eps/V on each
    of the others, so even a perfect model's loss is that distribution's entropy, not 0.
    """
    right, other = 1 - label_smoothing + label_smoothing / vocab_size, label_smoothing / vocab_size
    return -(right * math.log(right) + (vocab_size - 1) * other * math.log(other)) if other > 0 else 0.0


@dataclass
class TrainResult:
    steps: int
    seconds: float
    exact_match: float  # greedy exact-match on the whole held-out set at the end; if solved, the verdict that ended it
    token_acc: float
    reason: Literal["solved", "step budget", "time budget", "stopped"]


class WeightAverage:
    """An exponential moving average of a network's weights, the model a run evaluates and keeps.

    After optimizer step t: average <- d * average + (1 - d) * weights, with d = min(decay, (1 + t) / (10 + t)), so
    the first steps are not pulled back towards the random start. The paper averaged its last checkpoints; this is
    the running version. At a high learning rate the weights jitter from step to step (held-out exact-match of
    reverse at lengths 1-16 swings between 70% and 99%); their average holds still and solves the task in a third of
    the steps.
    """

    def __init__(self, network: Transformer, weights: torch.Tensor, decay: float):
        """weights: the network's parameters in one tensor (`into_one_tensor`)."""
        self.model = copy.deepcopy(network).eval()  # never trained itself: no dropout, no gradients
        self.model.requires_grad_(False)
        self.decay = decay
        self._average, self._weights = into_one_tensor(list(self.model.parameters())), weights

    @torch.no_grad()
    def update(self, step: int) -> None:
        """Fold in the network's weights after optimizer step `step` (1-based)."""
        self._average.lerp_(self._weights, 1 - min(self.decay, (1 + step) / (10 + step)))


class Trainer:
    """Trains a fresh Transformer on a task, yielding a metric row every `eval_every` steps.

    `network` holds the weights the optimizer steps; `model` is what the run evaluates and produces: their running
    average (`TrainConfig.ema_decay`), or `network` itself when averaging is off.
    """

    def __init__(self, model_config: ModelConfig, data_config: DataConfig, train_config: TrainConfig):
        check_model_size(model_config)
        self.train_config = train_config
        self.device = pick_device(train_config.device)
        self.clock = training_clock(self.device)  # training time: its budget, its rows' pace, its seconds
        self.data = TaskData(data_config)
        self.vocab = self.data.vocab
        if model_config.vocab_size != len(self.vocab) or model_config.pad_id != self.vocab.pad_id:
            raise ValueError(f"model vocab_size must be {len(self.vocab)} for {data_config.n_symbols} symbols")
        if data_config.max_len > model_config.longest_sequence:
            raise ValueError(
                f"sequences of length {data_config.max_len} need model max_len >= {data_config.max_len + 1}"
            )
        # The run's own random generators (starting weights, dropout masks; the data has its own in TaskData), so
        # that runs training side by side in one process are each what their seed makes them alone.
        self.network = build_model(model_config, rng=torch.Generator().manual_seed(train_config.seed)).to(self.device)
        parameters = list(self.network.parameters())
        self.weights = into_one_tensor(parameters)  # the network's weights, and their gradients in `weights.grad`
        gradients_into_one_tensor(parameters, self.weights)
        self.dropout_rng = torch.Generator(device=self.device).manual_seed(train_config.seed)
        decay = train_config.ema_decay
        self.average = WeightAverage(self.network, self.weights, decay) if decay else None
        self.model = self.network if self.average is None else self.average.model
        self.valid = self.data.valid.to(self.device)
        self.probe = rows_of(self.valid, 0, train_config.eval_size)
        self.held_out_check = HeldOutCheck(self.valid, self.vocab.pad_id)
        self.optimizer = Adam([self.weights], betas=(0.9, 0.98), eps=1e-9)
        self.history: list[MetricRow] = []
        self.step_losses: list[float] = []  # the training loss of every step
        self.attention_snapshots: list[dict] = []  # {"step": int, "maps": AttentionMaps} when record_attention
        self.dynamics = Dynamics(self.network, self.model.token_embeddings)  # a record per row (see dynamics.py)
        self.step = 0
        self.paused_s = 0.0  # `clock` time spent in `control()` (reporting, or holding a pause): not training
        self.shared_s = 0.0  # `clock` time its batched passes spent on the runs trained with it: not its own
        self.error: Exception | None = None  # why a run trained with others ended (`batched.train_together`)

    def train(self, control: Callable[[], bool] | None = None) -> Iterator[MetricRow]:
        """Train, yielding metric rows, until a budget is spent, the task is solved, or `control()` returns True.

        `control` is called before each step; the time it takes (a pause it holds) is not training time. The last
        row comes when training ends, scored on the whole held-out set. Sets `self.result`.
        """
        self.begin()
        while self.may_step(control):
            batch, lr = self.next_batch()
            row = self.after_step(batch, lr, *self._optimizer_step(batch, lr))
            if row is not None:
                yield row
                self.row_taken()
        yield from self.end()

    # The loop's parts, also driven one step at a time for runs trained together (`batched.train_together`).

    def begin(self) -> None:
        """Start the clock and the counters of a training loop."""
        self.network.train()
        self.reason: str | None = None  # why training ended, once it has
        self._start = self.clock()
        self._last_row_time = 0.0  # training time (pauses left out) at the last metric row
        self._steps_since_row = 0
        self._tokens = 0
        self._last_check = -10
        self._snapshot_attention()

    def may_step(self, control: Callable[[], bool | None] | None = None) -> bool:
        """Whether to take another step; when not, and training has ended, `reason` says why. `control()` returns
        True to stop, and None to skip this step for now (a run trained together with others, held by a pause)."""
        cfg = self.train_config
        if self.reason is None and self.step >= cfg.steps:
            self.reason = "step budget"
        if self.reason is None:
            answer = self._held(control) if control is not None else False
            if answer is None:
                return False
            if answer:
                self.reason = "stopped"
            elif self._training_time() > cfg.time_budget_s:
                self.reason = "time budget"
        return self.reason is None

    def next_batch(self) -> tuple[Batch, float]:
        """Count a step and draw its training batch; returns it and the step's learning rate."""
        self.step += 1
        return self.data.train_batch(self.train_config.batch_size).to(self.device), self.train_config.lr_at(self.step)

    def after_step(self, batch: Batch, lr: float, loss: float, logits: torch.Tensor) -> MetricRow | None:
        """Book a step taken on `batch` (its loss, and the logits it was computed from), check whether the task is
        solved (which ends training: `reason`), and return the metric row when this step makes one."""
        cfg, vocab = self.train_config, self.vocab
        self._steps_since_row += 1
        self.step_losses.append(loss)
        self._tokens += batch.n_tokens
        # When the model gets every sequence of this batch right under teacher forcing, the full held-out set is
        # worth a check. The training pass scored the batch before the update on it, so for raw weights it is
        # fresh data and costs nothing; the average is scored by its own forward pass, at most every 5th step
        # and only once the network itself gets most of its batch right (AVERAGE_CHECK_FROM): before that the
        # average, which lags it, is far from solving the task and the pass would be wasted.
        if cfg.early_stop and self.step - self._last_check >= 5:
            right = teacher_forced_exact(logits, batch, vocab.pad_id)  # (B,) the network's own, free
            if self.average is not None and right.float().mean() >= AVERAGE_CHECK_FROM:
                self._last_check = self.step
                right = teacher_forced_exact(self._eval_logits(batch), batch, vocab.pad_id)
            if right.all():
                self._last_check = self.step
                if self._solved():
                    self.reason = "solved"
                    return None
        if self.step % cfg.eval_every:
            return None
        now = self._training_time()
        return self._row(self._tokens / max(now - self._last_row_time, 1e-9), now, lr)

    def row_taken(self) -> None:
        """Start the next row's counters, once the row just returned has been handed on."""
        self._snapshot_attention()
        self._steps_since_row, self._tokens, self._last_row_time = 0, 0, self._training_time()

    def end(self) -> Iterator[MetricRow]:
        """End training: set `result`, and yield the last row, scored on the whole held-out set (as `result` is),
        once any step was taken. Where a row came at this very step (a stop, or a budget, right after it), the last
        row is that row again, its scores on the whole set in place of the probe's: it takes that row's place."""
        self.network.eval()
        self.model.eval()
        elapsed = self._training_time()
        reason = self.reason or "stopped"
        # A run that stopped solved was scored on the whole held-out set by the check that stopped it (`_solved`):
        # decoding all of it again would repeat that verdict, a twentieth of a default run's time before it ends,
        # and a causal model's check kept evaluate's scores.
        vocab, kept = self.vocab, self.held_out_check.scores
        if reason == "solved" and kept is not None:
            final = kept
        else:
            final = evaluate(self.model, self.valid, vocab.bos_id, vocab.eos_id, decode=reason != "solved")
        if reason in ("step budget", "time budget") and self.train_config.early_stop and final["exact_match"] == 1:
            reason = "solved"  # right by its last steps, before a check came (every 5th step at most): not cut short
        self.result = TrainResult(self.step, elapsed, final["exact_match"], final["token_acc"], reason)
        if self._steps_since_row:
            rate = self._tokens / max(elapsed - self._last_row_time, 1e-9)
            row = self._row(rate, elapsed, self.train_config.lr_at(self.step))
            row.update(final)
            yield row
            self._snapshot_attention()
        elif self.history:  # its row is at this step: it was scored on the probe
            self.history[-1] = {**self.history[-1], **final}
            yield self.history[-1]

    def _optimizer_step(self, batch: Batch, lr: float) -> tuple[float, torch.Tensor]:
        """One step of Adam on `batch` at learning rate `lr`: returns the batch's loss and the logits it was
        computed from (those of the weights before the step). TrainingDiverged when the loss is not finite."""
        loss, logits = self.forward_backward(batch)
        self.apply_update(lr)
        return loss, logits

    def forward_backward(self, batch: Batch) -> tuple[float, torch.Tensor]:
        """The loss on `batch` and its logits; the gradients land in `weights.grad`. The loss is read back once
        (`.item()`), the step's only wait for the device."""
        with dropout_rng(self.dropout_rng):
            logits = self.network(batch.src, batch.tgt_in)
        loss = F.cross_entropy(
            logits.flatten(0, 1),
            batch.tgt_out.flatten(),
            ignore_index=self.vocab.pad_id,
            label_smoothing=self.train_config.label_smoothing,
        )
        value = loss.item()
        self.check_finite(value)
        self.weights.grad.zero_()
        loss.backward()
        return value, logits

    def check_finite(self, loss: float) -> None:
        """TrainingDiverged when this step's `loss` is not a finite number."""
        if not math.isfinite(loss):
            diverged = N_(
                "the loss became {value} at step {step}: lower the learning rate (now {lr:g}), use more warm-up, "
                "or turn gradient clipping on"
            )
            raise TrainingDiverged(Message(diverged, value=loss, step=self.step, lr=self.train_config.lr))

    def apply_update(self, lr: float) -> None:
        """Adam's step at learning rate `lr` on the gradients in `weights.grad`, clipped; then the weight average."""
        cfg = self.train_config
        if self.step % cfg.eval_every == 0 or self.step == cfg.steps:  # a metric row's step: before clipping
            self.dynamics.read_gradients(self.step)
        if cfg.clip_grad:
            torch.nn.utils.clip_grad_norm_([self.weights], cfg.clip_grad)
        self.optimizer.step(lr)
        if self.average is not None:
            self.average.update(self.step)

    def _held(self, control: Callable[[], bool | None]) -> bool | None:
        """Call `control`, leaving the time it takes out of the training time; returns its answer."""
        began = self.clock()
        try:
            return control()
        finally:
            self.paused_s += self.clock() - began

    def _training_time(self) -> float:
        """Seconds since `begin` spent training this run: pauses, and other runs' shares of a pass it took with
        them, are left out, so they never spend its time budget."""
        return self.clock() - self._start - self.paused_s - self.shared_s

    def run(
        self, on_row: Callable[[MetricRow], None] | None = None, stop: Callable[[], bool] | None = None
    ) -> TrainResult:
        """Train to the end (or until `stop()`), passing each metric row to `on_row`."""
        for row in self.train(stop):
            if on_row is not None:
                on_row(row)
        return self.result

    def kept_weights(self) -> dict[str, torch.Tensor]:
        """The kept model's state dict, each tensor a copy that owns its memory (the model's own are views of one
        tensor, and pickling a view writes its whole storage)."""
        return {name: t.clone() for name, t in self.model.state_dict().items()}

    @torch.no_grad()
    def _eval_logits(self, batch: Batch) -> torch.Tensor:
        """The kept model's teacher-forced logits (B, T, V) on `batch`, in eval mode."""
        was_training = self.model.training
        logits = self.model.eval()(batch.src, batch.tgt_in)
        self.model.train(was_training)
        return logits

    @torch.no_grad()
    def _solved(self) -> bool:
        """Whether greedy decoding gets the whole held-out set right: teacher-forced for a causal model
        (`HeldOutCheck`), decoded otherwise, in chunks of 250 that stop at the first miss."""
        vocab = self.vocab
        if self.model.config.causal_mask:
            was_training = self.model.training
            solved = self.held_out_check(self.model.eval())
            self.model.train(was_training)
            return solved
        return exact_match(self.model, self.valid, vocab.bos_id, vocab.eos_id, stop_at_first_miss=True) == 1.0

    def _row(self, tokens_per_s: float, elapsed: float, lr: float) -> MetricRow:
        """The metric row at this step. Its training loss is the mean of the last `eval_every` steps' losses: the steps
        since the row before, and for a last row that came sooner, as many steps before it as make up the number, so
        that the few steps of a run that stopped right after them (its last batch all right) do not drop its curve."""
        scores = evaluate(self.model, self.probe, self.vocab.bos_id, self.vocab.eos_id, decode=False)
        losses = self.step_losses[-self.train_config.eval_every :]
        row = {
            "step": self.step,
            "train_loss": sum(losses) / len(losses),
            **scores,
            "lr": lr,
            "tokens_per_s": tokens_per_s,
            "elapsed_s": elapsed,
        }
        self.history.append(row)
        self.dynamics.record(self.step)
        return row

    @torch.no_grad()
    def _snapshot_attention(self) -> None:
        if not self.train_config.record_attention:
            return
        probe = rows_of(self.valid, 0, 1)
        was_training = self.model.training
        _, maps = self.model.eval()(probe.src, probe.tgt_in, return_attention=True)
        self.model.train(was_training)
        self.attention_snapshots.append(
            {"step": self.step, "maps": {k: [m[0].cpu() for m in v] for k, v in maps.items()}}
        )


def warm_up() -> threading.Thread:
    """Pay the one-off costs of a process's first training step (a tenth of a second: PyTorch's first calls of each
    kernel) on a thread of its own, so that the first student to press Start does not wait for them."""

    def first_step() -> None:
        Trainer(ModelConfig(), DataConfig(max_len=4), TrainConfig(steps=1, early_stop=False, device="cpu")).run()

    thread = threading.Thread(target=first_step, name="warm-up", daemon=True)
    thread.start()
    atexit.register(thread.join)  # a process that ends meanwhile waits for it: torch aborts a thread killed mid-op
    return thread
