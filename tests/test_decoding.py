import copy
import itertools

import pytest
import torch

from transformer import decoding
from transformer import settings as spec
from transformer.decoding import (
    Beam,
    beam_search,
    decode_all_steps,
    decode_steps,
    greedy_decode,
    sampling_probs,
    teacher_forced,
)
from transformer.limits import SAMPLING_TEMPERATURES
from transformer.model import ModelConfig, NonFiniteOutputError, Transformer

PAD, BOS, EOS = 0, 1, 2
SRC = torch.tensor([[3, 4, 5, 6, 7, 0, 0], [8, 9, 10, 11, 12, 3, 4], [5, 5, 6, 0, 0, 0, 0]])  # right-padded
ONE = torch.tensor([[4, 7, 9, 3, 0, 0]])  # one source with padding


def make_model(norm_first: bool = False, **overrides) -> Transformer:
    torch.manual_seed(0)
    sizes = dict(vocab_size=13, d_model=32, n_heads=4, n_layers=2, d_ff=64, norm_first=norm_first)
    return Transformer(ModelConfig(**sizes | overrides)).eval()


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """A tiny model decodes one token at a time: a second thread only adds synchronisation."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def model() -> Transformer:
    return make_model()


def reference(model: Transformer, src: torch.Tensor, prefix: torch.Tensor):
    """Logits (B, T, V) and attention maps of the whole prefix, recomputed from scratch (no cache).

    Like model(src, prefix), except that generated tokens are never masked as padding, as in cached decoding.
    """
    with torch.no_grad():
        src_mask = model.src_mask(src)
        memory, _ = model.encode(src, src_mask)
        return model.decode(prefix, memory, src_mask, mask_padding=False, need_weights=True)


def reference_greedy(model: Transformer, src: torch.Tensor, eos_id: int, max_len: int) -> list[list[int]]:
    prefix = torch.full((src.size(0), 1), BOS)
    for _ in range(max_len):
        logits, _, _ = reference(model, src, prefix)
        prefix = torch.cat([prefix, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        if all(eos_id in row for row in prefix[:, 1:].tolist()):
            break
    rows = [row[1:] for row in prefix.tolist()]
    ends = [row.index(eos_id) + 1 if eos_id in row else len(row) for row in rows]
    return [row[:end] + [PAD] * (len(row) - end) for row, end in zip(rows, ends)]


def log_prob(model: Transformer, src: torch.Tensor, tokens: list[int]) -> float:
    """Summed log p(tokens[i] | BOS, tokens[:i]) of one output, each from the full model on its own prefix (without
    the causal mask, one pass over the whole output would let each position see the tokens after it)."""
    prefix = [BOS] + tokens
    steps = [reference(model, src, torch.tensor([prefix[: i + 1]]))[0][0, -1] for i in range(len(tokens))]  # (V,) each
    return sum(step.log_softmax(-1)[token].item() for step, token in zip(steps, tokens))


def an_emitted_token(model: Transformer, src: torch.Tensor, step: int) -> int:
    """A token greedy decoding emits at `step` for the first row: used as EOS so that decoding ends early."""
    return greedy_decode(model, src, BOS, EOS, step + 1)[0, step].item()


# ------------------------------------------------------------------------------------------------- greedy


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_greedy_matches_uncached_reference(norm_first):
    model = make_model(norm_first)
    eos = an_emitted_token(model, SRC[2:], 3)  # row 2 finishes at step 3 or before; others may run on
    for eos_id, max_len in [(EOS, 12), (eos, 12)]:
        out = greedy_decode(model, SRC, BOS, eos_id, max_len).tolist()
        assert out == reference_greedy(model, SRC, eos_id, max_len)
    assert PAD in out[2], "the early-finishing row is PAD after EOS"


def form_models() -> list[dict]:
    """Every combination of the Train form's model switches (its radios and toggles) and layer counts."""
    switches = {s.name: s.options for s in spec.on_form() if s.configs == ("model",) and s.options}
    low, high = spec.TRAIN_FORM_LIMITS["n_layers"]
    switches["n_layers"] = range(low, high + 1)
    return [dict(zip(switches, values)) for values in itertools.product(*switches.values())]


@pytest.mark.parametrize("switches", form_models(), ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()))
def test_cached_decoding_is_recomputing_the_prefix_for_every_model_the_train_form_offers(switches):
    """Every decoding path (batched greedy, and the steps of greedy, sampling and beam search) gives what the model
    computes from the whole prefix at each step: tokens, distributions (to float32 rounding) and beam scores."""
    model = make_model(**switches)
    assert greedy_decode(model, SRC, BOS, EOS, 10).tolist() == reference_greedy(model, SRC, EOS, 10)
    for strategy in ("greedy", "sample", "beam"):
        for s in decode_all_steps(model, ONE, BOS, EOS, 8, strategy=strategy, beam_width=3):
            logits, self_maps, _ = reference(model, ONE, torch.tensor([s.prefix]))
            torch.testing.assert_close(s.probs, logits[0, -1].softmax(-1), atol=1e-5, rtol=0)
            for mine, full in zip(s.self_attention, self_maps, strict=True):
                torch.testing.assert_close(mine, full[0, :, -1], atol=1e-5, rtol=0)
            for beam in s.beams:
                assert beam.score == pytest.approx(log_prob(model, ONE, beam.tokens[1:]), abs=1e-4)


def test_greedy_ignores_source_padding(model):
    out = greedy_decode(model, SRC, BOS, EOS, 10)
    for row, src in enumerate(SRC):
        alone = src[src != PAD][None]  # (1, S_row) without padding
        assert torch.equal(greedy_decode(model, alone, BOS, EOS, 10)[0], out[row])


def test_greedy_respects_and_clamps_max_len(model):
    assert greedy_decode(model, SRC, BOS, EOS, 1).shape == (3, 1)
    assert greedy_decode(model, SRC, BOS, EOS, 5).shape == (3, 5)  # EOS never wins on this random model
    short = make_model(max_len=8)
    assert greedy_decode(short, SRC, BOS, EOS, 1000).shape == (3, 8)  # BOS + 7 fed-back tokens fill 8 positions


# ----------------------------------------------------------------------------------------------- sampling


def test_sampling_with_top_k_1_is_greedy(model):
    steps = decode_all_steps(model, ONE, BOS, EOS, 12, strategy="sample", temperature=5.0, top_k=1, seed=3)
    assert [s.token for s in steps] == greedy_decode(model, ONE, BOS, EOS, 12)[0].tolist()


def test_sampling_is_reproducible_and_seed_dependent(model):
    flat = copy.deepcopy(model)
    flat.generator.proj.weight.data.mul_(0.01)  # near-uniform next-token distributions

    def step_tokens(seed):
        return [s.token for s in decode_all_steps(flat, ONE, BOS, EOS, 10, strategy="sample", seed=seed)]

    assert step_tokens(0) == step_tokens(0) != step_tokens(1)


def test_sampling_probs_temperature_and_top_k():
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0, 0.0]])
    assert torch.allclose(sampling_probs(logits), logits.softmax(-1))
    top2 = sampling_probs(logits, top_k=2)
    assert (top2 > 0).sum() == 2 and top2[0, :2].sum().item() == pytest.approx(1.0)
    hot, cold = sampling_probs(logits, temperature=10.0), sampling_probs(logits, temperature=0.1)
    assert hot.max() < logits.softmax(-1).max() < cold.max()
    assert torch.allclose(sampling_probs(logits, temperature=2.0), (logits / 2).softmax(-1))  # divided once
    assert torch.allclose(sampling_probs(logits, top_k=50), logits.softmax(-1))  # k beyond the vocabulary: all kept


def test_top_k_keeps_exactly_k_tokens_when_logits_tie():
    logits = torch.tensor([[1.0, 3.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0, 2.0]])  # three and five tied tokens
    for k in (1, 2, 4):
        probs = sampling_probs(logits, top_k=k)
        kept = [set(row.nonzero()[:, 0].tolist()) for row in probs]
        assert [len(tokens) for tokens in kept] == [k, k]
        assert kept[0] <= {1, 2, 3} if k < 3 else kept[0] == {0, 1, 2, 3}
        torch.testing.assert_close(probs[1][probs[1] > 0], torch.full((k,), 1 / k))


def test_every_temperature_within_the_bound_gives_a_distribution():
    logits = torch.randn(4, 13) * 1e3  # far larger than a trained model's
    for temperature in SAMPLING_TEMPERATURES:
        probs = sampling_probs(logits, temperature)
        assert torch.isfinite(probs).all() and torch.allclose(probs.sum(-1), torch.ones(4))


# -------------------------------------------------------------------------------------------- beam search


def test_beam_width_1_is_greedy(model):
    for src in SRC:
        src = src[None]
        greedy = greedy_decode(model, src, BOS, EOS, 10)[0].tolist()
        tokens, score = beam_search(model, src, BOS, EOS, 10, beam_width=1)
        assert tokens == greedy
        assert score == pytest.approx(log_prob(model, src, greedy), abs=1e-4)


def every_output(vocab_size: int, eos_id: int, max_len: int) -> list[list[int]]:
    """Every output decoding can end with: EOS after fewer than max_len other tokens, or max_len tokens, EOS last or
    not there."""
    outputs = []
    for n in range(1, max_len + 1):
        for tokens in itertools.product(range(vocab_size), repeat=n):
            if eos_id not in tokens[:-1] and (tokens[-1] == eos_id or n == max_len):
                outputs.append(list(tokens))
    return outputs


@pytest.mark.parametrize("causal_mask", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_beam_wide_enough_to_drop_no_hypothesis_finds_the_most_likely_output(causal_mask, seed):
    """Beam search never beats greedy decoding in general (a narrow beam can drop the prefix greedy follows). It is
    exact when it never has to drop a hypothesis: then it returns the most likely of all outputs, found here by
    brute force, and so scores at least as well as greedy decoding."""
    V, max_len, src = 5, 3, torch.tensor([[3, 4, 3]])
    model = make_model(vocab_size=V, n_layers=2, causal_mask=causal_mask)
    with torch.no_grad():  # another random model per seed
        for p in model.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=torch.Generator().manual_seed(seed)))
    width = sum(V * (V - 1) ** t for t in range(max_len))  # every hypothesis of every step
    tokens, score = beam_search(model, src, BOS, EOS, max_len, beam_width=width)
    scores = {tuple(out): log_prob(model, src, out) for out in every_output(V, EOS, max_len)}
    assert score == pytest.approx(scores[tuple(tokens)], abs=1e-4)  # the returned score is the output's own
    assert score == pytest.approx(max(scores.values()), abs=1e-4)
    greedy = greedy_decode(model, src, BOS, EOS, max_len)[0].tolist()
    greedy = greedy[: greedy.index(EOS) + 1] if EOS in greedy else greedy
    assert score >= scores[tuple(greedy)] - 1e-4


def test_beam_steps_form_a_consistent_tree(model):
    eos = an_emitted_token(model, ONE, 1)
    steps = decode_all_steps(model, ONE, BOS, eos, 10, strategy="beam", beam_width=3)
    n_finished = 0
    for prev, step in zip([None] + steps, steps):
        assert len(step.beams) == 3 - n_finished
        assert [b.finished for b in step.beams] == sorted(b.finished for b in step.beams)  # live first
        for beam in step.beams:
            parent = prev.beams[beam.parent] if prev else None
            assert beam.tokens[:-1] == (parent.tokens if parent else [BOS])
            assert parent is None or not parent.finished
            assert beam.finished == (beam.tokens[-1] == eos)
            assert beam.score == pytest.approx(log_prob(model, ONE, beam.tokens[1:]), abs=1e-4)
        best = max(step.beams, key=lambda b: b.score)
        assert step.prefix + [step.token] == best.tokens
        n_finished += sum(b.finished for b in step.beams)
    best_finished = max(b.score for s in steps for b in s.beams if b.finished)
    assert n_finished == 3 or len(steps) == 10 or best_finished >= max(b.score for b in steps[-1].beams)
    tokens, _ = beam_search(model, ONE, BOS, eos, 10, beam_width=3)
    assert any(tokens == b.tokens[1:] for s in steps for b in s.beams)


def every_beam_step(model, eos: int, max_len: int, width: int) -> list[list[Beam]]:
    """The beams of each step of a beam search that never stops early."""
    steps = decoding._beam_search_steps(model, ONE, BOS, eos, max_len, width, False, stop_early=False)
    return [beams for *_, beams in decoding._run(model, steps)]


def test_beam_search_stops_once_no_live_hypothesis_can_win(model):
    for step in range(4):
        eos = an_emitted_token(model, ONE, step)
        full = every_beam_step(model, eos, 10, 3)
        steps = decode_all_steps(model, ONE, BOS, eos, 10, strategy="beam", beam_width=3)

        def shape(beams):
            return [(b.tokens, b.parent, b.finished) for b in beams]

        assert [shape(s.beams) for s in steps] == [shape(beams) for beams in full[: len(steps)]]  # scores: to rounding
        finished = [[b.score for s in full[: i + 1] for b in s if b.finished] for i in range(len(full))]
        live = [[b.score for b in beams if not b.finished] for beams in full]
        can_win = [not done or not alive or max(alive) > max(done) for done, alive in zip(finished, live)]
        assert len(steps) == (can_win.index(False) + 1 if False in can_win else len(full))
        hypotheses = [b for s in full for b in s if b.finished] + [b for b in full[-1] if not b.finished]
        best = max(hypotheses, key=lambda b: b.score)
        assert beam_search(model, ONE, BOS, eos, 10, beam_width=3) == (best.tokens[1:], best.score)


def test_length_penalty_picks_best_normalized_hypothesis(model):
    eos = an_emitted_token(model, ONE, 0)  # an early EOS: short finished hypotheses have the best plain sums
    steps = every_beam_step(model, eos, 8, 3)
    hypotheses = [b for s in steps for b in s if b.finished] + [b for b in steps[-1] if not b.finished]
    lengths = []
    for alpha in (0.0, 1.0, 3.0):
        tokens, score = beam_search(model, ONE, BOS, eos, 8, beam_width=3, length_penalty=alpha)
        best = max(hypotheses, key=lambda b: b.score / (len(b.tokens) - 1) ** alpha)
        assert tokens == best.tokens[1:]
        assert score == pytest.approx(best.score, abs=1e-5)  # the plain sum is returned either way
        lengths.append(len(tokens))
    assert lengths[0] < lengths[1] <= lengths[2]  # the penalty favours longer outputs


# ---------------------------------------------------------------------------------------------- step API


def test_greedy_steps_match_greedy_decode(model):
    eos = an_emitted_token(model, ONE, 4)
    steps = decode_all_steps(model, ONE, BOS, eos, 20)
    greedy = greedy_decode(model, ONE, BOS, eos, 20)[0].tolist()
    assert [s.token for s in steps] == greedy
    assert steps[-1].token == eos and eos not in greedy[:-1]  # ends right after EOS
    assert [s.step for s in steps] == list(range(len(steps)))
    assert all(s.prefix == [BOS] + greedy[: s.step] for s in steps)


@pytest.mark.parametrize("strategy", ["greedy", "sample", "beam"])
def test_step_probs_and_attention_match_full_model(model, strategy):
    steps = decode_all_steps(model, ONE, BOS, EOS, 6, strategy=strategy, temperature=1.5)
    assert len(steps) == 6 or steps[-1].token == EOS
    n_src = int((ONE != PAD).sum())
    for s in steps:
        logits, self_maps, cross_maps = reference(model, ONE, torch.tensor([s.prefix]))
        assert s.probs.shape == (13,) and s.probs.sum().item() == pytest.approx(1.0, abs=1e-5)
        assert torch.allclose(s.probs, logits[0, -1].softmax(-1), atol=1e-5)
        for mine, full in zip(s.cross_attention, cross_maps, strict=True):
            assert mine.shape == (4, ONE.size(1))  # (H, S)
            assert torch.allclose(mine.sum(-1), torch.ones(4))
            assert torch.all(mine[:, n_src:] == 0)  # PAD source positions get no weight
            assert torch.allclose(mine, full[0, :, -1], atol=1e-5)
        for mine, full in zip(s.self_attention, self_maps, strict=True):
            assert mine.shape == (4, len(s.prefix))  # (H, t)
            assert torch.allclose(mine, full[0, :, -1], atol=1e-5)


def test_steps_respect_max_len(model):
    for strategy in ("greedy", "sample", "beam"):
        assert len(decode_all_steps(model, ONE, BOS, EOS, 3, strategy=strategy)) == 3
    short = make_model(max_len=8)
    assert len(decode_all_steps(short, ONE, BOS, EOS, 500)) == 8
    assert len(beam_search(short, ONE, BOS, EOS, 500, beam_width=2)[0]) == 8


def test_teacher_forced_predicts_greedy_output_from_its_own_prefix(model):
    greedy = greedy_decode(model, ONE, BOS, EOS, 9)[0].tolist()
    assert PAD not in greedy
    assert teacher_forced(model, ONE, [BOS] + greedy[:-1]) == greedy
    tgt = torch.tensor([BOS, 3, 12, 5, 7])  # any prefix: predictions follow it, not the model's own output
    assert teacher_forced(model, ONE, tgt) == reference(model, ONE, tgt[None])[0][0].argmax(-1).tolist()


def test_decoding_runs_in_eval_and_restores_the_callers_mode():
    model = make_model(dropout=0.5)
    expected = greedy_decode(model, SRC, BOS, EOS, 8)
    model.train()
    assert torch.equal(greedy_decode(model, SRC, BOS, EOS, 8), expected)  # dropout off while decoding
    assert all(m.training for m in model.modules())
    steps = decode_steps(model, ONE, BOS, EOS, 8, strategy="beam")
    next(steps)
    assert model.training and torch.is_grad_enabled()  # between steps the caller has its own modes back
    assert [s.token for s in steps] == [s.token for s in decode_all_steps(model.eval(), ONE, BOS, EOS, 8, "beam")][1:]


# ----------------------------------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: greedy_decode(m, SRC, BOS, EOS, 0), "max_len must be at least 1"),
        (lambda m: greedy_decode(m, SRC.float(), BOS, EOS, 5), "int64"),
        (lambda m: greedy_decode(m, SRC[0], BOS, EOS, 5), "shape"),
        (lambda m: greedy_decode(m, SRC[:, :0], BOS, EOS, 5), "empty"),
        (lambda m: greedy_decode(m, torch.ones(1, 65, dtype=torch.long), BOS, EOS, 5), "exceeds the model's max_len"),
        (lambda m: greedy_decode(m, torch.zeros(2, 3, dtype=torch.long), BOS, EOS, 5), "non-PAD"),
        (lambda m: greedy_decode(m, SRC, 13, EOS, 5), "bos_id"),
        (lambda m: greedy_decode(m, SRC + 20, BOS, EOS, 5), "src holds token ids from .* this model reads 0 to 12"),
        (lambda m: beam_search(m, -ONE, BOS, EOS, 5), "src holds token ids from -"),
        (lambda m: teacher_forced(m, ONE, [BOS, 99]), "tgt holds token ids"),
        (lambda m: sampling_probs(torch.zeros(1, 13), temperature=0.0), "temperature must be from"),
        (lambda m: sampling_probs(torch.arange(13.0)[None], temperature=1e-39), "temperature must be from"),
        (lambda m: sampling_probs(torch.zeros(1, 13), temperature=float("nan")), "temperature must be from"),
        (lambda m: decode_steps(m, ONE, BOS, EOS, 5, strategy="sample", top_k=0), "top_k must be"),
        (lambda m: beam_search(m, SRC, BOS, EOS, 5), "batch size 3"),
        (lambda m: beam_search(m, ONE, BOS, EOS, 5, beam_width=0), "beam_width must be"),
        (lambda m: beam_search(m, ONE, BOS, EOS, -1), "max_len must be at least 1"),
        (lambda m: decode_steps(m, SRC, BOS, EOS, 5), "batch size 3"),
        (lambda m: decode_steps(m, ONE, BOS, EOS, 5, strategy="nucleus"), "strategy must be"),
        (lambda m: decode_steps(m, ONE, BOS, EOS, 5, strategy="sample", temperature=-1.0), "temperature"),
        (lambda m: decode_steps(m, ONE, BOS, EOS, 5, strategy="beam", beam_width=1.5), "beam_width"),
        (lambda m: teacher_forced(m, SRC, [BOS, 3]), "batch size"),
        (lambda m: teacher_forced(m, ONE, []), "tgt_ids is empty"),
    ],
)
def test_bad_arguments_raise_clear_errors(model, call, message):
    with pytest.raises(ValueError, match=message):
        call(model)


def test_the_length_penalty_divides_by_the_number_of_generated_tokens(model, monkeypatch):
    def two_finished(*args):  # BOS is not generated: [1, 5, 2] has 2 tokens, [1, 5, 6, 2] has 3
        yield None, None, None, [Beam([BOS, 5, EOS], -1.0, 0, True)]
        yield None, None, None, [Beam([BOS, 5, 6, EOS], -1.4, 0, True)]

    monkeypatch.setattr(decoding, "_beam_search_steps", two_finished)
    # -1.4 / 3 = -0.467 beats -1.0 / 2 = -0.5; counting BOS too (/ 4 and / 3) would pick the shorter one
    assert beam_search(model, ONE, BOS, EOS, 8, beam_width=2, length_penalty=1.0) == ([5, 6, EOS], -1.4)
    assert beam_search(model, ONE, BOS, EOS, 8, beam_width=2, length_penalty=0.0) == ([5, EOS], -1.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: greedy_decode(m, SRC, BOS, EOS, 5),
        lambda m: decode_all_steps(m, ONE, BOS, EOS, 5, strategy="sample"),
        lambda m: decode_all_steps(m, ONE, BOS, EOS, 5, strategy="beam"),
        lambda m: beam_search(m, ONE, BOS, EOS, 5),
        lambda m: teacher_forced(m, ONE, [BOS, 3, 4]),
        lambda m: sampling_probs(torch.full((1, 13), float("nan"))),
    ],
    ids=["greedy", "sample", "beam steps", "beam", "teacher-forced", "sampling_probs"],
)
def test_a_model_whose_outputs_are_not_finite_gets_one_named_error(call):
    model = make_model()
    with torch.no_grad():
        model.embed.lut.weight.mul_(1e38)  # every weight finite, every output NaN
    with pytest.raises(NonFiniteOutputError, match="not finite"):
        call(model)
    assert issubclass(NonFiniteOutputError, ValueError)  # what pages and the command line already catch
