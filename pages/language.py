"""The session's language: chosen in the sidebar, carried in links as `?lang=`, or taken from the browser on a first
visit; and `_`, which shows a sentence in it.

    from pages.language import _, ngettext
    st.title(_("Train"))
    st.caption(_("Step {step} of {steps}", step=run.step, steps=steps))
    st.caption(ngettext("{n} student", "{n} students", n))
"""

import streamlit as st

from transformer.i18n import DEFAULT_LANGUAGE, LANGUAGES, Message, Translator, language_for, translator

LANGUAGE = "language"  # session_state key: the session's interface language, one of LANGUAGES


def language() -> str:
    """The session's language: set by the picker, else by the link's `?lang=`, else by the browser."""
    if LANGUAGE not in st.session_state:
        chosen = language_for(st.query_params.get("lang")) or language_for(_browser_locale())
        st.session_state[LANGUAGE] = chosen or DEFAULT_LANGUAGE
    return st.session_state[LANGUAGE]


def _browser_locale() -> str | None:
    try:
        return st.context.locale
    except AttributeError:  # a script run outside a browser session (AppTest) has no locale
        return None


def session_translator() -> Translator:
    """The translator of this session's language."""
    return translator(language())


def _(message: str | Message, **params: object) -> str:
    """`message` in the session's language, with `params` filled in after translation."""
    return session_translator().gettext(message, **params)


def ngettext(singular: str, plural: str, n: int, **params: object) -> str:
    """The form of `singular`/`plural` for `n` in the session's language, with `n` and `params` filled in."""
    return session_translator().ngettext(singular, plural, n, **params)


def language_picker() -> None:
    """The sidebar's language picker; a change shows in the link, so a copied link opens in the same language."""
    st.selectbox(
        "Language / 语言",
        list(LANGUAGES),
        index=list(LANGUAGES).index(language()),
        format_func=LANGUAGES.get,
        key=LANGUAGE,
    )
    if language() == DEFAULT_LANGUAGE:
        st.query_params.pop("lang", None)
    else:
        st.query_params["lang"] = language()
