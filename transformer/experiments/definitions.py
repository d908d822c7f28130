"""Experiments: a base configuration and one switch (positional encoding, pre/post-norm, causal mask, ...) with
the values to try, each value one variant; and the ready-made experiments the Compare page offers.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..i18n import N_, Message
from ..limits import MAX_VARIANTS as MAX_VARIANTS  # re-exported for the package
from ..model import ModelConfig
from ..naming import length_span, task_label
from ..run_configs import Configs, run_configs
from ..settings import Setting, Value, compare_switches, default_run, form_defaults
from ..tasks import DataConfig
from ..training import TrainConfig

SwitchValue = str | bool | int | float

# ------------------------------------------------------------------------------------------------- switches


@dataclass(frozen=True)
class Switch:
    """One setting an experiment varies (a setting Compare may switch, `Setting.compare`): the values its words
    name, each one variant."""

    setting: Setting

    @property
    def field(self) -> str:
        return self.setting.name

    @property
    def title(self) -> str:
        return self.setting.label

    @property
    def choices(self) -> tuple[SwitchValue, ...]:
        return tuple(self.setting.words)

    def label(self, value: SwitchValue) -> str:
        """How a variant with this value is named in legends and tables."""
        return self.setting.word(value)

    def token(self, value: SwitchValue) -> str:
        """The value as written in a URL: on/off for booleans."""
        return ("on" if value else "off") if isinstance(value, bool) else str(value)

    def parse(self, text: str) -> SwitchValue:
        """The choice written as `text` in a URL; ValueError when there is none."""
        for value in self.choices:
            if self.token(value) == text.strip().lower():
                return value
        tokens = ", ".join(map(self.token, self.choices))
        raise ValueError(Message(N_("{setting} takes {tokens}"), setting=Message(self.title), tokens=tokens))


SWITCHES: dict[str, Switch] = {s.name: Switch(s) for s in compare_switches()}

# ---------------------------------------------------------------------------------------------- experiments


@dataclass(frozen=True)
class Experiment:
    """One switch with the values to compare, each value one variant with its own configs; every variant shares the
    seed and the data."""

    key: str  # a ready-made experiment's name in READY (and file name), or "custom"
    title: str
    expectation: str  # one sentence: what to expect, to check against what happens
    switch: str  # a key of SWITCHES
    values: tuple[SwitchValue, ...]
    # Each value's configs, in order: what its variant trains and is checked with. Built by `run_configs`, they
    # differ in more than the switch where a setting follows the model (a learning rate left on auto).
    variant_configs: tuple[Configs, ...]

    @classmethod
    def sharing(
        cls,
        key: str,
        title: str,
        expectation: str,
        switch: str,
        values: Sequence[SwitchValue],
        model: ModelConfig,
        data: DataConfig,
        train: TrainConfig,
    ) -> "Experiment":
        """The experiment whose variants train these configs but for the switch's field, which each variant sets to
        its value."""

        def configs(value: SwitchValue) -> Configs:
            if switch in ModelConfig.__dataclass_fields__:
                return replace(model, **{switch: value}), data, train
            return model, data, replace(train, **{switch: value})

        return cls(key, title, expectation, switch, tuple(values), tuple(map(configs, values)))

    @property
    def model(self) -> ModelConfig:
        """The first variant's model: every variant's but for what the switch sets."""
        return self.variant_configs[0][0]

    @property
    def data(self) -> DataConfig:
        """The data every variant trains on."""
        return self.variant_configs[0][1]

    @property
    def train(self) -> TrainConfig:
        """The first variant's training settings: every variant's but for what the switch sets and what follows the
        model (a learning rate left on auto)."""
        return self.variant_configs[0][2]

    @property
    def variants(self) -> dict[str, SwitchValue]:
        """Variant label -> value of the switch."""
        return {SWITCHES[self.switch].label(v): v for v in self.values}

    def summary(self) -> Message:
        """The shared settings in one line."""
        m, d, t = self.model, self.data, self.train
        stopping = Message(N_(", stopping early once solved")) if t.early_stop else ""
        if self.switch == "n_heads":
            heads = Message(N_("heads set per variant"))
        else:
            heads = Message(N_("{n} head") if m.n_heads == 1 else N_("{n} heads"), n=m.n_heads)
        if self.switch == "architecture":
            both = N_("the Transformer with {heads}, the GRUs with hidden size {d_model}")
            heads = Message(both, heads=heads, d_model=m.d_model)
        if self.switch == "n_layers":
            layers = N_("layers set per variant")
        else:
            layers = N_("{n} layer per stack") if m.n_layers == 1 else N_("{n} layers per stack")
        template = N_(
            "Task {task}, inputs of length {lengths} · d_model {d_model}, {heads}, {layers} · {steps} steps per "
            "variant{stopping} (a live rerun stops a variant after {budget:.0f} s) · seed {seed} for every variant."
        )
        shared = dict(
            task=task_label(d), lengths=length_span(d), d_model=m.d_model, steps=t.steps, budget=t.time_budget_s
        )
        layers = Message(layers, n=m.n_layers)
        return Message(template, **shared, heads=heads, layers=layers, stopping=stopping, seed=t.seed)

    def configs(self, value: SwitchValue) -> Configs:
        """The configs of the variant with this switch value."""
        return self.variant_configs[self.values.index(value)]

    def changed(self, config: str, **changes: Value) -> "Experiment":
        """The experiment with these fields of every variant's `config` ("model", "data" or "train") changed."""
        index = ("model", "data", "train").index(config)  # a Configs' order

        def change(configs: Configs) -> Configs:
            return tuple(replace(part, **changes) if i == index else part for i, part in enumerate(configs))

        return replace(self, variant_configs=tuple(map(change, self.variant_configs)))


# Compare's lesson setup, where its experiments and its custom builder start, over the settings' defaults: reverse
# of inputs of length 10, the classroom model; fixed steps (no early stopping) so curves compare, and raw weights,
# since averaging them would smooth away some of what a switch does. The batch and schedule are set here, not taken
# from the defaults, so that the shipped results stay what these settings make.
PROTOCOL = {"time_budget_s": 120.0, "early_stop": False, "eval_every": 25, "ema_decay": 0.0}  # how Compare trains
BASE = {"task": "reverse", "min_len": 10, "max_len": 10, "steps": 600, **PROTOCOL}
BASE |= {"batch_size": 128, "lr": 5e-3, "warmup": 100, "schedule": "noam"}
CUSTOM = "custom"


def lesson_settings() -> dict[str, Value]:
    """Compare's lesson setup: every setting of the Train form at its default, then BASE."""
    return {**form_defaults(), **BASE}


def task_setup(task: str) -> dict[str, Value]:
    """Where a custom experiment on `task` starts: the lesson setup for its task, else the task's default run (its
    lengths, symbols, model and schedule: what solves it) trained as Compare trains (PROTOCOL). ValueError for an
    unknown task."""
    return lesson_settings() if task == BASE["task"] else {**default_run(task), **PROTOCOL}


def experiment_configs(**changes: Value) -> Configs:
    """The configs of one variant: Compare's lesson setup with `changes` (by setting name), built by `run_configs`
    as every run's are, so within its bounds and memory."""
    return run_configs({**lesson_settings(), **changes})


def _ready(key: str, title: str, expectation: str, switch: str, values: tuple, **changes: SwitchValue) -> Experiment:
    variant_configs = tuple(experiment_configs(**changes, **{switch: value}) for value in values)
    return Experiment(key, title, expectation, switch, values, variant_configs)


READY: dict[str, Experiment] = {
    e.key: e
    for e in [
        _ready(
            "no-positional-encoding",
            N_("Reverse without positional encoding"),
            N_(
                "Without positional encoding the encoder cannot tell source positions apart, so the model never learns "
                "to reverse: exact-match stays at 0% while the loss stalls above 1."
            ),
            "positional",
            ("sinusoidal", "none"),
        ),
        _ready(
            "no-causal-mask",
            N_("Train without the causal mask"),
            N_(
                "Without the causal mask the decoder reads the answer off its own input while training: the loss falls "
                "to near zero and teacher-forced accuracy to 100%, but greedy decoding, which has no future to peek "
                "at, gets far fewer sequences right."
            ),
            "causal_mask",
            (True, False),
        ),
        _ready(
            "post-vs-pre-norm",
            N_("Post-norm vs pre-norm"),
            N_(
                "At one layer both placements of LayerNorm learn reverse at about the same pace: the stability that "
                "made later models switch from the paper's post-norm to pre-norm matters for deep stacks, not for this "
                "one."
            ),
            "norm_first",
            (False, True),
        ),
        _ready(
            "score-scaling-large-dk",
            N_("Score scaling at large d_k"),
            N_(
                "With one head of d_k = 64, unscaled dot products are about 8 times larger and the softmax saturates, "
                "so its gradients are tiny: the unscaled model starts slower (its held-out loss stays higher for the "
                "first hundred steps), and its head ends up pointing at a single source token. Both solve reverse in "
                "the end."
            ),
            "scale_scores",
            (True, False),
            d_model=64,
            n_heads=1,
            d_ff=128,
        ),
        _ready(
            "label-smoothing",
            N_("Label smoothing"),
            N_(
                "Label smoothing (the paper uses 0.1) puts a floor under the training loss (about 0.5 here), yet the "
                "model solves the task just as fast."
            ),
            "label_smoothing",
            (0.0, 0.1),
            steps=300,
        ),
        _ready(
            "warm-up",
            N_("Warm-up"),
            N_(
                "Without warm-up the full learning rate hits the random model at step one (and, with nothing to decay "
                "from, stays there): on this small clipped model it learns faster at first, then hovers just short of "
                "100% while the warmed-up run settles at 100%."
            ),
            "warmup",
            (100, 0),
            steps=300,
        ),
        _ready(
            "heads",
            N_("One head or four"),
            N_(
                "Reverse needs one alignment, which one head learns as fast as four: watch its single head sharpen on "
                "the anti-diagonal while four heads each hold a blurrier share."
            ),
            "n_heads",
            (1, 4),
            steps=300,
        ),
        _ready(
            "layers",
            N_("One layer or two"),
            N_(
                "A second layer per stack doubles the cost of every step and, on a task this small, buys nothing: it "
                "solves reverse later, in more than twice the time."
            ),
            "n_layers",
            (1, 2),
            steps=300,
        ),
        _ready(
            "weight-averaging",
            N_("Raw or averaged weights"),
            N_(
                "Both variants train the very same weights (their training-loss curves coincide); only what is scored "
                "differs. On reverse at lengths 1-16 and a high learning rate the raw weights jitter from step to "
                "step, so their exact-match stalls around 90% and hovers there, while their running average climbs "
                "smoothly and holds 100% from about step 500."
            ),
            "ema_decay",
            (0.0, 0.99),
            steps=800,
            min_len=1,
            max_len=16,
            lr=0.01,
            n_layers=2,
            n_heads=2,
        ),
        _ready(
            "recurrent-baseline",
            N_("The recurrent baseline"),
            N_(
                "The GRU encoder-decoder of 2014 squeezes the whole source into one vector: it gets short inputs right "
                "and loses long ones, even among the lengths it trained on. With additive attention (Bahdanau et al.) "
                "its decoder reads the source again at every step: on a task this small it solves reverse sooner than "
                "this one-layer Transformer and holds a length past the longest it trained on. But each of its steps "
                "waits for the one before, so it trains fewer steps per second: that, on long sequences and parallel "
                "hardware, is what the Transformer won."
            ),
            "architecture",
            ("transformer", "gru", "gru-attention"),
            steps=800,
            min_len=1,
        ),
    ]
}


def custom_text(switch: Switch, values: Sequence[SwitchValue], task: str) -> tuple[str, str]:
    """Title and expectation of a custom experiment."""
    labels = [Message(switch.label(value)) for value in values]
    versus = labels[0]
    for label in labels[1:]:
        versus = Message(N_("{first} vs {second}"), first=versus, second=label)
    title = Message(N_("{setting}: {values} on {task}"), setting=Message(switch.title), values=versus, task=task)
    return title, N_("Your own experiment: write down what you expect before you run it.")
