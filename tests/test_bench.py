"""`python -m transformer bench --quick` runs every section and reports each figure against its target."""

import json

import pytest

from transformer import bench


@pytest.mark.slow  # the whole quick bench, over a minute; its step ratios are checked in the default run below
def test_quick_bench_prints_every_figure(capsys):
    figures = bench.run(quick=True)
    out = capsys.readouterr().out.strip()
    table, line = out.rsplit("\n", 1)
    assert json.loads(line) == json.loads(json.dumps(figures))
    assert "Profile of the default run" in out and "train" in out
    default = figures["default_run"]
    assert default["runs"][0]["held_out"] == 1000 and default["all_solved"]
    assert default["ratio"] == 1000 * default["median_s"] / default["reference_step_ms"]
    assert figures["reverse_len10"]["runs"][0]["steps"] > 0
    assert set(figures["lengths_1_16"]) == {"copy", "reverse"}
    assert figures["greedy_decode"]["sequences_1000"]["decode_steps"] == 17  # EOS suppressed: every step runs
    for name in (
        "default run, median",
        "default run / nn.Transformer step",
        "reverse len 10, seed 0",
        "copy len 1-16, seed 0",
        "train step, unpadded, ours / reference",
        "train step, padded, ours / reference",
        "greedy decode, 1000 x len 16",
    ):
        row = next(r for r in table.splitlines() if r.startswith(name))
        assert "yes" in row.split() or "NO" in row.split(), row  # every target gets a verdict


@pytest.mark.heavy
def test_the_step_ratios_are_our_median_step_over_nn_transformers_with_and_without_padding():
    """The ratios the bench judges against its 0.9 target (a figure, not a timed assertion: a shared machine's
    timings belong in the bench's printout, docs/benchmarks.md)."""
    figures, rows = bench.train_step_time(bench.QUICK, bench.pick_device("cpu"))
    assert set(figures) == {"unpadded", "padded"}
    for kind, row in zip(("unpadded", "padded"), [r for r in rows if r[0].endswith("/ reference")]):
        figure = figures[kind]
        assert figure["ours_ms"] > 0 and figure["reference_ms"] > 0
        assert figure["ratio"] == figure["ours_ms"] / figure["reference_ms"]
        assert row[0] == f"train step, {kind}, ours / reference" and row[3] == (figure["ratio"] <= 0.9), row
