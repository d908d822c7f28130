"""What every page needs for WCAG 2.2 AA beyond what Streamlit draws: captions and locked settings in full contrast
(Streamlit fades a caption with opacity, which takes its code spans below 4.5:1, and a disabled widget's words to
2.5:1), scrolling regions a keyboard can reach (a formula wider than its column scrolls, and a region that scrolls
must take focus), and buttons' keyboard shortcuts said in their help (their badges hidden on a touch screen).
Checked by `tests/browser/test_accessibility.py` (axe-core on every page in each language)."""

import streamlit as st

from transformer.figures.theme import OUTLINE, PRIMARY
from ui.language import _

KEY = "accessibility"  # the key of the hidden container that holds the page's style and script
# Why a number or a file was refused, in words under the field (WCAG 3.3.1): Streamlit writes it only for screen
# readers and in a tooltip, so a red field and a Start or Create that does nothing were all a student saw. Its
# words are the session's (`ui.language`); the field keeps room for two lines of them, and the lab's script makes
# it as many as they take (in a narrow column, four ran over the next field's label). The words say what the
# tooltip's icon did: it goes, and with it the clear button while the number is refused (a number is typed over),
# which left the typed number no room beside the field's buttons.
ERROR_RED = "#b3261e"  # 6.5:1 on white
FIELD_ERRORS = f"""[data-testid="stNumberInput"]:has([role="alert"]) {{ position: relative; padding-bottom: 2.8rem; }}
[data-testid="stNumberInputContainer"]:has(> [role="alert"]) {{ position: static; }}
[data-testid="stNumberInput"] [data-testid="stTooltipErrorHoverTarget"],
[data-testid="stNumberInputContainer"]:has(> [role="alert"]) [data-testid="stNumberInputClearButton"] {{
  display: none !important; }}
[data-testid="stNumberInputContainer"] > [role="alert"] {{
  position: absolute !important; top: auto !important; bottom: 0 !important; left: 0 !important; right: 0 !important;
  width: auto !important; height: auto !important; margin: 0 !important; overflow: visible !important;
  clip: auto !important; clip-path: none !important; white-space: normal !important;
  color: {ERROR_RED}; font-size: 0.875rem; line-height: 1.3; }}
[data-testid="stFileChips"] [role="alert"] {{
  position: static !important; width: auto !important; height: auto !important; margin: 0.25rem 0 0 !important;
  overflow: visible !important; clip: auto !important; clip-path: none !important; white-space: normal !important;
  display: block !important; color: {ERROR_RED}; font-size: 0.875rem; }}"""
MUTED_GREY = "#595959"  # 7:1 on white, over 6:1 on a field's grey: quieter than the text, and still read at 4.5:1
# A setting a class's teacher locked is a disabled widget, which Streamlit draws at 40% opacity (about 2.5:1); the
# student must read it (their seed, their group's settings), so it takes the grey of captions.
LOCKED = f"""[data-testid="stElementContainer"]:has(input:disabled) :is(p, input) {{
  color: {MUTED_GREY} !important; -webkit-text-fill-color: {MUTED_GREY} !important; }}"""
# Keyboard focus (WCAG 2.4.7, and 3:1 for its ring, 1.4.11): Streamlit rings a button, a link, a folded section's
# header or a help icon at half the primary colour's opacity (2.2:1 on white), a link to another page with a 1.1:1
# tint, a radio button or checkbox (its input hidden) with a 1.2:1 tint on the circle or box, and its main area (a
# tab stop) or a table's grid (a canvas, and a hidden cell for a screen reader) not at all, and a text field, a number
# or a select box by its 1 px border turning blue alone. Each takes a ring in the primary colour (a grid's inside its
# edge, which its box clips; a field's around its box). A table's or chart's toolbar, or a heading's link, stays
# transparent until the pointer is over it, even while a key has focused it or one of its buttons: it shows (a table's
# over the table, which was drawn over it, its buttons hidden but for their rings' top edges). A stop
# the browser scrolls into view as it takes focus comes with room for its ring, which lay partly past the window's
# edge (a field's box flush with it, the input inside it what the browser brought into view).
TEXT_FIELDS = """:is([data-testid="stTextInputRootElement"], [data-testid="stNumberInputContainer"],
  [data-testid="stTextAreaRootElement"], :is([data-testid="stSelectbox"], [data-testid="stMultiSelect"]) > div > div)"""
FOCUS_RINGS = f""":is(a, button, summary, [data-testid="stMain"]):focus-visible,
:is([data-testid="stRadio"], [data-testid="stCheckbox"]) label:has(input:focus-visible),
[data-testid="stDataFrame"]:focus-within, {TEXT_FIELDS}:has(:is(input, textarea):focus-visible) {{
  outline: 2px solid {PRIMARY} !important; outline-offset: 2px; box-shadow: none !important; }}
:is([data-testid="stRadio"], [data-testid="stCheckbox"]) label:has(input:focus-visible) {{ border-radius: 4px; }}
[data-testid="stDataFrame"]:focus-within {{ outline-offset: -2px; }}
[data-testid="stMain"] :is(input, textarea, button, a, summary) {{ scroll-margin-block: 1rem; }}
:is([data-testid="stElementToolbar"], .modebar, .modebar-group):focus-within, a:focus-visible {{
  opacity: 1 !important; }}
[data-testid="stElementToolbar"]:focus-within {{ z-index: 10; }}"""
# A formula or table wider than its column (a phone's: 356 px for Masking's 424 px formula; Anatomy's table of modules
# at 150% zoom) scrolls sideways, and was cut off mid-formula or mid-column with nothing to say there was more: a shadow
# shows at each edge that has more to scroll to (shadows fixed to the box, covered by white ends that scroll with the
# content, after Lea Verou's "scrolling shadows"; a table's cells are transparent, so the shadows show through them).
MORE_TO_SCROLL = """:is(.katex-display, [data-testid="stTable"] > div) {
  background: linear-gradient(to right, #fff 30%, #fff0) left / 2em 100% no-repeat local,
    linear-gradient(to left, #fff 30%, #fff0) right / 2em 100% no-repeat local,
    radial-gradient(farthest-side at 0 50%, #0005, #0000) left / 0.75em 100% no-repeat scroll,
    radial-gradient(farthest-side at 100% 50%, #0005, #0000) right / 0.75em 100% no-repeat scroll; }
[data-testid="stDataFrame"][data-more-left]::before, [data-testid="stDataFrame"][data-more-right]::after {
  content: ""; position: absolute; top: 0; bottom: 0; width: 0.75em; pointer-events: none; z-index: 2; }
[data-testid="stDataFrame"][data-more-left]::before {
  left: 0; background: radial-gradient(farthest-side at 0 50%, #0005, #0000); }
[data-testid="stDataFrame"][data-more-right]::after {
  right: 0; background: radial-gradient(farthest-side at 100% 50%, #0005, #0000); }"""
# A widget's label, or a button's, stays on one line and is cut with an ellipsis where its column is narrow ("注意力分
# 数乘以 1/…", a toggle's, and "全部解码器自注…", Knockout's button, at 150% zoom): it wraps instead, so that it is
# read whole (WCAG 1.4.10).
WHOLE_LABELS = """:is([data-testid="stWidgetLabel"] .stMarkdownEllipsis, button [data-testid="stMarkdownContainer"]),
:is([data-testid="stWidgetLabel"] .stMarkdownEllipsis, button [data-testid="stMarkdownContainer"]) p {
  white-space: normal; overflow: visible; text-overflow: clip; }"""
# The class link is a heading in large type, and Streamlit puts a 17 px link-to-heading icon beside it, within 12 px of
# the link (WCAG 2.5.8 target size) and of no use there: the heading is the link.
ONE_CLASS_LINK = """.st-key-teacher_link [data-testid="stHeaderActionElements"] { display: none; }"""
# Compare's summary has nine columns: on a phone a Chinese heading or variant broke between every two characters
# ("解/出/时/的/步/数"), as Chinese may. There each breaks only at a space or a mark and the table scrolls sideways.
SUMMARY_WORDS = """.st-key-compare_summary :is(th, td) p { word-break: keep-all !important; }"""
# Streamlit draws inline code at 0.75em: a token chip or a command at 12.8 px, small on a projector across a room. At
# 0.95em it is 16 px in a paragraph and 14 px in a message box's smaller text. A caption's text is no markdown
# container's, so the rule names captions too: at 0.75em of a caption its code is 11.2 px on a phone (14.9 px captions)
# and 10.5 px on a laptop, under the 12 px a phone's reader is given; at 0.95em it is 14.1 and 13.3 px.
INLINE_CODE = """:is([data-testid="stMarkdownContainer"], [data-testid="stCaptionContainer"]) :not(pre) > code {
  font-size: 0.95em; }"""
# A button's keyboard shortcut shows as a key badge beside its label; a phone or tablet with no keyboard has no key to
# press, and on its narrow screen the badge only takes the label's room. Its help still names the key.
NO_KEYS = """@media (hover: none) and (pointer: coarse) { [data-has-shortcut] > kbd { display: none; } }"""
# A table's toolbar stands over the line above the table, shown while the pointer is over it; a touch screen has no
# pointer to move away, so once a table is tapped its toolbar stays and hid the end of a caption above it ("最大 |Δ| =
# 19.7" read "19"). There each table keeps the toolbar's room above it.
TOOLBAR_ROOM = """@media (hover: none) and (pointer: coarse) {
  [data-testid="stElementContainer"]:has([data-testid="stDataFrame"]) { margin-top: 2rem; } }"""
# A closed sidebar slides out of the window but keeps its links and language picker in the tab order: on a phone Tab
# went through eleven stops off the window's left edge, the focus nowhere to be seen (WCAG 2.4.7, 2.4.11). Hidden
# once closed, it leaves the tab order and the screen reader's page too, as a closed drawer should.
CLOSED_SIDEBAR = """[data-testid="stSidebar"][data-collapsed="true"] { visibility: hidden; }"""
# A sequence is typed as symbols between spaces, and in the app's face a space is a third of a digit wide: on a phone a
# Decoding source "5 4 3 3 7 6 6 0 4" read as one number. Typed text gets a quarter of an em more between its words.
SPACED_FIELDS = """:is([data-testid="stTextInputRootElement"], [data-testid="stTextArea"]) :is(input, textarea) {
  word-spacing: 0.25em; }"""
# A slider's track beyond its thumbs is a quarter-opaque grey-blue, 1.2:1 on white: where the range ends could not be
# seen (WCAG 1.4.11). The track takes the edge a field has.
SLIDER_TRACK = f"""[data-testid="stSlider"] [role="group"] > [data-orientation="horizontal"] > div:first-child {{
  box-shadow: 0 0 0 1px {OUTLINE}; border-radius: 2px; }}"""
# A radio button's option is 23.8 px tall, stacked 0.2 px from the next (Decoding's two kinds of attention): under the
# 24 px a target takes, or keeps clear around it (WCAG 2.5.8).
RADIO_TARGETS = """[data-testid="stRadioOption"] { min-height: 24px; }"""
CSS = f""".st-key-{KEY} {{ display: none; }}
[data-testid="stCaptionContainer"] {{ opacity: 1; color: {MUTED_GREY}; }}
{LOCKED}
{FIELD_ERRORS}
{FOCUS_RINGS}
{MORE_TO_SCROLL}
{WHOLE_LABELS}
{SUMMARY_WORDS}
{ONE_CLASS_LINK}
{INLINE_CODE}
{NO_KEYS}
{TOOLBAR_ROOM}
{CLOSED_SIDEBAR}
{SPACED_FIELDS}
{SLIDER_TRACK}
{RADIO_TARGETS}"""
# A fixed script, never text from anyone. Installed once per browser tab (Streamlit swaps pages inside one document),
# it gives each display formula, table or table cell that scrolls a place in the tab order, and takes it back when it no
# longer scrolls; it marks each data grid's edges that have more to scroll to; it gives a refused number's words the
# room they take under the field;
# it names each file uploader's button by the word a style draws on it (`ui.language`: a button's name must be what
# it shows, and a name drawn by CSS alone is no name to axe); and a form's button pressed while one of the form's
# numbers is refused (the browser then sends nothing) takes the student to that number, opening the folded section
# that holds it; and keyboard focus that a rerun drops goes back to the redrawn part, or from Start to Stop and back.
SCRIPT = """<script>
(() => {
  if (window.labScrollRegions) return;
  window.labScrollRegions = true;
  const mark = () => {
    const table = '[data-testid="stTable"]';
    const scrollers = `.katex-display, ${table} > div, ${table} [data-testid="stMarkdownContainer"]`;
    for (const el of document.querySelectorAll(scrollers)) {
      const scrolls = el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight;
      if (scrolls) el.setAttribute("tabindex", "0");
      else el.removeAttribute("tabindex");
    }
    for (const field of document.querySelectorAll('[data-testid="stNumberInput"]')) {  // room for all its words
      const refused = field.querySelector('[data-testid="stNumberInputContainer"] > [role="alert"]');
      field.style.paddingBottom = refused ? `${refused.offsetHeight + 4}px` : "";
    }
    for (const frame of document.querySelectorAll('[data-testid="stDataFrame"]')) {  // drawn on a canvas: marked
      const grid = frame.querySelector(".dvn-scroller");
      if (!grid) continue;
      frame.toggleAttribute("data-more-left", grid.scrollLeft > 1);
      frame.toggleAttribute("data-more-right", grid.scrollLeft + grid.clientWidth < grid.scrollWidth - 1);
    }
    for (const button of document.querySelectorAll('[data-testid="stFileUploaderDropzone"] button')) {
      const label = '[data-testid="stMarkdownContainer"]';
      const drawn = [...button.querySelectorAll(`${label}, ${label} p`)]
        .map(el => getComputedStyle(el, "::after").content).find(content => content.startsWith('"'));
      if (drawn) button.setAttribute("aria-label", drawn.slice(1, -1));
      else button.removeAttribute("aria-label");
    }
  };
  let queued = false;
  const soon = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; mark(); });
  };
  new MutationObserver(soon).observe(document.body, {childList: true, subtree: true});
  // On the press, not only the click: a field left with a number it refuses says why at once, which moves the button
  // down before the mouse is released, and then there is no click.
  const toRefused = (event) => {
    const form = event.target.closest?.('[data-testid="stForm"]');
    if (!form || !event.target.closest('[data-testid="stFormSubmitButton"]')) return;
    requestAnimationFrame(() => {  // after the field the press left has said why it refuses its number
      const refused = form.querySelector('[data-testid="stNumberInput"]:has([role="alert"]) input');
      if (!refused) return;
      const folded = refused.closest("details:not([open])");  // a folded section: opened, so the field shows
      if (folded) folded.querySelector("summary")?.click();
      requestAnimationFrame(() => {
        refused.scrollIntoView({block: "center"});
        refused.focus();
      });
    });
  };
  addEventListener("pointerdown", toRefused, true);
  addEventListener("click", toRefused, true);
  // A rerun that redraws the part holding keyboard focus (Start giving way to Stop, Stop going as the run ends, a
  // chart redrawn as a run streams) drops focus to the page: it goes back to the part with the same key, or for Start
  // and Stop to the one that takes its place (within a few seconds, and only if nothing else has it by then).
  const counterpart = {start_training: "stop_training", stop_training: "start_training"};
  const focusable = 'button, a[href], input, textarea, summary, [tabindex]:not([tabindex="-1"])';
  const keyOf = (el) => [...(el.closest?.('[class*="st-key-"]')?.classList ?? [])]
    .find((name) => name.startsWith("st-key-"))?.slice("st-key-".length);
  let held = null;  // the element with focus, its part's key, and until when to look for its replacement
  addEventListener("focusin", (event) => {
    const key = keyOf(event.target);
    held = key ? {el: event.target, key, until: 0} : null;
  }, true);
  const refocus = () => {
    if (!held) return;
    const gone = !held.el.isConnected || held.el.offsetParent === null || held.el.disabled;
    if (!gone || (document.activeElement && document.activeElement !== document.body)) return;
    held.until ||= Date.now() + 10000;
    if (Date.now() > held.until) { held = null; return; }
    for (const key of [held.key, counterpart[held.key]].filter(Boolean)) {
      const target = [...document.querySelectorAll(`.st-key-${key} :is(${focusable})`)]
        .find((el) => el.offsetParent !== null && !el.disabled);
      if (target) { target.focus({preventScroll: true}); return; }
    }
  };
  new MutationObserver(refocus).observe(document.body, {childList: true, subtree: true});
  addEventListener("resize", soon);
  addEventListener("scroll", soon, true);  // a table scrolled sideways: its shadows follow
  mark();
})();
</script>"""


def accessible_page() -> None:
    """The page's accessibility style and script, in a hidden container (call once per page run)."""
    with st.container(key=KEY):
        st.html(f"<style>{CSS}</style>{SCRIPT}", unsafe_allow_javascript=True)


KEY_NAMES = {"Left": "←", "Right": "→"}  # a shortcut's key as the button's own hint draws it


def shortcut_help(text: str, shortcut: str | None) -> str:
    """A button's help `text` (already translated), followed by its keyboard shortcut when it has one."""
    if shortcut is None:
        return text
    return f"{text}\n\n" + _("Keyboard shortcut: {key}", key=KEY_NAMES.get(shortcut, shortcut))
