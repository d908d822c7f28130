"""Links that carry the model: each page reads its settings and the shipped model in hand from the address bar on a
fresh session, writes them back as they change, and falls back to its defaults, with a notice, on a bad link."""

import html
import re

import pytest
import torch
from streamlit.testing.v1 import AppTest

from transformer import Checkpoint, DataConfig, ModelConfig, Transformer, Vocab
from transformer.tasks import TaskData
from ui.links import LINK_TYPE, link_heading, unreachable_host


def open_link(page: str | None, **query: str | list[str]) -> AppTest:
    """A fresh session opening `page` (the home page for None) with these query parameters."""
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    if page is not None:
        at.switch_page(page)
    at.run()
    assert not at.exception
    return at


def link(at: AppTest) -> str:
    """The link the page offers to copy."""
    (code,) = at.code
    return code.value


def test_a_decoding_link_shows_the_shipped_models_output_with_no_click():
    at = open_link("pages/decoding.py", model="reverse", input="3 1 4")
    assert at.session_state["in_hand_name"] == "shipped: reverse"
    assert [s.value for s in at.success] == ["Output: `4 1 3`"] and not at.warning
    assert at.query_params["model"] == "reverse" and at.query_params["input"] == "3 1 4"
    assert link(at) == "?model=reverse&input=3%201%204"  # relative: AppTest has no browser URL


def test_a_decoding_link_with_a_step_opens_that_step_and_the_address_bar_follows_the_clicks():
    at = open_link("pages/decoding.py", model="reverse", input="314", step="2")
    assert at.session_state["decode_step"] == 1 and not at.success
    assert at.text_input(key="decode_input").value == "3 1 4"  # written as the vocabulary writes it
    at.button(key="decode_next").click().run()
    assert at.query_params["step"] == "3"
    at.button(key="decode_run_to_end").click().run()
    assert "step" not in at.query_params and at.success  # no step: the whole output


def test_a_link_that_gives_a_setting_twice_is_written_back_with_the_value_the_page_took():
    at = open_link("pages/decoding.py", model=["reverse", "sort"], input=["3 2 1", "1 2"])
    assert at.session_state["in_hand_name"] == "shipped: sort"  # the last value of each, as the page reads them
    assert at.query_params["model"] == "sort" and at.query_params["input"] == "1 2"  # not "reverse" first


def test_a_page_that_reads_no_settings_from_a_link_names_those_it_was_given_once():
    """A teacher's /train?task=add&seed=3 opened Train on reverse with nothing said: the page names what it drops,
    names only and the first few, each cut short, as literal text."""
    at = open_link("pages/train.py", model="reverse", lang="en", task=["add", "count"], seed="-5", **{"[x](y)": "1"})
    (notice,) = [w.value for w in at.warning if "reads no settings" in w.value]
    assert notice.startswith("This page reads no settings from a link (this one gave task, seed, \\[x\\]\\(y\\))")
    assert dict(at.query_params) == {"model": "reverse"}  # dropped from the address; English, the default, unwritten
    at.run()
    assert not [w for w in at.warning if "reads no settings" in w.value]  # said once
    many = open_link("pages/knockout.py", model="reverse", **{f"p{i}": "1" for i in range(7)}, **{"n" * 40: "1"})
    (notice,) = [w.value for w in many.warning if "reads no settings" in w.value]
    assert "p0, p1, p2, p3, p4, …" in notice and "n" * 24 not in notice
    (notice,) = [w.value for w in open_link("pages/train.py", lang="zh-CN", task="add", **{"\u202eevil": "1"}).warning]
    assert "（这个链接给了 task、 evil）" in notice  # Chinese's list mark, and no override turning the rest round
    assert not [w for w in open_link("pages/train.py", model="reverse", lang="zh-CN").warning]  # the lab's own
    assert not [w for w in open_link("pages/masking.py", model="reverse", source="3 1 2").warning]  # its own


def test_a_sampling_link_restores_the_strategy_and_its_settings(capfd):
    query = {"model": "reverse", "input": "3 1 4", "strategy": "sample", "temperature": "0.5", "top_k": "4"}
    at = open_link("pages/decoding.py", **query, seed="7")
    assert "was created with a default value but also had its value set" not in capfd.readouterr().err
    assert at.radio(key="decode_strategy").value == "sample"
    assert (at.slider(key="decode_temperature").value, at.number_input(key="decode_seed").value) == (0.5, 7)
    assert dict(at.query_params) == {**query, "seed": "7"}


def test_a_hostile_model_shows_a_notice_and_no_model():
    at = open_link("pages/decoding.py", model="../../etc", input="<img src=x>")
    assert [w.value for w in at.warning] == [
        "The link's model is not one of copy, reverse, reverse-early, sort, so the page's default is used. "
        "Check the link you opened."
    ]
    assert "No model in hand" in at.info[0].value and "model" not in at.query_params
    at.button(key="require_load_reverse").click().run()  # the page's link is read once a model is in hand
    assert "The link's input is not a sequence" in at.warning[0].value
    example = " ".join(map(str, TaskData(DataConfig(task="reverse", max_len=10)).valid_sources[0]))
    assert at.text_input(key="decode_input").value == example and at.session_state["decode_step"] == 0


def test_hostile_page_values_fall_back_to_the_defaults_with_notices():
    at = open_link("pages/decoding.py", model="reverse", input="1 " * 101, step="x", strategy="[a](b)", beam="99")
    assert len(at.warning) == 4 and all("<" not in w.value and "[a]" not in w.value for w in at.warning)
    assert at.radio(key="decode_strategy").value == "greedy" and at.session_state["decode_step"] == 0
    assert at.query_params["input"] != "1 " * 101 and "strategy" not in at.query_params


def test_a_masking_link_restores_source_target_and_padding():
    at = open_link("pages/masking.py", model="reverse", source="1 2 3", target="3 2 1", pad="6")
    assert [at.text_input(key=k).value for k in ("mask_src", "mask_tgt")] == ["1 2 3", "3 2 1"]
    assert at.number_input(key="mask_pad_to").value == 6 and not at.warning
    at.text_input(key="mask_src").set_value("4 5").run()
    assert at.query_params["source"] == "4 5" and at.query_params["pad"] == "6"


def test_a_length_test_link_restores_its_range():
    at = open_link("pages/lengths.py", model="reverse", lengths="3-5")
    assert at.slider(key="lengths_range").value == (3, 5)
    assert at.query_params["lengths"] == "3-5" and at.query_params["model"] == "reverse"
    bad = open_link("pages/lengths.py", model="reverse", lengths="5-3")
    assert "The link's lengths is not a range" in bad.warning[0].value and bad.query_params["lengths"] == "1-20"


def test_loading_a_shipped_model_puts_it_in_the_address_bar_and_a_compare_link_keeps_it():
    at = open_link(None)
    assert "model" not in at.query_params
    at.button(key="load_sort").click().run()
    assert at.query_params["model"] == "sort"
    at.switch_page("pages/anatomy.py").run()
    assert link(at) == "?model=sort"
    compare = open_link("pages/compare.py", model="copy", experiment="heads")
    assert compare.query_params["model"] == "copy" and compare.query_params["experiment"] == "heads"


def test_a_model_trained_here_cannot_travel_in_a_link():
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=60)
    at.query_params["model"] = "reverse"
    at.run()
    config, task = ModelConfig(), DataConfig(task="reverse", max_len=8)
    torch.manual_seed(0)
    at.session_state["in_hand"] = Checkpoint(Transformer(config).eval(), Vocab.digits(10), config, task, [], {})
    at.session_state["in_hand_name"] = "trained: reverse-1"
    at.switch_page("pages/anatomy.py").run()
    assert not at.exception and "model" not in at.query_params and link(at) == ""
    assert any("cannot carry the model in hand" in c.value for c in at.caption)


@pytest.mark.parametrize(
    "url, host",
    [
        ("http://localhost:8501/teacher", "localhost"),
        ("http://LOCALHOST:8501/teacher", "localhost"),
        ("http://lab.localhost/teacher", "lab.localhost"),
        ("http://127.0.0.1:8501/teacher", "127.0.0.1"),
        ("http://127.8.9.10/teacher", "127.8.9.10"),
        ("http://[::1]:8501/teacher", "::1"),
        ("http://0.0.0.0:8501/teacher", "0.0.0.0"),
        ("http://192.168.1.20:8501/teacher", None),
        ("http://[fe80::1]:8501/teacher", None),
        ("https://lab.example.org/teacher", None),
        ("/teacher", None),  # no browser: a relative link
        ("http://[::1/teacher", None),  # malformed
    ],
)
def test_a_link_no_other_device_can_open_is_told_apart(url, host):
    assert unreachable_host(url) == host


def test_a_class_link_in_large_type_breaks_only_before_its_query_and_between_its_parameters():
    link = 'http://my-host.local:8501/train?class=amber-otter-7351&lang=zh-CN&x="<b>'
    heading = link_heading(link)
    kept = re.findall(r'<wbr><span style="white-space: nowrap">([^<]*)</span>', heading)
    assert kept == ["?class=amber-otter-7351", "&amp;lang=zh-CN", "&amp;x=&quot;&lt;b&gt;"]  # each on one line
    h2 = f'<div style="container-type: inline-size"><h2 style="font-size: {LINK_TYPE}">'  # sized by its column
    assert heading.startswith(
        f'{h2}<a href="http://my-host.local:8501/train?class=amber-otter-7351&amp;lang=zh-CN&amp;'
    )
    assert "http://my-host.local:8501<wbr>/train<wbr>" in heading  # a line may break before the path, not in the port
    assert html.unescape(re.sub(r"<[^>]*>", "", heading)) == link  # it reads, and copies, as the link
    assert link_heading("http://h/train") == f'{h2}<a href="http://h/train">http://h<wbr>/train</a></h2></div>'
