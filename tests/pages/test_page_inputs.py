"""A probing page's inputs come back as the student left them after visits to other pages, and start afresh for a
model of another task, whose symbols and layers may differ (the Decoding page's own test is in test_decoding.py)."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.helpers.apptest import open_with_model
from transformer.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
TYPED = {  # page -> {widget key: (widget kind, a value other than its first)}, on the shipped sort model (2 layers)
    "pages/masking.py": {
        "mask_src": ("text_input", "3 1 2"),
        "mask_pad_to": ("number_input", 5),
        "mask_layer": ("selectbox", 1),
        "mask_kind": ("radio", "cross"),
    },
    "pages/anatomy.py": {
        "anatomy_input": ("text_input", "5 5 1"),
        "anatomy_layer": ("selectbox", 1),
        "anatomy_block": ("selectbox", "cross"),
    },
    "pages/lengths.py": {"lengths_range": ("slider", (3, 13)), "lengths_n": ("select_slider", 25)},
    "pages/knockout.py": {"knockout_metric": ("radio", "token_acc"), "knockout_ablation": ("radio", "mean")},
}
DATA = {"mask_pad_to", "lengths_range"}  # inputs of the task's data beside its texts: another task's start afresh
TEXTS = ("mask_src", "mask_tgt", "anatomy_input", "patch_clean", "patch_corrupted")  # a task's own symbols


def widget(at: AppTest, kind: str, key: str):
    return getattr(at, kind)(key=key)


def infos(at: AppTest) -> list[str]:
    return [info.value for info in at.info]


def texts(at: AppTest, page: str) -> dict[str, str]:
    at.switch_page(page).run()
    return {t.key: t.value for t in at.text_input if t.key in TEXTS}


def test_each_page_s_inputs_come_back_after_other_pages_and_start_afresh_for_another_task():
    at = open_with_model("pages/masking.py", shipped="sort")
    first = {page: texts(at, page) for page in TYPED}
    assert first["pages/masking.py"] and first["pages/anatomy.py"] and first["pages/knockout.py"]["patch_clean"]
    for page, inputs in TYPED.items():
        at.switch_page(page).run()
        for key, (kind, value) in inputs.items():
            widget(at, kind, key).set_value(value).run()
    for page, inputs in TYPED.items():
        at.switch_page("pages/decoding.py").run()  # another page between each
        at.switch_page(page).run()
        assert not at.exception and not at.error
        assert {key: widget(at, kind, key).value for key, (kind, _) in inputs.items()} == {
            key: value for key, (_, value) in inputs.items()
        }
        typed = {key: value for key, (kind, value) in inputs.items() if kind == "text_input"}
        assert texts(at, page) == {**first[page], **typed}  # the patching inputs too, never emptied
    at.session_state["in_hand"] = load_checkpoint(ROOT / "checkpoints" / "reverse.pt")  # another task, 1 layer
    at.session_state["in_hand_name"] = "reverse"
    new_visit = open_with_model("pages/masking.py", shipped="reverse")
    for page, inputs in TYPED.items():
        assert texts(at, page) == texts(new_visit, page)  # what a first visit with that model shows
        assert not at.exception and not at.error
        assert "The model in hand changed since this page last showed one: it is now **reverse**." in infos(at)
        for key in DATA & inputs.keys():  # the task's data: the new task's own, as at a first visit
            assert widget(at, inputs[key][0], key).value == widget(new_visit, inputs[key][0], key).value, key
        for key in inputs.keys() - DATA - set(TEXTS):  # the way of looking stays, where the new model has it
            expected = 0 if key.endswith("_layer") else inputs[key][1]
            assert widget(at, inputs[key][0], key).value == expected, key
