import gc
import io
import os
import pickle
import random
import re
import zipfile
from pathlib import Path

import pytest
import torch

import transformer.checkpoint as ckpt
from tests.helpers.models import (
    BIG,
    HISTORY,
    HOSTILE_FILES,
    RARE,
    TASK,
    TRAIN_CONFIG,
    VOCAB,
    huge_rare_symbol,
    largest_checkpoint,
    make_model,
    one_tensor_for_every_matrix,
    payload,
    real_bytes,
    saved,
    set_in,
    tampered,
    views_of_one_storage,
)
from transformer.checkpoint import (
    FORMAT_VERSION,
    MAX_CHECKPOINT_BYTES,
    CheckpointError,
    checkpoint_bytes,
    load_checkpoint,
    save_checkpoint,
)
from transformer.cli import main
from transformer.i18n import translator
from transformer.model import ModelConfig
from transformer.pairs import TaskPairs, pairs_from_rows
from transformer.tasks import DataConfig
from transformer.vocab import Vocab


def random_batch(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, 13, (4, 7), generator=g), torch.randint(3, 13, (4, 6), generator=g)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"norm_first": True},
        {"positional": "learned"},
        {"tie_weights": True},
        {"positional": "none", "norm_first": True, "tie_weights": True, "n_layers": 2},
    ],
)
def test_round_trip(tmp_path, overrides):
    model = make_model(**overrides).train()
    path = save_checkpoint(tmp_path / "m.pt", model, VOCAB, TASK, HISTORY, TRAIN_CONFIG, meta={"name": "sorter"})
    loaded = load_checkpoint(path)
    assert path == tmp_path / "m.pt"
    assert not loaded.model.training
    assert loaded.config == model.config == loaded.model.config
    assert (loaded.vocab, loaded.task, loaded.history, loaded.train_config) == (VOCAB, TASK, HISTORY, TRAIN_CONFIG)
    assert loaded.meta["name"] == "sorter" and loaded.meta["torch"] == torch.__version__ and loaded.meta["created"]
    src, tgt = random_batch()
    with torch.no_grad():
        assert torch.equal(loaded.model(src, tgt), model.eval()(src, tgt))
    if model.config.tie_weights:
        assert loaded.model.generator.proj.weight is loaded.model.embed.lut.weight


def test_defaults_and_empty_parts():
    loaded = load_checkpoint(checkpoint_bytes(make_model(), VOCAB, TASK))
    assert loaded.history == [] and loaded.train_config == {} and set(loaded.meta) == {"created", "torch"}


def test_file_is_small_and_stores_a_tied_weight_once():
    data = real_bytes(tie_weights=True)
    assert len(data) < 200_000
    state_dict = make_model(tie_weights=True).state_dict()
    storages = [n for n in zipfile.ZipFile(io.BytesIO(data)).namelist() if "/data/" in n and "serialization" not in n]
    assert len(storages) == len(state_dict) - 1


def test_weights_are_stored_as_cpu_float32():
    model = make_model().double()
    src, tgt = random_batch()
    data = checkpoint_bytes(model, VOCAB, TASK)
    stored = torch.load(io.BytesIO(data), weights_only=True)["state_dict"].values()
    assert all(t.dtype == torch.float32 and t.is_contiguous() for t in stored)
    with torch.no_grad():
        assert torch.allclose(load_checkpoint(data).model(src, tgt).double(), model(src, tgt), atol=1e-5)


def test_loads_from_bytes_bytearray_file_object_and_path(tmp_path):
    data = real_bytes()
    (tmp_path / "m.pt").write_bytes(data)
    with open(tmp_path / "m.pt", "rb") as f:
        sources = [data, bytearray(data), io.BytesIO(data), f, tmp_path / "m.pt", str(tmp_path / "m.pt")]
        for source in sources:
            assert load_checkpoint(source).history == HISTORY


def test_save_creates_parent_folders(tmp_path):
    path = save_checkpoint(tmp_path / "a" / "b" / "m.pt", make_model(), VOCAB, TASK)
    assert path.read_bytes()[:2] == b"PK" and os.listdir(path.parent) == ["m.pt"]


@pytest.mark.parametrize("fail", ["torch.save", "os.fsync", "os.replace"])
def test_failed_save_leaves_the_old_file_untouched(tmp_path, monkeypatch, fail):
    path = save_checkpoint(tmp_path / "m.pt", make_model(), VOCAB, TASK, HISTORY)
    before = path.read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    module, name = fail.split(".")
    monkeypatch.setattr({"torch": torch, "os": os}[module], name, boom)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, make_model(norm_first=True), VOCAB, TASK)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.pt"]


def test_save_refuses_parts_that_would_not_load(tmp_path):
    path = tmp_path / "m.pt"
    with pytest.raises(ValueError, match="history holds a Tensor"):
        save_checkpoint(path, make_model(), VOCAB, TASK, [{"loss": torch.tensor(1.0)}])
    with pytest.raises(ValueError, match="train_config holds a PosixPath"):
        save_checkpoint(path, make_model(), VOCAB, TASK, train_config={"out": Path("x")})
    with pytest.raises(ValueError, match="13 tokens but model_config.vocab_size is 20"):
        save_checkpoint(path, make_model(vocab_size=20), VOCAB, TASK)
    nan_model = make_model()
    with torch.no_grad():
        nan_model.generator.proj.bias[0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        save_checkpoint(path, nan_model, VOCAB, TASK)
    assert not path.exists() and os.listdir(tmp_path) == []


def tie_mismatch(content):
    content["model_config"]["tie_weights"] = True
    content["state_dict"]["generator.proj.weight"] = content["state_dict"]["embed.lut.weight"] + 1


def compressed(data: bytes) -> bytes:
    """The same archive with deflated entries, which torch.load itself would read."""
    source, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in source.namelist():
            archive.writestr(name, source.read(name))
    return out.getvalue()


def nested(depth: int) -> list:
    value = []
    for _ in range(depth):
        value = [value]
    return value


def renamed(name: str, new_name: str):
    return lambda content: content["state_dict"].update({new_name: content["state_dict"].pop(name)})


def nan_weight(content):
    content["state_dict"]["encoder.layers.0.feed_forward.w_1.weight"][0, 0] = float("nan")


REFUSED = {
    "random bytes": (lambda: random.Random(0).randbytes(5000), "not a checkpoint file of this lab"),
    "empty": (lambda: b"", "not a checkpoint file of this lab"),
    "truncated": (lambda: real_bytes()[:-2000], "not a checkpoint file of this lab"),
    "compressed": (lambda: compressed(real_bytes()), "not a checkpoint file of this lab"),
    "plain tensor": (lambda: saved(torch.zeros(3)), "format marker"),
    "format marker": (lambda: tampered(lambda c: c.update(format="other-lab")), "format marker"),
    "newer version": (
        lambda: tampered(lambda c: c.update(version=FORMAT_VERSION + 1)),
        "newer than this lab reads.*upgrade",
    ),
    "bad version": (lambda: tampered(lambda c: c.update(version="1")), "unknown format version"),
    "missing part": (lambda: tampered(lambda c: c.pop("history")), "missing 'history'"),
    "extra part": (lambda: tampered(lambda c: c.update(notes="hi")), "unexpected 'notes'"),
    "wrong shape": (
        lambda: tampered(set_in("state_dict", "embed.lut.weight", torch.zeros(13, 64))),
        r"embed.lut.weight is torch.float32 of shape \(13, 64\), expected torch.float32 of shape \(13, 32\)",
    ),
    "wrong dtype": (
        lambda: tampered(set_in("state_dict", "embed.lut.weight", torch.zeros(13, 32, dtype=torch.int64))),
        "embed.lut.weight is torch.int64",
    ),
    "missing key": (
        lambda: tampered(renamed("decoder.layers.0.cross_attn.in_proj.bias", "b")),
        "state_dict has missing 'decoder.layers.0.cross_attn.in_proj.bias'; unexpected 'b'",
    ),
    "extra key": (
        lambda: tampered(set_in("state_dict", "extra.weight", torch.zeros(2))),
        "state_dict has unexpected 'extra.weight'",
    ),
    "not a tensor": (lambda: tampered(set_in("state_dict", "embed.lut.weight", [1.0])), "not a dense tensor"),
    "NaN weights": (lambda: tampered(nan_weight), "w_1.weight has NaN or infinite weights"),
    "tied weights differ": (lambda: tampered(tie_mismatch), "differs from embed.lut.weight"),
    "unknown config key": (lambda: tampered(set_in("model_config", "colour", "red")), "unexpected 'colour'"),
    "missing config key": (lambda: tampered(lambda c: c["model_config"].pop("vocab_size")), "missing 'vocab_size'"),
    "bad config value": (lambda: tampered(set_in("model_config", "d_model", 30)), "divisible by n_heads"),
    "zero heads": (lambda: tampered(set_in("model_config", "n_heads", 0)), "n_heads must be positive"),
    "pad_id not the vocab's": (lambda: tampered(set_in("model_config", "pad_id", 5)), "pad_id is 5 but the vocab"),
    "bad config type": (lambda: tampered(set_in("model_config", "d_model", "32")), "d_model must be int, got str"),
    "bool for int": (lambda: tampered(set_in("model_config", "n_layers", True)), "n_layers must be int, got bool"),
    "bad task": (lambda: tampered(set_in("task", "task", "fly")), "unknown task 'fly'"),
    "bad vocab": (lambda: tampered(set_in("vocab", "symbols", ["a", "a"])), "duplicate symbol"),
    "vocab size mismatch": (lambda: tampered(set_in("task", "n_symbols", 12)), "10 symbols but the task has 12"),
    "history not numbers": (lambda: tampered(lambda c: c["history"].append({"loss": "low"})), "history rows"),
    "history row missing a metric": (
        lambda: tampered(lambda c: c["history"].append({"step": 200, "loss": 0.1})),
        "history rows must all hold the same metrics",
    ),
    "history step not whole": (
        lambda: tampered(lambda c: [row.update(step=1.5) for row in c["history"]]),
        "a whole-number step",
    ),
    "history share past 1": (
        lambda: tampered(lambda c: c.update(history=[{"step": 100, "exact_match": 1e300}])),
        "exact_match and token_acc at most 1",
    ),
    "history step below 0": (
        lambda: tampered(lambda c: c.update(history=[{"step": -5, "exact_match": 1.0}])),
        "numbers of at least 0",
    ),
    "history NaN": (lambda: tampered(lambda c: c["history"][-1].update(loss=float("nan"))), "at least 0"),
    "symbol with a control character": (
        lambda: tampered(set_in("vocab", "symbols", ["\x1b[2J", *"123456789"])),
        "control characters",
    ),
    "symbol too long": (lambda: tampered(set_in("vocab", "symbols", ["a" * 17, *"123456789"])), "longer than 16"),
    "train_config not a dict": (lambda: tampered(lambda c: c.update(train_config=[1])), "train_config must be a dict"),
    "train_config tensor": (lambda: tampered(set_in("train_config", "w", torch.ones(1))), "holds a Tensor"),
    "non-string key": (lambda: tampered(set_in("meta", "x", {1: 2})), "meta has a dict key that is not a string"),
    "huge integer": (lambda: tampered(set_in("meta", "n", 10**30)), "integer too large"),
    "deep nesting": (lambda: tampered(set_in("meta", "deep", nested(30))), "meta is too large or too deeply"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_refused_with_a_clear_message(case):
    make, message = REFUSED[case]
    with pytest.raises(CheckpointError, match=message) as error:
        load_checkpoint(make())
    assert "saved by this lab" in str(error.value) or "upgrade" in str(error.value)


def test_a_refusal_reads_in_chinese_first_its_detail_last():
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(tampered(lambda c: c.pop("vocab")))
    said = translator("zh-CN").gettext(error.value)
    sentence = "无效的检查点，请选择本实验室保存的检查点，或重新保存模型"
    assert re.fullmatch(sentence + r"（原因：checkpoint：缺少 'vocab'）", said), said


ENGLISH_WORDS = re.compile(r"\b(a|an|and|are|at|be|but|got|has|holds|is|missing|more|must|not|of|only|or|the|too)\b")


@pytest.mark.parametrize("case", REFUSED)
def test_every_refusal_reads_in_chinese_to_its_last_detail(case):
    """A crafted file's every detail too: only names from the file and the code stay as they are (quoted, or the
    names of its parts and settings)."""
    make, _ = REFUSED[case]
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(make())
    said = re.sub(r"'[^']*'", "", translator("zh-CN").gettext(error.value))  # the file's own names, quoted
    assert not ENGLISH_WORDS.search(said), said


def test_untampered_payload_loads():
    """The tampering cases above start from a payload that is itself valid."""
    assert load_checkpoint(tampered(lambda c: None)).history == HISTORY


def test_history_length_is_capped(monkeypatch):
    monkeypatch.setattr(ckpt, "MAX_HISTORY_ROWS", len(HISTORY))
    assert load_checkpoint(real_bytes()).history == HISTORY
    with pytest.raises(CheckpointError, match=f"at most {len(HISTORY)} rows"):
        load_checkpoint(tampered(lambda c: c["history"].append({})))


@pytest.mark.parametrize(
    "overrides",
    [
        {"d_model": 10**6, "n_heads": 1},
        {"max_len": 10**9},
        {"vocab_size": 10**8},
        {"n_layers": 10**5, "d_model": 4},
        {"d_model": 8, "n_heads": 1, "d_ff": 8, "max_len": 1_500_000},
    ],  # few weights, but pages draw max_len x max_len
)
def test_huge_config_refused_without_building_the_model(monkeypatch, overrides):
    content = payload()
    content["model_config"].update(overrides)
    data = saved(content)

    def never(config):
        raise AssertionError("model built")

    monkeypatch.setattr(ckpt, "Transformer", never)
    with pytest.raises(CheckpointError, match="the most this lab builds"):
        load_checkpoint(data)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"norm_first": True, "tie_weights": True, "positional": "learned"},
        {"positional": "none", "n_layers": 3, "d_model": 24, "n_heads": 3, "d_ff": 40, "vocab_size": 30, "max_len": 10},
    ],
)
def test_weight_count_matches_the_model(overrides):
    model = make_model(**overrides)
    allocated = sum(t.numel() for t in [*model.parameters(), *model.buffers()])
    assert ckpt._n_weights(model.config) == allocated
    stored = {t.data_ptr(): t.numel() for t in model.state_dict().values()}  # a tied weight once
    assert ckpt._n_stored(model.config) == sum(stored.values())


def test_file_over_the_size_limit_refused(tmp_path):
    path = tmp_path / "big.pt"
    with open(path, "wb") as f:
        f.truncate(MAX_CHECKPOINT_BYTES + 1)
    for source in [path, io.BytesIO(bytes(MAX_CHECKPOINT_BYTES + 1)), bytes(MAX_CHECKPOINT_BYTES + 1)]:
        with pytest.raises(CheckpointError, match="larger than the 8 MB limit"):
            load_checkpoint(source)


class Exploit:
    """Unpickling this creates the marker file: what a malicious checkpoint would do."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def test_code_in_a_file_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    pickle.loads(pickle.dumps(Exploit(marker))).close()  # the exploit works when unpickled normally
    assert marker.exists()
    marker.unlink()
    evil = {"format": "transformer-lab", "version": 1, "meta": Exploit(marker)}
    for data in [saved(evil), saved(Exploit(marker)), pickle.dumps(evil), pickle.dumps(evil, protocol=2)]:
        (tmp_path / "evil.pt").write_bytes(data)
        for source in [data, tmp_path / "evil.pt"]:
            with pytest.raises(CheckpointError, match="not a checkpoint file of this lab"):
                load_checkpoint(source)
    assert not marker.exists()


def test_weights_only_is_what_blocks_the_exploit(tmp_path, monkeypatch):
    """The torch.save'd exploit reaches torch.load, and is refused there."""
    marker = tmp_path / "pwned"
    calls = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: calls.append(k) or real_load(*a, **k))
    with pytest.raises(CheckpointError, match="Python objects other than plain data"):
        load_checkpoint(saved({"format": "transformer-lab", "meta": Exploit(marker)}))
    assert calls == [{"map_location": "cpu", "weights_only": True}] and not marker.exists()


# Files that pass every check of the parts one by one, and would still break a page, hold a server's memory, or
# give NaN (`HOSTILE_FILES`, tests/helpers/models.py): each is refused, with what is wrong.


def test_a_huge_symbol_makes_the_outputs_nan_only_where_it_is_read():
    content = payload()
    huge_rare_symbol(content)
    model = make_model().eval()
    model.load_state_dict(content["state_dict"])
    longest = torch.arange(TASK.max_len)[None] + VOCAB.symbol_id(0)  # (1, 8): 0 1 ... 7
    with_rare = longest.clone()
    with_rare[0, -1] = RARE
    bos = torch.full((1, 1), VOCAB.bos_id)
    with torch.no_grad():
        assert torch.isfinite(model(longest, torch.cat([bos, longest], dim=1))).all()
        assert not torch.isfinite(model(with_rare, torch.cat([bos, longest], dim=1))).all()  # as a source token
        assert not torch.isfinite(model(longest, torch.cat([bos, with_rare], dim=1))).all()  # as a target token


@pytest.mark.parametrize("case", HOSTILE_FILES)
def test_a_file_that_would_break_a_page_is_refused(case):
    make, message = HOSTILE_FILES[case]
    with pytest.raises(CheckpointError, match=message) as error:
        load_checkpoint(make())
    assert "saved by this lab" in str(error.value)


@pytest.mark.parametrize("make", [views_of_one_storage, one_tensor_for_every_matrix])
def test_shared_storage_is_refused_before_the_model_is_built(monkeypatch, make):
    data = make()
    assert ckpt._n_weights(ModelConfig(vocab_size=13, **BIG)) > 5 * len(data) / 4  # the file could not hold them

    def never(config):
        raise AssertionError("model built")

    monkeypatch.setattr(ckpt, "Transformer", never)
    with pytest.raises(CheckpointError, match="own exactly its bytes|share one tensor"):
        load_checkpoint(data)


@pytest.mark.parametrize("case", HOSTILE_FILES)
def test_the_command_line_refuses_a_hostile_file_with_the_reason(tmp_path, capsys, case):
    make, message = HOSTILE_FILES[case]
    path = tmp_path / "hostile.pt"
    path.write_bytes(make())
    assert main(["evaluate", str(path)]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and err.startswith("error: ") and "Traceback" not in err


def examples_checkpoint() -> tuple[bytes, DataConfig, Vocab]:
    rows = [(f"line {i}", f"{a} {b}", f"{b} {a} {a}") for i, (a, b) in enumerate(zip("abcdefg", "gfedcba"), 1)]
    task = DataConfig.from_pairs(pairs_from_rows(rows, "my pairs.csv"), seed=2)
    vocab = Vocab(task.pairs.symbols)
    model = make_model(vocab_size=len(vocab))
    return checkpoint_bytes(model, vocab, task, HISTORY), task, vocab


def test_a_task_from_examples_travels_with_its_pairs_and_the_rest_stay_readable_by_older_labs():
    data, task, vocab = examples_checkpoint()
    loaded = load_checkpoint(data)
    assert loaded.task == task and loaded.task.pairs == task.pairs and loaded.vocab == vocab
    stored = torch.load(io.BytesIO(data), weights_only=True)
    assert stored["version"] == FORMAT_VERSION == 2 and stored["task"]["pairs"]["name"] == "my pairs.csv"
    built_in = torch.load(io.BytesIO(real_bytes()), weights_only=True)
    assert built_in["version"] == 1 and "pairs" not in built_in["task"]  # as every checkpoint before
    assert load_checkpoint(real_bytes()).task == TASK


def pairs_tampered(change) -> bytes:
    content = torch.load(io.BytesIO(examples_checkpoint()[0]), weights_only=True)
    change(content["task"]["pairs"])
    return saved(content)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda p: p.update(held_out=[["a g", "g a a"]] + p["held_out"]), "given twice"),
        (lambda p: p.update(train=p["train"] * 2000), "at most 10,000 pairs"),
        (lambda p: p.update(symbols=[*reversed(p["symbols"])]), "vocabulary has 7 symbols but the task has 7"),
        (lambda p: p.update(train=[["a g", "g a z"]] + p["train"][1:]), "not 1 to 64 symbols of its vocabulary"),
        (lambda p: p.update(name=None), "name"),
        (lambda p: p.pop("held_out"), "exactly"),
    ],
)
def test_pairs_in_a_checkpoint_are_checked_before_anything_is_built(change, message):
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(pairs_tampered(change))


def test_a_file_loaded_again_while_held_reuses_its_parsed_pairs(monkeypatch):
    data, task, _ = largest_checkpoint()
    parsed, real = [], TaskPairs.from_dict
    monkeypatch.setattr(TaskPairs, "from_dict", lambda d: parsed.append(1) or real(d))
    first = load_checkpoint(data)
    again = load_checkpoint(io.BytesIO(data))  # the Checkpoints page lists a session's files on every visit
    assert len(parsed) == 1 and again.task is first.task and first.task == task
    assert again.model is not first.model  # each load builds its own model
    del first, again
    gc.collect()
    load_checkpoint(data)  # no load holds it any more: parsed again, never kept for nobody
    assert len(parsed) == 2
