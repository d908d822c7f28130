import json
import re
import time
from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

import ui.common
import ui.state
from tests.helpers import array, wait_until
from tests.helpers.apptest import choose_task, kept, open_train, poll_until_done, start
from tests.helpers.serving import ENDLESS
from transformer import settings as spec
from transformer.checkpoint import load_checkpoint
from transformer.i18n import translator
from transformer.limits import MAX_TABLE_PAIRS
from transformer.literal import markdown_literal
from transformer.model import ModelConfig
from transformer.naming import final_exact_match
from transformer.run_configs import run_configs
from transformer.serving import Run
from transformer.task_file import read_task_file
from transformer.tasks import DataConfig, get_task, task_names
from transformer.training import TrainConfig, Trainer, TrainingDiverged, smoothed_loss_floor
from ui.own_task import ENOUGH_PAIRS, EXAMPLE
from ui.train_controls import SAME_RUN
from ui.train_form import form_settings

pytestmark = pytest.mark.usefixtures("restore_threads", "fresh_registry")  # tests/pages/conftest.py


def fill_every_slot(registry) -> list[tuple[str, Run]]:
    """Every training slot taken by an endless run of another student, whose page stays connected; returns
    (watcher, run) pairs."""
    others = []
    for i in range(registry.settings.slots):
        configs = DataConfig(task="copy", min_len=3, max_len=3, seed=100 + i), TrainConfig(seed=100 + i, **ENDLESS)
        others.append((f"other-{i}", registry.submit(f"other-{i}", ModelConfig(), *configs, connected=lambda: True)))
    wait_until(lambda: all(run.status != "queued" for _, run in others))
    return others


@pytest.fixture
def stop_jobs():
    """Stops every job a test started, so no thread outlives it or holds a training slot."""
    apps: list[AppTest] = []
    yield apps
    for at in apps:
        if "run" in at.session_state:
            at.session_state["run"].stop(wait_s=30)


def test_page_renders_with_classroom_defaults():
    at = open_train()
    assert at.title[0].value == "Train a Transformer"
    assert at.selectbox(key="train_task").value == "reverse"
    assert at.number_input(key="train_d_model").value == 32
    assert not at.button(key="start_training").disabled
    assert "stop_training" not in keys(at.button)  # no run, no run controls
    assert [chart.proto.id for chart in at.get("plotly_chart")]  # the empty axes the curves will fill
    assert "run" not in at.session_state


def keys(widgets) -> set[str]:
    return {w.key for w in widgets}


def test_training_streams_curves_and_puts_the_model_in_hand(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="copy", min_len=3, max_len=3, symbols=4, steps=60, batch=32, label_smoothing=0.1)
    job = at.session_state["run"]
    assert job.train_config.record_attention and job.data_config.task == "copy"
    if not job.done:  # the live view, not the form, while it trains
        assert "start_training" not in keys(at.button) and not at.button(key="stop_training").disabled
    poll_until_done(at)

    assert job.result is not None and job.result.steps <= 60
    loss = json.loads(at.get("plotly_chart")[0].proto.spec)
    steps = array(loss["data"][0]["x"])
    assert len(steps) >= 2 and steps[-1] == job.result.steps
    assert [trace["name"] for trace in loss["data"]] == ["held-out loss", "training loss, every step"]
    assert len(array(loss["data"][1]["y"])) == job.result.steps  # every step's loss, not one point per metric row
    floor = smoothed_loss_floor(0.1, 7)  # 4 symbols + PAD, BOS, EOS
    assert [shape["y0"] for shape in loss["layout"]["shapes"]] == [pytest.approx(floor)]
    assert any(f"training loss is {floor:.2f}" in caption.value for caption in at.caption)
    lr = json.loads(at.expander[0].get("plotly_chart")[0].proto.spec)  # the schedule, where the run ended
    assert at.expander[0].label == "Learning rate over the run" and array(lr["data"][0]["x"])[-1] <= 60
    assert lr["layout"]["shapes"][0]["x0"] == job.result.steps
    examples = at.dataframe[0].value
    assert len(examples) == 5 and set(examples["right"]) <= {"✓", "✗"}
    assert examples.columns.tolist() == ["right", "input", "model output", "target"]  # a phone shows the first three
    assert all(" " not in text and "\u2002" in text for text in examples["input"]), examples["input"].tolist()
    metrics = at.dataframe[1].value
    assert metrics["step"].tolist() == steps.tolist()
    pinned = [c for t in at.dataframe for c, v in json.loads(t.proto.columns).items() if v.get("pinned")]
    assert pinned == []  # a grid fades a pinned column's text to about 3:1 (ui.tables)
    downloads = {button.proto.id.rsplit("-", 1)[-1] for button in at.get("download_button")}
    assert any("download_metrics" in i for i in downloads) and any("download_checkpoint" in i for i in downloads)

    name = at.session_state["in_hand_name"]
    assert name.startswith("trained: copy-3to3")
    trained = at.session_state["trained"]
    assert list(trained) == [name.removeprefix("trained: ")]
    saved = load_checkpoint(trained[name.removeprefix("trained: ")])
    assert saved.history[-1]["step"] == job.result.steps
    assert final_exact_match(saved) == job.result.exact_match  # what Checkpoints lists: the score the page said

    next_pages = [link.proto.page for link in at.main.get("page_link") if link.proto.page != ""]
    assert next_pages == ["decoding", "lengths", "masking"]  # where to take the model in hand next

    at.run()  # finishing is saved exactly once per job
    assert len(at.session_state["trained"]) == 1 and at.session_state["in_hand_name"] == name
    assert not at.button(key="start_training").disabled


def main_in_order(block) -> list[str]:
    """The types of the elements under `block`, top to bottom as the page draws them."""
    types = []
    for index in sorted(block.children):
        node = block.children[index]
        types += main_in_order(node) if node.type == "block" or hasattr(node, "children") else [node.type]
    return types


def test_start_on_a_finished_identical_run_shows_its_result_at_once_and_says_why(stop_jobs):
    first, second = open_train(), open_train()
    stop_jobs.extend([first, second])
    settings = dict(task="copy", min_len=3, max_len=3, symbols=4, steps=60, batch=32)
    start(first, **settings)
    poll_until_done(first)
    job = first.session_state["run"]
    assert job.ended_on_its_own_terms() and SAME_RUN not in [info.value for info in first.info]
    finished = f"Finished after {job.result.steps} steps"

    start(second, **settings)  # another student, the same settings: this one redraw shows the run's end
    assert second.session_state["run"] is job
    assert second.info[0].value == SAME_RUN and not second.toast  # a toast would cover a phone's title
    assert second.success[0].value.startswith(finished) and second.get("plotly_chart")

    start(first)  # the same student again, the form unchanged
    assert first.session_state["run"] is job and first.info[0].value == SAME_RUN
    assert first.success[0].value.startswith(finished)
    first.run()
    assert SAME_RUN not in [info.value for info in first.info]  # said once, at the Start it answers


def test_a_run_joined_again_after_another_is_listed_once_as_the_newest(stop_jobs):
    """Start with settings trained before joins that run: its model goes in hand again, and the session's list of
    trained models (MAX_TRAINED at most) keeps it once, not a copy pushing an older model out."""
    at = open_train()
    stop_jobs.append(at)
    first = dict(task="copy", min_len=3, max_len=3, symbols=4, steps=40, batch=32, seed=1)
    start(at, **first)
    poll_until_done(at)
    (name,) = at.session_state["trained"]
    start(at, **{**first, "seed": 5})
    poll_until_done(at)
    start(at, **first)  # the first settings again: the first run, finished
    poll_until_done(at)
    assert list(at.session_state["trained"])[-1] == name and len(at.session_state["trained"]) == 2
    assert at.session_state["in_hand_name"] == "trained: " + name


def test_a_reload_takes_back_the_browser_s_models_and_the_one_it_last_put_in_hand(stop_jobs, browser):
    """Phones reload often, and a reload starts a new session: it takes back the browser's trained models, and the
    model it last put in hand, not the run it trained before loading that one."""
    at = open_train()
    stop_jobs.append(at)
    start(at, task="copy", min_len=3, max_len=3, symbols=4, steps=40, batch=32)
    poll_until_done(at)
    (name,) = at.session_state["trained"]
    assert at.session_state["in_hand_name"] == "trained: " + name
    at.run()
    home = AppTest.from_file("../../streamlit_app.py", default_timeout=60).run()  # another tab of the browser
    home.button(key="load_reverse").click().run()
    assert not home.exception and list(home.session_state["trained"]) == [name]  # the browser's list
    reloaded = AppTest.from_file("../../streamlit_app.py", default_timeout=60).run()
    assert not reloaded.exception and reloaded.session_state["in_hand_name"] == "shipped: reverse"
    assert list(reloaded.session_state["trained"]) == [name]


def test_a_run_that_ended_while_its_tab_was_closed_is_in_hand_when_the_browser_comes_back(stop_jobs, browser):
    """As after a reload mid-run: the run the student started, not the model in hand before it, is what the other
    pages probe."""
    at = open_train()
    stop_jobs.append(at)
    start(at, task="copy", min_len=3, max_len=3, symbols=4, steps=40, batch=32, seed=1)
    poll_until_done(at)
    (first,) = at.session_state["trained"]
    start(at, task="copy", min_len=3, max_len=3, symbols=4, steps=40, batch=32, seed=2)
    job = at.session_state["run"]
    wait_until(lambda: job.done)  # the tab closed: no page of this browser ran while the run ended
    reopened = AppTest.from_file("../../streamlit_app.py", default_timeout=60).run()
    assert not reopened.exception and reopened.session_state["run"] is job
    (second,) = [name for name in reopened.session_state["trained"] if name != first]
    assert reopened.session_state["in_hand_name"] == "trained: " + second


def test_a_run_a_server_restart_lost_is_told_to_its_browser_with_its_settings_back(browser):
    """A server killed mid-run starts again with no run in memory: the browser's Train pages say what was lost and
    at every redraw until the browser starts another run (a reload may resume the session of a tab that reconnected
    by itself), and their form takes the lost run's settings once in each page session."""
    ui.common.lost_runs.clear()  # this server's, writing under this test's LAB_DATA_DIR
    at = open_train()
    start(at, task="copy", min_len=3, max_len=3, symbols=4, steps=100_000, seed=321)
    job = at.session_state["run"]
    wait_until(lambda: job.step > 0)
    ui.common.lost_runs.clear()  # the server stops, and with it what it writes down of its runs in flight...
    ui.common.run_registry.clear()  # ...and every run
    ui.common.runs_by_browser().clear()  # which browser's run is which, in memory: gone with it
    restarted = open_train()  # the browser, on the next server
    (said,) = [w.value for w in restarted.warning if "server restarted" in w.value]
    assert "run of copy (seed 321)" in said and not restarted.exception
    assert restarted.number_input(key="train_seed").value == 321 and restarted.number_input(key="train_steps").value
    assert restarted.selectbox(key="train_task").value == "copy" and "run" not in restarted.session_state
    restarted.run()
    assert [w.value for w in restarted.warning if "server restarted" in w.value]  # still said at the next redraw
    reloaded = open_train()  # a reload after the tab had reconnected by itself: said again
    assert [w.value for w in reloaded.warning if "server restarted" in w.value]
    reloaded.button(key="start_training").click().run()  # the lost run's settings, trained anew
    assert reloaded.session_state["run"].train_config.seed == 321
    reloaded.session_state["run"].stop(wait_s=30)
    assert not [w.value for w in open_train().warning if "server restarted" in w.value]  # no longer lost
    ui.common.lost_runs.clear()


def test_the_end_of_a_run_is_drawn_above_its_curves(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="copy", min_len=3, max_len=3, symbols=4, steps=60, batch=32)
    poll_until_done(at)
    order = main_in_order(at.main)
    assert order.index("success") < order.index("plotly_chart")  # the outcome first, in view when the run ends
    assert order.index("page_link") < order.index("plotly_chart")  # and where to go next


def paused_run(at: AppTest) -> Run:
    """Start a long reverse run, let it report a metric row, pause it and redraw the page once it holds."""
    start(at, task="reverse", steps=5000)
    job = at.session_state["run"]
    wait_for_a_new_row(job)
    at.button(key="pause_training").click()
    at.run()
    wait_until(lambda: job.status == "paused")  # held once the step in flight ends
    at.run()
    return job


def test_on_another_page_the_sidebar_says_a_paused_run_is_paused(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    job = paused_run(at)
    at.switch_page("pages/decoding.py")
    at.run()
    assert [bar.proto.text for bar in at.sidebar.get("progress")] == [f"Paused at step {job.step}, at most 5,000"]
    shown = [m.value.replace("\\", "") for m in at.sidebar.markdown]  # as Markdown, its punctuation escaped
    assert f"**Model in hand:** paused reverse, step {job.rows[-1]['step']}" in shown


def test_the_progress_line_fills_with_exact_match_and_calls_the_step_budget_a_ceiling(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    job = paused_run(at)  # no new row while the page is read
    bar = at.get("progress")[0].proto
    assert bar.value == int(100 * job.rows[-1]["exact_match"])  # the measure that ends the run, not the steps
    assert bar.text.startswith(f"Paused at step {job.step} · held-out exact match ")
    assert "the run stops when it reaches 100%" in bar.text and "5,000 steps" in bar.text
    assert bar.text.endswith("is a ceiling, not a forecast.")
    assert re.search(r"5,000 steps \(at most \d+ s more of training, longer on a busy server\)", bar.text)
    job.rows[-1]["exact_match"] = 1.0  # a row's sample all right, while the whole held-out set is not: it trains on
    at.run()
    bar = at.get("progress")[0].proto
    assert bar.value == 99 and "held-out exact match 99%" in bar.text
    at.button(key="stop_training").click()
    at.run()


def test_every_form_setting_reaches_the_run(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(
        at,
        task="copy",
        min_len=2,
        max_len=5,
        symbols=7,
        d_model=16,
        heads=2,
        layers=2,
        d_ff=48,
        dropout=0.1,
        lr=0.002,
        warmup=7,
        batch=24,
        steps=30,
        seed=9,
        label_smoothing=0.2,
        ema_decay=0.5,
        positional="learned",
        norm=True,
        causal=False,
        scale=False,
    )
    job = at.session_state["run"]
    model, data, train = job.model_config, job.data_config, job.train_config
    assert (data.task, data.min_len, data.max_len, data.n_symbols, data.seed) == ("copy", 2, 5, 7, 9)
    assert (model.d_model, model.n_heads, model.n_layers, model.d_ff, model.dropout) == (16, 2, 2, 48, 0.1)
    assert (model.positional, model.norm_first, model.causal_mask, model.scale_scores) == (
        "learned",
        True,
        False,
        False,
    )
    assert (train.lr, train.warmup, train.batch_size, train.steps, train.seed) == (0.002, 7, 24, 30, 9)
    assert (train.label_smoothing, train.ema_decay) == (0.2, 0.5)


def test_the_learning_rate_starts_empty_and_a_run_takes_the_peak_for_its_model_size(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    assert at.get_by_key("train_lr").value is None
    lr = at.number_input(key="train_lr").proto
    assert (lr.format, lr.placeholder) == ("%g", "auto")  # "0.01" in a third of a row: "%.4f" showed "0.0", cut
    start(at, d_model=128, layers=3, steps=5)
    assert at.session_state["run"].train_config.lr == pytest.approx(0.0025)
    assert any("· peak lr 0.0025 ·" in shown(caption.value) for caption in at.caption)  # the run says what it used
    at.button(key="stop_training").click()
    at.run()
    at.session_state["run"].wait_until_done(20)
    at.run()
    start(at, d_model=32, layers=1, steps=5)  # the default model: the default peak
    assert at.session_state["run"].train_config.lr == TrainConfig().lr


def test_start_draws_the_first_steps_in_its_own_redraw(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="copy", min_len=3, max_len=3, symbols=4, steps=5000)  # set-up takes a few ms
    job = at.session_state["run"]
    assert job.losses  # Start waited for the first step...
    loss = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert len(array(loss["data"][1]["y"])) >= 1  # ...so the curve starts without waiting for the next poll


def test_the_form_makes_way_for_the_run_while_it_trains_and_stop_ends_it(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="reverse", steps=5000)
    job = at.session_state["run"]
    assert not job.done and "start_training" not in keys(at.button)
    assert shown(at.caption[1].value).startswith("reverse, lengths 6-8, 10 symbols · d_model 32")  # the settings

    wait_for_a_new_row(job)  # stopped before its first step, a run saves nothing (a test below)
    at.button(key="stop_training").click()
    at.run()
    deadline = time.monotonic() + 30
    while not job.done and time.monotonic() < deadline:
        time.sleep(0.2)
    assert job.done and job.result.reason == "stopped"
    at.run()
    assert not at.exception and not at.success and at.info[0].value.startswith(f"Stopped at step {job.result.steps} ")
    assert "because you pressed Stop:" in at.info[0].value  # not a guess between the student and an idle page
    assert f"after {job.result.seconds:.1f} s of training," in at.info[0].value  # not the clock's: a slot's limit is
    assert not at.button(key="start_training").disabled  # the form is back, under the results


def test_pause_holds_the_run_step_trains_one_row_and_resume_finishes_it(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    job = paused_run(at)
    assert at.button(key="step_training").disabled is False
    held = job.step
    time.sleep(0.5)
    at.run()
    assert job.step == held and any(p.proto.text.startswith(f"Paused at step {held} ") for p in at.get("progress"))
    at.button(key="step_training").click()
    at.run()
    every = job.train_config.eval_every
    wait_until(lambda: job.status == "paused" and job.step > held, timeout=30)
    assert job.step == (held // every + 1) * every  # one metric row's worth, then paused again
    at.run()
    at.button(key="pause_training").click()
    at.run()
    assert job.status == "training" and "pause_training" in keys(at.button)
    at.button(key="stop_training").click()
    at.run()
    assert not at.exception


def test_classmates_who_shared_a_run_that_ended_read_that_they_trained_it_together(stop_jobs):
    first, second = open_train(), open_train()
    stop_jobs.extend([first, second])
    for page in (first, second):
        start(page, task="reverse", steps=30, seed=4242)
    assert first.session_state["run"] is second.session_state["run"]
    poll_until_done(second)
    first.run()
    captions = [c.value for c in first.caption]
    assert any("Same settings as 1 classmate: you all trained this one run" in c for c in captions), captions
    assert not any("watching" in c for c in captions)


def test_identical_runs_are_one_run_and_leaving_it_leaves_it_to_the_others(stop_jobs):
    first, second = open_train(), open_train()
    stop_jobs.extend([first, second])
    start(first, task="reverse", steps=5000, lr=0.0001)  # too slow a rate to solve it while the test watches
    start(second, task="reverse", steps=5000, lr=0.0001)
    job = first.session_state["run"]
    assert second.session_state["run"] is job
    first.run()
    assert any("Same settings as 1 classmate: you are all watching one run" in c.value for c in first.caption)
    assert first.button(key="pause_training").disabled  # a shared run cannot be paused by one student
    second.button(key="stop_training").click()
    second.run()
    assert "run" not in second.session_state and "goes on for the 1 other student" in second.info[0].value
    time.sleep(0.5)
    assert not job.done  # the other student still watches it
    first.button(key="stop_training").click()
    first.run()
    assert job.done and job.result.reason == "stopped"


def test_a_click_that_races_a_starting_job_starts_no_second_one(stop_jobs):
    first = open_train()
    stop_jobs.append(first)
    start(first, steps=5000)
    job = first.session_state["run"]
    second = open_train()  # a second click, sent before the page redrew Start as disabled
    second.button(key="start_training").click()
    second.session_state["run"] = job
    second.run()
    assert not second.exception and second.session_state["run"] is job
    assert [run for runs in ui.common.run_registry()._slots for run in runs] == [job]
    job.stop()
    wait_until(lambda: job.done, timeout=30)
    second.run()  # the form is back: the second click left no message for it
    assert not any("already" in i.value for i in second.info), [i.value for i in second.info]


def test_a_full_server_queues_the_run_and_starts_it_when_a_slot_frees(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    registry = ui.common.run_registry()
    others = fill_every_slot(registry)  # every slot held by runs of other students
    start(at, task="copy", min_len=3, max_len=3, steps=20)
    job = at.session_state["run"]
    assert job.status == "queued" and "your run is number 1 in the queue" in at.info[0].value
    assert "how long it waits is not known" in at.info[0].value  # no run of its kind has finished: no guess
    assert at.button(key="stop_training").label == "Leave queue"
    registry.leave(*others[0])  # a slot frees: the queued run starts on its own
    poll_until_done(at)
    assert job.result.steps == 20 and not at.exception


def test_a_queued_run_whose_page_went_quiet_ends_with_a_message(monkeypatch):
    at = open_train()
    registry = ui.common.run_registry()
    fill_every_slot(registry)
    start(at, steps=10)
    job = at.session_state["run"]
    assert job.status == "queued"
    monkeypatch.setattr(registry, "settings", replace(registry.settings, idle_timeout_s=0.1))
    monkeypatch.setattr(job, "idle_timeout_s", 0.1)
    time.sleep(0.2)  # the page polls no more (a sleeping laptop) ...
    assert registry.place(job) is None  # ... and the next look at the queue drops it
    at.run()
    assert job.done and job.started_at is None
    assert "left the queue without starting: no page checked on it" in at.warning[0].value
    assert not at.button(key="start_training").disabled and not at.exception


def test_a_full_queue_says_so():
    at = open_train()
    registry = ui.common.run_registry()
    registry.settings = replace(registry.settings, max_queue=0)
    fill_every_slot(registry)
    start(at, steps=10)
    assert "could not start" in at.warning[0].value and "waiting for a training slot" in at.warning[0].value
    assert "run" not in at.session_state


@pytest.mark.parametrize(
    "values, message",
    [
        (dict(d_model=30, heads=4), "divisible"),
        (dict(min_len=9, max_len=3), "shortest input"),
        (dict(device="mps"), "MPS was asked for"),  # never available on Linux
        (dict(task="add", min_len=1, max_len=3), "add takes inputs of 3 to 64 symbols"),
        (dict(task="brackets", symbols=10), r"brackets takes 2\, 4\, 6 or 8 bracket symbols"),
        (dict(d_model=128, heads=8, layers=3, d_ff=512, max_len=24, batch=256), "MB a run may use on this shared"),
    ],
)
def test_invalid_settings_show_an_error(values, message):
    at = open_train()
    start(at, **values)
    assert message in at.error[0].value and "run" not in at.session_state


def test_a_failed_run_shows_its_error_and_what_to_do(monkeypatch):
    def diverge(trainer, control):
        raise TrainingDiverged("the loss became nan at step 3: lower the learning rate")
        yield

    monkeypatch.setattr(Trainer, "train", diverge)
    job = ui.common.run_registry().submit("other", ModelConfig(), DataConfig(max_len=4), TrainConfig(steps=10))
    assert job.wait_until_done(10)
    at = open_train()
    at.session_state["run"] = job
    at.run()
    assert not at.exception and "lower the learning rate" in at.error[0].value
    assert "trained" not in at.session_state and not at.button(key="start_training").disabled


def shown(markdown: str) -> str:
    """Markdown as it reads on the page: names from runs and files are backslash-escaped to read literally."""
    return re.sub(r"\\(.)", r"\1", markdown)


def sidebar_model(at: AppTest) -> str:
    return shown(next(m.value for m in at.sidebar.markdown if m.value.startswith("**Model in hand:**")))


def test_a_run_stopped_on_another_tab_of_the_same_browser_says_so(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="reverse", steps=5000)
    job = at.session_state["run"]
    wait_for_a_new_row(job)
    ui.common.run_registry().leave(at.session_state["watcher"], job)  # the browser's other tab pressed Stop
    wait_until(lambda: job.done, timeout=30)
    at.run()
    assert not at.exception and "because you pressed Stop on a page of yours that watched it:" in at.info[0].value


def wait_for_a_new_row(job: Run) -> None:
    """Until the run reports its next metric row, which comes with new weights of its model."""
    rows, deadline = len(job.rows), time.monotonic() + 30
    while len(job.rows) == rows:
        assert time.monotonic() < deadline and not job.done
        time.sleep(0.1)


def test_a_model_loaded_during_a_run_stays_in_hand_and_the_run_is_still_saved(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="sort", steps=5000)
    wait_for_a_new_row(at.session_state["run"])
    at.run()
    assert sidebar_model(at) == "**Model in hand:** the run on this page, at its latest step"  # from the start
    assert len(at.get("progress")) == 1 and not at.sidebar.get("progress")  # one progress bar: the page's own
    at.switch_page("pages/checkpoints.py")
    at.run()
    assert sidebar_model(at).startswith("**Model in hand:** training sort, step ")  # elsewhere: its latest step
    assert len(at.sidebar.get("progress")) == 1
    at.button(key="load_copy").click()
    at.run()
    assert not at.exception and sidebar_model(at) == "**Model in hand:** shipped: copy"

    at.session_state["run"].stop(wait_s=30)
    at.switch_page("pages/train.py")
    at.run()
    assert not at.exception and sidebar_model(at) == "**Model in hand:** shipped: copy"
    (name,) = at.session_state["trained"]
    assert name.startswith("sort-") and any(f"Saved as *{name}*" in shown(i.value) for i in at.info)
    assert not at.get("page_link")  # the model in hand is another: no "test it" links for this run


def test_decoding_steps_on_while_the_run_in_hand_trains(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="reverse", min_len=8, max_len=8, steps=5000)
    job = at.session_state["run"]
    wait_for_a_new_row(job)
    at.switch_page("pages/decoding.py")
    at.run()
    first = kept(at, "decoding").model
    for step in (2, 3):
        wait_for_a_new_row(job)  # the model in hand is a new snapshot at each click
        at.button(key="decode_next").click()
        at.run()
        assert not at.exception
        assert any(m.value.startswith(f"**Step {step} of ") for m in at.markdown)
        assert kept(at, "decoding").model is first  # the walkthrough keeps the model it began with
        assert "has trained on to step" in at.info[0].value
    at.button(key="decode_refresh_button").click()
    at.run()
    assert not at.exception and kept(at, "decoding").model is not first
    assert any(m.value.startswith("**Step 3 of ") for m in at.markdown)  # same step, newest model


def test_the_form_comes_back_as_it_was_left_after_a_visit_to_another_page(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="sort", d_model=64, positional="learned", causal=False, steps=5000)
    at.session_state["run"].stop(wait_s=30)
    at.switch_page("pages/anatomy.py")
    at.run()
    at.switch_page("pages/train.py")
    at.run()
    assert not at.exception
    assert at.selectbox(key="train_task").value == "sort" and at.number_input(key="train_d_model").value == 64
    assert at.radio(key="train_positional").value == "learned" and at.toggle(key="train_causal").value is False
    assert at.number_input(key="train_heads").value == ModelConfig().n_heads  # untouched: still the default


def test_a_task_chosen_after_a_run_is_still_chosen_after_another_page(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="sort", steps=5000)  # the run keeps its settings, for the form after a reload
    at.session_state["run"].stop(wait_s=30)
    at.run()  # the form again, under the stopped run
    choose_task(at, "caesar")  # not started: the form holds caesar's default run, not the run's settings
    at.switch_page("pages/decoding.py").run()
    at.switch_page("pages/train.py").run()
    assert not at.exception
    assert form_values(at) == {**spec.default_run("caesar"), "seed": at.session_state["train_seed"]}


def test_a_session_keeps_only_its_last_trained_models(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    older = {f"old-{i}": b"checkpoint bytes" for i in range(ui.state.MAX_TRAINED)}
    at.session_state["trained"] = dict(older)
    start(at, task="copy", min_len=3, max_len=3, symbols=4, steps=30, batch=32)
    poll_until_done(at)
    trained = at.session_state["trained"]
    newest = at.session_state["in_hand_name"].removeprefix("trained: ")
    assert list(trained) == [*list(older)[1:], newest]  # the oldest made room


def test_a_run_stopped_before_its_first_step_saves_nothing():
    registry = ui.common.run_registry()
    others = fill_every_slot(registry)
    job = registry.submit("other", ModelConfig(), DataConfig(task="copy", min_len=3, max_len=3), TrainConfig(steps=100))
    job.stop()  # asked while queued: the worker stops it before its first step
    registry.leave(*others[0])
    assert job.wait_until_done(30) and job.result.steps == 0
    at = open_train()
    at.session_state["run"] = job
    at.run()
    assert not at.exception and "nothing was trained or saved" in at.info[0].value
    assert "trained" not in at.session_state and "in_hand" not in at.session_state


def dynamics_expander(at: AppTest):
    return next(e for e in at.expander if e.label == "How training reshapes the model")


def test_the_embeddings_and_gradient_norms_of_every_row_are_shown_and_a_slider_picks_the_row(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="copy", min_len=3, max_len=3, symbols=4, steps=60, batch=32)
    poll_until_done(at)
    job = at.session_state["run"]
    steps = [record["step"] for record in job.dynamics]
    assert steps == [int(row["step"]) for row in job.rows] and len(steps) >= 2
    view = dynamics_expander(at)
    slider = view.select_slider[0]
    assert slider.value == steps[-1] and not slider.disabled
    embeddings, gradients = (json.loads(chart.proto.spec) for chart in view.get("plotly_chart"))
    assert embeddings["data"][1]["text"] == ["0", "1", "2", "3"]  # the run's 4 symbols
    assert f"step {steps[-1]}" in embeddings["layout"]["title"]["text"]
    heatmap = gradients["data"][0]
    assert heatmap["y"] == [
        "embeddings",
        "encoder<br>layer 0",
        "decoder<br>layer 0",
        "generator",
    ]  # two lines: a column
    read = [str(record["step"]) for record in job.dynamics if record["grad_norms"] is not None]
    assert heatmap["x"] == read and len(read) >= len(steps) - 1  # only the last row may end between two reads

    slider.set_value(steps[0]).run()
    assert not at.exception
    embeddings = json.loads(dynamics_expander(at).get("plotly_chart")[0].proto.spec)
    assert f"step {steps[0]}" in embeddings["layout"]["title"]["text"]
    first = job.dynamics[0]["embeddings"]
    assert array(embeddings["data"][1]["x"]).tolist() == pytest.approx([x for x, _ in first])


# ---- a task of one's own

SWAPS = "source,target\n" + "\n".join(f"{a} {b},{b} {a}" for a in "abcdef" for b in "abcdef" if a != b)


def test_an_uploaded_task_file_is_what_start_trains(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    at.file_uploader(key="train_task_file_0").set_value(("swaps.csv", SWAPS.encode(), "text/csv"))
    at.run()
    assert not at.exception and not at.error
    task = at.session_state["train_own_task"]
    assert task == read_task_file(SWAPS.encode(), "swaps.csv")
    assert any("Start trains your own task, **swaps\\.csv**: 24 pairs" in info.value for info in at.info)
    assert not any(c.value.startswith("**reverse**:") for c in at.caption)  # the form's task is not described
    start(at, steps=40, batch=32)
    job = at.session_state["run"]
    assert job.data_config.pairs == task and job.data_config.task == "pairs"
    poll_until_done(at)
    assert at.session_state["in_hand_name"].startswith("trained: swaps_csv-2to2")
    assert load_checkpoint(next(iter(at.session_state["trained"].values()))).task.pairs == task
    at.button(key="train_forget_task").click().run()  # back to the task the form names
    assert "train_own_task" not in at.session_state and not any("your own task" in i.value for i in at.info)
    assert at.file_uploader(key="train_task_file_1").value is None  # a new uploader: the same file reads again


def test_a_reload_mid_run_keeps_the_uploaded_task_for_the_next_start(stop_jobs, browser):
    at = open_train()
    stop_jobs.append(at)
    at.file_uploader(key="train_task_file_0").set_value(("swaps.csv", SWAPS.encode(), "text/csv"))
    at.run()
    start(at, steps=5000, batch=32)
    job = at.session_state["run"]
    reloaded = open_train()  # a reload of the browser mid-run: a new session, the uploader empty
    stop_jobs.append(reloaded)
    assert reloaded.session_state["run"] is job
    assert reloaded.session_state["train_own_task"] == job.data_config.pairs
    reloaded.button(key="stop_training").click().run()
    wait_until(lambda: job.done)
    reloaded.run()
    assert any("Start trains your own task, **swaps\\.csv**" in info.value for info in reloaded.info)
    start(reloaded, steps=40, batch=32)  # Start another run: the file's task again, not the form's reverse
    assert reloaded.session_state["run"].data_config.pairs == job.data_config.pairs


def test_start_in_a_second_tab_says_why_it_shows_the_first_tab_s_run(stop_jobs, browser):
    first, second = open_train(), open_train()  # two tabs of one browser, both on Train
    stop_jobs.extend([first, second])
    start(first, task="reverse", steps=5000)
    start(second, seed=78)  # its own settings: refused while the first tab's run trains
    assert second.session_state["run"] is first.session_state["run"]  # that run, shown here ...
    assert any("your run in another tab is still training" in w.value for w in second.warning)  # ... and why


def test_a_bad_task_file_is_one_error_and_start_trains_the_named_task(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    at.file_uploader(key="train_task_file_0").set_value(("bad.csv", SWAPS.encode() + b"\na b,c", "text/csv"))
    at.run()
    shown = at.error[0].value.replace("\\", "")  # as Markdown, its punctuation escaped
    assert len(at.error) == 1 and "line 32: the source a b has the target c here but b a at line 2" in shown
    assert shown.startswith("`bad.csv` cannot be a task:")  # named: the next file the browser refuses leaves it shown
    assert "train_own_task" not in at.session_state
    start(at, task="copy", min_len=3, max_len=3, steps=10)
    assert at.session_state["run"].data_config.pairs is None


def test_a_bad_task_file_after_a_good_one_leaves_no_task_in_use():
    at = open_train()
    at.file_uploader(key="train_task_file_0").set_value(("swaps.csv", SWAPS.encode(), "text/csv"))
    at.run()
    assert at.session_state["train_own_task"].name == "swaps.csv"
    at.file_uploader(key="train_task_file_0").set_value(("bad.csv", SWAPS.encode() + b"\na b,c", "text/csv"))
    at.run()
    assert not at.exception and len(at.error) == 1 and "train_own_task" not in at.session_state
    assert any("swaps.csv, read before, is no longer in use" in info.value.replace("\\", "") for info in at.info)
    assert not any("Start trains your own task" in info.value for info in at.info)


def test_the_table_s_pairs_make_a_task():
    at = open_train()
    at.button(key="train_use_table").click().run()
    assert not at.exception and not at.error
    task = at.session_state["train_own_task"]
    assert task.name == "typed pairs" and len(task.train) + len(task.held_out) == len(EXAMPLE)
    assert {"miko", "cat", "selu"} <= set(task.symbols)


def test_the_table_starts_from_its_example_in_the_page_s_language_and_keeps_it_across_a_switch():
    at = open_train(lang="zh-CN")
    (table,) = at.data_editor
    chinese = [translator("zh-CN").gettext(s) for s, _ in EXAMPLE]
    assert table.value["source"].tolist() == chinese and table.value["source"][0] == "大 猫 看见 狗"
    at.button(key="train_use_table").click().run()
    assert {"猫", "miko", "selu"} <= set(at.session_state["train_own_task"].symbols)
    at.session_state["language"] = "en"
    at.run()
    assert at.data_editor[0].value["source"].tolist() == chinese  # what the table showed, edits and all


def test_a_gallery_task_chosen_on_the_form_trains_with_its_own_vocabulary(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="translate", min_len=3, max_len=5, symbols=4, steps=20)
    job = at.session_state["run"]
    assert job.data_config.task == "translate" and job.model_config.vocab_size == 3 + 2 * (4 + 5 + 4)
    poll_until_done(at)
    assert at.session_state["in_hand_name"].startswith("trained: translate-3to5")


# ---- the form


def form_values(at: AppTest) -> dict:
    return {s.name: at.get_by_key(s.form.key).value for s in spec.on_form()}


def test_choosing_a_task_fills_the_form_with_its_default_run_and_keeps_the_student_s_seed():
    at = open_train()
    at.session_state["train_seed"] = 7  # the student's seed
    assert len(task_names()) == 12
    for task in task_names():
        choose_task(at, task)
        run = spec.default_run(task)
        assert set(run) == set(spec.form_defaults())  # a default run the form can hold, setting by setting
        assert form_values(at) == {**run, "seed": 7}, task
        description = get_task(task).description
        assert f"**{task}**: {description}" in [caption.value for caption in at.caption]  # what it is, beside it
        run_configs(form_settings(at.session_state), shared=True)  # what Start checks: within the form's bounds
        assert not any(at.get_by_key(s.form.key).disabled for s in spec.on_form())  # each still the student's


def test_a_gallery_task_s_default_run_starts_from_the_form(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="translate")  # refused for its lengths before the form took its default run
    job, run = at.session_state["run"], spec.default_run("translate")
    assert not at.error and job.data_config.task == "translate"
    assert (job.data_config.min_len, job.data_config.max_len, job.train_config.steps) == (
        run["min_len"],
        run["max_len"],
        run["steps"],
    )


def test_enter_in_a_field_does_not_start_a_run():
    (form,) = [node for node in open_train().main if node.type == "form"]
    assert form.proto.form.form_id.startswith("train_settings_") and not form.proto.form.enter_to_submit


def form_key(at: AppTest) -> str:
    return [node for node in at.main if node.type == "form"][0].proto.form.form_id


def test_the_form_keeps_its_key_at_a_redraw_and_takes_a_new_one_where_the_page_sets_its_values():
    """Under a new key the form no longer sends what was typed into it (`ui.forms`): a redraw that sets nothing new
    (a run's end redraws the page as the student starts typing the next) keeps it; a task pick, a language switch
    and a return from another page, each of which sets the fields, give a new one."""
    at = open_train()
    first = form_key(at)
    at.run()
    assert form_key(at) == first
    choose_task(at, "copy")
    picked = form_key(at)
    assert picked != first
    at.selectbox(key="language_picker").set_value("zh-CN").run()
    switched = form_key(at)
    assert switched != picked
    at.switch_page("pages/anatomy.py").run()
    at.switch_page("pages/train.py").run()
    assert form_key(at) != switched


def test_a_typed_learning_rate_can_be_cleared_back_to_auto(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, lr=0.003, steps=5)
    at.session_state["run"].stop(wait_s=30)
    at.run()  # the form is back, with the rate typed
    lr = at.number_input(key="train_lr")
    assert lr.value == 0.003
    assert not lr.proto.HasField("default")  # a browser offers to clear a number input only when its default is empty
    start(at, lr=None, steps=5, seed=1)
    assert at.session_state["run"].train_config.lr == TrainConfig().lr  # auto: the default model's peak


def test_the_outcome_says_which_model_is_in_hand_after_another_is_loaded(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    start(at, task="copy", min_len=3, max_len=3, symbols=4, steps=30, batch=32)
    poll_until_done(at)
    assert any("The model is now **in hand**" in info.value for info in at.info)
    at.switch_page("pages/checkpoints.py").run()  # Home's buttons and these put a model in hand alike
    at.button(key="load_reverse").click().run()
    at.switch_page("pages/train.py").run()
    assert not at.exception and not any("in hand**" in info.value for info in at.info)
    assert any("The model in hand is another: *shipped: reverse*." in shown(info.value) for info in at.info)
    assert not at.get("page_link")  # no links to probe a model that is not in hand


# ---- tasks from examples: few pairs, many typed rows, names as text

SEVEN = "source,target\n" + "\n".join(f"{a},{a} {a}" for a in "abcdefg")
PAIRS_64 = "source,target\n" + "\n".join(f"{a} {b},{b} {a}" for a in "abcdefgh" for b in "abcdefgh")


def upload(at: AppTest, name: str, text: str) -> None:
    at.file_uploader(key="train_task_file_0").set_value((name, text.encode(), "text/csv")).run()
    assert not at.exception and not at.error


def test_a_task_of_few_pairs_warns_before_training_and_the_examples_count_their_rows(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    upload(at, "seven.csv", SEVEN)
    assert at.warning[0].value.startswith("Only 7 pairs: 6 to learn from and 1 held out.")
    assert f"Give at least {ENOUGH_PAIRS} pairs" in at.warning[0].value
    start(at, steps=20)
    poll_until_done(at)
    assert any(m.value.startswith("**1 held-out input**, decoded greedily") for m in at.markdown)
    assert len(at.dataframe[0].value) == 1
    upload(at, "pairs.csv", PAIRS_64)
    assert not at.warning and at.session_state["train_own_task"].name == "pairs.csv"  # 64 pairs, 12 held out
    assert any("inputs of 2 symbols, 8 symbols" in shown(m.value) for m in at.success)  # not "2 to 2"


def test_pairs_given_again_are_said_to_count_once_in_the_page_s_language():
    at = open_train()
    upload(at, "again.csv", PAIRS_64 + "\n" + "\n".join(["a b,b a"] * 1_000 + ["c d,d c"]))
    assert at.session_state["train_own_task"].repeated == 1_001
    assert shown(at.success[0].value).endswith(" · 1,001 pairs given again, each counted once")
    upload(at, "once.csv", PAIRS_64 + "\na b,b a")
    assert shown(at.success[0].value).endswith(" · 1 pair given again, counted once")
    at.session_state["language"] = "zh-CN"
    at.run()
    assert shown(at.success[0].value).endswith(" · 1 个序列对重复出现，每对只计一次")
    upload(at, "pairs.csv", PAIRS_64)
    assert "again" not in at.success[0].value and "重复" not in at.success[0].value


def test_a_first_line_in_words_of_its_own_is_said_to_be_left_out_as_the_columns_names():
    at = open_train()
    upload(at, "headed.csv", PAIRS_64.replace("source,target", "原文,译文"))
    said = (
        "the first line, `原 文` → `译 文`, was left out as the columns' names: no other pair shares a symbol with it"
    )
    assert shown(at.success[0].value).endswith(f" · {said}") and len(at.session_state["train_own_task"].symbols) == 8
    at.session_state["language"] = "zh-CN"
    at.run()
    assert shown(at.success[0].value).endswith(" · 第一行 `原 文` → `译 文` 被当作列名略去：其他序列对都不含它的符号")


def test_a_task_of_its_own_leaves_the_task_lengths_and_symbols_off_the_form_and_keeps_their_values():
    at = open_train()
    choose_task(at, "add")  # its default run: inputs of 3 to 5 symbols
    upload(at, "pairs.csv", PAIRS_64)
    drawn = {w.key for w in (*at.number_input, *at.selectbox)}
    assert not drawn & {"train_task", "train_min_len", "train_max_len", "train_symbols"} and "train_seed" in drawn
    assert any("the form leaves them out" in i.value for i in at.info)
    at.button(key="train_forget_task").click().run()
    assert not at.exception and at.selectbox(key="train_task").value == "add"  # as the student left it
    assert at.number_input(key="train_max_len").value == 5


def test_removing_the_task_file_stops_using_its_task_but_not_the_table_s():
    at = open_train()
    upload(at, "pairs.csv", PAIRS_64)
    at.file_uploader(key="train_task_file_0").set_value(None).run()  # the file's remove button
    assert not at.exception and "train_own_task" not in at.session_state
    assert at.info[-1].value == markdown_literal("pairs.csv") + ", read before, is no longer in use."
    upload(at, "pairs.csv", PAIRS_64)
    at.button(key="train_use_table").click().run()  # the table's pairs are in use now, the file still shown
    at.file_uploader(key="train_task_file_0").set_value(None).run()
    assert not at.exception and at.session_state["train_own_task"].name == "typed pairs"


def test_the_table_of_pairs_heads_its_columns_in_the_page_s_language():
    at = open_train()
    at.selectbox(key="language_picker").set_value("zh-CN").run()
    (table,) = at.data_editor
    headings = {name: column.get("label") for name, column in json.loads(table.proto.columns).items()}
    assert not at.exception and (headings["source"], headings["target"]) == ("源", "目标")  # a file may start so
    assert table.value.columns.tolist() == ["source", "target"]


def test_a_paste_of_more_rows_than_the_table_takes_is_cut_before_streamlit_applies_it():
    at = open_train()
    pasted = [{"source": f"{i // 100} {i // 10 % 10} {i % 10}", "target": f"{i % 10}"} for i in range(300)]
    at.session_state["train_task_table_0"] = {"edited_rows": {}, "added_rows": pasted, "deleted_rows": []}
    at.run()
    assert not at.exception
    (table,) = at.data_editor
    kept_rows = MAX_TABLE_PAIRS - len(EXAMPLE)
    assert table.value["source"].tolist() == [s for s, _ in EXAMPLE] + [p["source"] for p in pasted[:kept_rows]]
    assert at.warning[0].value.startswith(f"The table takes at most {MAX_TABLE_PAIRS} pairs")
    at.button(key="train_use_table").click().run()
    task = at.session_state["train_own_task"]
    assert len(task.train) + len(task.held_out) == MAX_TABLE_PAIRS


def test_a_task_file_s_name_is_shown_as_text_in_the_run_s_caption(stop_jobs):
    at = open_train()
    stop_jobs.append(at)
    name = "**b** ![i](/x.png) [l](/y).csv"
    upload(at, name, SWAPS)
    start(at, steps=5)
    (caption,) = [c.value for c in at.caption if shown(c.value).startswith(name)]
    assert caption.startswith(markdown_literal(name))  # no bold, image or link: every mark escaped


def test_start_pause_resume_and_step_have_keyboard_shortcuts_that_their_help_names(stop_jobs):
    at = open_train()
    stop_jobs.append(at)

    def shortcut(key: str) -> tuple[str, str]:
        proto = at.button(key=key).proto
        return proto.shortcut.lower(), proto.help.rsplit("\n\n", 1)[-1]  # Streamlit keeps keys in lower case

    assert shortcut("start_training") == ("alt+s", "Keyboard shortcut: Alt+S")  # no letter alone (WCAG 2.1.4)
    paused_run(at)
    assert shortcut("pause_training") == ("alt+p", "Keyboard shortcut: Alt+P")
    assert at.button(key="pause_training").label == "Resume"  # one button, its words changed
    assert shortcut("step_training") == ("right", "Keyboard shortcut: →")
    at.button(key="pause_training").click()
    at.run()
    assert shortcut("pause_training") == ("alt+p", "Keyboard shortcut: Alt+P")


PEEKED = "Without the causal mask, token accuracy is scored with the right answer fed to the decoder"


@pytest.mark.parametrize("causal", [True, False])
def test_a_run_without_its_causal_mask_says_its_token_accuracy_peeks(stop_jobs, causal):
    at = open_train()
    stop_jobs.append(at)
    start(at, min_len=3, max_len=3, steps=5, causal=causal)
    poll_until_done(at)
    assert at.session_state["run"].model_config.causal_mask is causal
    assert any(PEEKED in c.value for c in at.caption) is not causal
