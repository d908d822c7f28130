"""Checkpoints: the shipped models, the ones trained this session, and uploads; any of them can be put in hand."""

from ui.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

import hashlib

import pandas as pd
import streamlit as st

from transformer.checkpoint import MAX_CHECKPOINT_BYTES, Checkpoint, CheckpointError, load_checkpoint
from transformer.i18n import N_, joined
from transformer.literal import code_span, markdown_literal
from transformer.naming import checkpoint_summary
from transformer.shares import shown_share
from transformer.uploads import read_upload, shown_name
from ui.common import CHECKPOINT_DIR, shipped_checkpoint, shipped_checkpoints
from ui.downloads import DOWNLOAD_RERUNS
from ui.language import _, ngettext
from ui.links import share_link
from ui.state import (
    IN_HAND_NAME,
    MAX_TRAINED,
    MAX_UPLOADED,
    SOURCES,
    TRAINED,
    UPLOADED,
    drop_flash,
    flash,
    in_hand_label,
    keep_upload,
    put_in_hand,
    show_flashes,
)
from ui.tables import fitted_px

DESCRIBED = "checkpoints_described"  # session state: what the listing shows of each file, read once (`described_file`)

st.title(_("Checkpoints"))
st.markdown(
    _(
        "A checkpoint is one file with everything a trained model needs: its weights, its settings (the "
        "hyperparameters of the paper's Table 3), its vocabulary, the task it learned and its training curves. "
        "**Load** one to make it the model in hand on every page, download it, or upload one a classmate trained."
    )
)
share_link()


def load_entry(name: str, source: str, data: bytes) -> None:
    """Button callback (before the page is drawn, so the sidebar shows it): put a listed checkpoint in hand.

    Trained ones are loaded afresh from their bytes, so nothing done to the model in hand reaches the list.
    """
    put_in_hand(shipped_checkpoint(name) if source == "shipped" else load_checkpoint(data), f"{source}: {name}")
    flash("checkpoints_upload", "success", _("**{name}** is now the model in hand.", name=markdown_literal(name)))


NAME_MOST_PX = 200  # the name column leaves a phone's grid room for the rest
LISTING_COLUMNS = {  # the listing's columns, headed in the session's language
    "seed": st.column_config.NumberColumn(_("seed")),
    "task": st.column_config.TextColumn(_("task")),
    "exact match": st.column_config.NumberColumn(
        _("exact match"), format="percent", help=_("Held-out exact match at the end of training")
    ),
    "model": st.column_config.TextColumn(_("model")),
    "switches": st.column_config.TextColumn(_("switches")),
    "weights": st.column_config.NumberColumn(_("weights"), format="localized", help=_("Parameters of the model")),
}


def described(name: str, source: str, checkpoint: Checkpoint) -> tuple[dict, int]:
    """What the listing shows of a checkpoint: its summary and its seed."""
    return checkpoint_summary(name, source, checkpoint), checkpoint.task.seed


def described_file(name: str, source: str, data: bytes) -> tuple[dict, int]:
    """`described` of a trained or uploaded file, read once a session: the page lists each at every redraw, and a
    file's history of up to MAX_HISTORY_ROWS rows takes seconds to read. CheckpointError if it cannot be read."""
    read = st.session_state.setdefault(DESCRIBED, {})
    key = (name, source, hashlib.sha256(data).hexdigest())
    if key not in read:
        read[key] = described(name, source, load_checkpoint(data))
    return read[key]


def listing(entries: dict[str, tuple[str, tuple[dict, int], bytes]]) -> pd.DataFrame:
    """One row per checkpoint, what it learned and how well first, its size in words and few columns: the whole
    table fits the page at 1280 px beside the sidebar."""
    rows = []
    for name, (source, (summary, seed), _data) in entries.items():
        heads = ngettext("{n} head", "{n} heads", summary["heads"])
        layers = ngettext("{n} layer", "{n} layers", summary["layers"])
        rows.append(
            {
                "name": name,
                "seed": seed,
                "task": _("{task}, lengths {lengths}", task=summary["task"], lengths=summary["lengths"]),
                "exact match": None if (share := summary["exact_match"]) is None else round(shown_share(share), 3),
                "model": _(
                    "width {d_model}, {heads}, {layers}", d_model=summary["d_model"], heads=heads, layers=layers
                ),
                "switches": summary["switches"],
                "weights": summary["parameters"],
                "source": _(SOURCES[source]),
            }
        )
    return pd.DataFrame(rows)


# name -> (source, (summary, seed), file bytes)
entries: dict[str, tuple[str, tuple[dict, int], bytes]] = {}
for name in shipped_checkpoints():
    try:
        data = (CHECKPOINT_DIR / f"{name}.pt").read_bytes()
        entries[name] = ("shipped", described(name, "shipped", shipped_checkpoint(name)), data)
    except (CheckpointError, OSError) as err:
        problem = _("The shipped checkpoint {name} could not be read: {reason}", name=name, reason=err)
        st.warning(markdown_literal(problem))
for source, kept in (("trained", TRAINED), ("uploaded", UPLOADED)):
    for name, data in st.session_state.get(kept, {}).items():
        try:
            entries[name] = (source, described_file(name, source, data), data)
        except CheckpointError as err:
            unread = N_("The {source} checkpoint {name} could not be read: {reason}")
            st.warning(markdown_literal(_(unread, source=_(SOURCES[source]), name=name, reason=err)))

st.header(_("Available checkpoints"))
st.caption(
    _(
        "This session keeps its last {most} trained models: download the ones you want to keep for good.",
        most=MAX_TRAINED,
    )
)
if not entries:
    st.info(_("No checkpoints yet: train a model on the Train page, or upload a checkpoint file below."))
else:
    table = listing(entries)
    width = min(fitted_px([_("name"), *entries]), NAME_MOST_PX)  # a name uploaded since the grid was drawn too
    names = st.column_config.TextColumn(_("name"), width=width)  # not pinned (ui.tables)
    # a grid first drawn with shipped models alone ("内置") cut a trained one's "已训练" to "已训": once another origin
    # is listed, the column is as wide as its widest
    mixed = set(table["source"]) != {_(SOURCES["shipped"])}
    origin = st.column_config.TextColumn(
        _("origin"), width=fitted_px([_("origin"), *table["source"]]) if mixed else None
    )
    st.dataframe(table, hide_index=True, column_config={**LISTING_COLUMNS, "name": names, "source": origin})
    for name, (source, (_summary, seed), data) in entries.items():
        label_col, buttons_col = st.columns([3, 2], vertical_alignment="center")
        buttons = buttons_col.container(horizontal=True)  # each button as wide as its word: a fifth of the row broke it
        in_hand = st.session_state.get(IN_HAND_NAME) == f"{source}: {name}"
        said = _(SOURCES[source])
        if source == "trained":  # runs differing only in seed
            said = _("{source}, seed {seed}", source=said, seed=seed)
        in_hand_mark = " · :blue[" + _("in hand") + "]" if in_hand else ""
        label = _("{name} ({source})", name=f"**{markdown_literal(name)}**", source=said)  # full-width in Chinese
        label_col.markdown(label + in_hand_mark)
        buttons.button(
            _("Load"),
            key=f"load_{name}",
            help=_("Make this the model in hand on every page."),
            on_click=load_entry,
            args=(name, source, data),
        )
        buttons.download_button(
            _("Download"),
            data,
            name if name.endswith(".pt") else f"{name}.pt",  # an uploaded file's name has its .pt already
            "application/octet-stream",
            key=f"download_{name}",
            on_click=DOWNLOAD_RERUNS,
            help=_("Save this checkpoint as a .pt file."),
        )


def load_upload() -> None:
    """Put the uploaded checkpoint in hand, or keep the reason it was refused."""
    upload = st.session_state.get("upload_checkpoint")
    if upload is None:
        drop_flash("checkpoints_upload")
        return
    try:
        checkpoint, label = read_upload(upload.name, upload.getvalue())
    except CheckpointError as err:
        said = _("Could not load {name}: {reason}", name=shown_name(upload.name), reason=_(err))  # as Compare says it
        flash("checkpoints_upload", "error", markdown_literal(said))
    else:
        listed, dropped = keep_upload(label.removeprefix("uploaded: "), upload.getvalue())
        label = f"uploaded: {listed}"  # as the list names it: "mine (2).pt" beside another file called mine.pt
        put_in_hand(checkpoint, label)
        said = _("Loaded: the model in hand is now {label}.", label=code_span(in_hand_label(label)))
        if dropped:
            names = joined([code_span(name) for name in dropped], N_(", "))
            kept = _(
                "No longer listed: {names} (this page keeps your last {most} uploads).", names=names, most=MAX_UPLOADED
            )
            said += " " + kept
        flash("checkpoints_upload", "success", said)


st.header(_("Upload a checkpoint"))
limit_mb = min(st.get_option("server.maxUploadSize"), MAX_CHECKPOINT_BYTES // 2**20)
st.file_uploader(
    _("A .pt file saved by this lab ({most} MB at most)", most=limit_mb),
    type="pt",
    key="upload_checkpoint",
    on_change=load_upload,
    max_upload_size=limit_mb,
    help=_(
        "Only plain data and tensors are read from the file (torch.load with weights_only=True); nothing in it can run."
    ),
)
show_flashes("checkpoints_upload")
