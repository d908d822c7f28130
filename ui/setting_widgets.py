"""A setting's widget, drawn from its one description (`transformer.settings`): its label, help, bounds, the words
of its values and its style on the Train form. The Train form, the Teacher page's assignment form and Compare's
custom builder draw every setting through `draw_setting`, each under widget keys of its own."""

from typing import Any

from transformer.i18n import N_
from transformer.settings import Setting, Value
from ui.language import _, option_for, said, worded

OTHER_SETTINGS = N_("The Train page's other settings")  # where a page folds those it does not show first
FOLDED_COLUMNS = 2  # columns of the folded settings: at 3 or 4, labels and choices are cut off on a projector


def widget_value(s: Setting, value: Any) -> Any:
    """`value` as the setting's widget holds it: a float setting with whole-number bounds as a whole number."""
    if s.kind in ("int", "float") and value is not None:
        return type(s.bounds[0])(value)
    return value


def setting_value(s: Setting, value: Any) -> Value:
    """The setting's value that its widget's `value` stands for: a float setting's whole number as a float, a
    choice's words (in a language the lab has: `option_for`) as its option."""
    if s.kind == "choice" or (s.form is not None and s.form.radio):
        return option_for(value, s.options, s.word)
    return float(value) if s.kind == "float" and value is not None else value


def draw_setting(
    container: Any, s: Setting, key: str, disabled: bool = False, early_stop: bool = True, **callback: Any
) -> None:
    """The setting's widget in `container`, at the value its `key` holds in session state (written before, as
    `widget_value` gives it), kept while the student visits other pages (`persist_state="session"`, as every page's
    inputs are), its help for runs that stop early once solved or (`early_stop` False) never do. A
    number whose default is None (the run picks it) is drawn with an empty default, so the browser lets the student
    clear it back to empty: it offers to clear a number input only when its default is empty."""
    place = s.form
    style = {
        name: _(value) if name == "placeholder" else value for name, value in (place.style if place else {}).items()
    }
    common = {
        "key": key,
        "help": _(s.help_for(early_stop)),
        "disabled": disabled,
        "persist_state": "session",
        **style,
        **callback,
    }
    label, word = _(s.label), said(s.word)
    if s.kind == "choice" or (place is not None and place.radio):
        worded(key)  # its options are said in the session's language
    if s.kind in ("int", "float"):
        container.number_input(label, *s.bounds, **({"value": None} if s.default is None else {}), **common)
    elif place is not None and place.radio:
        container.radio(label, list(s.options), format_func=word, horizontal=True, **common)
    elif s.kind == "choice":
        container.selectbox(label, list(s.options), format_func=word, **common)
    else:
        container.toggle(label, **common)
