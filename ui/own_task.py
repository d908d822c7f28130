"""A task of one's own, from examples: a CSV or TSV file of pairs uploaded, or pairs typed into a table, read into a
task (`transformer.task_file`) that the Train page's Start trains, or that a teacher gives their class.

Session state keys (each under the caller's `prefix`): "<prefix>_own_task", the task read (`TaskPairs`), absent
until one is, and "<prefix>_own_task_from", where it came from ("file" or "table": a file's task goes when the file
is removed); "<prefix>_task_file_<n>" and "<prefix>_task_table_<n>", the widgets (the uploader in a container keyed
"<prefix>_task_file"; its n in "<prefix>_task_file_n", a new, empty uploader when a student drops a file's task);
"<prefix>_task_file_read", the id of the upload last read (each upload is read once); "<prefix>_task_rows", the rows
the table starts from (at first EXAMPLE, in the session's language), and "<prefix>_task_table_n", its n (each a new
table: see `pairs_table`).

A task needs MIN_TASK_PAIRS pairs (fewer are refused). One pair in HELD_OUT_EVERY is held out, so a task of fewer
than ENOUGH_PAIRS pairs has fewer than ENOUGH_PAIRS // HELD_OUT_EVERY held out, each a large share of the score, and
few to learn from: it trains, with a warning (`few_pairs`).
"""

import pandas as pd
import streamlit as st

from transformer.classroom import ClassInfo
from transformer.i18n import N_
from transformer.limits import MAX_TABLE_PAIRS, MAX_TASK_FILE_MB, MAX_TASK_PAIRS
from transformer.literal import code_span, markdown_literal
from transformer.pairs import HELD_OUT_EVERY, TaskPairs, task_name
from transformer.task import spoken
from transformer.task_file import HEADER, read_task_file, read_task_table
from ui.classes import caller, class_store
from ui.language import _, column_labels, ngettext
from ui.state import flash, show_flashes
from ui.streamlit_internals import cut_table_edits

OWN_TASK = "train"  # the Train page's prefix (the Teacher page has its own)
EXAMPLE = [  # the table's first rows: translate's toy language, which a student may replace; its sources in the
    # page's language (words separated by spaces, in the same order)
    (N_("big cat sees dog"), "miko gra doro selu"),
    (N_("dog likes small fox"), "doro voko pti lika"),
    (N_("cat chases owl"), "miko ulma chazo"),
    (N_("red fox hears cat"), "voko ruo miko heru"),
    (N_("owl finds big dog"), "ulma doro gra fina"),
    (N_("old dog sees fox"), "doro ald voko selu"),
]
ABOUT = N_(
    "A CSV or TSV file of `source,target` pairs, one a line, the symbols of each separated by spaces (a first line "
    "`source,target` or `input,output` is skipped; Chinese written without spaces is one symbol per character), or "
    "the pairs typed into the table. The lab builds the vocabulary from the symbols and holds one pair in five out of "
    "training, to test the model on."
)
ENOUGH_PAIRS = 10 * HELD_OUT_EVERY  # fewer pairs train with a warning: under 10 held out, each 10%+ of the score
FEW_PAIRS = N_(
    "Only {n} pairs: {train} to learn from and {held_out} held out. So few examples rarely teach a rule that holds "
    "on pairs the model never saw, and each held-out pair is {share:.0%} of the score. Give at least {least} pairs, "
    "for {least_held} held out."
)
TOO_MANY_ROWS = N_(
    "The table takes at most {most} pairs: the rows past them were dropped. Upload a file for more, up to {file_most}."
)


def own_task(prefix: str) -> TaskPairs | None:
    """The task read under `prefix`, if any."""
    return st.session_state.get(f"{prefix}_own_task")


def own_task_state(prefix: str) -> dict:
    """The session-state entries that hold the task read under `prefix` (none when there is none): what a reload
    gives back with a run trained on it."""
    keys = (f"{prefix}_own_task", f"{prefix}_own_task_from")
    return {key: st.session_state[key] for key in keys if key in st.session_state}


def forget_own_task(prefix: str) -> None:
    st.session_state.pop(f"{prefix}_own_task", None)


def drop_own_task(prefix: str) -> None:
    """Forget the task read under `prefix` at the user's asking; a file's task takes its file out of the uploader,
    so that the same file, uploaded again, is read again (a widget's value cannot be set: the uploader is a new one)."""
    if st.session_state.get(f"{prefix}_own_task_from") == "file":
        st.session_state[f"{prefix}_task_file_n"] = st.session_state.get(f"{prefix}_task_file_n", 0) + 1
        st.session_state.pop(f"{prefix}_task_file_read", None)
    forget_own_task(prefix)


def _uploader_key(prefix: str) -> str:
    return f"{prefix}_task_file_{st.session_state.get(f'{prefix}_task_file_n', 0)}"


def own_task_input(prefix: str) -> TaskPairs | None:
    """The upload and the table, with what they hold read into a task (one clear message when it cannot be);
    returns the task read under `prefix`, if any."""
    st.markdown(_(ABOUT))
    upload_tab, table_tab = st.tabs([_("Upload a file"), _("Type pairs")])
    with upload_tab, st.container(key=f"{prefix}_task_file"):
        upload = st.file_uploader(
            _("Task file (CSV or TSV, {most} MB at most)", most=MAX_TASK_FILE_MB),
            type=["csv", "tsv", "txt"],
            key=_uploader_key(prefix),
            max_upload_size=MAX_TASK_FILE_MB,
            on_change=_file_changed,
            args=(prefix,),
        )
        show_flashes(f"{prefix}_task_file")
        if upload is not None and st.session_state.get(f"{prefix}_task_file_read") != upload.file_id:
            st.session_state[f"{prefix}_task_file_read"] = upload.file_id
            _read(prefix, lambda: read_task_file(upload.getvalue(), upload.name), "file", task_name(upload.name))
    with table_tab:
        table = pairs_table(prefix)
        if st.button(_("Use these pairs"), key=f"{prefix}_use_table"):
            _read(prefix, lambda: read_task_table(table.to_dict("records"), _("typed pairs")), "table")
    return own_task(prefix)


def pairs_table(prefix: str) -> pd.DataFrame:
    """The table of typed pairs, at most MAX_TABLE_PAIRS rows; returns its rows. Rows added past them (a paste of
    thousands) are dropped before Streamlit applies them, and the table starts over, as a new table, from the rows
    kept: the browser then shows what the page reads. A warning says so."""
    rows = f"{prefix}_task_rows"  # the example in the language the table first shows in: a switch keeps the edits
    start = st.session_state.setdefault(rows, pd.DataFrame([(_(s), t) for s, t in EXAMPLE], columns=list(HEADER)))
    n = st.session_state.get(f"{prefix}_task_table_n", 0)
    key = f"{prefix}_task_table_{n}"
    cut = cut_table_edits(key, len(start), MAX_TABLE_PAIRS)
    config = column_labels(start)
    table = st.data_editor(start, num_rows="dynamic", key=key, hide_index=True, width="stretch", column_config=config)
    if cut:
        st.session_state[f"{prefix}_task_rows"] = table.reset_index(drop=True)
        st.session_state[f"{prefix}_task_table_n"] = n + 1
        flash(f"{prefix}_table", "warning", _(TOO_MANY_ROWS, most=MAX_TABLE_PAIRS, file_most=f"{MAX_TASK_PAIRS:,}"))
        st.rerun()
    st.caption(_("At most {most} pairs here; a file holds more.", most=MAX_TABLE_PAIRS))
    show_flashes(f"{prefix}_table")
    return table


def _read(prefix: str, read, origin: str, file: str | None = None) -> None:
    """Keep the task `read()` makes from `origin` ("file", named `file`, or "table"), or show why it cannot be one and
    forget the task read before: what was given last is what counts, and the uploader shows that file, not the one
    before. A refused file is named: a file the browser itself refuses next (too large) leaves the words in place."""
    try:
        st.session_state[f"{prefix}_own_task"] = read()
        st.session_state[f"{prefix}_own_task_from"] = origin
    except ValueError as err:
        reason = markdown_literal(_(err))
        if file is None:
            st.error(_("These pairs cannot be a task: {reason}", reason=reason))
        else:
            st.error(_("{file} cannot be a task: {reason}", file=code_span(file), reason=reason))
        if (before := _forgotten(prefix)) is not None:
            st.info(before)


def _file_changed(prefix: str) -> None:
    """The uploader's callback: a file removed by the student takes its task with it (a page that does not draw the
    uploader empties it too, which is no removal and calls nothing)."""
    if (
        st.session_state.get(_uploader_key(prefix)) is None
        and st.session_state.get(f"{prefix}_own_task_from") == "file"
    ):
        st.session_state.pop(f"{prefix}_task_file_read", None)
        if (before := _forgotten(prefix)) is not None:
            flash(f"{prefix}_task_file", "info", before)


def _forgotten(prefix: str) -> str | None:
    """Forget the task read under `prefix`; returns the words that say so, None when there was none."""
    before = own_task(prefix)
    forget_own_task(prefix)
    return (
        None if before is None else _("{name}, read before, is no longer in use.", name=markdown_literal(before.name))
    )


def task_summary(task: TaskPairs) -> str:
    """The task in a line: its name, pairs, lengths and symbols (Markdown, its text literal)."""
    return _(
        "**{name}**: {train} pairs to train on and {held_out} held out, inputs of {sizes} symbols, {symbols} symbols",
        name=markdown_literal(task.name),
        train=f"{len(task.train):,}",
        held_out=f"{len(task.held_out):,}",
        sizes=_(spoken(range(task.min_len, task.max_len + 1))),
        symbols=len(task.symbols),
    )


def read_line(task: TaskPairs) -> str:
    """What was read, as Markdown: the task's summary, one of its training pairs as code, a first line left out as
    the columns' names and the pairs it was given again, if any (counted once: without a word, 10,000 lines that
    read as 35 pairs look like lines lost)."""
    source, target = task.train[0]
    line = f"{task_summary(task)} · {code_span(source)} → {code_span(target)}"
    if task.header is not None:
        source, target = (code_span(text) for text in task.header)
        line += " · " + _(
            "the first line, {source} → {target}, was left out as the columns' names: no other pair shares a symbol "
            "with it",
            source=source,
            target=target,
        )
    if task.repeated:
        line += " · " + ngettext(
            "{count} pair given again, counted once",
            "{count} pairs given again, each counted once",
            task.repeated,
            count=f"{task.repeated:,}",
        )
    return line


def own_task_expander(prefix: str) -> TaskPairs | None:
    """An expander holding the upload and the table, open while a task is read; returns that task, if any."""
    with st.expander(  # keyed: one element however many messages precede it, so it stays open on an upload
        _("A task of your own, from examples"), expanded=own_task(prefix) is not None, key=f"{prefix}_own_task_expander"
    ):
        task = own_task_input(prefix)
        if task is not None:
            st.success(read_line(task))
            st.button(
                _("Use a task by name instead"), key=f"{prefix}_forget_task", on_click=drop_own_task, args=(prefix,)
            )
    return own_task(prefix)


def task_notice(task: TaskPairs | None, by_class: bool) -> None:
    """Above the Train form: the task from examples Start trains, if any, in place of the form's task, and a warning
    when a task of the student's own has few pairs."""
    if task is None:
        return
    leaves_out = N_("Its pairs set the task, lengths and symbols: the form leaves them out.")
    template = (
        N_("Start trains your class's own task, {summary}. {leaves_out}")
        if by_class
        else N_("Start trains your own task, {summary}. {leaves_out}")
    )
    st.info(_(template, summary=task_summary(task), leaves_out=_(leaves_out)), icon=":material/table_view:")
    if not by_class:  # a class's task is the teacher's, who was warned when reading it
        few_pairs(task)


def few_pairs(task: TaskPairs) -> None:
    """A warning, before training, when `task` has fewer than ENOUGH_PAIRS pairs."""
    n, train, held_out = len(task.train) + len(task.held_out), len(task.train), len(task.held_out)
    if n < ENOUGH_PAIRS:
        words = dict(n=n, train=train, held_out=held_out, share=1 / held_out, least=ENOUGH_PAIRS)
        st.warning(_(FEW_PAIRS, **words, least_held=ENOUGH_PAIRS // HELD_OUT_EVERY), icon=":material/warning:")


TEACHER = "teacher"  # the Teacher page's prefix


def class_task_section(info: ClassInfo, code: str, key: str) -> None:
    """The class's own task: what it is, if any, and the upload and table to give it one (a link cannot carry a
    file: the class database keeps it)."""
    st.header(_("The class's own task"), anchor=False)
    if info.task is not None:
        st.info(_("The class trains its own task, {summary}.", summary=task_summary(info.task)))
        st.button(
            _("Train the task the assignment names instead"),
            key="teacher_task_clear",
            on_click=_give,
            args=(code, key, None),
        )
    with st.expander(
        _("Give the class a task of its own, from examples"),
        expanded=info.task is None and own_task(TEACHER) is not None,
        key="teacher_task_expander",  # keyed, as own_task_expander's
    ):
        task = own_task_input(TEACHER)
        if task is not None:
            st.markdown(read_line(task))
            few_pairs(task)
            st.button(
                _("Give the class this task"),
                key="teacher_task_give",
                type="primary",
                on_click=_give,
                args=(code, key, task),
            )
    show_flashes("teacher_task")


def _give(code: str, key: str, task: TaskPairs | None) -> None:
    """Keep `task` (None: none) as the class's own task, or say why not."""
    try:
        class_store().set_task(code, key, task, caller())
    except ValueError as err:  # a ClassroomError too
        flash("teacher_task", "error", _("Not saved: {reason}.", reason=markdown_literal(_(err))))
    else:
        drop_own_task(TEACHER)
        flash("teacher_task", "success", _("Saved: students see it on Train from their next page load."))
