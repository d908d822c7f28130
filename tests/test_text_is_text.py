"""Symbols, tokens and names from files reach the page literally: never as Markdown (an image, a link) or HTML."""

import io
import json
import re
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from transformer import Checkpoint, DataConfig, ModelConfig, Transformer, Vocab
from transformer.checkpoint import checkpoint_bytes
from transformer.experiments import result_path
from transformer.literal import WORD_JOINER, code_span, markdown_literal
from ui.classes import class_store

APP = Path(__file__).resolve().parent.parent / "streamlit_app.py"
IMAGE, LINK, HTML = "![](//e.io/a)", "[l](//e.io)", "<img/src=x>"  # no spaces: each is one symbol
HOSTILE = (IMAGE, LINK, HTML, "**b**", "`", "$x$", "a\\", "<s>x")
BRIEF_IMAGE = "![x](http://example.invalid/a.png)"  # too long for a symbol; in a message
ACTIVE = re.compile(r"!\[|\]\(|<img|<s>")  # what would load an image, make a link or become HTML


def hostile_checkpoint() -> Checkpoint:
    vocab = Vocab(HOSTILE)
    config = ModelConfig(vocab_size=len(vocab))
    torch.manual_seed(0)
    model = Transformer(config).eval()
    task = DataConfig(task="reverse", min_len=3, max_len=4, n_symbols=len(HOSTILE), n_valid=20)
    return Checkpoint(model, vocab, config, task, [{"step": 0, "exact_match": 0.0}], {})


def outside_code_and_escapes(markdown: str) -> str:
    """The Markdown that is rendered as Markdown, read left to right as CommonMark does: backslash-escaped
    punctuation and code spans taken out."""
    kept, i = [], 0
    while i < len(markdown):
        if markdown[i] == "\\" and re.match(r"[!-/:-@\[-`{-~]", markdown[i + 1 : i + 2]):
            i += 2
            continue
        if fence := re.match(r"`+", markdown[i:]):
            run = fence[0]
            close = re.compile(rf"(?<!`){run}(?!`)").search(markdown, i + len(run))
            if close:
                i = close.end()
                continue
            i += len(run)  # an unmatched run of backticks is literal text
            continue
        kept.append(markdown[i])
        i += 1
    return "".join(kept)


def rendered_markdown(at: AppTest) -> list[str]:
    kinds = ("markdown", "caption", "success", "error", "warning", "info")
    return [element.value for kind in kinds for element in getattr(at, kind)]


def test_hostile_symbols_reach_the_decoding_page_only_as_text():
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state["in_hand"] = hostile_checkpoint()
    at.session_state["in_hand_name"] = "hostile"
    at.run()
    at.switch_page("pages/decoding.py").run()
    at.text_input(key="decode_input").set_value(f"{IMAGE} {HTML} {LINK}").run()
    at.button(key="decode_run_to_end").click().run()
    assert not at.exception
    texts = rendered_markdown(at)
    assert any(IMAGE in t for t in texts)  # the symbols are on the page ...
    for text in texts:
        assert not ACTIVE.search(outside_code_and_escapes(text)), text  # ... never as Markdown or HTML
    specs = json.dumps([json.loads(chart.proto.spec) for chart in at.get("plotly_chart")])
    assert "&lt;img/src=x&gt;" in specs and "<img" not in specs  # Plotly reads HTML: its labels are escaped
    at.text_input(key="decode_input").set_value(f"{IMAGE} {BRIEF_IMAGE}").run()
    assert at.error and not ACTIVE.search(outside_code_and_escapes(at.error[0].value))


def test_a_refused_upload_names_its_hostile_key_as_text():
    payload = torch.load(io.BytesIO(checkpoint_bytes_of(hostile_checkpoint())), weights_only=True)
    payload["model_config"][BRIEF_IMAGE] = 1
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("pages/checkpoints.py").run()
    at.file_uploader(key="upload_checkpoint").set_value((f"{LINK}.pt", buffer.getvalue(), "application/octet-stream"))
    at.run()
    assert not at.exception and "unexpected" in at.error[0].value
    message = at.error[0].value
    assert markdown_literal(BRIEF_IMAGE) in message and not ACTIVE.search(outside_code_and_escapes(message))


def checkpoint_bytes_of(c: Checkpoint) -> bytes:
    return checkpoint_bytes(c.model, c.vocab, c.task, c.history, c.train_config)


# Streamlit's patterns (tests/test_streamlit_internals.py) in Python: a link or an emoji made of the text it reads
MADE_ACTIVE = (
    re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.I | re.A),
    re.compile(r"(?:(?<=^)|(?<=\s)|(?<=[^\w\s]))([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)", re.A),
    re.compile(r":\+1:|:-1:|:[\w-]+:", re.A),
    # Streamlit's typographic signs (its StreamlitMarkdown's text replacements), between JavaScript's white space
    re.compile(
        r"(?:^|[\t\n\v\f\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff])(?:<->|->|<-|--|>=|<=|~=)"
        r"(?=[\t\n\v\f\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]|$)"
    ),
)
ADDRESSES = ("www.evil.example", "http://evil.example/x", "HTTPS://E.IO", "me@evil.example", '=HYPERLINK("http://e.x")')


def read_as_text(markdown: str) -> str:
    """The text Streamlit's Markdown reads in `markdown` once its escapes are read."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


@given(st.text(max_size=80))
def test_markdown_literal_escapes_every_punctuation_character_and_keeps_the_text(text):
    escaped = markdown_literal(text)
    kept = re.sub(r"[!-/:-@\[-`{-~]", "", " ".join(text.splitlines()))
    assert outside_code_and_escapes(escaped).replace(WORD_JOINER, "") == kept.replace(WORD_JOINER, "")
    shown = " ".join(text.splitlines())
    assert read_as_text(escaped).replace(WORD_JOINER, "") == shown.replace(WORD_JOINER, "")  # invisible joiners only
    assert not any(p.search(read_as_text(escaped)) for p in MADE_ACTIVE)


SIGNS = ("Tom -- Jerry", "' OR 1=1 --", "a -> b <- c", "<->", "n >= 3", "x\ufeff<=\u30002", "~= 1")


@pytest.mark.parametrize("text", [*ADDRESSES, *SIGNS, ":smile: :+1:", "Period 3 www.x.y and a@b.cd"])
def test_an_address_or_an_emoji_code_in_literal_text_stays_text(text):
    assert any(p.search(text) for p in MADE_ACTIVE)  # Streamlit would make a link or an emoji of it
    assert not any(p.search(read_as_text(markdown_literal(text))) for p in MADE_ACTIVE)


@given(st.text(max_size=80))
def test_code_span_is_one_span_holding_the_text(text):
    span = code_span(text)
    match = re.fullmatch(r"(`+)( ?)(.*)\2\1", span, re.S)
    assert match and match[3] == " ".join(text.splitlines()) and "`" * len(match[1]) not in match[3]


@pytest.mark.parametrize("symbol", ["a b", "\x1b[2J", "\u202eevil", "x" * 17, ""])
def test_symbols_that_could_not_be_shown_as_one_plain_token_are_refused(symbol):
    with pytest.raises(ValueError, match="symbol"):
        Vocab(["0", symbol])


# Every page, walked with a model whose symbols are hostile, in hand under a hostile file name, hostile masking
# inputs, a class with a hostile title, and an experiment file whose probe tokens and name are hostile.
FILE_NAME = "__b__ ![x](http://e.io/x.png) <img src=x> :red[x]"
PROBE_TOKENS = ("`", "![](//e.i)", "<img/s=x>", "**b**", "$x$", ":red[x]", "__b__")  # at most 10 characters each
MASKING_INPUT = f"` {IMAGE} {HTML} {LINK} **b** $x$ <s>x"  # a backtick first: it would close a code span
RENDERED = re.compile(r"!\[|\]\(|<img|<s>|\*\*b\*\*|__b__|\$x\$|:red\[")  # hostile text read as Markdown or HTML
PAGE_FILES = re.findall(r'"(pages/\w+\.py)"', re.search(r"PAGES = (\[.*?\n\])", APP.read_text(), re.S)[1])


def markdown_on(at: AppTest) -> list[str]:
    """Every text the page renders as Markdown: message, heading and caption bodies, widget labels and tooltips,
    radio options."""
    texts, stack = [], [at.main, at.sidebar]
    while stack:
        node = stack.pop()
        stack.extend(getattr(node, "children", {}).values())
        proto = getattr(node, "proto", None)
        if proto is None or type(proto).__name__ in ("Text", "Code") or not hasattr(proto, "DESCRIPTOR"):
            continue  # st.text and st.code show their text as it is
        texts += [getattr(proto, f) for f in ("body", "label", "help") if f in proto.DESCRIPTOR.fields_by_name]
        texts += list(proto.options) if node.type == "radio" else []
    return texts


def hostile_experiment() -> bytes:
    """A shipped experiment file whose probe tokens are hostile."""
    document = json.loads(result_path("post-vs-pre-norm").read_text())
    for part in ("src", "tgt"):
        probe = document["probe"][part]
        document["probe"][part] = [PROBE_TOKENS[i % len(PROBE_TOKENS)] for i in range(len(probe))]
    return json.dumps(document).encode()


@pytest.fixture
def class_database(tmp_path, monkeypatch):
    """A class database of the test's own, for the Teacher page."""
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LAB_DATABASE_URL", raising=False)
    class_store.clear()
    yield
    class_store.clear()


def test_every_page_shows_hostile_symbols_tokens_and_names_only_as_text(class_database):
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    at.switch_page("pages/checkpoints.py").run()
    upload = (f"{FILE_NAME}.pt", checkpoint_bytes_of(hostile_checkpoint()), "application/octet-stream")
    at.file_uploader(key="upload_checkpoint").set_value(upload).run()
    at.switch_page("pages/masking.py").run()  # typed there, kept while the other pages are visited
    at.text_input(key="mask_src").set_value(MASKING_INPUT)
    at.text_input(key="mask_tgt").set_value(MASKING_INPUT).run()
    at.switch_page("pages/teacher.py").run()
    at.text_input(key="teacher_title").set_value(FILE_NAME)
    at.button(key="teacher_create_button").click().run()
    shown = {}
    for page in PAGE_FILES:
        at.switch_page(page).run()
        assert not at.exception, page
        shown[page] = markdown_on(at)
    at.switch_page("pages/compare.py").run()
    at.file_uploader(key="compare_upload").set_value((f"{FILE_NAME}.json", hostile_experiment(), "application/json"))
    at.run()
    assert not at.exception
    shown["Compare runs, a file loaded"] = markdown_on(at)

    joined = "\n".join(text for texts in shown.values() for text in texts)
    everything = re.sub(r"\\(.)", r"\1", joined).replace(WORD_JOINER, "")  # as read: its joiners are invisible
    for fragment in (IMAGE, HTML, LINK, FILE_NAME, *PROBE_TOKENS):  # the hostile text is on the pages ...
        assert fragment in everything, fragment
    rendered = [
        (page, t) for page, texts in shown.items() for t in texts if RENDERED.search(outside_code_and_escapes(t))
    ]
    assert not rendered  # ... never as Markdown
