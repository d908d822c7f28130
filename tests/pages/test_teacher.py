"""Teacher page: create a class (its key shown once, alone, until the teacher has saved it; then the projector view:
the link in large type and its QR code, never the key), set the assignment, watch the board, open a class again with
its key (a wrong one refused, then rate-limited), export what the database holds at the click, and delete; every
action ends in a message, never an exception."""

import csv
import io
import json
import math
import re
from urllib.parse import urlsplit

import pytest
import segno
from streamlit.runtime.context import ContextProxy
from streamlit.testing.v1 import AppTest

import transformer.classroom.duration
import ui.assignment_form
import ui.classes
import ui.common
from tests.helpers.apptest import class_links, open_class_link
from transformer import settings as spec
from transformer.classroom import Assignment, Caller, ClassroomError, ClassStore, RunState, TooManyAttempts
from transformer.classroom.assignment import split_groups
from transformer.figures import PAGE_PX
from transformer.limits import CLASS_CREATIONS, MAX_TITLE_CHARS, WRONG_KEYS_PER_BROWSER
from transformer.literal import WORD_JOINER
from ui.classes import JOIN_BUTTON, JOIN_NAME, NAME_MOST_PX
from ui.setting_widgets import widget_value
from ui.tables import fitted_px

FINISHED = RunState(
    "finished",
    30,
    None,
    ({"step": 30, "train_loss": 0.2},),
    {"reason": "solved", "steps": 30, "seconds": 1.5, "exact_match": 1.0, "token_acc": 1.0},
)


@pytest.fixture(autouse=True)
def class_database(tmp_path, monkeypatch):
    """Each test on a class database of its own."""
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LAB_DATABASE_URL", raising=False)
    ui.classes.class_store.clear()
    yield
    ui.classes.class_store.clear()


def shown(markdown: str) -> str:
    """Markdown as it reads on the page: text from the store is backslash-escaped to read literally."""
    return re.sub(r"\\(.)", r"\1", markdown)


def page_text(at: AppTest) -> str:
    """Everything the page sends the browser, element by element."""

    def walk(node):
        yield str(getattr(node, "proto", ""))
        for child in getattr(node, "children", {}).values():
            yield from walk(child)

    return "".join(walk(at._tree))


def open_teacher() -> AppTest:
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=30)
    at.run()
    at.switch_page("pages/teacher.py").run()
    assert not at.exception
    return at


def create(at: AppTest, title: str = "Period 3", saved: bool = True) -> tuple[str, str]:
    """Create a class on the page; returns its code and the key the page showed, then says the key is saved."""
    at.text_input(key="teacher_title").set_value(title)
    at.button(key="teacher_create_button").click().run()
    assert not at.exception
    (key,) = (c.value for c in at.code)
    code = at.session_state["teacher_class"][0]
    if saved:
        at.button(key="teacher_key_saved").click().run()
        assert not at.exception
    return code, key


def the_link(at: AppTest) -> str:
    (link,) = class_links(at)
    return link


def csv_text(data: str | bytes) -> io.StringIO:
    """A downloaded CSV file's text (a byte-order mark first, if any, left out) for `csv.DictReader`."""
    return io.StringIO(data.decode("utf-8-sig") if isinstance(data, bytes) else data)


def board_line(at: AppTest) -> str:
    return next(m.value for m in at.markdown if "student" in m.value)


def test_a_new_class_shows_its_key_alone_then_the_projector_view_never_the_key(media):
    at = open_teacher()
    code, key = create(at, saved=False)
    assert "shown only now" in at.warning[0].value and "?class=" not in page_text(at)  # no link, no QR code
    assert not at.get("image") and not at.tabs
    at.run()
    assert [c.value for c in at.code] == [key]  # still there until the teacher says it is saved
    at.button(key="teacher_key_saved").click().run()
    assert not at.exception and key not in page_text(at) and key not in [c.value for c in at.code]
    link = the_link(at)
    assert [c.value for c in at.code] == [link]  # the link to copy, and nothing else
    assert link.endswith(f"/train?class={code}") and shown(at.header[0].value) == "Period 3"
    (image,) = at.get("image")
    png = io.BytesIO()
    segno.make_qr(link).save(png, kind="png", scale=8, border=2)
    assert media[image.proto.imgs[0].url] == png.getvalue()  # the QR code of the link, as segno draws it
    assert image.proto.imgs[0].alt == f"QR code of {link}"  # what a screen reader says of it
    assert "No student has joined yet" in board_line(at)
    at.run()
    assert key not in page_text(at)  # and never again


def test_the_assignment_is_saved_with_its_groups_and_question():
    at = open_teacher()
    code, _ = create(at)
    at.selectbox(key="teacher_split").set_value("positional")
    at.selectbox(key="teacher_question").set_value("positional-none")
    at.button(key="teacher_save").click().run()
    assert not at.exception and at.success
    info = ui.classes.class_store().class_info(code)
    assert [g.label for g in info.assignment.groups] == ["sinusoidal PE", "no PE"]  # the words of the setting's values
    assert info.question == "positional-none"


def test_changing_the_settings_after_students_trained_says_their_runs_stay_on_the_board():
    """A class's board shows each student's latest run: a budget cut from 2,000 steps to 50 mid-class left the runs
    of 2,000 beside the new ones, and the Save said nothing of them."""
    at = open_teacher()
    code, _ = create(at)
    store = ui.classes.class_store()
    store.join(code, "laptop", "Ada")
    store.record_run(store.join(code, "phone", "Bob"), FINISHED)
    at.button(key="teacher_save").click().run()  # the defaults saved as they are: Bob's run is one of them
    assert [s.value for s in at.success] == ["Saved: students see it on Train from their next page load."]
    at.number_input(key="teacher_steps").set_value(50)
    at.button(key="teacher_save").click().run()
    (said,) = [s.value for s in at.success]
    assert said.endswith(
        "1 student has already trained on the settings before: that run stays on the board, in "
        "the results and in the question's grading until they press Start again."
    )
    at.number_input(key="teacher_steps").set_value(50)
    at.button(key="teacher_save").click().run()  # saved again as it is: nothing changed for the runs
    assert [s.value for s in at.success] == ["Saved: students see it on Train from their next page load."]


def test_the_groups_and_the_question_change_in_one_save():
    at = open_teacher()
    code, _ = create(at)
    at.selectbox(key="teacher_split").set_value("positional")
    at.selectbox(key="teacher_question").set_value("positional-none")
    at.button(key="teacher_save").click().run()
    at.selectbox(key="teacher_split").set_value("norm_first")
    at.selectbox(key="teacher_question").set_value("pre-norm")
    at.button(key="teacher_save").click().run()
    assert not at.exception and not at.error and at.success
    info = ui.classes.class_store().class_info(code)
    assert (info.assignment.setting, info.question) == ("norm_first", "pre-norm")


def test_choosing_a_task_fills_the_assignment_with_its_default_run_as_train_does():
    at = open_teacher()
    code, _ = create(at)
    at.number_input(key="teacher_seed").set_value(7)
    at.button(key="teacher_save").click().run()
    at.selectbox(key="teacher_task").set_value("caesar").run()  # no Save yet: the form shows the task's run at once
    assert not at.exception
    caesar = spec.default_run("caesar")
    own = {name for name, value in caesar.items() if value != spec.default_run("reverse")[name]}
    assert {"n_symbols", "lr"} <= own  # a run of its own, not the form's defaults
    for s in spec.on_form():
        expected = 7 if s.name == "seed" else widget_value(s, caesar[s.name])  # the seed stays the teacher's
        assert at.session_state[f"teacher_{s.name}"] == expected, s.name
    at.button(key="teacher_save").click().run()
    assert not at.exception and at.success
    assert ui.classes.class_store().class_info(code).assignment.preset == {**caesar, "seed": 7}


def test_the_assignment_says_how_long_a_class_of_30_takes_on_this_server():
    at = open_teacher()
    create(at)
    (said,) = [c.value for c in at.caption if "How long a class takes here" in c.value]
    slots = ui.common.run_registry().slots
    assert f"budget of {spec.default_run('reverse')['steps']:,} steps" in said
    assert f"With {slots} runs training at once, a class of 30 whose runs all go to their budget takes about" in said
    at.selectbox(key="teacher_task").set_value("count").run()
    at.button(key="teacher_save").click().run()
    (said,) = [c.value for c in at.caption if "How long a class takes here" in c.value]
    assert f"budget of {spec.default_run('count')['steps']:,} steps" in said  # the saved assignment's


def test_a_class_on_a_task_s_default_run_is_told_how_long_it_usually_takes(monkeypatch):
    monkeypatch.setattr(transformer.classroom.duration, "step_seconds", lambda configs: 0.02)  # 20 ms a step
    ui.assignment_form.paced_class_time.clear()
    at = open_teacher()
    create(at)
    slots = ui.common.run_registry().slots
    (said,) = [c.value for c in at.caption if "Usually sooner" in c.value]
    minutes = math.ceil(math.ceil(30 / slots) * 163 * 0.02 / 60)
    assert f"they trained 163 steps on average, so a class of 30 usually takes about {minutes} min" in said
    at.number_input(key="teacher_d_model").set_value(64)
    at.button(key="teacher_save").click().run()
    assert not [c for c in at.caption if "Usually sooner" in c.value]  # another run: its bound alone


def test_the_assignment_warns_when_its_runs_reach_their_time_budget_before_their_steps(monkeypatch):
    monkeypatch.setattr(transformer.classroom.duration, "step_seconds", lambda configs: 0.02)  # 20 ms a step
    ui.assignment_form.paced_class_time.clear()
    at = open_teacher()
    create(at)
    assert not [w for w in at.warning if "run out of time" in w.value]  # the default run: 2,000 steps in 40 s
    at.number_input(key="teacher_steps").set_value(5000)
    at.button(key="teacher_save").click().run()
    budget = spec.default_run("reverse")["time_budget_s"]
    (said,) = [w.value for w in at.warning if "run out of time" in w.value]
    assert f"time budget of {budget:.0f} s after about {round(budget / 0.02):,} of its 5,000 steps" in said
    (plan,) = [c.value for c in at.caption if "How long a class takes here" in c.value]
    assert f"or at its time budget of {budget:.0f} s: at about 20 ms" in plan and "would take about 100 s" in plan


def test_an_assignment_that_cannot_be_paced_leaves_the_plan_out_and_the_page_up(monkeypatch):
    def unfit(*args):
        raise ValueError("the class's own task does not fit")

    monkeypatch.setattr(ui.assignment_form, "class_time", unfit)
    ui.assignment_form.paced_class_time.clear()  # paced anew
    at = open_teacher()
    create(at)
    assert not at.exception and not [c for c in at.caption if "How long a class takes here" in c.value]


UNSAVED = "The form shows settings that are not saved"


def test_the_form_says_so_while_it_shows_settings_the_class_has_not_saved():
    """A picked task, or a refused Save, leaves the form showing settings the class does not train: on a projector
    they would read as the class's."""
    at = open_teacher()
    code, _ = create(at)
    assert not any(UNSAVED in w.value for w in at.warning)  # the saved assignment, as it was created
    at.selectbox(key="teacher_task").set_value("caesar").run()
    assert any(UNSAVED in w.value for w in at.warning)
    at.button(key="teacher_save").click().run()
    assert at.success and not any(UNSAVED in w.value for w in at.warning)
    at.selectbox(key="teacher_question").set_value("positional-none")  # no groups: refused
    at.button(key="teacher_save").click().run()
    assert "Not saved" in at.error[0].value and any(UNSAVED in w.value for w in at.warning)
    at.run()  # the refusal's message is shown once; the warning stays while the form differs
    assert not at.error and any(UNSAVED in w.value for w in at.warning)
    at.selectbox(key="teacher_question").set_value("")
    at.button(key="teacher_save").click().run()
    assert at.success and not any(UNSAVED in w.value for w in at.warning)
    at.file_uploader(key="teacher_task_file_0").set_value(("swaps.csv", SWAPS.encode(), "text/csv"))
    at.run()
    at.button(key="teacher_task_give").click().run()
    assert ui.classes.class_store().class_info(code).task is not None  # a class with a task of its own
    assert not at.exception and not any(UNSAVED in w.value for w in at.warning)


def test_a_question_that_does_not_fit_the_groups_is_refused():
    at = open_teacher()
    code, _ = create(at)
    at.selectbox(key="teacher_question").set_value("positional-none")  # no groups
    at.button(key="teacher_save").click().run()
    assert "Not saved" in at.error[0].value and ui.classes.class_store().class_info(code).question is None


def board_curves_title(at: AppTest) -> str:
    (curves,) = (c for c in at.get("plotly_chart") if c.proto.id.endswith("-board_curves"))
    return json.loads(curves.proto.spec)["layout"]["title"]["text"].replace("<br>", " ")  # broken into lines


def test_the_board_shows_each_student_and_their_run():
    at = open_teacher()
    code, key = create(at)
    store = ui.classes.class_store()
    ada, _ = store.join(code, "browser-a", "Ada <b>"), store.join(code, "browser-b", "Bob")
    store.record_run(ada, RunState("queued", 0, 1))
    at.run()
    assert not [c for c in at.get("plotly_chart") if c.proto.id.endswith("-board_curves")]  # no axes without rows
    store.record_run(ada, RunState("training", 120, None, ({"step": 100, "train_loss": 1.5},)))
    at.run()
    assert board_curves_title(at) == "Training loss of the class"  # no groups: one curve, the whole class's
    table = at.dataframe[0].value
    assert table["name"].tolist() == ["Ada <b>", "Bob"]  # literal text, in a table
    assert table["state"].tolist()[1] == "not started" and table["state"].tolist()[0].startswith("training")
    assert board_line(at).startswith("**2 students**")
    assert [w.value for w in at.warning if "look" in w.value] == ["1 student needs a look:"]  # Bob: not started
    at.button(key="teacher_close").click().run()
    code, key = create(at, "Period 4")
    store.set_assignment(code, key, Assignment({}, frozenset(), "positional", split_groups("positional")))
    store.record_run(
        store.join(code, "browser-a", "Ada"), RunState("training", 120, None, ({"step": 100, "train_loss": 1.5},))
    )
    at.run()
    assert board_curves_title(at) == "Training loss by group"


@pytest.mark.parametrize("split", ["causal_mask", "positional"])
def test_the_exports_say_that_runs_without_the_causal_mask_peek_at_their_token_accuracy(split):
    at = open_teacher()
    code, key = create(at)
    store = ui.classes.class_store()
    store.set_assignment(code, key, Assignment({}, frozenset(), split, split_groups(split)))
    store.record_run(store.join(code, "browser-a", "Ada"), FINISHED)
    at.run()
    peeked = "Without the causal mask, token accuracy is scored with the right answer fed to the decoder"
    assert any(peeked in c.value for c in at.caption) is (split == "causal_mask")


def test_each_board_column_grows_with_its_texts_on_every_redraw():
    """Streamlit sizes a column to its cells only when a table is first drawn: a board first drawn while runs queued
    kept the narrow state column, and cut "training at step 675" (训练中，第 675 步) when it came."""
    at = open_teacher()
    at.selectbox(key="language_picker").set_value("zh-CN").run()
    code, _ = create(at)
    store = ui.classes.class_store()
    ada = store.join(code, "browser-a", "Ada")
    store.record_run(ada, RunState("queued", 0, None, ()))
    at.run()
    widths = [json.loads(at.dataframe[0].proto.columns)["state"]["width"]]
    store.record_run(ada, RunState("training", 675, None, ({"step": 600, "train_loss": 1.5},)))
    at.run()
    state = at.dataframe[0].value["state"][0]
    widths.append(json.loads(at.dataframe[0].proto.columns)["state"]["width"])
    assert state == "训练中，第 675 步" and widths[0] < widths[1]
    assert widths[1] == fitted_px([state]) > widths[0]  # the state is the widest of its column now
    store.join(code, "browser-c", "很长的名字" * 7 + "一组")  # 37 characters: cut, the columns after it in view
    store.join(code, "browser-d", "很长的名字" * 7 + "二组")  # the same start: told apart by their ends
    at.run()
    assert json.loads(at.dataframe[0].proto.columns)["name"]["width"] <= NAME_MOST_PX
    cuts = [name for name in at.dataframe[0].value["name"] if name.startswith("很长")]
    assert [cut[-2:] for cut in cuts] == ["一组", "二组"]
    head, tail = cuts[0].split("…")
    assert ("很长的名字" * 7).startswith(head) and len(head) > len(tail) > 2  # cut in its middle, the start first


def test_a_student_who_changed_browser_is_let_rejoin_under_their_name():
    at = open_teacher()
    code, _ = create(at)
    store = ui.classes.class_store()
    ada = store.join(code, "laptop", "Ada *x*")
    at.run()
    at.selectbox(key="teacher_rejoin_name").set_value("Ada *x*").run()
    at.button(key="teacher_rejoin").click().run()
    assert not at.exception and not at.error
    said = shown(at.success[0].value)
    assert said.startswith("Ada *x* can join from the other browser")  # the name literally, not as markdown
    assert "keep it off the projector" in said and "`" not in said  # the code itself only in its popover
    (popover,) = [block for block in at.get("popover") if block.key == "teacher_rejoin_shown"]
    rejoin = re.search(r"Ada \*x\*: `(\w+)`", shown(popover.markdown[0].value))[1]
    assert store.student(code, "laptop") == ada  # until the code is used
    assert store.join(code, "tablet", "Ada *x*", rejoin) == ada
    assert store.student(code, "laptop") is None
    at.run()  # the board's next redraw: the code is used, so its notice and popover go
    assert not at.success and not [block for block in at.get("popover") if block.key == "teacher_rejoin_shown"]


def test_a_teacher_removes_a_student_s_name_from_the_board_with_what_they_recorded():
    at = open_teacher()
    code, _ = create(at)
    store = ui.classes.class_store()
    store.join(code, "laptop", "Ada")
    troll = store.join(code, "phone", "**shout** -- x")
    store.record_run(troll, FINISHED)
    at.run()
    at.selectbox(key="teacher_remove_name").set_value("**shout** -- x")
    at.button(key="teacher_remove").click().run()  # the name alone: a removal is checked first
    assert [w.value for w in at.warning if "Not removed" in w.value] and len(store.snapshot(code).students) == 2
    at.selectbox(key="teacher_remove_name").set_value("**shout** -- x")
    at.checkbox(key="teacher_remove_sure").check()
    at.button(key="teacher_remove").click().run()
    assert not at.exception and not at.error
    said = shown(at.success[0].value).replace(WORD_JOINER, "")  # the name literally: "--" kept a dash's ends
    assert said == "Removed **shout** -- x from the class, with what they recorded."
    assert list(at.dataframe[0].value["name"]) == ["Ada"]
    assert [s.name for s in store.snapshot(code, names=True).students] == ["Ada"]  # the form clears in the browser
    assert store.standing(troll) == (None, None)
    at.run()  # the board's next redraw: what Remove did stays under it
    assert shown(at.success[0].value).startswith("Removed **shout**")


def board_of_ada(at: AppTest) -> tuple[str, str, ClassStore]:
    """A class created on the page, Ada joined from her laptop, the board drawn: its code, key and store."""
    code, key = create(at)
    store = ui.classes.class_store()
    store.join(code, "laptop", "Ada")
    at.run()
    return code, key, store


def test_a_teacher_closes_the_class_to_new_students_and_a_new_browser_reads_why_it_cannot_join():
    at = open_teacher()
    code, _, store = board_of_ada(at)
    at.button(key="teacher_joining").click().run()
    assert not at.exception and store.class_info(code).joins_closed
    assert "Closed to new students" in at.info[0].value and at.button(key="teacher_joining").label.startswith("Open")
    student = open_class_link(code)
    assert "closed this class to new students" in " ".join(i.value for i in student.info)
    student.text_input(key=JOIN_NAME).set_value("Mallory")
    student.button(key=JOIN_BUTTON).click().run()
    assert [e.value for e in student.error if "closed this class" in e.value] and len(
        store.snapshot(code).students
    ) == 1
    at.button(key="teacher_joining").click().run()  # opened again
    assert not store.class_info(code).joins_closed and at.button(key="teacher_joining").label.startswith("Close")
    student.button(key=JOIN_BUTTON).click().run()
    assert not student.error and len(store.snapshot(code).students) == 2


def test_a_closed_class_says_so_on_the_projected_link_and_the_board_s_first_line():
    at = open_teacher()
    board_of_ada(at)
    assert any(m.value.startswith("Open this link to join") for m in at.markdown)
    at.button(key="teacher_joining").click().run()  # the whole page reruns, the projected link above the board too
    said = [m.value for m in at.markdown]
    assert not any(m.startswith("Open this link to join") for m in said)
    assert any("**Closed to new students.** Students who joined open this link" in m for m in said)
    assert any(m.startswith("**1 student**") and m.endswith("closed to new students") for m in said)


def test_a_closed_class_whose_students_were_all_removed_can_be_opened_again():
    at = open_teacher()
    code, key, store = board_of_ada(at)
    store.set_joining(code, key, False)
    store.remove_student(code, key, "Ada")
    at.run()
    said = " ".join(m.value for m in at.markdown)
    assert "No student is in the class" in said and "Share the link" not in said  # a link nobody can use
    assert "Closed to new students" in at.info[0].value
    at.button(key="teacher_joining").click().run()
    assert not store.class_info(code).joins_closed
    assert "No student has joined yet" in " ".join(m.value for m in at.markdown)


def test_the_exports_hold_what_the_database_holds_when_clicked(media):
    at = open_teacher()
    code, _ = create(at)
    store = ui.classes.class_store()
    ada = store.join(code, "browser-a", "Ada")
    at.run()  # the page, its Export tab included, drawn while Ada has not started
    buttons = {b.proto.label: b.proto for b in at.get("download_button")}
    results = buttons["Download results (CSV)"]
    assert results.ignore_rerun and not results.url  # made at the click, and the page stays as it is
    store.record_run(ada, FINISHED)  # the run ends after the page was drawn
    rows = list(csv.DictReader(csv_text(media[results.deferred_file_id]())))
    assert [(row["name"], row["state"]) for row in rows] == [("Ada", "finished")]
    assert int(float(rows[0]["steps"])) == 30
    metrics = media[buttons["Download metric rows (CSV)"].deferred_file_id]()
    assert len(list(csv.DictReader(csv_text(metrics)))) == 1


def test_a_class_opens_again_with_its_key_and_a_wrong_key_is_refused_then_rate_limited():
    code, key = create(open_teacher())
    at = open_teacher()
    at.text_input(key="teacher_code").set_value(code)
    for _ in range(WRONG_KEYS_PER_BROWSER[0]):
        at.text_input(key="teacher_key").set_value("not-the-key")
        at.button(key="teacher_open_button").click().run()
        assert not at.exception and "teacher_class" not in at.session_state
        assert "not its teacher key" in shown(at.error[0].value)
    at.text_input(key="teacher_key").set_value(key)  # the right key, too late: refused unchecked for a while
    at.button(key="teacher_open_button").click().run()
    assert "too many wrong teacher keys" in shown(at.error[0].value) and "teacher_class" not in at.session_state


def test_a_pasted_class_link_or_board_address_opens_its_class_s_board():
    code, key = create(open_teacher())
    for pasted in (
        f" http://10.0.0.2:8501/train?class={code}&lang=zh-CN ",
        f"http://10.0.0.2:8501/teacher?board={code}",
    ):
        at = open_teacher()
        at.text_input(key="teacher_code").set_value(pasted)
        at.text_input(key="teacher_key").set_value(key)
        at.button(key="teacher_open_button").click().run()
        assert not at.exception and at.session_state["teacher_class"] == (code, key)


def test_a_title_longer_than_the_limit_is_refused_with_its_length():
    """The title field has no max_chars: Streamlit's browser code drops a longer paste whole, without a word."""
    at = open_teacher()
    at.text_input(key="teacher_title").set_value("x" * (MAX_TITLE_CHARS + 8))
    at.button(key="teacher_create_button").click().run()
    assert not at.exception and "teacher_new_key" not in at.session_state
    assert f"1 to {MAX_TITLE_CHARS} characters; it has {MAX_TITLE_CHARS + 8}" in shown(at.error[0].value)


def test_an_unknown_code_is_refused_like_a_wrong_key():
    at = open_teacher()
    at.text_input(key="teacher_code").set_value("amber-otter-0000")
    at.text_input(key="teacher_key").set_value("some-key")
    at.button(key="teacher_open_button").click().run()
    assert not at.exception and "no class has this code, or this is not its teacher key" in shown(at.error[0].value)


def test_the_right_key_opens_the_board_and_delete_removes_the_class():
    code, key = create(open_teacher())
    at = open_teacher()
    at.text_input(key="teacher_code").set_value(code.upper())
    at.text_input(key="teacher_key").set_value(key)
    at.button(key="teacher_open_button").click().run()
    assert not at.exception and at.session_state["teacher_class"] == (code, key)
    assert key not in page_text(at) and the_link(at).endswith(code)  # an opened board shows no key either
    at.checkbox(key="teacher_delete_sure").check().run()
    at.button(key="teacher_delete").click().run()
    assert not at.exception and "teacher_class" not in at.session_state and "Deleted" in at.success[0].value
    with pytest.raises(ClassroomError, match="no class"):
        ui.classes.class_store().class_info(code)


def test_too_many_classes_from_one_browser_is_a_message():
    at = open_teacher()
    for _ in range(CLASS_CREATIONS["browser"][0]):
        create(at)
        at.button(key="teacher_close").click().run()
    at.text_input(key="teacher_title").set_value("One too many")
    at.button(key="teacher_create_button").click().run()
    assert not at.exception and "teacher_class" not in at.session_state
    assert "classes were created from this browser" in shown(at.error[0].value)


def test_a_delete_the_store_refuses_is_a_message(monkeypatch):
    at = open_teacher()
    code, _ = create(at)

    def refuse(*args, **kwargs):
        raise TooManyAttempts("too many wrong teacher keys from this browser: wait a few minutes")

    monkeypatch.setattr(ClassStore, "delete_class", refuse)
    at.checkbox(key="teacher_delete_sure").check().run()
    at.button(key="teacher_delete").click().run()
    assert not at.exception and "Not deleted: too many wrong teacher keys" in shown(at.error[0].value)
    assert at.session_state["teacher_class"][0] == code


def test_a_class_deleted_elsewhere_is_a_message_whatever_the_teacher_clicks():
    at = open_teacher()
    code, key = create(at)
    ui.classes.class_store().delete_class(code, key, Caller(None, "another-browser"))
    at.checkbox(key="teacher_delete_sure").check().run()
    assert not at.exception and "This class cannot be opened" in at.error[0].value
    assert "teacher_class" not in at.session_state and at.button(key="teacher_create_button")


def test_a_save_the_store_refuses_is_a_message(monkeypatch):
    at = open_teacher()
    create(at)

    def refuse(*args, **kwargs):
        raise ClassroomError("no class has this code, or this is not its teacher key")

    monkeypatch.setattr(ClassStore, "set_assignment", refuse)
    at.button(key="teacher_save").click().run()
    assert not at.exception and "Not saved: no class has this code" in shown(at.error[0].value)


SWAPS = "source,target\n" + "\n".join(f"{a} {b},{b} {a}" for a in "abcdef" for b in "abcdef" if a != b)


def test_a_teacher_gives_the_class_its_own_task_and_takes_it_back():
    at = open_teacher()
    code, _ = create(at)
    at.file_uploader(key="teacher_task_file_0").set_value(("swaps.csv", SWAPS.encode(), "text/csv"))
    at.run()
    assert not at.exception and not at.error
    at.button(key="teacher_task_give").click().run()
    assert not at.exception and any("students see it on Train" in s.value for s in at.success)
    task = ui.classes.class_store().class_info(code).task
    assert task.name == "swaps.csv" and len(task.train) == 24
    assert any("The class trains its own task, **swaps\\.csv**" in i.value for i in at.info)
    at.button(key="teacher_task_clear").click().run()
    assert not at.exception and ui.classes.class_store().class_info(code).task is None


def test_a_class_with_its_own_task_has_no_task_lengths_or_symbols_on_its_assignment_form():
    at = open_teacher()
    code, _ = create(at)
    at.number_input(key="teacher_max_len").set_value(6)
    at.button(key="teacher_save").click().run()
    at.file_uploader(key="teacher_task_file_0").set_value(("swaps.csv", SWAPS.encode(), "text/csv"))
    at.run()
    at.button(key="teacher_task_give").click().run()
    assert not at.exception
    by_pairs = {f"teacher_{s.name}" for s in spec.set_by_pairs()}
    assert by_pairs == {"teacher_task", "teacher_min_len", "teacher_max_len", "teacher_n_symbols"}
    drawn = {widget.key for kind in ("selectbox", "number_input") for widget in at.get(kind)}
    assert not drawn & by_pairs and "teacher_steps" in drawn
    assert [i.value for i in at.info if i.value == ui.assignment_form.OWN_TASK_FORM]
    at.number_input(key="teacher_steps").set_value(77)
    at.button(key="teacher_save").click().run()
    assert not at.exception and at.success
    preset = ui.classes.class_store().class_info(code).assignment.preset
    assert (preset["steps"], preset["max_len"]) == (77, 6)  # the task's lengths stay as saved, for when it goes
    at.button(key="teacher_task_clear").click().run()
    assert not at.exception and at.number_input(key="teacher_max_len").value == 6
    assert at.selectbox(key="teacher_task").value == "reverse"


def test_a_bad_task_file_for_the_class_is_one_error_and_nothing_is_saved():
    at = open_teacher()
    code, _ = create(at)
    at.file_uploader(key="teacher_task_file_0").set_value(("bad.csv", b"a,b\n" * 3, "text/csv"))
    at.run()
    assert len(at.error) == 1 and "at least 5 different pairs" in at.error[0].value
    assert "teacher_task_give" not in [b.key for b in at.button]
    assert ui.classes.class_store().class_info(code).task is None


def saved_pe_question() -> AppTest:
    """The teacher's page of a new class saved with PE / no PE groups and the positional-encoding question."""
    at = open_teacher()
    create(at)
    at.selectbox(key="teacher_split").set_value("positional")
    at.selectbox(key="teacher_question").set_value("positional-none")
    at.button(key="teacher_save").click().run()
    return at


def test_after_a_language_switch_the_assignment_form_shows_its_choices_in_the_new_language():
    at = saved_pe_question()
    at.selectbox(key="language_picker").set_value("zh-CN").run()
    assert not at.exception
    # the browser keeps a choice as the words it showed: the page sets each value again, in the new words
    shown = {key: at.selectbox(key=key).proto for key in ("teacher_task", "teacher_split", "teacher_question")}
    assert (
        all(proto.set_value for proto in shown.values()) and at.multiselect(key="teacher_open_settings").proto.set_value
    )
    assert shown["teacher_split"].raw_value == "正弦位置编码 / 无位置编码"
    assert shown["teacher_question"].raw_value == "没有位置编码时，任务 reverse 会："
    assert at.selectbox(key="teacher_split").value == "positional"
    at.run()  # no switch: what the teacher picks in the form stays theirs
    assert not at.selectbox(key="teacher_split").proto.set_value
    at.button(key="teacher_save").click().run()
    assert not at.exception and at.success
    assert ui.classes.class_store().class_info(at.session_state["teacher_class"][0]).question == "positional-none"


def test_picking_the_class_s_task_again_gives_back_its_saved_settings():
    at = open_teacher()
    create(at)
    at.number_input(key="teacher_steps").set_value(60)
    at.button(key="teacher_save").click().run()
    at.selectbox(key="teacher_task").set_value("sort").run()  # another task's default run, not saved
    assert at.number_input(key="teacher_steps").value == spec.default_run("sort")["steps"]
    at.selectbox(key="teacher_task").set_value("reverse").run()  # the class's task: what was saved, not its defaults
    assert not at.exception and at.number_input(key="teacher_steps").value == 60


def test_a_class_created_after_another_starts_its_form_from_its_own_assignment():
    """The form's widgets keep what they hold across reruns: a board opened for another class sets them again."""
    at = saved_pe_question()
    at.number_input(key="teacher_steps").set_value(60)
    at.button(key="teacher_save").click().run()
    at.checkbox(key="teacher_delete_sure").check().run()
    at.button(key="teacher_delete").click().run()
    create(at, "Period 4")
    assert not at.exception and not at.warning  # not "The form shows settings that are not saved"
    assert at.number_input(key="teacher_steps").value == spec.default_run("reverse")["steps"]
    assert at.selectbox(key="teacher_split").value == ui.assignment_form.NONE
    assert at.selectbox(key="teacher_question").value == ui.assignment_form.NONE


def test_the_question_names_the_task_picked_on_the_form_before_it_is_saved():
    at = saved_pe_question()
    at.selectbox(key="teacher_task").set_value("copy").run()  # picked, not saved
    question = at.selectbox(key="teacher_question").proto
    assert not at.exception and question.set_value  # the browser is told the new words
    assert question.raw_value == "Without positional encoding, copy will be solved:"


@pytest.fixture
def browsed_from(monkeypatch):
    """Set the address the teacher's browser opened the page at (AppTest has none)."""

    def browse(url: str) -> None:
        monkeypatch.setattr(ContextProxy, "url", property(lambda self: url))

    return browse


@pytest.mark.parametrize(
    "url, warned",
    [
        ("http://localhost:8501/teacher", True),
        ("http://127.0.0.1:8501/teacher", True),
        ("http://[::1]:8501/teacher", True),
        ("http://192.168.1.20:8501/teacher", False),
        ("https://lab.example.org/teacher", False),
    ],
)
def test_a_class_link_no_student_can_open_says_so_beside_the_link(browsed_from, url, warned):
    browsed_from(url)
    at = open_teacher()
    create(at)
    assert the_link(at).startswith(url.rsplit("/", 1)[0] + "/train?class=")
    warnings = [w.value for w in at.warning if "Students cannot open this link" in w.value]
    assert bool(warnings) == warned
    if warned:
        assert "network address" in warnings[0] and urlsplit(url).hostname in warnings[0]


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_the_board_s_loss_curves_are_in_view_on_a_projector_at_150_percent_zoom(language):
    """At 1280 px and 150% zoom (853 CSS px, the sidebar open) the board's table is PAGE_PX wide: its widest words
    (a long name, a state, a result not solved) pushed the curve column, last, off the screen, and nothing showed
    that the table scrolls. The columns up to the curve fit the page; only the state and result words scroll."""
    at = open_teacher()
    at.selectbox(key="language_picker").set_value(language).run()
    code, key = create(at)
    store = ui.classes.class_store()
    store.set_assignment(code, key, Assignment({}, frozenset(), "positional", split_groups("positional")))
    long = store.join(code, "browser-a", "Maximiliana Wolkenstein-Oberhausen")  # cut to NAME_MOST_PX
    store.record_run(long, RunState("training", 675, None, ({"step": 600, "train_loss": 1.5},)))
    unsolved = {**FINISHED.result, "reason": "step budget", "steps": 600, "exact_match": 0.62}
    store.record_run(store.join(code, "browser-b", "Bob"), RunState("finished", 600, None, FINISHED.rows, unsolved))
    at.run()
    table = at.dataframe[0]
    columns = json.loads(table.proto.columns)
    order = list(table.value.columns)
    assert "…" in table.value["name"][0]  # cut to fit its column, which a longer name would not widen
    through_curve = NAME_MOST_PX + sum(columns[name]["width"] for name in order[1 : order.index("curve") + 1])
    assert order[0] == "name" and through_curve <= PAGE_PX, (order, columns)
    assert sum(columns[name]["width"] for name in order) > PAGE_PX  # what the test is about: a table that scrolls


def test_the_board_and_its_csv_files_speak_the_teacher_s_language(media):
    at = open_teacher()
    at.selectbox(key="language_picker").set_value("zh-CN").run()
    code, key = create(at, "三班")
    store = ui.classes.class_store()
    store.set_assignment(code, key, Assignment({}, frozenset(), "positional", split_groups("positional")))
    ada, bob = store.join(code, "browser-a", "Ada"), store.join(code, "browser-b", "Bob")
    store.record_run(ada, FINISHED)
    timed_out = {**FINISHED.result, "reason": "time budget", "exact_match": 0.4}
    store.record_run(bob, RunState("finished", 30, None, FINISHED.rows, timed_out))
    at.run()
    assert not at.exception
    table = at.dataframe[0]
    columns = json.loads(table.proto.columns)
    headings = {name: column.get("label") for name, column in columns.items()}
    assert {headings[name] for name in ("name", "group", "state", "result")} == {"学生", "组别", "状态", "结果"}
    for name in ("name", "group", "state", "result"):  # each as wide as its widest text, in Chinese
        assert columns[name]["width"] == fitted_px([headings[name], *table.value[name]]), name
    assert columns["curve"]["width"] == fitted_px(["训练损失"])
    assert table.value["group"].tolist() == ["正弦位置编码", "无位置编码"]
    assert table.value["state"].tolist() == ["已结束", "已结束"] and "时间用完" in table.value["result"][1]
    (sentence,) = [t.value for t in at.text if "解出" in t.value]
    assert "无位置编码" in sentence and "no PE" not in sentence
    buttons = {b.proto.label: b.proto for b in at.get("download_button")}
    (results,) = [b for label, b in buttons.items() if "CSV" in label and "结果" in label]
    rows = list(csv.DictReader(csv_text(media[results.deferred_file_id]())))
    assert list(rows[0])[:4] == ["name", "group", "seed", "state"]  # the columns stay English keys
    assert [(r["group"], r["state"], r["reason"]) for r in rows] == [
        ("正弦位置编码", "已结束", "已解出"),
        ("无位置编码", "已结束", "时间上限"),
    ]


@pytest.mark.parametrize(("address", "noticed"), [("http://head:6379", True), ("", False)])
def test_a_ray_cluster_the_server_cannot_use_is_a_notice_not_an_error(monkeypatch, address, noticed):
    import ui.common

    monkeypatch.setenv("LAB_RAY_ADDRESS", address)
    ui.common.run_registry.clear()  # a server of its own, reading the address at start
    try:
        at = open_teacher()
        assert not at.exception
        notices = [info.value for info in at.info if "Ray cluster" in info.value]
        assert len(notices) == int(noticed)
    finally:
        ui.common.run_registry.clear()


def test_a_language_switch_keeps_the_teacher_on_the_tab_they_had_open():
    at = open_teacher()
    create(at)
    at.session_state["teacher_tab"] = "Assignment"  # the tab the browser said is open, in the words it showed
    at.run()
    assert not at.exception and [tab.label for tab in at.tabs][:2] == ["Board", "Assignment"]
    at.selectbox(key="language_picker").set_value("zh-CN").run()
    assert not at.exception and at.session_state["teacher_tab"] == "实验设置"  # the same tab, in the new words
    at.selectbox(key="language_picker").set_value("en").run()
    assert not at.exception and at.session_state["teacher_tab"] == "Assignment"


def test_a_reload_or_a_restart_offers_again_the_board_the_tab_had_open():
    at = open_teacher()
    code, key = create(at, saved=False)
    assert at.query_params["board"] == code  # on the key screen already: the code, never the key
    assert key not in str(at.query_params)
    again = AppTest.from_file("../../streamlit_app.py", default_timeout=30)  # the same address, a new session
    again.query_params["board"] = code
    again.run()
    again.switch_page("pages/teacher.py").run()
    assert not again.exception and again.text_input(key="teacher_code").value == code
    assert again.info[0].value.startswith(f"The address names the board of class `{code}`")
    again.text_input(key="teacher_key").set_value(key)
    again.button(key="teacher_open_button").click().run()
    assert again.session_state["teacher_class"] == (code, key)
    again.button(key="teacher_close").click().run()
    assert not again.exception and "board" not in again.query_params  # closed: nothing offered on a reload


def test_a_board_in_the_address_of_no_class_says_so_and_leaves_the_address():
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=30)
    at.query_params["board"] = "amber-otter-7351"  # a class code, of no class on this server
    at.run()
    at.switch_page("pages/teacher.py").run()
    assert not at.exception and not at.info and at.text_input(key="teacher_code").value == ""
    (notice,) = [w.value for w in at.warning]
    assert notice.startswith("The address names class `amber-otter-7351`, whose board cannot open")
    assert "board" not in at.query_params  # a reload does not offer it again


@pytest.mark.parametrize("hostile", ["../../etc", "<script>alert(1)</script>", "x" * 5000])
def test_a_board_in_the_address_that_is_no_class_code_is_a_notice(hostile):
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=30)
    at.query_params["board"] = hostile
    at.run()
    at.switch_page("pages/teacher.py").run()
    assert not at.exception and not at.info and at.text_input(key="teacher_code").value == ""
    (notice,) = [w.value for w in at.warning]
    assert notice.startswith("The link's board is ") and hostile not in notice  # why, never the value
    assert "board" not in at.query_params  # a reload does not say it again


def test_create_failing_in_the_database_leaves_nothing_waiting(monkeypatch):
    at = open_teacher()
    store = ui.classes.class_store()

    def broken(*args, **kwargs):
        raise RuntimeError("the database is gone")

    monkeypatch.setattr(store, "create_class", broken)
    at.text_input(key="teacher_title").set_value("Period 3")
    at.button(key="teacher_create_button").click().run()
    assert not at.session_state["teacher_made_class"]["making"]  # no later run of the page waits for a class
    monkeypatch.undo()
    at.run()
    assert "teacher_made_class" not in at.session_state
    at.button(key="teacher_create_button").click().run()  # the database back: Create makes the class
    assert not at.exception and at.session_state["teacher_class"][0] in page_text(at)
