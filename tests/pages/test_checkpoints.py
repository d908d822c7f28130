"""Checkpoints page: lists shipped and session-trained checkpoints, loads any of them, and loads or refuses uploads."""

import json
import re

import pytest
import torch
from streamlit.testing.v1 import AppTest

import transformer.checkpoint
import transformer.uploads
import ui.common
from tests.helpers.models import HOSTILE_FILES
from transformer.checkpoint import checkpoint_bytes
from transformer.model import ModelConfig, Transformer
from transformer.tasks import DataConfig
from transformer.vocab import Vocab
from ui.tables import fitted_px


def small_checkpoint_bytes(task: str = "copy", history: tuple = ()) -> bytes:
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=9, d_model=16, n_heads=2, d_ff=32)).eval()
    return checkpoint_bytes(model, Vocab.digits(6), DataConfig(task=task, min_len=2, max_len=5, n_symbols=6), history)


@pytest.fixture
def shipped_dir(tmp_path, monkeypatch):
    """An empty checkpoints/ folder of its own, so the repository's shipped files don't matter."""
    monkeypatch.setattr(ui.common, "CHECKPOINT_DIR", tmp_path)
    return tmp_path


def open_checkpoints(trained: dict[str, bytes] | None = None) -> AppTest:
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=90)
    at.run()
    if trained is not None:
        at.session_state["trained"] = trained
    at.switch_page("pages/checkpoints.py")
    at.run()
    assert not at.exception
    return at


def test_renders_with_no_checkpoints(shipped_dir):
    at = open_checkpoints()
    assert at.title[0].value == "Checkpoints"
    assert "No checkpoints yet" in at.info[0].value and not at.dataframe
    uploader = at.file_uploader(key="upload_checkpoint")
    assert uploader.allowed_type == [".pt"] and "(5 MB at most)" in uploader.label  # .streamlit/config.toml


def test_lists_shipped_and_trained_and_loads_each(shipped_dir):
    shipped = f"shipped_{shipped_dir.name}"  # a name of its own: shipped checkpoints are cached per server
    (shipped_dir / f"{shipped}.pt").write_bytes(small_checkpoint_bytes("reverse"))
    at = open_checkpoints({"mine": small_checkpoint_bytes("copy", ({"step": 25, "exact_match": 0.5},))})

    table = at.dataframe[0].value.set_index("name")
    assert table.loc[shipped, "source"] == "shipped" and table.loc[shipped, "task"] == "reverse, lengths 2-5"
    assert table.loc["mine", "source"] == "trained" and table.loc["mine", "exact match"] == 0.5
    assert table.loc["mine", "model"] == "width 16, 2 heads, 1 layer" and table.loc["mine", "seed"] == 0
    assert len(at.get("download_button")) == 2

    at.button(key="load_mine").click()
    at.run()
    assert not at.exception and at.session_state["in_hand_name"] == "trained: mine"
    assert at.session_state["in_hand"].task.task == "copy"
    assert [m.value for m in at.markdown if "in hand]" in m.value] == ["**mine** (trained, seed 0) · :blue[in hand]"]
    at.button(key=f"load_{shipped}").click()
    at.run()
    assert not at.exception and at.session_state["in_hand_name"] == f"shipped: {shipped}"
    assert at.session_state["in_hand"].task.task == "reverse"


def test_a_broken_shipped_file_is_reported_not_raised(shipped_dir):
    (shipped_dir / f"broken_{shipped_dir.name}.pt").write_bytes(b"garbage")
    at = open_checkpoints()
    assert "could not be read" in at.warning[0].value


def test_upload_puts_the_model_in_hand(shipped_dir):
    at = open_checkpoints()
    at.file_uploader(key="upload_checkpoint").set_value(
        ("my model.pt", small_checkpoint_bytes(), "application/octet-stream")
    )
    at.run()
    assert not at.exception and "Loaded" in at.success[0].value
    assert at.session_state["in_hand_name"] == "uploaded: my model.pt"
    at.switch_page("pages/anatomy.py")  # where another model might be put in hand ...
    at.run()
    at.switch_page("pages/checkpoints.py")
    at.run()
    assert not at.exception and not at.success  # ... so the message is shown once, not on every later visit
    table = at.dataframe[0].value.set_index("name")
    assert table.loc["my model.pt", "source"] == "uploaded"  # listed, to load again after another model
    assert [m.value for m in at.markdown if "in hand]" in m.value] == ["**my model\\.pt** (uploaded) · :blue[in hand]"]


def test_two_files_of_one_name_are_both_listed_and_one_dropped_for_room_is_named(shipped_dir):
    at = open_checkpoints()
    uploader = at.file_uploader(key="upload_checkpoint")
    uploads = [("a<b.pt", "reverse"), ("a>b.pt", "copy"), ("a>b.pt", "copy"), ("c.pt", "sort"), ("d.pt", "copy")]
    files = {task: small_checkpoint_bytes(task) for _, task in uploads}  # made once: a file records its second
    said = []
    for name, task in uploads:  # two classmates' models, both called a_b.pt once made safe to show
        uploader.set_value((name, files[task], "application/octet-stream")).run()
        said.append(at.success[0].value)
        uploader = at.file_uploader(key="upload_checkpoint")
    assert not at.exception and at.session_state["in_hand_name"] == "uploaded: d.pt"
    assert "the model in hand is now `uploaded: a_b (2).pt`" in said[1]  # not in place of the first a_b.pt
    assert "No longer listed" not in " ".join(said[:4])  # the same file again is one entry
    assert said[4].endswith("No longer listed: `a_b.pt` (this page keeps your last 3 uploads).")
    assert list(at.dataframe[0].value["name"])[-3:] == ["a_b (2).pt", "c.pt", "d.pt"]
    # the grid keeps the widths it was first drawn with: its name column is made as wide as the names listed now
    name_column = json.loads(at.dataframe[0].proto.columns)["name"]
    width = name_column["width"]
    assert not name_column.get("pinned")  # a grid fades a pinned column's text to about 3:1 (ui.tables)
    assert width == fitted_px(["name", *at.dataframe[0].value["name"]]) and width >= fitted_px(["a_b (2).pt"])


def test_the_origin_column_is_as_wide_as_its_widest_once_another_origin_is_listed(shipped_dir):
    """A grid keeps the widths it was first drawn with: drawn with shipped models alone ("内置"), it cut a trained
    model's origin to "已训"."""
    (shipped_dir / f"s_{shipped_dir.name}.pt").write_bytes(small_checkpoint_bytes("copy"))
    at = open_checkpoints()
    at.selectbox(key="language_picker").set_value("zh-CN").run()
    assert "width" not in json.loads(at.dataframe[0].proto.columns)["source"]  # as wide as the grid makes it
    at.session_state["trained"] = {"mine": small_checkpoint_bytes("sort")}
    at.run()
    assert set(at.dataframe[0].value["source"]) == {"内置", "已训练"}
    origin = json.loads(at.dataframe[0].proto.columns)["source"]
    assert origin["label"] == "来源" and origin["width"] == fitted_px(["已训练"])


def test_the_listing_reads_each_trained_or_uploaded_file_once_a_session(shipped_dir, monkeypatch):
    """A file's history of up to 100,000 rows takes seconds to read, and the page read every listed file again at
    every redraw: three such uploads made each click take 5-6 s of the server's CPU. Loading one still reads it."""
    reads = []
    real = transformer.checkpoint.load_checkpoint

    def counted(source, *args, **kwargs):
        reads.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(transformer.checkpoint, "load_checkpoint", counted)  # as the page imports it
    monkeypatch.setattr(transformer.uploads, "load_checkpoint", counted)  # as the upload reads it
    at = open_checkpoints({"mine": small_checkpoint_bytes("copy", ({"step": 25, "exact_match": 0.5},))})
    at.file_uploader(key="upload_checkpoint").set_value(("up.pt", small_checkpoint_bytes("reverse"), "x/y")).run()
    at.run()
    at.run()
    assert not at.exception and set(at.dataframe[0].value["name"]) == {"mine", "up.pt"}
    assert len(reads) == 3  # "mine" and "up.pt" listed once each, and "up.pt" read as it was uploaded
    at.button(key="load_mine").click().run()
    assert len(reads) == 4 and at.session_state["in_hand_name"] == "trained: mine"


def test_a_bad_upload_is_refused_with_the_reason(shipped_dir):
    at = open_checkpoints()
    at.file_uploader(key="upload_checkpoint").set_value(
        ("evil.pt", b"not a checkpoint at all", "application/octet-stream")
    )
    at.run()
    said = re.sub(r"\\(.)", r"\1", at.error[0].value)  # the message, its punctuation escaped
    assert not at.exception and said.startswith("Could not load evil.pt: ") and "checkpoint" in said  # the file named
    assert "in_hand" not in at.session_state


@pytest.mark.parametrize("case", HOSTILE_FILES)
def test_a_file_that_would_break_a_page_is_refused_with_the_reason(shipped_dir, case):
    make, message = HOSTILE_FILES[case]
    at = open_checkpoints()
    at.file_uploader(key="upload_checkpoint").set_value(("hostile.pt", make(), "application/octet-stream"))
    at.run()
    assert not at.exception and "Could not load " in at.error[0].value
    assert re.search(message, re.sub(r"\\(.)", r"\1", at.error[0].value))  # the message, its punctuation escaped
    assert "in_hand" not in at.session_state


def test_the_sidebar_names_the_teaching_switches_the_model_in_hand_sets_away_from_the_default():
    from transformer.checkpoint import Checkpoint

    def sidebar_caption(config: ModelConfig) -> str:
        at = AppTest.from_file("../../streamlit_app.py", default_timeout=60)
        at.session_state["in_hand"] = Checkpoint(Transformer(config), Vocab.digits(), config, DataConfig(), [], {})
        at.session_state["in_hand_name"] = "test model"
        at.run()
        at.switch_page("pages/checkpoints.py").run()
        assert not at.exception
        return next(c.value for c in at.sidebar.caption if c.value.startswith("task "))

    assert sidebar_caption(ModelConfig()).endswith("1+1 layers")  # the default model: no switch to name
    no_pe = sidebar_caption(ModelConfig(positional="none", norm_first=True))
    assert no_pe.endswith("1+1 layers · no PE · pre-norm"), no_pe
