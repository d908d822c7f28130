import json

import pytest
import torch
import torch.nn.functional as F

from tests.helpers import array
from tests.helpers.figures import title_overflow
from transformer.dynamics import EmbeddingAxes, LayerGradients, layer_of
from transformer.figures import COLUMN_PX, drawn_px
from transformer.figures.dynamics import embedding_figure, gradient_figure
from transformer.figures.heatmaps import ROW_LABEL_GAP_PX
from transformer.figures.summary import plain
from transformer.figures.theme import FONT
from transformer.i18n import translator
from transformer.model import ModelConfig, Transformer
from transformer.tasks import DataConfig, TaskData
from transformer.training import TrainConfig, Trainer
from transformer.vocab import N_SPECIAL

# A sum of squares in float32 is off by at most about n * 2^-24 relative (n terms, here a few thousand per layer),
# and a square root halves that: 1e-4 leaves room for the order of the sums to differ.
RELATIVE = 1e-4
DATA = DataConfig(max_len=6, n_valid=64)  # a small held-out set: every run ends by decoding all of it


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models train fastest on one thread, and much slower on two when the cores are busy."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def small_run(**train) -> Trainer:
    config = TrainConfig(batch_size=32, eval_size=32, early_stop=False, device="cpu", **train)
    return Trainer(ModelConfig(), DATA, config)


def small_model(**overrides) -> Transformer:
    return Transformer(ModelConfig(**overrides), rng=torch.Generator().manual_seed(0))


def loss_of(model: Transformer, data: TaskData) -> torch.Tensor:
    batch = data.train_batch(16)
    logits = model(batch.src, batch.tgt_in)
    return F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=model.config.pad_id)


def autograd_layer_norms(model: Transformer, loss: torch.Tensor) -> dict[str, float]:
    """Each layer's gradient norm from torch.autograd.grad, concatenating the layer's gradients into one vector."""
    named = list(model.named_parameters())
    grads = torch.autograd.grad(loss, [p for _, p in named])
    layers: dict[str, list[torch.Tensor]] = {}
    for (name, _), grad in zip(named, grads):
        layers.setdefault(layer_of(name), []).append(grad.flatten())
    return {layer: torch.cat(parts).double().norm().item() for layer, parts in layers.items()}


def test_parameters_fall_into_the_layers_named_on_the_chart():
    names = dict(small_model(n_layers=2, norm_first=True, positional="learned").named_parameters())
    layers = list(dict.fromkeys(layer_of(n) for n in names))
    assert layers == [
        "embeddings",
        "encoder layer 0",
        "encoder layer 1",
        "encoder final norm",
        "decoder layer 0",
        "decoder layer 1",
        "decoder final norm",
        "generator",
    ]
    assert layer_of("positional.pe.weight") == "embeddings" and layer_of("decoder.layers.1.cross_attn.in_proj.bias")


@pytest.mark.parametrize("overrides", [{}, {"n_layers": 2, "norm_first": True, "tie_weights": True}])
def test_layer_gradient_norms_equal_autograds(overrides):
    model, data = small_model(**overrides), TaskData(DataConfig(max_len=6))
    reference = autograd_layer_norms(model, loss_of(model, TaskData(DataConfig(max_len=6))))
    loss_of(model, data).backward()
    gradients = LayerGradients(model)
    norms = dict(zip(gradients.layers, gradients()))
    assert norms.keys() == reference.keys()
    for layer, norm in norms.items():
        assert norm > 0 and norm == pytest.approx(reference[layer], rel=RELATIVE), layer


def test_a_parameter_without_a_gradient_counts_as_zero():
    model = small_model()
    gradients = LayerGradients(model)
    assert gradients() == [0.0] * len(gradients.layers)
    model.generator.proj.bias.grad = torch.full_like(model.generator.proj.bias, 2.0)  # 13 weights of 2: norm 2√13
    assert gradients()[gradients.layers.index("generator")] == pytest.approx(2 * 13**0.5)


def test_the_trainer_reads_a_rows_gradients_before_clipping():
    """Step 1's gradients, computed again from the same weights and batch, against the record of its row: with
    clipping at 1e-3, gradients read after clipping would have norms of at most 1e-3."""
    trainer = small_run(steps=1, eval_every=1, clip_grad=1e-3)
    fresh = Transformer(ModelConfig(), rng=torch.Generator().manual_seed(trainer.train_config.seed))
    batch = TaskData(DATA).train_batch(trainer.train_config.batch_size)
    logits = fresh(batch.src, batch.tgt_in)
    loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=fresh.config.pad_id)
    reference = autograd_layer_norms(fresh, loss)
    trainer.run()
    record = trainer.dynamics.records[-1]
    assert record["step"] == 1 and record["layers"] == list(reference)
    assert record["grad_norms"] == pytest.approx(list(reference.values()), rel=RELATIVE)
    assert max(record["grad_norms"]) > 1e-2


def test_a_row_at_no_step_of_a_read_has_no_gradient_norms():
    trainer = small_run(steps=10, eval_every=4)
    trainer.run()
    assert [r["step"] for r in trainer.dynamics.records] == [4, 8, 10]  # the last row: the step budget's end
    assert all(r["grad_norms"] is not None for r in trainer.dynamics.records)
    stopped = small_run(steps=10, eval_every=4)
    stopped.run(stop=lambda: stopped.step == 6)
    assert [(r["step"], r["grad_norms"] is None) for r in stopped.dynamics.records] == [(4, False), (6, True)]


def test_embedding_axes_are_the_top_principal_components():
    generator = torch.Generator().manual_seed(0)
    plane = torch.randn(2, 16, generator=generator, dtype=torch.double)  # points spread over a 2-D plane in 16-D
    points = torch.randn(10, 2, generator=generator, dtype=torch.double) * torch.tensor([3.0, 1.0]) @ plane + 5
    axes = EmbeddingAxes(points)
    assert axes.components @ axes.components.T == pytest.approx(torch.eye(2), abs=1e-12)  # orthonormal
    projected = axes.project(points)
    assert torch.cdist(projected, projected) == pytest.approx(torch.cdist(points, points), abs=1e-9)  # nothing lost
    assert projected.mean(0) == pytest.approx(torch.zeros(2), abs=1e-12)
    assert projected[:, 0].var() >= projected[:, 1].var()
    assert (axes.components.gather(1, axes.components.abs().argmax(1, keepdim=True)) > 0).all()  # sign rule


def test_one_symbol_projects_to_the_origin():
    assert EmbeddingAxes(torch.ones(1, 8)).project(torch.ones(1, 8)).tolist() == [[0.0, 0.0]]


def test_the_embedding_axes_stay_those_of_the_first_row():
    """Each row's points are that row's embeddings on the axes fit to the first row's, and never change."""
    trainer = small_run(steps=60, eval_every=10)
    embeddings, shown = [], []
    for _ in trainer.train():
        embeddings.append(trainer.model.embed.lut.weight.detach()[N_SPECIAL:].clone())
        shown.append([list(p) for p in trainer.dynamics.records[0]["embeddings"]])  # the first row, as rows arrive
    assert len(embeddings) == 7 and torch.equal(embeddings[-2], embeddings[-1])  # step 60's row, then it rescored
    assert len(trainer.dynamics.records) == 6 and not torch.equal(embeddings[0], embeddings[-1])  # they moved
    first_axes = EmbeddingAxes(embeddings[0])
    for record, table in zip(trainer.dynamics.records, embeddings):
        assert record["embeddings"] == [tuple(point) for point in first_axes.project(table).tolist()]
    assert all(points == shown[0] for points in shown)
    last_axes = EmbeddingAxes(embeddings[-1])
    assert not torch.allclose(last_axes.components.abs(), first_axes.components.abs(), atol=1e-3)  # refitting moves


def fake_records(steps: list[int], n_symbols: int = 3) -> list[dict]:
    return [
        {
            "step": step,
            "embeddings": [(float(step + s), float(-s)) for s in range(n_symbols)],
            "layers": ["embeddings", "generator"],
            "grad_norms": None if step == 25 else [10.0 ** (i - 1), 0.5],
        }
        for i, step in enumerate(steps)
    ]


def test_the_embedding_figure_keeps_its_axes_from_row_to_row_and_shows_symbols_as_text():
    rows = fake_records([10, 20, 25])
    figures = [json.loads(embedding_figure(rows, i, ["<b>", "1", "2"]).to_json()) for i in range(3)]
    ranges = {(tuple(f["layout"]["xaxis"]["range"]), tuple(f["layout"]["yaxis"]["range"])) for f in figures}
    assert len(ranges) == 1
    (x_range, y_range) = ranges.pop()
    assert x_range[0] < 10 and x_range[1] > 27 and y_range[0] < -2 and y_range[1] > 0
    trail, now = figures[1]["data"]
    assert now["text"][0] == "&lt;b&gt;" and array(now["x"]).tolist() == [20, 21, 22]
    assert trail["x"] == [10, 20, None, 11, 21, None, 12, 22, None]


def test_the_gradient_figure_leaves_out_rows_without_norms_on_a_log_scale():
    figure = json.loads(gradient_figure(fake_records([10, 20, 25])).to_json())
    heatmap = figure["data"][0]
    assert heatmap["x"] == ["10", "20"] and heatmap["y"] == ["embeddings", "generator"]
    assert [array(row).tolist() for row in heatmap["z"]] == [[-1, 0], pytest.approx([-0.30103] * 2, abs=1e-5)]


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_both_figures_fit_their_titles_to_a_half_page_column_and_keep_the_layers_names_whole(language):
    rows, tr = fake_records([10, 20]), translator(language)
    for figure in (
        embedding_figure(rows, 1, ["a", "b", "c"], tr=tr, fit_px=COLUMN_PX),
        gradient_figure(rows, tr=tr, fit_px=COLUMN_PX),
    ):
        assert not title_overflow(figure, COLUMN_PX), figure.layout.title.text  # they ran past both edges at 241 px
    assert gradient_figure(rows, fit_px=COLUMN_PX).layout.yaxis.automargin  # "embeddings" read "mbeddings"


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_in_a_half_page_column_the_layers_names_and_colour_bar_leave_the_cells_room(language):
    """At 150% zoom the layers' names ("encoder layer 0") and the colour bar beside the plot left its cells a sliver
    of Train's 241 px column, and Plotly cut the names to "oder layer 0". Each name breaks at a space, no line wider
    than the widest word, and the colour bar lies under the plot."""
    model = Transformer(ModelConfig(vocab_size=8))
    layers = sorted({layer_of(name) for name, _ in model.named_parameters()})
    rows = [dict(step=10 * i, layers=layers, grad_norms=[0.1 * i] * len(layers)) for i in range(1, 4)]
    figure = gradient_figure(rows, tr=translator(language), fit_px=COLUMN_PX)
    names, bar = figure.data[0].y, figure.data[0].colorbar
    words = [drawn_px(word, FONT["size"]) for name in names for word in plain(name).split()]
    lines = [drawn_px(line, FONT["size"]) for name in names for line in name.split("<br>")]
    assert bar.orientation == "h" and max(lines) <= max(words)
    margins = figure.layout.margin.l + figure.layout.margin.r + ROW_LABEL_GAP_PX
    assert COLUMN_PX - max(lines) - margins >= 0.4 * COLUMN_PX, names  # was a tenth of it: 25 px
    joined = [name.replace("<br>", " " if language == "en" else "") for name in names]  # Chinese breaks need no space
    assert joined == [translator(language).gettext(layer) for layer in layers]


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_the_colour_bar_labels_norms_that_stay_apart_under_a_half_page_column_or_beside_a_short_chart(language):
    """At 150% zoom the bar under the plot ran "−0.8−0.6−0.4−0.2" together (log₁₀ labels 32 px wide, 24 px apart).
    Its labels are the norms themselves, 1, 2 and 5 times a power of ten, or the powers alone where those crowd."""
    model = Transformer(ModelConfig(vocab_size=8))
    layers = sorted({layer_of(name) for name, _ in model.named_parameters()})
    rows = [dict(step=10 * i, layers=layers, grad_norms=[0.01 * 5000 ** (i / 3)] * len(layers)) for i in range(4)]
    tr = translator(language)
    tall, wide, narrow = (
        gradient_figure(rows, h, tr, px).data[0].colorbar for h, px in ((900, None), (300, None), (300, COLUMN_PX))
    )
    assert tall.ticktext == ("0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50")
    assert wide.ticktext == ("0.01", "0.1", "1", "10")  # a line each, 20 px of 300
    assert narrow.ticktext == ("0.01", "0.1", "1", "10") and narrow.title.text == tr.gettext("norm (log scale)")
    assert [float(t) for t in narrow.ticktext] == pytest.approx([10**v for v in narrow.tickvals])
    names = gradient_figure(rows, tr=tr, fit_px=COLUMN_PX).data[0].y
    widest = max(drawn_px(word, FONT["size"]) for name in names for word in plain(name).replace("<br>", " ").split())
    bar_px = COLUMN_PX - 20 - widest - ROW_LABEL_GAP_PX
    at = [(v - narrow.tickvals[0]) / (narrow.tickvals[-1] - narrow.tickvals[0]) * bar_px for v in narrow.tickvals]
    sizes = [drawn_px(text, FONT["size"]) for text in narrow.ticktext]
    assert all(at[i + 1] - at[i] - (sizes[i] + sizes[i + 1]) / 2 >= 8 for i in range(len(at) - 1))


def test_a_recurrent_run_records_its_embeddings_and_the_gradient_norms_of_its_encoder_and_decoder():
    model = ModelConfig(architecture="gru-attention", d_model=16, d_ff=32)
    trainer = Trainer(model, DataConfig(task="reverse", max_len=4, n_valid=20), TrainConfig(steps=4, eval_every=2))
    trainer.run()
    (first, second) = trainer.dynamics.records
    assert first["layers"] == ["embeddings", "encoder", "decoder"] and len(second["embeddings"]) == 10
    assert all(norm > 0 for norm in second["grad_norms"])
