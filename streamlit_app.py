"""Transformer Lab: train a tiny encoder-decoder Transformer live, then open it up. Run: streamlit run streamlit_app.py"""

import streamlit as st

from pages.common import setup_torch, shipped_checkpoint_buttons, sidebar

st.set_page_config(page_title="Transformer Lab", page_icon="🔬", layout="wide")


def home() -> None:
    st.title("Transformer Lab")
    st.markdown(
        "Train the encoder-decoder Transformer of *Attention Is All You Need* on toy tasks, live, and watch it learn. "
        "Then open it up: see what the masks hide, what each head attends to, and how it decodes one token at a time."
    )
    st.caption(f"Computing on: **{setup_torch()}**")
    st.subheader("Try a trained model now")
    shipped_checkpoint_buttons("load")
    st.subheader("What to do here")
    st.markdown(
        "1. **Train** a model on copy, reverse or sort and watch its loss and accuracy stream in.\n"
        "2. **Anatomy**: the model laid out as the paper draws it, with every shape and parameter count.\n"
        "3. **Masking lab**: padding and causal masks, and what breaks without them.\n"
        "4. **Decoding**: step through greedy, sampling and beam search one token per click.\n"
        "5. **Compare**: run two settings side by side and see which part of the design matters.\n"
        "6. **Checkpoints**: put any trained model in hand, download it, or upload one a classmate trained."
    )


pages = [
    st.Page(home, title="Home", icon=":material/home:", default=True),
    st.Page("pages/train.py", title="Train", icon=":material/model_training:"),
    st.Page("pages/anatomy.py", title="Anatomy", icon=":material/schema:"),
    st.Page("pages/masking.py", title="Masking lab", icon=":material/visibility_off:"),
    st.Page("pages/decoding.py", title="Decoding", icon=":material/skip_next:"),
    st.Page("pages/compare.py", title="Compare runs", icon=":material/compare_arrows:"),
    st.Page("pages/checkpoints.py", title="Checkpoints", icon=":material/save:"),
]
page = st.navigation(pages)
sidebar(page.url_path)
page.run()
