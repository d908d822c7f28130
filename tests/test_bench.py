"""`python -m transformer bench --quick` runs every section and reports each figure against its target."""

import json

from transformer import bench


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


def test_the_training_step_beats_nn_transformers_by_a_tenth_with_and_without_padding():
    """Both models step alternately on the same batches, so a busy machine slows both alike: the ratio of the
    medians holds where absolute times do not."""
    figures, _ = bench.train_step_time(bench.QUICK, bench.pick_device("cpu"))
    assert figures["unpadded"]["ratio"] <= 0.9, figures
    assert figures["padded"]["ratio"] <= 0.9, figures
