"""The recurrent baseline: its GRU against torch.nn.GRU on copied weights, its additive attention, and the
interface it shares with the Transformer (cached decoding, greedy decoding, training, checkpoints)."""

import dataclasses
import functools
import json
from dataclasses import replace

import pytest
import torch
import torch.nn as nn
from streamlit.testing.v1 import AppTest
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from tests.helpers import wait_until
from tests.helpers.apptest import chart
from transformer.checkpoint import CheckpointError, checkpoint_bytes, load_checkpoint
from transformer.decoding import greedy_decode
from transformer.experiments.definitions import CUSTOM, READY, Experiment
from transformer.experiments.files import experiment_from_json, experiment_to_json, load_shipped
from transformer.experiments.runs import LiveExperiment, run_experiment, summary_table
from transformer.model import ModelConfig, Transformer
from transformer.recurrent import AdditiveAttention, GRUCell, RNNEncoderDecoder, build_model, unroll
from transformer.serving import RunRegistry, ServerSettings
from transformer.tasks import DataConfig, TaskData
from transformer.training import TrainConfig, Trainer

D = 8
# float64 throughout the comparisons with nn.GRU: the two compute the same sums in a different order, so in float32
# they would differ by rounding (about 1e-7 per step, growing with the steps); in float64 by about 1e-16.
EXACT = dict(atol=1e-12, rtol=0)
ARCHITECTURES = ("gru", "gru-attention")


def ids(rows: list[list[int]], pad: int = 0) -> torch.Tensor:
    """Token rows right-padded to a (B, T) tensor."""
    width = max(map(len, rows))
    return torch.tensor([r + [pad] * (width - len(r)) for r in rows])


def copy_direction(cell: GRUCell, ref: nn.GRU, suffix: str = "") -> None:
    """Put `cell`'s weights into one direction of layer 0 of `ref` (suffix "_reverse" for the backward one)."""
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(ref, f"{name}_l0{suffix}").copy_(getattr(cell, name))


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


def random_cell(input_size: int, hidden_size: int) -> GRUCell:
    cell = GRUCell(input_size, hidden_size).double()
    for p in cell.parameters():  # biases too: they start at zero, which would hide a bias in the wrong gate
        nn.init.uniform_(p, -0.5, 0.5)
    return cell


def test_gru_cell_unrolled_equals_nn_gru_step_by_step():
    cell, ref = random_cell(5, D), nn.GRU(5, D, batch_first=True).double()
    copy_direction(cell, ref)
    x = torch.randn(3, 7, 5, dtype=torch.float64)
    want, _ = ref(x)  # (B, S, n): nn.GRU's state after each step
    h = torch.zeros(3, D, dtype=torch.float64)
    for t in range(7):
        h = cell(x[:, t], h)
        torch.testing.assert_close(h, want[:, t], **EXACT)
    torch.testing.assert_close(unroll(cell, x, torch.ones(3, 7, dtype=torch.bool)), want, **EXACT)


def test_encoder_equals_bidirectional_nn_gru_on_padded_sources():
    model = RNNEncoderDecoder(ModelConfig(d_model=D, architecture="gru")).double()
    ref = nn.GRU(D, D, batch_first=True, bidirectional=True).double()
    copy_direction(model.encoder.forward_rnn, ref)
    copy_direction(model.encoder.backward_rnn, ref, "_reverse")
    src = ids([[5, 6, 7, 8, 9], [4, 5, 6], [3]])
    lengths = torch.tensor([5, 3, 1])
    annotations, _ = model.encode(src, model.src_mask(src))  # (B, S, 2n)
    packed = pack_padded_sequence(model.embed(src), lengths, batch_first=True, enforce_sorted=False)
    out, h_n = ref(packed)
    want, _ = pad_packed_sequence(out, batch_first=True)  # (B, S, 2n), zero past each length
    for row, n in enumerate(lengths.tolist()):
        torch.testing.assert_close(annotations[row, :n], want[row, :n], **EXACT)
    # The summary the decoder reads at the ends of the annotations: →h of the last real token, ←h of the first.
    torch.testing.assert_close(annotations[:, -1, :D], h_n[0], **EXACT)
    torch.testing.assert_close(annotations[:, 0, D:], h_n[1], **EXACT)


def test_additive_attention_weights_sum_to_one_over_real_tokens_and_ignore_padding():
    attention = AdditiveAttention(D, 2 * D, D)
    s, annotations = torch.randn(3, D), torch.randn(3, 5, 2 * D)
    mask = ids([[1] * 5, [1] * 3, [1]]).bool()  # (B, S) True at real tokens
    context, alpha = attention(s, attention.keys(annotations), annotations, mask)
    torch.testing.assert_close(alpha.sum(dim=-1), torch.ones(3))  # float32 rounding of 5 terms: the default tol
    assert bool((alpha[~mask] == 0).all()) and bool((alpha[mask] > 0).all())
    e = torch.stack([attention.v_a(torch.tanh(attention.W_a(s) + attention.U_a(annotations[:, j]))) for j in range(5)])
    want = e.squeeze(-1).T.masked_fill(~mask, float("-inf")).softmax(dim=-1)  # e_ij one j at a time, as in the paper
    torch.testing.assert_close(alpha, want)
    torch.testing.assert_close(context, (alpha[:, :, None] * annotations).sum(dim=1))
    changed = annotations.masked_fill(~mask[:, :, None], 100.0)  # anything at padding
    torch.testing.assert_close(attention(s, attention.keys(changed), changed, mask)[0], context)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_cached_decoding_one_token_at_a_time_equals_the_teacher_forced_pass(architecture):
    model = RNNEncoderDecoder(ModelConfig(architecture=architecture)).eval()
    src, tgt = ids([[5, 6, 7, 8], [9, 4]]), ids([[1, 8, 7, 6, 5], [1, 4, 9]])
    logits, maps = model(src, tgt, return_attention=True)
    src_mask = model.src_mask(src)
    memory, _ = model.encode(src, src_mask)
    cache = model.new_cache()
    steps = [model.decode(tgt[:, i : i + 1], memory, src_mask, cache, start=i) for i in range(tgt.size(1))]
    torch.testing.assert_close(torch.cat([step[0] for step in steps], dim=1), logits)
    if architecture == "gru":
        assert maps["cross"] == []
    else:  # one layer of one head, (B, 1, T, S), 0 at padding
        torch.testing.assert_close(torch.cat([step[2][0] for step in steps], dim=2), maps["cross"][0])
        assert maps["cross"][0].shape == (2, 1, 5, 4) and bool((maps["cross"][0][1, :, :, 2:] == 0).all())


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_padding_after_a_source_changes_nothing(architecture):
    model = RNNEncoderDecoder(ModelConfig(architecture=architecture)).eval()
    src, tgt = ids([[5, 6, 7]]), ids([[1, 7, 6, 5]])
    padded = torch.cat([src, torch.zeros(1, 4, dtype=torch.long)], dim=1)
    torch.testing.assert_close(model(padded, tgt), model(src, tgt))


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_greedy_decoding_reads_back_its_own_teacher_forced_argmax(architecture):
    model = RNNEncoderDecoder(ModelConfig(architecture=architecture)).eval()
    src = ids([[5, 6, 7, 8], [9, 4]])
    out = greedy_decode(model, src, bos_id=1, eos_id=2, max_len=6)  # (B, T) without BOS
    tgt_in = torch.cat([torch.ones(2, 1, dtype=torch.long), out[:, :-1]], dim=1)
    done = (out == 2).cumsum(dim=1) - (out == 2).long() > 0  # after EOS: PAD, not predicted
    predicted = model(src, tgt_in).argmax(-1)
    assert bool((predicted == out)[~done].all())


def test_build_model_picks_the_architecture_and_the_seed_picks_the_weights():
    config = ModelConfig(architecture="gru-attention")
    a, b = (build_model(config, torch.Generator().manual_seed(3)) for _ in range(2))
    assert isinstance(a, RNNEncoderDecoder) and a.decoder.attention is not None
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert build_model(dataclasses.replace(config, architecture="gru")).decoder.attention is None
    assert type(build_model(ModelConfig())) is Transformer
    with pytest.raises(ValueError, match="architecture"):
        ModelConfig(architecture="lstm")


@pytest.mark.heavy
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_trainer_trains_a_recurrent_model(architecture):
    trainer = Trainer(
        ModelConfig(architecture=architecture),
        DataConfig(task="reverse", min_len=3, max_len=3),
        TrainConfig(steps=30, eval_every=10, early_stop=False, record_attention=True, device="cpu"),
    )
    rows = list(trainer.train())
    assert rows[-1]["val_loss"] < rows[0]["val_loss"]
    cross = trainer.attention_snapshots[-1]["maps"]["cross"]
    assert len(cross) == (architecture == "gru-attention")  # the attention, as one layer of (1, T, S)


def test_a_recurrent_checkpoint_is_refused_with_a_message():
    task = DataConfig(task="reverse", min_len=3, max_len=3)
    model = RNNEncoderDecoder(ModelConfig(architecture="gru"))
    data = checkpoint_bytes(model, TaskData(task).vocab, task)
    with pytest.raises(CheckpointError, match="recurrent model"):
        load_checkpoint(data)


# ------------------------------------------------------------------------------------------------ on Compare

TINY = Experiment.sharing(
    CUSTOM,
    "tiny",
    "tiny",
    "architecture",
    ("gru", "gru-attention"),
    ModelConfig(d_model=16, n_heads=2, d_ff=32),
    DataConfig(task="reverse", max_len=4, n_valid=40),
    replace(READY["recurrent-baseline"].train, steps=10, eval_every=5, eval_size=20),
)


@pytest.fixture(scope="module")
def tiny_run(request):
    request.addfinalizer(functools.partial(torch.set_num_threads, torch.get_num_threads()))
    torch.set_num_threads(1)  # on a busy 2-core machine, two threads in the main thread crawl
    return run_experiment(TINY)


def test_an_architecture_experiment_records_attention_only_where_there_is_some(tiny_run):
    plain, attention = tiny_run.variants
    assert all(snapshot == [] for snapshot in plain.cross) and plain.alignment == {}
    assert all(len(s) == 1 and len(s[0]) == 1 for s in attention.cross) and set(attention.alignment) == {"L0 H0"}
    for v in tiny_run.variants:  # lengths 1 to 8, the trained ones (1-4) marked
        assert [row["length"] for row in v.lengths] == list(range(1, 9))
        assert [row["trained"] for row in v.lengths] == [True] * 4 + [False] * 4
    assert summary_table(tiny_run)["steps/s"].gt(0).all()


def test_an_architecture_experiment_and_its_length_tests_survive_the_json_round_trip(tiny_run):
    back = experiment_from_json(experiment_to_json(tiny_run))
    assert (back.experiment.switch, back.experiment.values, back.experiment.model) == (
        "architecture",
        TINY.values,
        TINY.model,
    )
    for got, want in zip(back.variants, tiny_run.variants):
        assert (got.cross, got.alignment, got.lengths) == (want.cross, want.alignment, want.lengths)


@pytest.mark.parametrize(
    "lengths, why",
    [
        ([{"length": 0, "trained": True, "exact_match": 1.0}], "finite number"),
        ([{"length": 3, "trained": "yes", "exact_match": 1.0}], "true or false"),
        ([{"length": 3, "trained": True, "exact_match": 1.5}], "finite number"),
        ([{"length": 3, "trained": True}], "exactly the keys"),
        ("all of them", "must be a list"),
    ],
)
def test_a_file_with_a_bad_length_test_is_refused(tiny_run, lengths, why):
    document = json.loads(experiment_to_json(tiny_run))
    document["variants"][0]["lengths"] = lengths
    with pytest.raises(ValueError, match=why):
        experiment_from_json(json.dumps(document))


def test_a_file_with_attention_maps_for_the_plain_gru_is_refused(tiny_run):
    document = json.loads(experiment_to_json(tiny_run))
    document["variants"][0]["cross"] = document["variants"][1]["cross"]  # one layer where there is none
    with pytest.raises(ValueError, match="wrong length"):
        experiment_from_json(json.dumps(document))


def test_compare_shows_the_recurrent_baseline_beside_the_transformer():
    at = AppTest.from_file("../streamlit_app.py", default_timeout=60)
    at.query_params["experiment"] = "recurrent-baseline"
    at.run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    labels = ["Transformer", "GRU encoder-decoder", "GRU + additive attention"]
    table = at.table[0].value  # cells that wrap: a variant's name reads whole at any width
    assert table.index.tolist() == labels and all(float(v.replace(",", "")) > 0 for v in table["steps/s"])
    lengths = chart(at, "compare_lengths")
    assert [t["name"] for t in lengths["data"]] == labels and lengths["data"][0]["x"][:3] == [1, 2, 3]
    at.radio(key="compare_timeline_variant").set_value("GRU encoder-decoder").run()
    assert not at.exception and any("no attention to show" in i.value for i in at.info)
    at.radio(key="compare_timeline_variant").set_value("GRU + additive attention").run()
    heads = chart(at, "compare_heads_0")  # the additive attention, drawn as one head, its ideal cells outlined
    assert not at.exception and [t["type"] for t in heads["data"]] == ["heatmap", "scatter"]
    assert [t["name"] for t in chart(at, "compare_alignment")["data"]] == ["layer 0, head 0"]


def test_the_shipped_recurrent_baseline_shows_what_its_expectation_says():
    run = load_shipped("recurrent-baseline")
    transformer, plain, attention = run.variants
    solved = summary_table(run)["solved at step"].tolist()
    assert solved[2] < 400 and not solved[0] <= solved[2]  # attention solves it sooner than the Transformer
    exact = {v.label: {row["length"]: row["exact_match"] for row in v.lengths} for v in run.variants}
    assert exact[plain.label][3] == 1.0 and exact[plain.label][10] < 0.5  # one vector: long inputs are lost
    assert exact[attention.label][11] > 0.9 > 0.1 > exact[transformer.label][11]  # a length past the training
    rate = summary_table(run).set_index("variant")["steps/s"]
    assert rate[attention.label] < rate[transformer.label]  # each recurrent step waits for the one before


def test_a_live_architecture_experiment_length_tests_each_variant_once_it_ends(tiny_run):
    registry = RunRegistry(ServerSettings(training_slots=1, max_queue=4, worker_processes=False))
    try:
        live = LiveExperiment.start(TINY, registry, "a")
        wait_until(lambda: live.done, timeout=120)
        run = live.so_far()
        assert not live.error and [v.lengths for v in run.variants] == [v.lengths for v in tiny_run.variants]
        assert live.so_far().variants[0].lengths is run.variants[0].lengths  # tested once, not at every poll
    finally:
        registry.close()
