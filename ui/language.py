"""The session's language: chosen in the sidebar (and remembered by the browser), carried in links as `?lang=`, or
taken from the browser on a first visit; and `_`, which shows a sentence in it.

    from ui.language import _, ngettext
    st.title(_("Train"))
    st.caption(_("Step {step} of {steps}", step=run.step, steps=steps))
    st.caption(ngettext("{n} student", "{n} students", n))
"""

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import streamlit as st

from transformer.i18n import DEFAULT_LANGUAGE, LANGUAGES, N_, Message, Translator, language_for, translator
from ui.forms import values_set
from ui.streamlit_internals import FRONTEND_LABELS, FRONTEND_REWORDED, REMOVE_ITEM, frontend_rules

if TYPE_CHECKING:
    import pandas as pd

LANGUAGE = "language"  # session_state key: the session's interface language, one of LANGUAGES
PICKER = "language_picker"  # the sidebar picker's widget key (a widget's own state goes when a page omits it)
LANG_PARAM = "lang"  # the link parameter: `?lang=zh-CN`
DECLARED = "page_language"  # the key of the sidebar's container that declares the page's language, hidden
HIDDEN_CSS = f".st-key-{DECLARED} {{ display: none; }}"
WORDED = "worded_choices"  # session_state key: the widget keys of choices worded in the session's language (`worded`)
WORDS = "worded_options"  # session_state key: widget key -> (options, words) of a worded choice in a form
SWITCHED = "language_switched"  # session_state key: set by a switch, for the one script run it starts (`switch_told`)
PICKED = "language_picked"  # session_state key: set once the reader picks the session's language in the sidebar
CHOICE_COOKIE = "lab_language"  # the language this browser's reader last picked: it outlasts the session and the tab
CHOICE_COOKIE_SCRIPT = "document.cookie = %s + '; path=/; max-age=34560000; SameSite=Lax';"  # 400 days, the most
SELECT_ALL = False  # a multiselect's "Select all" option: Streamlit words it in English only, so there is none
# Streamlit's file uploader says "Upload" and "200MB per file • CSV" in English only: outside English its button
# says the session's word for it, and its line of limits is hidden (each uploader's label states its own limit).
UPLOADER_CSS = """[data-testid="stFileUploaderDropzoneInstructions"] { display: none; }
[data-testid="stFileUploaderDropzone"] button [data-testid="stMarkdownContainer"] p { display: none; }
[data-testid="stFileUploaderDropzone"] button [data-testid="stMarkdownContainer"]::after { content: %s; }"""
# Streamlit's link to the page's main part, the first a keyboard reaches, says this in English only: the script gives it
# the session's words.
SKIP_LINK = N_("Skip to main content")
SKIP_LINK_SCRIPT = """document.querySelector('[data-testid="stSkipToContent"]')?.replaceChildren(%s);"""
# Streamlit's browser code writes some sentences and button names in English only (`FRONTEND_SENTENCES`), and names
# some controls so (`FRONTEND_LABELS`): the script shows each, as it appears, in the session's words, the names in
# the attributes that hold them only. A fixed script; its values the session's `frontend_rules` of each (in English,
# no names, and the sentences as Streamlit's own: a text that joins several is still read sentence by sentence).
# Installed once per tab, it reads the rules of the page's latest run, and words the whole page again whenever they
# change (a switch of language): a name it worded keeps Streamlit's English beside it (data-lab-<attribute>) and what
# it wrote (data-lab-shown-<attribute>), so it is worded again from the English, or given the English back. An
# uploaded file's remove button, which Streamlit leaves unnamed, is named "Remove <file>" (REMOVE_ITEM), then worded as
# the others.
FRONTEND_SCRIPT = """window.labFrontendRules = %s.map(([pattern, names, text]) => [new RegExp(pattern), names, text]);
window.labFrontendLabels = %s.map(([pattern, names, text]) => [new RegExp(pattern), names, text]);
window.labRemoveItem = %s;
if (!window.labFrontendWords) {
  window.labFrontendWords = true;
  const shown = (english, rules) => {
    for (const [pattern, names, text] of rules) {
      const found = english.match(pattern);
      const own = (name, i) => (name === "sentence" ? shown(found[i + 1], rules) : found[i + 1]);
      const values = found && names.map(own);
      const fill = (_, name) => values[names.indexOf(name)];
      if (values && !values.includes(null)) return text.replace(/\\{(\\w+)\\}/g, fill);
    }
    // Several sentences in one text, a space after each full stop: an uploader's errors of one file, joined (a file of
    // a kind refused and over the limit). Each shown on its own, where each is one; after a sentence that ends in a
    // full-width stop (Chinese), the next follows without the space.
    for (let i = english.indexOf(". "); i >= 0; i = english.indexOf(". ", i + 1)) {
      const first = shown(english.slice(0, i + 1), rules);
      const then = first === null ? null : shown(english.slice(i + 2), rules);
      if (then !== null) return first + (/[\\u0000-\\u007f]$/.test(first) ? " " : "") + then;
    }
    return null;
  };
  const NAMED = ["aria-label", "placeholder", "data-title"];  // the attributes that name a control
  const word = (el, name) => {
    const value = el.getAttribute(name);
    const ours = el.getAttribute(`data-lab-shown-${name}`) === value;  // else Streamlit wrote it since
    const english = ours ? el.getAttribute(`data-lab-${name}`) : value;
    const text = shown(english, window.labFrontendRules) ?? shown(english, window.labFrontendLabels);
    if (text !== null) {
      el.setAttribute(`data-lab-${name}`, english);
      el.setAttribute(`data-lab-shown-${name}`, text);
    }
    if (value !== (text ?? english)) el.setAttribute(name, text ?? english);
  };
  const translate = (node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      const text = window.labFrontendRules.length ? shown(node.nodeValue, window.labFrontendRules) : null;
      if (text !== null && text !== node.nodeValue) node.nodeValue = text;  // each write is itself a change
    } else if (node.nodeType === Node.ELEMENT_NODE) {
      const unnamed = '[data-testid="stFileChipDeleteBtn"] button:not([aria-label])';
      for (const remove of [node, ...node.querySelectorAll(unnamed)].filter((el) => el.matches(unnamed))) {
        const file = remove.closest('[data-testid="stFileChip"]')?.querySelector('[data-testid="stFileChipName"]');
        if (file) remove.setAttribute("aria-label", window.labRemoveItem.replace("{item}", file.textContent));
      }
      for (const el of [node, ...node.querySelectorAll("[aria-label], [placeholder], [data-title]")]) {
        NAMED.filter((name) => el.hasAttribute(name)).forEach((name) => word(el, name));
      }
      const texts = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
      while (texts.nextNode()) translate(texts.currentNode);
    }
  };
  window.labFrontendTranslate = translate;
  new MutationObserver((records) => {
    for (const record of records) {
      if (record.type === "childList") record.addedNodes.forEach(translate);
      else translate(record.target);
    }
  }).observe(document.body, {childList: true, subtree: true, characterData: true, attributeFilter: NAMED});
}
window.labFrontendTranslate(document.body);  // the page as it stands, in the rules of this run"""


def language() -> str:
    """The session's language: set by the picker, in this session or before in this browser (CHOICE_COOKIE), else by
    the link's `?lang=`, else by the browser: a student who picked English keeps it when they open the class's Chinese
    link again."""
    if LANGUAGE not in st.session_state:
        chosen = language_for(_cookie(CHOICE_COOKIE)) or language_for(st.query_params.get(LANG_PARAM))
        st.session_state[LANGUAGE] = chosen or language_for(_browser_locale()) or DEFAULT_LANGUAGE
    return st.session_state[LANGUAGE]


def _cookie(name: str) -> str | None:
    try:
        return st.context.cookies.get(name)
    except AttributeError:  # a script run outside a browser session (AppTest) has no cookies
        return None


def _browser_locale() -> str | None:
    try:
        return st.context.locale
    except AttributeError:  # a script run outside a browser session (AppTest) has no locale
        return None


def session_translator() -> Translator:
    """The translator of this session's language."""
    return translator(language())


def _(message: str | Message | BaseException, **params: object) -> str:
    """`message` in the session's language, with `params` filled in after translation."""
    return session_translator().gettext(message, **params)


def ngettext(singular: str, plural: str, n: int, **params: object) -> str:
    """The form of `singular`/`plural` for `n` in the session's language, with `n` and `params` filled in."""
    return session_translator().ngettext(singular, plural, n, **params)


def on_its_own(reason: str) -> str:
    """A reason worded to follow another's words ("Not joined: unknown symbol 'x'") as a sentence of its own: its first
    letter a capital, the rest as it is (a symbol in it keeps its case; Chinese has no capitals)."""
    return reason[:1].upper() + reason[1:]


def said(words: Callable[[Any], str]) -> Callable[[Any], str]:
    """A widget's `format_func`: `words(value)` in the session's language. It holds the session's translator, so it
    says the same wherever it is called (AppTest calls a widget's format_func outside the page's run)."""
    translate = session_translator().gettext
    return lambda value: translate(words(value))


def table_cells(frame: "pd.DataFrame", *columns: str) -> "pd.DataFrame":
    """`frame` as a page shows it: each cell that is a Message, and every cell of `columns` (words the package keeps
    in English, such as a question's choices), in the session's language. A CSV download keeps the English. The
    package builds such a frame with object columns (`dtype=object`): pandas 3 stores a text column as plain
    strings, and its Messages would be lost."""
    shown = frame.map(lambda value: _(value) if isinstance(value, Message) else value)
    for column in columns:
        shown[column] = shown[column].map(_)
    return shown


def column_labels(frame: "pd.DataFrame", **config: object) -> dict[str, object]:
    """A `column_config` that heads each of `frame`'s columns in the session's language (the package marks its
    column names with N_); `config`: a column's own config, in place of its plain heading."""
    return {name: config.get(name, st.column_config.Column(_(name))) for name in frame.columns}


def language_param() -> dict[str, str]:
    """The link parameter that keeps this session's language in every link the app writes, and in the address: {}
    for English where the browser's own language would open the lab in English too (a Chinese browser's reader who
    picked English keeps `lang=en`, or a reload would open it in Chinese)."""
    if language() == DEFAULT_LANGUAGE and language_for(_browser_locale()) in (None, DEFAULT_LANGUAGE):
        return {}
    return {LANG_PARAM: language()}


def class_language_param() -> dict[str, str]:
    """The link parameter of a class link, which students open in browsers of their own: the teacher's language, but
    none for English, so that each student's browser picks theirs."""
    return {} if language() == DEFAULT_LANGUAGE else {LANG_PARAM: language()}


def worded(key: str, options: Sequence[Any] | None = None, words: Callable[[Any], Any] | None = None) -> str:
    """`key`, the widget key of a choice whose options are worded in the session's language: after a language
    switch its value is set again (`_picked`), so that the browser shows the new words. Streamlit's browser code
    keeps a choice as the words it showed and sends them back with the next click, where no option has them any more
    (the widget then returns the old words themselves). A choice in a form also gives its `options` and their
    `words` (its format_func's, before translation): a form sends a choice it has not sent yet as the words it showed
    then, whatever was set since, and `chosen` reads them back."""
    st.session_state.setdefault(WORDED, set()).add(key)
    if words is not None:
        st.session_state.setdefault(WORDS, {})[key] = (list(options or ()), words)
    return key


def chosen(key: str) -> Any:
    """The value of the worded choice `key` (for a multiselect, each of its values) as one of its options (see
    `worded`, `option_for`)."""
    value = st.session_state.get(key)
    options, words = st.session_state.get(WORDS, {}).get(key, ((), None))
    if words is None:
        return value
    return (
        [option_for(v, options, words) for v in value] if isinstance(value, list) else option_for(value, options, words)
    )


def option_for(value: Any, options: Sequence[Any], words: Callable[[Any], Any]) -> Any:
    """`value` if it is one of `options`, else the option whose `words` (before translation) it is in a language
    the lab has: what a form sends for a choice it had not sent before a language switch; else `value`."""
    if any(value == option and type(value) is type(option) for option in options):
        return value
    said_in = [translator(code).gettext for code in LANGUAGES]
    return next((option for say in said_in for option in options if say(words(option)) == value), value)


def _picked() -> None:
    """The picker's callback: the new language, and every worded choice set again in it. Once per switch: Streamlit
    calls it again in the next run when the run the switch started was cut short (a page's fragment timer firing)."""
    if st.session_state.get(LANGUAGE) == st.session_state[PICKER]:
        return
    st.session_state[LANGUAGE] = st.session_state[PICKER]
    for key in st.session_state.get(WORDED, ()):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    values_set()  # and so every such form's: what was typed into it and not sent is dropped, as `dropped_notice` says
    st.session_state[SWITCHED] = st.session_state[PICKED] = True


def dropped_notice() -> None:
    """Under a form drawn by the run a language switch started: the browser does not send what was typed into a form
    until its button is pressed, so the switch, which draws the form again, dropped it (`ui.forms`)."""
    if st.session_state.get(SWITCHED):
        st.info(
            _(
                "After the language switch, this form shows the settings its button will use: anything typed into it "
                "before the switch and not yet used was not kept."
            ),
            icon=":material/translate:",
        )


def switch_told() -> None:
    """End of a script run: a switch's notices (`dropped_notice`) are for the run it started only."""
    st.session_state.pop(SWITCHED, None)


def declare_language() -> None:
    """Declare the session's language on the page, `<html lang="zh-CN">`: Streamlit's page says "en" whatever it
    shows, and then a browser draws Chinese with Japanese glyph forms and a screen reader reads it in an English
    voice; and give Streamlit's skip link the session's words. A fixed script, its values the language's code and
    those words; drawn again, and so run again, after a switch. And show Streamlit's own English in those words
    (`FRONTEND_SCRIPT`)."""
    code = language()
    rules = frontend_rules(_)  # in English Streamlit's own: each still a sentence, so that a text joining some is read
    rules += frontend_rules(lambda english: _(FRONTEND_REWORDED[english]), tuple(FRONTEND_REWORDED))
    labels = [] if code == DEFAULT_LANGUAGE else frontend_rules(_, FRONTEND_LABELS)
    css, cookie = HIDDEN_CSS, ""
    if st.session_state.get(PICKED):  # the reader's own choice: the browser keeps it for the next session
        cookie = CHOICE_COOKIE_SCRIPT % json.dumps(f"{CHOICE_COOKIE}={code}")
    if code != DEFAULT_LANGUAGE:  # the word is the catalogue's: a CSS string, quoted as JSON quotes it
        css += "\n" + UPLOADER_CSS % json.dumps(_("Upload"), ensure_ascii=False)
    with st.container(key=DECLARED):
        st.html(
            f"<style>{css}</style><script>document.documentElement.lang = {json.dumps(code)};{cookie}\n"
            f"{SKIP_LINK_SCRIPT % json.dumps(_(SKIP_LINK), ensure_ascii=False)}\n"
            f"{FRONTEND_SCRIPT % (*(json.dumps(r, ensure_ascii=False) for r in (rules, labels, REMOVE_ITEM)),)}"
            "</script>",
            unsafe_allow_javascript=True,
        )


def picker_label() -> str:
    """The picker's label, "Language" in each of LANGUAGES (`Language / 语言`), so that anyone can find it."""
    return " / ".join(dict.fromkeys(translator(code).gettext(N_("Language")) for code in LANGUAGES))


def language_picker() -> None:
    """The sidebar's language picker, on every page; a change redraws the page in the new language, changes
    nothing else, and shows in the address, so a copied or reloaded link opens in the same language."""
    st.session_state[PICKER] = language()  # before the widget: the page it was last drawn on may have been another
    st.selectbox(picker_label(), list(LANGUAGES), format_func=LANGUAGES.get, key=PICKER, on_change=_picked)
    declare_language()
    if (kept := language_param().get(LANG_PARAM)) != st.query_params.get(LANG_PARAM):
        if kept is None:
            del st.query_params[LANG_PARAM]
        else:
            st.query_params[LANG_PARAM] = kept
