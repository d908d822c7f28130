"""`python -m transformer bench --quick` runs every section and reports each figure against its target."""

import json

from transformer import bench


def test_quick_bench_prints_every_figure(capsys):
    figures = bench.run(quick=True)
    table, line = capsys.readouterr().out.strip().rsplit("\n", 1)
    assert json.loads(line) == json.loads(json.dumps(figures))
    assert figures["reverse_len10"]["runs"][0]["steps"] > 0
    assert set(figures["lengths_1_16"]) == {"copy", "reverse"}
    assert 0 < figures["train_step"]["ratio"] < 10
    assert figures["greedy_decode"]["sequences_1000"]["decode_steps"] == 17  # EOS suppressed: every step runs
    for name in (
        "reverse len 10, seed 0",
        "copy len 1-16, seed 0",
        "train step, ours / reference",
        "greedy decode, 1000 x len 16",
    ):
        row = next(r for r in table.splitlines() if r.startswith(name))
        assert "yes" in row.split() or "NO" in row.split(), row  # every target gets a verdict
