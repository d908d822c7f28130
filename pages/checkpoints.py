"""Checkpoints: the shipped models, the ones trained this session, and uploads; any of them can be put in hand."""

from pages.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

import pandas as pd
import streamlit as st

from pages.common import CHECKPOINT_DIR, shipped_checkpoint, shipped_checkpoints
from pages.links import share_link
from pages.state import (
    IN_HAND_NAME,
    MAX_TRAINED,
    TRAINED,
    UPLOADED,
    drop_flash,
    flash,
    keep_upload,
    put_in_hand,
    show_flashes,
)
from transformer.checkpoint import MAX_CHECKPOINT_BYTES, Checkpoint, CheckpointError, load_checkpoint
from transformer.literal import code_span, markdown_literal
from transformer.naming import checkpoint_summary
from transformer.uploads import read_upload

st.title("Checkpoints")
st.markdown(
    "A checkpoint is one file with everything a trained model needs: its weights, its settings (the "
    "hyperparameters of the paper's Table 3), its vocabulary, the task it learned and its training curves. "
    "**Load** one to make it the model in hand on every page, download it, or upload one a classmate trained."
)
share_link()


def load_entry(name: str, source: str, ckpt, data: bytes) -> None:
    """Button callback (before the page is drawn, so the sidebar shows it): put a listed checkpoint in hand.

    Trained ones are loaded afresh from their bytes, so nothing done to the model in hand reaches the list.
    """
    put_in_hand(ckpt if source == "shipped" else load_checkpoint(data), f"{source}: {name}")
    flash("checkpoints_upload", "success", f"**{markdown_literal(name)}** is now the model in hand.")


LISTING_COLUMNS = {
    "name": st.column_config.TextColumn(pinned=True),
    "exact match": st.column_config.NumberColumn(format="percent", help="Held-out exact match at the end of training"),
    "weights": st.column_config.NumberColumn(format="localized", help="Parameters of the model"),
}


def listing(entries: dict[str, tuple[str, Checkpoint, bytes]]) -> pd.DataFrame:
    """One row per checkpoint, what it learned and how well first, its size in words and few columns: the whole
    table fits the page at 1280 px beside the sidebar."""
    rows = []
    for name, (source, ckpt, _) in entries.items():
        summary = checkpoint_summary(name, source, ckpt)
        layers = f"{summary['layers']} layer{'s' if summary['layers'] > 1 else ''}"
        rows.append(
            {
                "name": name,
                "seed": ckpt.task.seed,
                "task": f"{summary['task']}, lengths {summary['lengths']}",
                "exact match": summary["exact_match"],
                "model": f"width {summary['d_model']}, {summary['heads']} heads, {layers}",
                "switches": summary["switches"],
                "weights": summary["parameters"],
                "source": source,
            }
        )
    return pd.DataFrame(rows)


# name -> (source, checkpoint, file bytes)
entries: dict[str, tuple[str, Checkpoint, bytes]] = {}
for name in shipped_checkpoints():
    try:
        entries[name] = ("shipped", shipped_checkpoint(name), (CHECKPOINT_DIR / f"{name}.pt").read_bytes())
    except (CheckpointError, OSError) as err:
        st.warning(f"The shipped checkpoint {name} could not be read: {markdown_literal(err)}")
for source, kept in (("trained", TRAINED), ("uploaded", UPLOADED)):
    for name, data in st.session_state.get(kept, {}).items():
        try:
            entries[name] = (source, load_checkpoint(data), data)
        except CheckpointError as err:
            st.warning(markdown_literal(f"The {source} checkpoint {name} could not be read: {err}"))

st.subheader("Available checkpoints")
st.caption(f"This session keeps its last {MAX_TRAINED} trained models: download the ones you want to keep for good.")
if not entries:
    st.info("No checkpoints yet: train a model on the Train page, or upload a checkpoint file below.")
else:
    st.dataframe(listing(entries), hide_index=True, column_config=LISTING_COLUMNS)
    for name, (source, ckpt, data) in entries.items():
        label_col, load_col, download_col = st.columns([3, 1, 1], vertical_alignment="center")
        in_hand = st.session_state.get(IN_HAND_NAME) == f"{source}: {name}"
        seed = f", seed {ckpt.task.seed}" if source == "trained" else ""  # runs differing only in seed
        label_col.markdown(f"**{markdown_literal(name)}** ({source}{seed}){' · :blue[in hand]' if in_hand else ''}")
        load_col.button(
            "Load",
            key=f"load_{name}",
            help="Make this the model in hand on every page.",
            on_click=load_entry,
            args=(name, source, ckpt, data),
        )
        download_col.download_button(
            "Download",
            data,
            f"{name}.pt",
            "application/octet-stream",
            key=f"download_{name}",
            help="Save this checkpoint as a .pt file.",
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
        flash("checkpoints_upload", "error", f"This file was not loaded: {markdown_literal(err)}")
    else:
        put_in_hand(checkpoint, label)
        keep_upload(label.removeprefix("uploaded: "), upload.getvalue())
        flash("checkpoints_upload", "success", f"Loaded: the model in hand is now {code_span(label)}.")


st.subheader("Upload a checkpoint")
limit_mb = min(st.get_option("server.maxUploadSize"), MAX_CHECKPOINT_BYTES // 2**20)
st.file_uploader(
    f"A .pt file saved by this lab ({limit_mb} MB at most)",
    type="pt",
    key="upload_checkpoint",
    on_change=load_upload,
    max_upload_size=limit_mb,
    help="Only plain data and tensors are read from the file (torch.load with weights_only=True); "
    "nothing in it can run.",
)
show_flashes("checkpoints_upload")
