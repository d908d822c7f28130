"""The activation-memory bound of a run on the shared server: the Train form, a class's settings and Compare's links
are all checked against MAX_RUN_TRAIN_BYTES before anything is built."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from transformer import settings as spec
from transformer.classroom.assignment import Assignment, Group
from transformer.compare_state import CompareState, experiment_for
from transformer.experiments.definitions import READY
from transformer.limits import DECODE_ROWS, MAX_RUN_TRAIN_BYTES, train_activation_bytes
from transformer.run_configs import run_configs
from ui.train_form import form_settings

FORM = {s.form.key: s.default for s in spec.on_form()}
LARGEST = {  # the form's largest model on its longest inputs
    "train_d_model": spec.TRAIN_FORM_LIMITS["d_model"][1],
    "train_heads": spec.TRAIN_FORM_LIMITS["n_heads"][1],
    "train_layers": spec.TRAIN_FORM_LIMITS["n_layers"][1],
    "train_d_ff": spec.TRAIN_FORM_LIMITS["d_ff"][1],
    "train_max_len": spec.TRAIN_FORM_LIMITS["max_len"][1],
    "train_symbols": spec.TRAIN_FORM_LIMITS["n_symbols"][1],
}


def test_the_form_refuses_a_run_past_the_bound_naming_the_settings_to_lower():
    run_configs(form_settings(FORM))  # the defaults train
    with pytest.raises(ValueError, match=r"lower the batch size \(to 33 at most with these settings\), the longest"):
        run_configs(form_settings({**FORM, **LARGEST, "train_batch": spec.TRAIN_FORM_LIMITS["batch_size"][1]}))
    model, data, train = run_configs(form_settings({**FORM, **LARGEST, "train_batch": 33}))
    assert train_activation_bytes(model, 33, data.max_len) <= MAX_RUN_TRAIN_BYTES
    assert train_activation_bytes(model, 34, data.max_len) > MAX_RUN_TRAIN_BYTES


def test_a_class_cannot_be_set_up_past_the_bound_nor_a_student_go_past_it():
    big = {"d_model": 128, "n_heads": 8, "n_layers": 3, "d_ff": 512, "max_len": 24}
    with pytest.raises(ValueError, match="MB a run may use on this shared server"):
        Assignment(preset={**big, "batch_size": 256})
    with pytest.raises(ValueError, match="MB a run may use on this shared server"):
        Assignment(preset={**big, "batch_size": 32}, setting="batch_size", groups=(Group("a", 8), Group("b", 64)))
    assignment = Assignment(preset={**big, "batch_size": 32}, open=frozenset({"batch_size"}))
    with pytest.raises(ValueError, match="MB a run may use on this shared server"):
        run_configs(assignment.settings(None, 1, {"batch_size": 256}))


def test_every_compare_experiment_a_link_can_ask_for_is_within_the_bound():
    """Compare's runs do not pass through the form: each variant of a custom experiment is built by run_configs,
    which checks it (the switch's value too, not only the first variant's), and ready-made ones fit."""
    largest = {
        "max_len": spec.TRAIN_FORM_LIMITS["max_len"][1],
        "d_model": spec.TRAIN_FORM_LIMITS["d_model"][1],
        "n_layers": spec.TRAIN_FORM_LIMITS["n_layers"][1],
    }
    with pytest.raises(ValueError, match="MB a run may use on this shared server: lower the batch size"):
        experiment_for(CompareState("custom", largest, "n_heads", (1, 8)))
    with pytest.raises(ValueError, match="MB a run may use on this shared server"):  # only its last variant is too big
        experiment_for(CompareState("custom", {**largest, "n_layers": 1, "batch_size": 64}, "n_layers", (1, 3)))
    fits = CompareState("custom", {**largest, "d_model": 32, "max_len": 16}, "n_heads", (1, 8))
    for experiment in [experiment_for(fits), *READY.values()]:
        for value in experiment.values:
            model, data, train = experiment.configs(value)
            assert train_activation_bytes(model, train.batch_size, data.max_len) <= MAX_RUN_TRAIN_BYTES, experiment.key


EVAL_PEAK = """
import sys, torch
from transformer.model import ModelConfig, Transformer
from transformer.tasks import DataConfig, TaskData, Batch
from transformer.evaluation import evaluate
data = TaskData(DataConfig(task="reverse", min_len=1, max_len=24, n_symbols=30))
model = Transformer(ModelConfig(vocab_size=33, d_model=128, n_heads=8, n_layers=3, d_ff=512)).eval()
n = int(sys.argv[1])
rows = Batch(data.valid.src[:n], data.valid.tgt_in[:n], data.valid.tgt_out[:n], 0)
status = lambda: next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
before = status()
evaluate(model, rows, data.vocab.bos_id, data.vocab.eos_id, decode=False)
print(status() - before)
"""


@pytest.mark.heavy
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's peak resident set")
def test_the_held_out_evaluation_takes_no_more_memory_for_more_sequences():
    """A worker scores 1,000 held-out sequences at every run's end: in one pass of the Train form's largest model
    they take 3-4 times what 250 sequences do; in passes of DECODE_ROWS they take what one pass of 250 takes, give
    or take the allocator (half as much again). So that the peak is the memory in use, whatever the machine's load:
    one torch thread, one glibc arena, and every allocation over 64 KB mapped and unmapped on its own (a fixed mmap
    threshold: glibc's own rises as blocks are freed, keeping freed memory by chance of the timing)."""

    def peak_kb(n: int) -> int:
        env = {**os.environ, "MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1"}
        command = [sys.executable, "-c", EVAL_PEAK, str(n)]
        done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        return int(done.stdout)

    assert peak_kb(1000) < 1.5 * peak_kb(DECODE_ROWS)
