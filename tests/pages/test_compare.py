"""The Compare page: shipped results at once, the attention timeline, links, live reruns, export and import."""

import re
import time
from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

import ui.classes
import ui.common
from tests.helpers.apptest import chart, join_class, open_class_link
from transformer import settings as spec
from transformer.classroom import Assignment, Caller
from transformer.classroom.assignment import Group
from transformer.experiments import READY, result_path
from transformer.experiments.definitions import task_setup
from transformer.literal import markdown_literal
from transformer.pairs import pairs_from_rows
from transformer.tasks import TaskData

TINY = (
    READY["heads"]
    .changed("model", d_model=16, d_ff=32)
    .changed("data", min_len=4, max_len=4, n_valid=40)
    .changed("train", steps=10, eval_every=5, eval_size=20)
)


def open_compare(**query: str) -> AppTest:
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page("pages/compare.py")
    at.run()
    assert not at.exception
    return at


@pytest.fixture(scope="module")
def at() -> AppTest:
    return open_compare()


def until_done(at: AppTest, limit_s: float) -> None:
    """Poll the page (run_every never fires in AppTest: each run is one poll) until its live run has ended."""
    deadline = time.monotonic() + limit_s
    while not at.session_state["compare_job"].done and time.monotonic() < deadline:
        time.sleep(0.2)
        at.run()
    at.run()


def test_shipped_results_show_at_once(at):
    assert at.selectbox(key="compare_experiment").value == "no-positional-encoding"
    assert "cannot tell source positions apart" in at.info[0].value
    assert any("shipped with the app" in c.value for c in at.caption)
    curves = chart(at, "compare_curves")
    assert {t["name"] for t in curves["data"]} == {"sinusoidal PE", "no PE"} and len(curves["data"]) == 6
    table = at.table[0].value  # cells that wrap: a variant's name reads whole at any width
    assert table.index.tolist() == ["sinusoidal PE", "no PE"]
    assert float(table["exact match (%)"].iloc[1]) < 5 < float(table["exact match (%)"].iloc[0])
    assert all(re.fullmatch(r"\d+\.\d", cell) for cell in table["exact match (%)"])  # one format: 100.0 beside 0.4
    assert all(re.fullmatch(r"[\d,]+", cell) for cell in table["steps"])
    assert at.query_params["experiment"] == "no-positional-encoding"


def test_the_timeline_slider_moves_heatmaps_and_marker(at):
    (slider,) = at.select_slider
    assert slider.value == int(slider.options[-1]) == 600  # following the newest snapshot
    slider.set_value(0).run()
    assert not at.exception and at.select_slider[0].value == 0 and not at.toggle  # a finished run: no following
    heads = chart(at, "compare_heads_0")
    assert "step 0" in heads["layout"]["title"]["text"] and len(heads["data"]) == 8  # 4 heads, each its ideal cells
    assert [t["type"] for t in heads["data"]] == ["heatmap"] * 4 + ["scatter"] * 4
    assert any(c.value.startswith("Outlined: where each output token comes from") for c in at.caption)
    assert chart(at, "compare_timeline_loss")["layout"]["shapes"][0]["x0"] == 0
    alignment = chart(at, "compare_alignment")
    assert [t["name"] for t in alignment["data"]] == [f"layer 0, head {h}" for h in range(4)]
    at.radio(key="compare_timeline_variant").set_value("no PE").run()
    assert not at.exception and "no PE" in chart(at, "compare_heads_0")["layout"]["title"]["text"]
    assert at.select_slider[0].value == 0 and "step 0" in chart(at, "compare_heads_0")["layout"]["title"]["text"]


def test_exports_and_a_link_to_another_experiment(at):
    assert {b.key for b in at.get("download_button")} >= {"compare_download_csv", "compare_download_json"}
    at.selectbox(key="compare_experiment").set_value("no-causal-mask").run()
    assert not at.exception and at.query_params["experiment"] == "no-causal-mask"
    assert at.table[0].value.index.tolist() == ["causal mask", "no causal mask"]


def test_hostile_query_values_give_warnings_not_exceptions():
    at = open_compare(
        experiment="custom",
        d_model="<img src=x onerror=alert(1)>",
        steps="-5",
        seed="💥" * 5000,
        values="on,off",
        n_heads="NaN",
    )
    warnings = [w.value for w in at.warning]
    assert [w.split()[2] for w in warnings] == ["seed", "d_model", "n_heads", "steps", "values"]
    assert all(w.endswith("so the page's default is used. Check the link you opened.") for w in warnings)
    assert "onerror" not in " ".join(warnings) and "💥" not in " ".join(warnings)
    assert at.selectbox(key="compare_experiment").value == "custom"
    assert at.number_input(key="compare_steps").value == 600  # refused, not clamped: the default
    assert at.number_input(key="compare_d_model").value == 32
    assert "No results for these settings yet" in at.info[-1].value


def test_a_custom_link_opens_its_settings():
    at = open_compare(experiment="custom", task="copy", switch="norm_first", values="off,on", seed="7")
    assert not at.warning
    assert at.selectbox(key="compare_task").value == "copy" and at.number_input(key="compare_seed").value == 7
    assert at.multiselect(key="compare_values").value == [False, True]
    at.selectbox(key="compare_switch").set_value("n_heads").run()
    assert not at.exception and at.multiselect(key="compare_values").value == [1, 2]
    assert at.query_params["switch"] == "n_heads" and at.query_params["values"] == "1,2"


def test_the_builder_s_steps_help_promises_no_early_stop_as_compare_never_stops_early():
    at = open_compare(experiment="custom")
    assert not READY["heads"].train.early_stop
    steps_help = at.number_input(key="compare_steps").proto.help
    assert steps_help == spec.setting("steps").every_step_help and "earlier" not in steps_help


@pytest.mark.parametrize(
    "task, rule",
    [("reverse", "source token n-1-i):"), ("copy", "the output comes from:"), ("count", "the pattern form.")],
)
def test_the_timeline_says_where_outputs_come_from_only_for_reverse(monkeypatch, task, rule):
    """Count's outputs come from no one source token each: its timeline said how alignment is scored, with the
    formula, beside the note that count has no ideal alignment to score."""
    own = TINY.changed("data", task=task).changed("train", steps=9)  # not TINY's run, which another test trains
    if task == "count":  # four letters, and its own vocabulary: the letters and the counts 0-9
        own = own.changed("data", n_symbols=4).changed(
            "model", vocab_size=len(TaskData(replace(own.variant_configs[0][1], n_symbols=4)).vocab)
        )
    monkeypatch.setitem(READY, "heads", own)
    at = open_compare(experiment="heads")
    at.button(key="compare_run").click().run()
    until_done(at, 60)
    explained = next(m.value for m in at.markdown if m.value.startswith("The probe is"))
    assert explained.replace("\\", "").endswith(rule) and (task == "reverse") == ("reverse" in explained)
    formulas = [formula.value for formula in at.latex if "alignment" in formula.value]
    assert len(formulas) == (task != "count")


def test_a_tiny_live_rerun_completes_after_polling(monkeypatch):
    monkeypatch.setitem(READY, "heads", TINY)
    at = open_compare(experiment="heads")
    at.button(key="compare_run").click().run()
    assert not at.exception and at.button(key="compare_stop").disabled is False
    until_done(at, 60)
    assert not at.exception and at.session_state["compare_job"].done
    assert any("your live run" in c.value for c in at.caption)
    table = at.table[0].value
    assert table.index.tolist() == ["1 head", "4 heads"] and table["steps"].tolist() == ["10", "10"]
    assert at.button(key="compare_run").disabled is False
    good = result_path("post-vs-pre-norm").read_bytes()  # a file after the rerun ended: shown without a question
    at.file_uploader(key="compare_upload").set_value(("mine.json", good, "application/json")).run()
    assert not at.exception and not at.warning and "compare_job" not in at.session_state
    assert any(c.value == f"Showing: loaded from {markdown_literal('mine.json')}." for c in at.caption)


def test_a_file_loaded_after_a_rerun_shows_until_the_next_rerun(monkeypatch, browser):
    """A browser with an id, whose rerun a reload would take back: the file loaded after it ends shows instead."""
    monkeypatch.setitem(READY, "heads", TINY.changed("train", steps=8))  # not TINY's run, which another test trains
    at = open_compare(experiment="heads")
    at.button(key="compare_run").click().run()
    until_done(at, 60)
    assert any(c.value == "Showing: your live run." for c in at.caption)
    shipped = result_path("heads").read_bytes()  # the same experiment, trained longer
    at.file_uploader(key="compare_upload").set_value(("heads.json", shipped, "application/json")).run()
    assert not at.exception and not at.warning and "compare_job" not in at.session_state
    assert any(c.value == f"Showing: loaded from {markdown_literal('heads.json')}." for c in at.caption)
    assert at.table[0].value["steps"].tolist() == ["300", "300"]  # the file's runs, not the rerun's 8 steps
    at.run()  # the next script run does not put the rerun back
    assert any(c.value == f"Showing: loaded from {markdown_literal('heads.json')}." for c in at.caption)
    at.button(key="compare_run").click().run()  # the rerun again: the newest choice shows
    until_done(at, 60)
    assert not at.exception and any(c.value == "Showing: your live run." for c in at.caption)
    assert at.table[0].value["steps"].tolist() == ["8", "8"]


def test_uploads_load_back_and_bad_files_are_refused(at):
    at.file_uploader(key="compare_upload").set_value(("bad.json", b'{"format": 1}', "application/json")).run()
    assert not at.exception and markdown_literal("Could not load bad.json") in at.error[0].value
    good = result_path("post-vs-pre-norm").read_bytes()
    at.file_uploader(key="compare_upload").set_value(("mine.json", good, "application/json")).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="compare_experiment").value == "post-vs-pre-norm"
    assert any(
        c.value == f"Showing: loaded from {markdown_literal('mine.json')}." for c in at.caption
    )  # its own settings: no note
    at.selectbox(key="compare_experiment").set_value("custom").run()
    at.selectbox(key="compare_task").set_value("copy").run()  # the custom builder does not touch the file ...
    at.selectbox(key="compare_experiment").set_value("post-vs-pre-norm").run()
    assert any(
        c.value == f"Showing: loaded from {markdown_literal('mine.json')}." for c in at.caption
    )  # ... which still shows


def stop_live(live) -> None:
    """Stop a live experiment and wait for its current variant to end."""
    ui.common.run_registry().stop_chain(live.chain)
    live.chain.current.stop(wait_s=30)


def test_stop_ends_a_live_rerun_and_keeps_what_it_trained(monkeypatch):
    monkeypatch.setitem(READY, "heads", TINY.changed("train", steps=100_000))
    at = open_compare(experiment="heads")
    at.button(key="compare_run").click().run()
    job = at.session_state["compare_job"]
    assert not job.done and job.chain.runs[0].wait_until_moving(10)  # it has trained a step: something to keep
    at.button(key="compare_stop").click().run()
    assert not at.exception and job.done and len(job.chain.runs) == 1
    assert job.chain.runs[0].wait_until_done(10) and at.button(key="compare_run").disabled is False
    at.run()
    assert any("your live run" in c.value for c in at.caption)
    # half a comparison, the other variant missing from the chart and the table, read as the result
    assert [re.sub(r"\\(.)", r"\1", w.value) for w in at.warning] == [
        "Stopped before every variant trained to its end: 1 head, 4 heads did not. Press **Rerun live** to train "
        "them all."
    ]


def test_the_timeline_follows_a_live_run_until_following_is_turned_off(monkeypatch):
    monkeypatch.setitem(READY, "heads", TINY.changed("train", steps=100_000))
    at = open_compare(experiment="heads")
    at.button(key="compare_run").click().run()
    job = at.session_state["compare_job"]

    def poll_until_more_snapshots(than: int) -> list[int]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.2)
            at.run()  # one poll
            if at.select_slider and len(steps := [int(o) for o in at.select_slider[0].options]) > than:
                return steps
        raise AssertionError(f"no more than {than} snapshots in 60 s")

    try:
        steps = poll_until_more_snapshots(1)
        assert at.toggle(key="compare_follow").value is True and at.radio(key="compare_timeline_variant").disabled
        assert at.select_slider[0].disabled and at.select_slider[0].value == steps[-1]  # the newest
        at.toggle(key="compare_follow").set_value(False).run()
        at.select_slider[0].set_value(0).run()
        assert not at.exception and not at.select_slider[0].disabled
        assert not at.radio(key="compare_timeline_variant").disabled
        steps = poll_until_more_snapshots(len(steps) + 1)  # training goes on ...
        assert at.select_slider[0].value == 0  # ... and the step picked stays
        assert "step 0" in chart(at, "compare_heads_0")["layout"]["title"]["text"]
        at.toggle(key="compare_follow").set_value(True).run()
        assert at.select_slider[0].disabled and at.select_slider[0].value == int(at.select_slider[0].options[-1]) > 0
    finally:
        stop_live(job)


def test_following_moves_to_the_next_variant_when_it_starts(monkeypatch):
    monkeypatch.setitem(READY, "heads", TINY.changed("train", steps=300))
    at = open_compare(experiment="heads")
    at.button(key="compare_run").click().run()
    job = at.session_state["compare_job"]
    try:
        deadline = time.monotonic() + 60
        while len(job.chain.runs) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
            at.run()
        at.run()
        assert not at.exception and not job.done, "the second variant finished before the page saw it train"
        radio = at.radio(key="compare_timeline_variant")
        assert radio.options == ["1 head", "4 heads"] and radio.value == "4 heads" and radio.disabled
    finally:
        stop_live(job)


def test_custom_settings_survive_a_visit_to_another_page():
    at = open_compare(experiment="custom")
    at.selectbox(key="compare_switch").set_value("n_layers").run()
    at.number_input(key="compare_seed").set_value(5).run()
    at.switch_page("pages/masking.py").run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception and at.selectbox(key="compare_switch").value == "n_layers"
    assert at.number_input(key="compare_seed").value == 5 and at.multiselect(key="compare_values").value == [1, 2]


def test_a_custom_run_shows_only_under_the_settings_it_was_trained_with():
    at = open_compare(experiment="custom", length="3", steps="50", d_model="16")
    at.button(key="compare_run").click().run()
    until_done(at, 120)
    assert not at.exception and any("your live run" in c.value for c in at.caption)
    at.selectbox(key="compare_task").set_value("copy").run()  # other settings: that run does not answer them
    assert not at.exception and not any("your live run" in c.value for c in at.caption) and not at.table
    assert "No results for these settings yet" in at.info[-1].value
    at.selectbox(key="compare_task").set_value("reverse").run()  # reverse's lesson setup: not the run's settings
    assert not any("your live run" in c.value for c in at.caption)
    for name, value in {"steps": 50, "d_model": 16}.items():  # back to the run's own settings
        at.number_input(key=f"compare_{name}").set_value(value).run()
    assert any("your live run" in c.value for c in at.caption)


def test_a_task_picked_in_the_builder_starts_from_its_default_run_trained_as_compare_trains():
    at = open_compare(experiment="custom", seed="7")
    at.selectbox(key="compare_task").set_value("dedup").run()
    assert not at.exception
    run = spec.default_run("dedup")
    for name in ("min_len", "max_len", "n_symbols", "d_model", "n_layers", "steps"):
        assert at.number_input(key=f"compare_{name}").value == run[name], name
    assert at.number_input(key="compare_seed").value == 7  # the student's own
    assert at.query_params["task"] == "dedup"


def test_a_live_rerun_goes_on_while_the_student_looks_at_another_page(monkeypatch):
    monkeypatch.setitem(READY, "heads", TINY)
    at = open_compare(experiment="heads")
    at.button(key="compare_run").click().run()
    job = at.session_state["compare_job"]
    at.switch_page("pages/anatomy.py").run()
    deadline = time.monotonic() + 60
    while not job.done and time.monotonic() < deadline:  # each run is one poll of the sidebar's heartbeat
        time.sleep(0.2)
        at.run()
    assert not at.exception and job.done
    assert [run.result.reason for run in job.chain.runs] == [
        "step budget",
        "step budget",
    ]  # both variants, none cut short


def test_one_run_per_student_at_a_time(monkeypatch):
    monkeypatch.setitem(READY, "heads", TINY.changed("train", steps=100_000))
    at = open_compare(experiment="heads")
    at.button(key="compare_run").click().run()
    try:
        at.switch_page("pages/train.py").run()
        start = at.button(key="start_training")
        assert start.disabled and "Compare page is still training" in start.proto.help
    finally:
        stop_live(at.session_state["compare_job"])


def test_a_file_loaded_while_a_rerun_trains_asks_first_and_loses_nothing(monkeypatch, browser):
    monkeypatch.setitem(READY, "heads", TINY.changed("train", steps=100_000))
    at = open_compare(experiment="heads")
    at.button(key="compare_run").click().run()
    job = at.session_state["compare_job"]
    good = result_path("post-vs-pre-norm").read_bytes()
    at.file_uploader(key="compare_upload").set_value(("first.json", good, "application/json")).run()
    assert not at.exception and not job.done and at.session_state["compare_job"] is job  # nothing stopped ...
    assert at.selectbox(key="compare_experiment").value == "heads" and "compare_loaded" not in at.session_state
    assert "still training" in at.warning[0].value and markdown_literal("first.json") in at.warning[0].value

    at.button(key="compare_pending_keep").click().run()  # ... the student keeps the rerun ...
    assert not at.exception and not job.done and at.session_state["compare_job"] is job
    assert not at.warning and "Your rerun goes on" in at.info[-1].value

    at.file_uploader(key="compare_upload").set_value(("second.json", good, "application/json")).run()
    at.button(key="compare_pending_show").click().run()  # ... or, asked again, shows the file
    assert not at.exception and job.done and "compare_job" not in at.session_state and not at.warning
    assert at.selectbox(key="compare_experiment").value == "post-vs-pre-norm"
    assert any(c.value == f"Showing: loaded from {markdown_literal('second.json')}." for c in at.caption)
    job.chain.current.stop(wait_s=30)


@pytest.mark.usefixtures("class_server")
def test_a_class_student_s_custom_experiment_starts_from_their_class_s_task():
    store = ui.classes.class_store()
    code, key = store.create_class("Period 3", 14, Caller(None, "the-teacher's-browser"))
    store.set_assignment(code, key, Assignment({"task": "caesar"}), Caller(None, "the-teacher's-browser"))
    at = open_compare(**{"class": code})
    at.switch_page("pages/train.py").run()
    at.text_input(key="class_name").set_value("Ada")
    at.button(key="class_join_button").click().run()
    at.switch_page("pages/compare.py").run()
    at.selectbox(key="compare_experiment").set_value("custom").run()
    assert not at.exception and at.selectbox(key="compare_task").value == "caesar"
    assert at.number_input(key="compare_n_symbols").value == task_setup("caesar")["n_symbols"] != 10  # its run's
    outside = open_compare()
    outside.selectbox(key="compare_experiment").set_value("custom").run()
    assert outside.selectbox(key="compare_task").value == "reverse"  # outside a class: the lesson's task


def joined_student(code: str) -> AppTest:
    """A student who opened the class link and joined on Train, not yet on Compare."""
    return join_class(open_class_link(code), "Ada")


@pytest.mark.usefixtures("class_server")
def test_compare_opens_on_the_class_s_own_experiment_for_a_class_on_another_task():
    store, teacher = ui.classes.class_store(), Caller(None, "the-teacher's-browser")
    code, key = store.create_class("Period 3", 14, teacher)
    groups = (Group("with PE", "sinusoidal"), Group("no PE", "none"))
    translate = Assignment({**spec.default_run("translate"), "steps": 200}, setting="positional", groups=groups)
    store.set_assignment(code, key, translate, teacher)
    at = joined_student(code)
    at.switch_page("pages/compare.py").run()
    assert not at.exception and at.selectbox(key="compare_experiment").value == "custom"
    assert at.selectbox(key="compare_task").value == "translate"  # not the ready-made experiments' reverse
    assert at.number_input(key="compare_max_len").value == task_setup("translate")["max_len"]
    assert at.number_input(key="compare_steps").value == 200  # the class's runs' budget, not the task's own
    assert (at.selectbox(key="compare_switch").value, at.multiselect(key="compare_values").value) == (
        "positional",
        ["sinusoidal", "none"],  # the class's groups
    )
    at.switch_page("pages/train.py").run()
    at.switch_page("pages/compare.py").run()  # a second visit keeps what the student had
    assert at.selectbox(key="compare_experiment").value == "custom"
    # a link that names an experiment opens it; a class on the lesson's task keeps the ready-made ones
    linked = joined_student(code)
    linked.query_params["experiment"] = "post-vs-pre-norm"
    linked.switch_page("pages/compare.py").run()
    assert linked.selectbox(key="compare_experiment").value == "post-vs-pre-norm"
    reverse, key = store.create_class("Period 4", 14, teacher)
    store.set_assignment(reverse, key, Assignment({"task": "reverse"}, setting="positional", groups=groups), teacher)
    on_reverse = joined_student(reverse)
    on_reverse.switch_page("pages/compare.py").run()
    assert on_reverse.selectbox(key="compare_experiment").value == next(iter(READY))


def test_a_student_of_a_class_with_its_own_task_is_told_compare_cannot_train_it():
    store, teacher = ui.classes.class_store(), Caller(None, "the-teacher's-browser")
    code, key = store.create_class("Period 3", 14, teacher)
    rows = [(f"row {i}", f"{a} {b}", f"{b} {a}") for i, (a, b) in enumerate(zip("abcdefgh", "hgfedcba"), 1)]
    store.set_task(code, key, pairs_from_rows(rows, "**our** pairs.csv"), teacher)
    at = joined_student(code)
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    (notice,) = [i.value for i in at.info if "Compare cannot train" in i.value]
    assert markdown_literal("**our** pairs.csv") in notice  # the teacher's file name, as literal text
    other = joined_student(store.create_class("Period 4", 14, teacher)[0])  # a class on a lab task: no such notice
    other.switch_page("pages/compare.py").run()
    assert not [i.value for i in other.info if "Compare cannot train" in i.value]
