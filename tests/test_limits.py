"""The cost bound of probing requests: the multiply-add count against PyTorch's own count, and the pages' use of it."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import transformer.limits as limits
import transformer.settings as settings
from transformer.lengths import inputs_within_budget
from transformer.limits import MAX_PROBE_COST, check_probe_cost, forward_cost
from transformer.model import ModelConfig, Transformer
from transformer.tasks import DataConfig
from transformer.training import TrainConfig


@pytest.mark.parametrize(
    "config, n, length",
    [
        (ModelConfig(), 4, 10),
        (ModelConfig(d_model=64, n_heads=4, d_ff=256, n_layers=3, vocab_size=40), 2, 30),
    ],
)
def test_forward_cost_is_what_pytorch_counts_for_a_teacher_forced_pass(config, n, length):
    model = Transformer(config).eval()
    src, tgt = torch.randint(3, config.vocab_size, (n, length)), torch.randint(3, config.vocab_size, (n, length + 1))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(src, tgt, return_attention=True)  # the explicit path, which the counter sees op by op
    counted = counter.get_total_flops() / 2  # a multiply-add is two flops
    assert 0.8 * counted <= forward_cost(config, n, length) <= 1.25 * counted


def test_a_large_model_tests_fewer_inputs_per_length_and_none_past_the_budget():
    small, large = ModelConfig(), ModelConfig(d_model=256, n_heads=8, d_ff=1024, n_layers=9, max_len=256)
    assert inputs_within_budget(small, range(1, 64), 100) == 100
    fewer = inputs_within_budget(large, range(1, 11), 100)
    assert 0 < fewer < 100
    assert sum(forward_cost(large, fewer, length + 4) for length in range(1, 11)) <= MAX_PROBE_COST
    assert inputs_within_budget(large, range(1, 256), 100) == 0
    with pytest.raises(ValueError, match="billion multiply-adds"):
        check_probe_cost(large, 1000, 255)
    check_probe_cost(small, 8, 64, passes=3)  # the Decoding page's widest beam on a classroom model


@pytest.mark.parametrize(
    "make, field, bound",
    [
        (DataConfig, "max_len", limits.MAX_SEQ_LEN),
        (DataConfig, "n_valid", limits.MAX_VALID),
        (DataConfig, "seed", limits.MAX_SEED),
        (TrainConfig, "batch_size", limits.MAX_BATCH),
        (TrainConfig, "eval_size", limits.MAX_BATCH),
        (TrainConfig, "seed", limits.MAX_SEED),
    ],
)
def test_tasks_and_training_accept_a_limit_and_refuse_one_past_it(make, field, bound):
    make(**{field: bound})
    with pytest.raises(ValueError, match=field):
        make(**{field: bound + 1})


@pytest.mark.parametrize("name", settings.RUN_LIMITS)
def test_the_train_forms_bounds_lie_within_a_runs(name):
    low, high = settings.TRAIN_FORM_LIMITS[name]
    run_low, run_high = settings.RUN_LIMITS[name]
    assert run_low <= low <= high <= run_high


def test_the_decoding_pages_temperatures_lie_within_what_sampling_accepts():
    low, high = limits.SAMPLING_TEMPERATURES
    assert low <= limits.DECODING_TEMPERATURES[0] <= limits.DECODING_TEMPERATURES[1] <= high
