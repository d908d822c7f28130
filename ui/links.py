"""Links: a page's settings and the shipped model in hand travel in the address bar, and come back from it.

A link is read once per session and page; what it gets wrong is named in a notice and replaced by the defaults.
"""

import html
import ipaddress
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import streamlit as st

from transformer import CheckpointError
from transformer.i18n import N_, Message
from transformer.link_params import Parser, language_parser, model_parsers, read_params, untaken_params
from transformer.literal import markdown_literal
from ui.common import shipped_checkpoint, shipped_checkpoints
from ui.language import LANG_PARAM, _, language_param
from ui.state import CLASS_CODE, SHIPPED_PREFIX, model_in_hand, put_in_hand, shipped_name

LAB_PARAMS = ("model", "class", LANG_PARAM)  # what every page's link may carry: the frame reads them


def unreachable_host(url: str) -> str | None:
    """The host of `url` when no other device can open it (localhost, a loopback or unspecified address such as
    127.0.0.1, ::1 or 0.0.0.0): a link the server writes names the host its page was opened by. None otherwise,
    and for a relative link (no browser)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:  # a malformed address: no host to judge
        return None
    if not host:
        return None
    if host == "localhost" or host.endswith(".localhost"):
        return host
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # a name: it may resolve anywhere
        return None
    return host if address.is_loopback or address.is_unspecified else None


# A heading's size, or less in a narrow column (`cqi`: of the heading's container's width, which the heading's own
# container sets): "?class=earnest-caribou-7351", the longest class code's, fits its column on a 390 px phone and
# beside the QR code at 150% zoom.
LINK_TYPE = "min(2.25rem, 5.5cqi)"


def link_heading(link: str) -> str:
    """`link` as a heading's HTML whose lines break before its path and its query and between its parameters, never
    inside a parameter: a long link in large type otherwise breaks where the browser breaks words, after a hyphen
    ("amber-" / "otter-7351", "zh-" / "CN"), and a class code read off a projector loses its shape. Its type shrinks
    with a narrow column (LINK_TYPE), so that the class code shows whole."""
    address, asks, query = link.partition("?")
    pieces = re.split(r"(?<=[^/:])(?=/)", address)  # "http://host:8501", "/train"
    params = [f"?{p}" if i == 0 else f"&{p}" for i, p in enumerate(query.split("&"))] if asks else []
    kept = "".join(f'<wbr><span style="white-space: nowrap">{html.escape(p)}</span>' for p in params)
    shown = "<wbr>".join(map(html.escape, pieces)) + kept
    heading = f'<h2 style="font-size: {LINK_TYPE}"><a href="{html.escape(link)}">{shown}</a></h2>'
    return f'<div style="container-type: inline-size">{heading}</div>'


def shipped_in_hand() -> str | None:
    """The name of the shipped model in hand, the only kind a link can carry (`?model=reverse`); else None."""
    checkpoint = model_in_hand()[0]
    return None if checkpoint is None else shipped_name(checkpoint)


def show_link_notices(notices: list[Message]) -> None:
    """What the opened link got wrong, and that the page uses its defaults instead. A notice names the parameter,
    never the value the link held, so nothing from the link reaches the page."""
    for notice in notices:
        st.warning(_("{notice} Check the link you opened.", notice=notice), icon=":material/link_off:")


def model_from_link() -> None:
    """The frame's part of a link, on every run: once per session, put in hand the shipped model the opened link
    names (and say so when its language is none the lab has); then keep the address bar's `model` on the shipped
    model in hand, or drop it for any other model."""
    if "link_model_read" not in st.session_state:
        st.session_state["link_model_read"] = True
        parsers = {**model_parsers(shipped_checkpoints()), LANG_PARAM: language_parser()}
        values, notices = read_params(st.query_params.to_dict(), parsers)
        show_link_notices(notices)
        if "model" in values:
            try:
                put_in_hand(shipped_checkpoint(values["model"]), SHIPPED_PREFIX + values["model"])
            except CheckpointError as err:
                st.error(_("Could not load {name}: {reason}", name=values["model"], reason=err))
    name = shipped_in_hand()
    if name is not None and st.query_params.get("model") != name:
        st.query_params["model"] = name
    elif name is None and "model" in st.query_params:
        del st.query_params["model"]


def link_values(page: str, parsers: Mapping[str, Parser]) -> dict[str, Any]:
    """What the opened link says for this page, checked by `parsers`, on the page's first run in the session (with
    a notice per bad value); {} on every later run, when the page's own state counts."""
    if f"{page}_link_read" in st.session_state:
        return {}
    st.session_state[f"{page}_link_read"] = True
    values, notices = read_params(st.query_params.to_dict(), parsers)
    show_link_notices(notices)
    return values


def keep_class_in_address() -> None:
    """Put the class this session is in into the address (a page link drops it), so that a reload stays in it; the
    address's other parameters stay as they are."""
    code = st.session_state.get(CLASS_CODE)
    if code is not None and st.query_params.get("class") != code:
        st.query_params["class"] = code


def share_link(params: Mapping[str, str] | None = None) -> None:
    """Put the shipped model in hand and the page's settings `params` in the address bar, and offer the link to
    copy in the sidebar. A model trained here or uploaded cannot travel in a link: the offer says so. A page that
    takes no settings from a link (no `params`) says so of the settings the opened link gives it."""
    name, code = shipped_in_hand(), st.session_state.get(CLASS_CODE)
    wanted = {
        **({"model": name} if name else {}),
        **({"class": code} if code else {}),
        **(params or {}),
        **language_param(),
    }
    shown = {key: st.query_params.get_all(key) for key in st.query_params}  # every value: a key given twice too
    if "link_taken" not in st.session_state:  # the link opened, not an address the lab wrote since
        st.session_state["link_taken"] = True
        if params is None and (names := untaken_params(shown, LAB_PARAMS)):
            notice = N_("This page reads no settings from a link (this one gave {names}): it opens with its own.")
            listed = _(", ").join(map(markdown_literal, names))  # names as given, never words to translate
            show_link_notices([Message(notice, names=listed)])
    if shown != {key: [value] for key, value in wanted.items()}:
        st.query_params.from_dict(wanted)
    query = urlencode(wanted, quote_via=quote)
    url = (st.context.url or "") + (f"?{query}" if query else "")  # no URL without a browser: a relative link
    with st.sidebar.popover(_("Copy link"), icon=":material/link:", width="stretch"):
        st.caption(
            _("A link to this page as you see it: point at it, and copy it with the button that appears at its right.")
        )
        st.code(url, language=None, wrap_lines=True)
        if name is None and model_in_hand()[0] is not None:
            st.caption(
                _(
                    "The link cannot carry the model in hand: only shipped models travel in a link. Download this "
                    "one and share the file; whoever opens the link uploads it on Checkpoints."
                )
            )
            st.page_link("pages/checkpoints.py", label=_("Download it on Checkpoints"), icon=":material/download:")
