"""Transformer Lab: train a tiny encoder-decoder Transformer live, then open it up.

Run: streamlit run streamlit_app.py

The frame imports only Streamlit at the top: torch, the training workers and the class store take seconds to set up
on a freshly started server, and Home paints before they load (see `frame`).
"""

import gc
from importlib import import_module
from pathlib import Path

import streamlit as st

from transformer.i18n import N_, Message
from ui.forms import count_run
from ui.language import _, switch_told

st.set_page_config(page_title="Transformer Lab", page_icon="🔬", layout="wide")

PAGES = [  # (file, title, icon, what to do there), in teaching order
    (
        "pages/train.py",
        N_("Train"),
        ":material/model_training:",
        N_("A fresh model on a toy task of your choice, and watch its loss and accuracy stream in."),
    ),
    (
        "pages/anatomy.py",
        N_("Anatomy"),
        ":material/schema:",
        N_("The model laid out as the paper draws it, with every shape and parameter count."),
    ),
    (
        "pages/masking.py",
        N_("Masking lab"),
        ":material/visibility_off:",
        N_("Padding and causal masks, and what breaks without them."),
    ),
    (
        "pages/decoding.py",
        N_("Decoding"),
        ":material/skip_next:",
        N_("Step through greedy, sampling and beam search one token per click."),
    ),
    (
        "pages/lengths.py",
        N_("Length test"),
        ":material/straighten:",
        N_("Unseen inputs of every length, longer ones included: where does the model stop working?"),
    ),
    (
        "pages/knockout.py",
        N_("Knockout"),
        ":material/content_cut:",
        N_("Remove attention heads from the model in hand: which ones does it need?"),
    ),
    (
        "pages/compare.py",
        N_("Compare runs"),
        ":material/compare_arrows:",
        N_("Two settings side by side, to see which part of the design matters."),
    ),
    (
        "pages/teacher.py",
        N_("Teacher"),
        ":material/school:",
        N_("Run the class as one experiment: a class link, groups, a question to predict, and a live board."),
    ),
    (
        "pages/checkpoints.py",
        N_("Checkpoints"),
        ":material/save:",
        N_("Put any trained model in hand, download it, or upload one a classmate trained."),
    ),
]

LESSON = [  # a first walk through the app for a class; tests/pages/test_home.py checks what it names exists
    N_(
        "**See a trained model work.** Load *reverse* above, then step through an input on **Decoding**: each step's "
        "cross-attention looks at or next to the mirrored source position."
    ),
    N_(
        "**Watch one learn.** Everyone starts a run on **Train** with its defaults, at once: the same settings make "
        "the same run, so the class watches one run learn. Reverse is solved in seconds, token accuracy climbing "
        "before whole-sequence exact match does. A run several students watch cannot be paused, and a default run "
        "of one's own ends in about a second; so to pause one, each student sets *Task* to sort, *Longest input* to "
        "12 and a seed of their own, presses Start, then Pause, Step (one metric row at a time) and Resume."
    ),
    Message(  # an experiment's title and a button's label as the pages say them, in every language
        N_(
            "**Take a part away.** On **Compare runs**, open *{experiment}*: without positions the model cannot tell "
            "one order from another, and never learns to reverse. Press *{rerun}* to train both here: the attention "
            "timeline follows the heads as they form."
        ),
        experiment=Message(N_("Reverse without positional encoding")),
        rerun=Message(N_("Rerun live")),
    ),
    Message(
        N_(
            "**See why the decoder is masked.** In the **Masking lab**, press *{peek}*: with the causal mask, no "
            "earlier output changes; without it, earlier outputs read the future."
        ),
        peek=Message(N_("Peek at the future")),
    ),
    N_(
        "**Decode another way.** Load *reverse-early* above, a reverse model only 300 steps into training, and run "
        "its first input to the end on **Decoding** with each strategy: greedy slips, beam search gets it right, "
        "sampling wanders. A solved model is too sure of itself for the strategies to differ."
    ),
    N_(
        "**Go past the training lengths.** Load *reverse* again, and on **Length test** see exact match fall to 0 a "
        "symbol or two past the longest input the model trained on, and its outputs stop near that length. A model "
        "from **Train** (lengths 6-8) gets almost no shorter input right: at lengths 4 and 5 its outputs run on to "
        "about 6 symbols, and at 1-3 they are anything from empty to 6 symbols long."
    ),
    N_("**Open it up.** **Anatomy** lays the model out as the paper's Figure 1, with every shape and parameter count."),
]


LIBRARIES = ("numpy", "pandas", "plotly.graph_objects", "torch")  # what the pages' modules import, in its own order


@st.cache_resource(show_spinner=False)
def import_page_modules() -> None:
    """Import every module the pages share, once, in one order, while any other session that asks waits: sessions
    importing them side by side, each in its own order, can catch each other's half-imported modules (Python
    breaks a cross-thread import deadlock that way) and fail with ImportError on a freshly started server. The
    libraries come first, each while this thread holds no other module's lock: a thread of Streamlit's own (or a
    page a restarted server runs before its frame) may be importing one of them, and waiting for it inside the
    import of a module of ours met pandas half-imported ("partially initialized module 'pandas'")."""
    for name in LIBRARIES:
        import_module(name)
    for path in sorted(Path(__file__).parent.joinpath("ui").glob("[!_]*.py")):
        import_module(f"ui.{path.stem}")
    gc.collect()
    gc.freeze()  # what the imports made lives as long as the server: a full collection, which holds every
    # session's thread up (0.13 s with torch, pandas and Plotly loaded), walks only what came after


def home() -> None:
    st.title("Transformer Lab")
    st.markdown(
        _(
            "Train the encoder-decoder Transformer of *Attention Is All You Need* on toy tasks, live, and watch it "
            "learn. Then open it up: see what the masks hide, what each head attends to, and how it decodes one "
            "token at a time."
        )
    )
    st.header(_("Try a trained model now"))
    shipped = st.container()  # filled last: its buttons need torch, which a cold server is still importing
    st.header(_("A first lesson, about 20 minutes"))
    st.markdown("\n".join(f"{i}. {_(step)}" for i, step in enumerate(LESSON, 1)))
    st.header(_("What to do here"))
    for path, title, icon, text in PAGES:
        link_col, text_col = st.columns([1, 3], vertical_alignment="center")
        link_col.page_link(path, label=f"**{_(title)}**", icon=icon)  # a link's label does not wrap: keep it short
        text_col.markdown(_(text))
    import_page_modules()  # once the page has painted (see the module docstring)
    from ui.common import setup_torch
    from ui.state import shipped_checkpoint_buttons

    with shipped:
        shipped_checkpoint_buttons("load")
        st.caption(_("Computing on: **{device}**", device=setup_torch()))


def frame(page: str) -> None:
    """Every page's frame: the server's class recorder, the shipped model and the class an opened link names, and the
    sidebar. `page`: the page's url path. Imported here, not at the top, so that Home paints before torch loads."""
    import_page_modules()
    from ui.classes import class_from_link, class_recorder
    from ui.links import keep_class_in_address, model_from_link
    from ui.sidebar import sidebar
    from ui.streamlit_internals import quiet_closed_tabs, space_media_cleanup

    space_media_cleanup()  # once per server: a file made at a download's click outlives a class's page polls
    quiet_closed_tabs()  # and a student's closed tab is no traceback in the server's log
    class_recorder()  # once per server: records class runs, marks those a restart lost, purges expired classes
    model_from_link()
    class_from_link()
    sidebar(page)
    if page == "":  # Home draws before the frame, and writes no link of its own
        keep_class_in_address()


pages = [st.Page(home, title=_("Home"), icon=":material/home:", default=True)] + [
    st.Page(path, title=_(title), icon=icon) for path, title, icon, _text in PAGES
]
count_run()
page = st.navigation(pages)
link_notices = st.container()  # what an opened link got wrong, above the page
try:
    if page.url_path == "":  # Home: drawn before the frame's set-up, which the page does not need
        page.run()
    with link_notices:
        frame(page.url_path)
    if page.url_path != "":
        page.run()
finally:  # a page that stops its run early (st.stop) ends it too
    switch_told()
