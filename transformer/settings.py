"""The settings of a training run, each described once: its kind, bounds, choices and default, its label, help and
the words for its values, the config field it sets, its command-line flag, and where the Train form, a class and
Compare use it. (The server's own settings are another thing: `serving.settings.ServerSettings`.)

Every page, the classroom, the command line, run summaries, checkpoints and Compare read a setting from here;
`run_configs` turns settings into a run's configs. A number's two bounds are written in its entry: the form's
(`bounds`) and, where a run on the shared server is held to one, the run's (`run_bounds`). `RUN_LIMITS` and
`TRAIN_FORM_LIMITS` are derived from them here, not in `limits`, which imports nothing of the package while this
module imports the configs (which import `limits`): so adding a setting is one entry.

Readers look settings up through the functions below (`setting`, `on_form`, ...), at call time, so a test may put
a copy of `SETTINGS` with a setting more in its place.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .i18n import N_, Message, joined
from .limits import MAX_CLI_STEPS, MAX_LABEL_CHARS, MAX_SEED, MAX_TIME_BUDGET_S
from .model import ModelConfig
from .tasks import DataConfig, get_task, task_names
from .training import TrainConfig

Value = int | float | bool | str | None  # None only for a setting whose default is None: the run picks it
Kind = Literal["int", "float", "bool", "choice"]
CONFIGS = {"data": DataConfig, "model": ModelConfig, "train": TrainConfig}  # what `Setting.configs` names


@dataclass(frozen=True)
class FormPlace:
    """Where and how the Train form draws a setting."""

    row: int  # of the form's rows (ui/train_form.py), top to bottom
    column: int
    key: str  # the widget's key (tests and the browser tests address it: `.st-key-train_seed`)
    radio: bool = False  # a choice or a bool as horizontal radio buttons (else a select box or a toggle)
    style: Mapping[str, Any] = field(default_factory=dict)  # a number input's step, format or placeholder


@dataclass(frozen=True)
class Setting:
    """One setting of a run, described once."""

    name: str  # the config field it sets
    kind: Kind
    configs: tuple[str, ...]  # which configs it sets: "data", "model", "train" (the seed sets two)
    label: str
    help: str
    default: Value  # where the Train form, a class and Compare (but for its BASE) start; None: the run picks it
    words: Mapping[Value, str] = field(default_factory=dict)  # a value -> how it is said: one wording, everywhere
    choices: tuple[Value, ...] = ()  # a choice's values (a bool's: False, True)
    bounds: tuple[float, float] | None = None  # a number's, on the Train form and in a class (TRAIN_FORM_LIMITS)
    run_bounds: tuple[float, float] | None = None  # a number's for any run on the shared server (RUN_LIMITS), if held
    flag: str | None = None  # on the command line, e.g. "--heads"; None: not there
    off_flag: str | None = None  # a bool's flag that turns it off (default: --no-<flag>)
    flag_bounds: tuple[float, float] | None = None  # a number's bounds on the command line (None: the config's)
    flag_choices: bool = True  # False: the command line takes any text (device: "cuda:1" too)
    form: FormPlace | None = None  # on the Train form, so on Teacher and in Compare's builder; None: not there
    class_open: bool = False  # a teacher may let students change it (every other form setting is locked in a class)
    groups: tuple[Value, ...] = ()  # the two values a class's groups may differ in, the paper's first
    compare: bool = False  # Compare may switch it between the values `words` names
    every_step_help: str | None = None  # its help where runs never stop early (Compare), where `help` would mislead
    summary: str | None = None  # how a run's summary says a number of it that `words` does not: "batch {value}"

    def help_for(self, early_stop: bool) -> str:
        """Its help where runs stop early once solved (`early_stop`) or always train every step."""
        return self.help if early_stop or self.every_step_help is None else self.every_step_help

    @property
    def options(self) -> tuple[Value, ...]:
        """The values a choice or a bool may take."""
        return self.choices or ((False, True) if self.kind == "bool" else ())

    def word(self, value: Value) -> str:
        """How `value` is said on every page, in legends, group labels and run summaries."""
        return self.words.get(value, str(value)) if value is not None else N_("auto")

    def check(self, value: Any) -> Value:
        """`value` if it is a valid value of this setting within its bounds, else ValueError saying what it must be
        (the type counts: True is no number and 1 no bool)."""
        if value is None and self.default is None:
            return None
        if self.options:
            if not any(type(value) is type(option) and value == option for option in self.options):
                raise ValueError(f"{self.name} must be one of {', '.join(map(str, self.options))}")
            return value
        low, high = self.bounds or (-float("inf"), float("inf"))
        kinds = (int, float) if self.kind == "float" else (int,)
        if type(value) not in kinds or not low <= value <= high:  # bool is not int here; NaN fails the bounds
            kind = "a number" if self.kind == "float" else "a whole number"
            raise ValueError(f"{self.name} must be {kind} in {low}..{high}")
        return float(value) if self.kind == "float" else value


def setting(name: str) -> Setting:
    """The setting called `name`; ValueError if there is none."""
    if not isinstance(name, str) or name not in SETTINGS:
        raise ValueError(f"{str(name)[:MAX_LABEL_CHARS]!r} is not a setting of a run")
    return SETTINGS[name]


def on_form() -> list[Setting]:
    """The Train form's settings, in drawing order: those a class's assignment may preset."""
    return [s for s in SETTINGS.values() if s.form is not None]


def form_defaults() -> dict[str, Value]:
    """Where the Train form (and a class) starts: every form setting's default."""
    return {s.name: s.default for s in on_form()}


def default_run(task: str) -> dict[str, Value]:
    """The Train form's settings for `task`'s default run: every form setting's default, then the task's own
    (`Task.default_run`). ValueError for an unknown task."""
    return {**form_defaults(), **get_task(task).default_run}


def set_by_pairs() -> list[Setting]:
    """The form's settings that a task from examples sets from its pairs, so that a run of it ignores them: those of
    its task and data but the seed (`run_configs`)."""
    return [s for s in on_form() if s.configs == ("data",)]


def class_open() -> list[Setting]:
    """The settings a teacher may let students change."""
    return [s for s in on_form() if s.class_open]


def group_splits() -> list[Setting]:
    """The settings a class's groups may differ in."""
    return [s for s in on_form() if s.groups]


def compare_switches() -> list[Setting]:
    """The settings Compare may switch."""
    return [s for s in SETTINGS.values() if s.compare]


def config_default(s: Setting) -> Value:
    """The default of the config field `s` sets (the command line starts there; None where the run picks it)."""
    return None if s.default is None else getattr(CONFIGS[s.configs[0]](), s.name)


def config_defaults(config: str) -> dict[str, Value]:
    """The config ("data", "model" or "train") defaults of the fields settings describe: what a checkpoint saved
    before a setting existed reads as for it (a new setting's config default is how runs went without it)."""
    made = CONFIGS[config]()
    return {s.name: getattr(made, s.name) for s in SETTINGS.values() if config in s.configs}


def check_limits(values: Mapping, skip: Collection[str] = ()) -> None:
    """ValueError unless every setting with run bounds that `values` holds (and `skip` does not name) is a number
    within them."""
    for s in SETTINGS.values():
        value = values.get(s.name)
        if s.run_bounds and s.name in values and s.name not in skip:
            low, high = s.run_bounds
            if not (type(value) in (int, float) and low <= value <= high):
                template = N_("{name} must be between {low} and {high}, got {got}")
                raise ValueError(Message(template, name=s.name, low=low, high=high, got=str(value)[:20]))


def _number(name: str, kind: Kind, configs: str, label: str, help: str, default: Value, **more: Any) -> Setting:
    """A number setting of one config (`more` gives its bounds)."""
    return Setting(name, kind, (configs,), label, help, default, **more)


def _at(row: int, column: int, key: str, radio: bool = False, **style: Any) -> FormPlace:
    return FormPlace(row, column, key, radio, style)


_MODEL, _TRAIN = ModelConfig(), TrainConfig()
_TASK_HELP = Message(
    N_("The function from input sequence to output sequence the model must learn:\n\n{tasks}"),
    tasks=joined(
        (Message("- **{name}**: {what}", name=n, what=Message(get_task(n).description)) for n in task_names()), "\n"
    ),
)
_LR_HELP = Message(
    N_(
        "The learning rate at the end of warm-up. Empty: picked for the model's size, {lr:g} for the default model "
        "and {lr:g} × 32 / (d_model × layers) for bigger ones (0.0025 at d_model 128 with 3 layers), since wide, "
        "deep models learn nothing at high rates. The run's summary shows the rate it used."
    ),
    lr=_TRAIN.lr,
)
SETTINGS: dict[str, Setting] = {s.name: s for s in [  # in the Train form's drawing order, then the others
    Setting("task", "choice", ("data",), N_("Task"), _TASK_HELP, "reverse", choices=tuple(task_names()), flag="--task",
            form=_at(0, 0, "train_task")),
    _number("min_len", "int", "data", N_("Shortest input"),
            N_("Input lengths are drawn uniformly between the shortest and the longest."), 6, bounds=(1, 24),
            flag="--min-len", form=_at(1, 0, "train_min_len")),
    _number("max_len", "int", "data", N_("Longest input"), N_("Longer inputs are harder and slower to learn."), 8,
            bounds=(1, 24), flag="--max-len", form=_at(1, 1, "train_max_len")),
    _number("n_symbols", "int", "data", N_("Symbols"),
            N_("How many different symbols (0, 1, 2, ...) sequences use. The vocabulary is 3 tokens larger: PAD, "
               "BOS and EOS come on top. A gallery task says what it counts: the number base of add, the nouns of "
               "translate, the letters of count and caesar, the bracket symbols of brackets."), 10,
            bounds=(2, 30), flag="--n-symbols", form=_at(1, 2, "train_symbols")),
    Setting("seed", "int", ("data", "train"), N_("Seed"), N_("Same seed, same settings: same data, same starting "
            "weights, same run."), _TRAIN.seed, bounds=(0, 10_000), flag="--seed",
            flag_bounds=(0, MAX_SEED), form=_at(1, 3, "train_seed")),
    Setting("positional", "choice", ("model",), N_("Positional encoding"),
            N_("How the model knows token order: the paper's sine waves, a learned table, or nothing (try reverse "
               "without it)."), _MODEL.positional, {"sinusoidal": N_("sinusoidal PE"), "learned": N_("learned PE"),
            "none": N_("no PE")}, ("sinusoidal", "learned", "none"), flag="--positional",
            form=_at(2, 0, "train_positional", radio=True), groups=("sinusoidal", "none"), compare=True),
    Setting("norm_first", "bool", ("model",), N_("LayerNorm"),
            N_("Post-norm, the paper's: LayerNorm(x + Sublayer(x)); pre-norm: x + Sublayer(LayerNorm(x))."),
            _MODEL.norm_first, {False: N_("post-norm"), True: N_("pre-norm")}, flag="--norm-first",
            off_flag="--post-norm", form=_at(2, 1, "train_norm", radio=True), groups=(False, True), compare=True),
    Setting("causal_mask", "bool", ("model",), N_("Causal mask"),
            N_("The decoder's look-ahead mask. Off lets the decoder peek at the answer during training: watch "
               "greedy decoding fail."), _MODEL.causal_mask, {True: N_("causal mask"), False: N_("no causal mask")},
            flag="--causal-mask", form=_at(2, 2, "train_causal"), groups=(True, False), compare=True),
    Setting("scale_scores", "bool", ("model",), N_("Scale scores by 1/√d_k"),
            N_("Off drops the scaling of QKᵀ, so softmax saturates as d_k grows."), _MODEL.scale_scores,
            {True: N_("scaled scores"), False: N_("unscaled scores")}, flag="--scale-scores",
            form=_at(2, 2, "train_scale"), groups=(True, False), compare=True),
    _number("d_model", "int", "model", "d_model", N_("Width of every token vector (the paper: 512)."),
            _MODEL.d_model, bounds=(8, 128), run_bounds=(8, 256), flag="--d-model", form=_at(3, 0, "train_d_model"),
            class_open=True),
    _number("n_heads", "int", "model", N_("Heads"), N_("Attention heads per layer; d_model must be divisible by it "
            "(the paper: 8)."), _MODEL.n_heads, words={1: N_("1 head"), 2: N_("2 heads"), 4: N_("4 heads"),
            8: N_("8 heads")}, bounds=(1, 8), run_bounds=(1, 16), flag="--heads", form=_at(3, 0, "train_heads"),
            class_open=True, compare=True),
    _number("n_layers", "int", "model", N_("Layers per stack"), N_("Encoder layers, and as many decoder layers "
            "(the paper: 6)."), _MODEL.n_layers, words={1: N_("1 layer"), 2: N_("2 layers"), 3: N_("3 layers")},
            bounds=(1, 3), run_bounds=(1, 4), flag="--layers", form=_at(3, 0, "train_layers"), class_open=True,
            compare=True),
    _number("d_ff", "int", "model", "d_ff", N_("Hidden width of the position-wise feed-forward network (the "
            "paper: 2048)."), _MODEL.d_ff, bounds=(16, 512), run_bounds=(8, 1024), flag="--d-ff",
            form=_at(3, 0, "train_d_ff"), summary=N_("d_ff {value}")),
    _number("dropout", "float", "model", N_("Dropout"), N_("Fraction of activations zeroed during training (the "
            "paper: 0.1)."), _MODEL.dropout, bounds=(0.0, 0.5), flag="--dropout",
            form=_at(3, 0, "train_dropout", step=0.05), class_open=True, summary=N_("dropout {value}")),
    _number("lr", "float", "train", N_("Peak learning rate"), _LR_HELP, None, bounds=(1e-4, 0.05), flag="--lr",
            class_open=True,
            form=_at(3, 1, "train_lr", step=1e-3, format="%g", placeholder=N_("auto"))),  # "0.01": no zeros to cut
    _number("warmup", "int", "train", N_("Warm-up steps"), N_("Steps over which the learning rate grows linearly "
            "from 0 to its peak (the paper: 4000)."), _TRAIN.warmup, words={0: N_("no warm-up"),
            50: N_("warm-up 50"), 100: N_("warm-up 100"), 400: N_("warm-up 400")}, bounds=(0, 1000), flag="--warmup",
            form=_at(3, 1, "train_warmup"), class_open=True, compare=True, summary=N_("warm-up {value}")),
    Setting("schedule", "choice", ("train",), N_("After warm-up"),
            N_("What the learning rate does once warm-up is over."), _TRAIN.schedule,
            {"noam": N_("decay as 1/√step (paper)"), "constant": N_("stay at the peak")}, ("noam", "constant"),
            flag="--schedule", form=_at(3, 1, "train_schedule")),
    _number("batch_size", "int", "train", N_("Batch size"), N_("Sequences per training step."), _TRAIN.batch_size,
            bounds=(8, 256), run_bounds=(1, 512), flag="--batch-size", form=_at(3, 1, "train_batch"), class_open=True,
            summary=N_("batch {value}")),
    _number("label_smoothing", "float", "train", N_("Label smoothing"), N_("The loss's target mixes in this much "
            "of a uniform distribution over the vocabulary instead of all on the right token (the paper: 0.1)."),
            _TRAIN.label_smoothing, words={0.0: N_("no smoothing"), 0.1: N_("smoothing 0.1"),
            0.2: N_("smoothing 0.2")}, bounds=(0.0, 0.5), flag="--label-smoothing",
            form=_at(3, 1, "train_label_smoothing", step=0.05), groups=(0.0, 0.1), compare=True,
            summary=N_("smoothing {value}")),
    _number("ema_decay", "float", "train", N_("Weight averaging (EMA decay)"), N_("The model you get is a running "
            "average of the trained weights, which jitter from step to step at a high learning rate. 0 keeps the "
            "raw weights."), _TRAIN.ema_decay, words={0.0: N_("raw weights"),
            0.99: N_("averaged weights (EMA 0.99)")}, bounds=(0.0, 0.999), flag="--ema-decay",
            form=_at(3, 1, "train_ema_decay", step=0.01, format="%.3f"), compare=True,
            summary=N_("EMA {value}")),
    _number("steps", "int", "train", N_("Steps (at most)"), N_("Training ends here, or earlier once every "
            "held-out sequence is right."), _TRAIN.steps, bounds=(10, 5000), run_bounds=(1, 10_000), flag="--steps",
            flag_bounds=(1, MAX_CLI_STEPS), form=_at(3, 2, "train_steps"), every_step_help=N_("Training runs this "
            "many steps, unless its time budget runs out first.")),
    _number("time_budget_s", "float", "train", N_("Time budget (s)"), N_("Training ends after this many seconds "
            "of training (pauses not counted) whatever happens. On one CPU thread, as the lab trains, they are the "
            "thread's own seconds: a busy server does not spend them."), 60.0, bounds=(5, 120), run_bounds=(1, 300),
            flag="--time-budget", flag_bounds=(0, MAX_TIME_BUDGET_S), form=_at(3, 2, "train_time_budget")),
    Setting("device", "choice", ("train",), N_("Device"), N_("Where to compute; auto takes a GPU when there is "
            "one."), "auto", choices=("auto", "cpu", "cuda", "mps"), flag="--device", flag_choices=False,
            form=_at(3, 2, "train_device")),
    # Not on the Train form: the command line's, and Compare's architecture.
    Setting("n_valid", "int", ("data",), N_("Held-out sequences"), N_("How many sequences are held out of "
            "training."), DataConfig.n_valid, flag="--n-valid"),
    Setting("tie_weights", "bool", ("model",), N_("Tied weights"), N_("The generator shares the embedding matrix "
            "(the paper's)."), _MODEL.tie_weights, {False: N_("untied"), True: N_("tied")}, flag="--tie-weights"),
    Setting("architecture", "choice", ("model",), N_("Architecture"), N_("The Transformer, or the recurrent "
            "baseline without or with attention."), _MODEL.architecture, {"transformer": N_("Transformer"),
            "gru": N_("GRU encoder-decoder"), "gru-attention": N_("GRU + additive attention")},
            ("transformer", "gru", "gru-attention"), compare=True),
    Setting("clip_grad", "float", ("train",), N_("Gradient clipping"), N_("The largest gradient norm, 0 = off."),
            _TRAIN.clip_grad, flag="--clip-grad"),
    Setting("early_stop", "bool", ("train",), N_("Early stop"), N_("Stop once every held-out sequence is right."),
            _TRAIN.early_stop, {True: N_("stop once solved"), False: N_("train every step")}, flag="--early-stop"),
    Setting("eval_every", "int", ("train",), N_("Steps per metric row"), N_("Steps between metric rows (progress "
            "lines); a run on the server picks them for the model's size."), _TRAIN.eval_every,
            flag="--eval-every"),
]}  # fmt: skip
# Each setting's bounds by name, for the modules that bound one setting (a class's records, the tests, benchmarks).
RUN_LIMITS = {s.name: s.run_bounds for s in SETTINGS.values() if s.run_bounds}
TRAIN_FORM_LIMITS = {s.name: s.bounds for s in on_form() if s.bounds}
