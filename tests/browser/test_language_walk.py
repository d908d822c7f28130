"""The whole lab in Chinese, then the same walk in English: every page with the shipped reverse model in hand, the
lesson on Home, a run on Train from Start to its outcome, and the Teacher's flow from a new class to its board,
assignment and export tabs. At each stop the page is looked at in a projector's 1280x800, a large screen's
1920x1080 and a phone's 390x844 (the window resized, the page not reloaded), with every expander open:

- no exception;
- in Chinese, no visible English word, in the page's text, its tables (a data grid's cells too) and its charts' text,
  outside the terms every language keeps in Latin letters (`transformer.i18n.latin_terms`), code (`code` spans,
  LaTeX sources) and an English term glossed in brackets right after its Chinese one (d2l's 留出集（held-out set）);
- the page declares the session's language (`<html lang>`: zh-CN, en), Streamlit's skip link speaks it, and a
  Chinese page's text names Simplified Chinese fonts first among the CJK ones, so Chinese is drawn with Chinese glyph
  forms, not Japanese ones;
- no text cut off: no text box that clips what it holds, no table hiding columns, no shape or label truncated;
- nothing drawn over another: no two blocks of the page, no chart toolbar over its chart's title or legend, no
  toast over the page's title, no two chart labels.

One server, and one session per language: the walk opens Home by its address, then goes from page to page through
the sidebar, as a student does (an address would reload the whole app in the browser each time). 2026-11-29 on the
2-core VM: 153 s for both languages, the server's start included, with `python -m pytest
tests/browser/test_language_walk.py -k fit_every_screen`.
"""

import re

import pytest
from conftest import (
    LABEL_OVERLAPS,
    NAMES,
    TABLES,
    VIEWPORTS,
    choose,
    go_to,
    open_at,
    page_errors,
    requires_chromium,
    screenshot,
    settle,
    unfold,
)
from playwright.sync_api import expect

from harness.page import OUTCOME, button, main, wait_idle
from transformer.i18n import latin_terms

pytestmark = requires_chromium

MODEL_PAGES = ["anatomy", "masking", "decoding", "lengths", "knockout", "compare", "checkpoints"]


# Every visible text of the page, a line per block: text nodes that render, joined within their nearest block and
# split between blocks, and the placeholders of empty fields. Left out: code and formulas (not sentences), icons
# (a Material icon is drawn from its English name), and the language picker's label, in both languages on purpose.
VISIBLE_LINES = """() => {
    const skip = 'code, pre, kbd, .katex, script, style, noscript, [data-testid="stCode"], ' +
        '[data-testid="stIconMaterial"], [data-testid$="DynamicIcon"], ' +
        '.st-key-language_picker [data-testid="stWidgetLabel"]';
    const blockOf = el => {
        while (el && el !== document.body) {
            const d = getComputedStyle(el).display;
            if (!d.startsWith('inline') && d !== 'contents') return el;
            el = el.parentElement;
        }
        return document.body;
    };
    const lines = [];
    let block = null;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const el = node.parentElement;
        if (!node.textContent.trim() || !el || el.closest(skip)) continue;
        if (!el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) continue;
        const own = el.getBoundingClientRect();
        if (own.width < 2 || own.height < 2) continue;  // a link for screen readers, clipped to a pixel
        const range = document.createRange();
        range.selectNodeContents(node);
        const box = range.getBoundingClientRect();
        if (box.width < 2 || box.height < 2 || box.right <= 0 || box.left >= innerWidth) continue;  // off the side
        const here = blockOf(el);
        if (here === block) lines[lines.length - 1] += node.textContent;
        else lines.push(node.textContent);
        block = here;
    }
    for (const field of document.querySelectorAll('input[placeholder], textarea[placeholder]'))  // an empty field's
        if (!field.value && field.checkVisibility()) lines.push(field.placeholder);                // words show too
    // A data grid draws its cells on a canvas: its accessible copy holds their words. A chart's every text.
    const shown = el => el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true});
    for (const grid of document.querySelectorAll('[data-testid="stDataFrame"]'))
        if (shown(grid)) grid.querySelectorAll('[role="gridcell"], [role="columnheader"]')
            .forEach(cell => lines.push(cell.textContent));
    for (const text of document.querySelectorAll('.js-plotly-plot svg text'))
        if (shown(text.closest('.js-plotly-plot')) && text.textContent.trim()) lines.push(text.textContent);
    return lines;
}"""

# The page's declared language, its skip link's words, and the font families of its title as drawn.
LANG_AND_FONT = """() => ({
    lang: document.documentElement.lang,
    skip: document.querySelector('[data-testid="stSkipToContent"]')?.textContent,
    font: getComputedStyle(document.querySelector('[data-testid="stMain"] h1')).fontFamily,
})"""
SKIP_LINK = {"en": "Skip to main content", "zh-CN": "跳到主要内容"}
SC_FONT = "Noto Sans CJK SC"  # the Simplified Chinese face of the font Linux and ChromeOS draw Chinese with

# Text that a box clips: an element holding only text (no chart, picture, field or formula) whose text is wider than
# the box shows, where the box hides the rest (overflow hidden or clip, or an ellipsis), or that runs past its lines.
CUT_OFF = """() => {
    const found = [];
    const sidebar = document.querySelector('[data-testid="stSidebar"]');  // folded on a phone (0 px), or folding
    const folded = !sidebar || sidebar.getBoundingClientRect().width < 200;
    const areas = folded ? '[data-testid="stMain"] *' : '[data-testid="stMain"] *, [data-testid="stSidebar"] *';
    for (const el of document.querySelectorAll(areas)) {
        if (!el.textContent.trim() || el.closest('.katex')) continue;
        if (el.querySelector('svg, canvas, img, input, textarea, iframe, table, .katex')) continue;
        if (!el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}) || el.clientWidth === 0) continue;
        const style = getComputedStyle(el);
        const clipsX = ['hidden', 'clip'].includes(style.overflowX) || style.textOverflow === 'ellipsis';
        const wide = el.scrollWidth > el.clientWidth + 1, tall = el.scrollHeight > el.clientHeight + 2;
        if ((clipsX && wide) || (style.webkitLineClamp !== 'none' && tall))
            found.push(`${el.textContent.trim().slice(0, 60)} (${el.scrollWidth}x${el.scrollHeight} in ` +
                       `${el.clientWidth}x${el.clientHeight})`);
    }
    return found;
}"""

# Boxes drawn over others: two blocks side by side in one column of the page, a chart's toolbars over its title or
# legend, a legend over its chart's x axis, a toast over the page's title.
OVERLAPS = """() => {
    const found = [];
    const box = el => el.getBoundingClientRect();
    const shown = el => el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true});
    const overlap = (a, b) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left)) *
                              Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top));
    const name = el => (el.innerText || el.textContent || el.dataset.testid || el.className).trim().slice(0, 50);
    for (const column of document.querySelectorAll('[data-testid="stVerticalBlock"]')) {
        const blocks = [...column.children].filter(c => shown(c) && box(c).height > 1);
        for (let i = 0; i < blocks.length; i++) for (let j = i + 1; j < blocks.length; j++)
            if (overlap(box(blocks[i]), box(blocks[j])) > 4)
                found.push(`${name(blocks[i])} / ${name(blocks[j])}`);
    }
    for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
        const container = chart.closest('[data-testid="stElementContainer"]') || chart;
        const toolbars = [...container.querySelectorAll('[data-testid="stElementToolbar"], .modebar')]
            .filter(el => box(el).width > 0);
        const texts = [...chart.querySelectorAll('.gtitle, .legendtext, .annotation-text')]
            .filter(el => box(el).width > 0 && el.textContent.trim());
        for (const bar of toolbars) for (const text of texts)
            if (overlap(box(bar), box(text)) > 4) found.push(`a chart's toolbar over "${text.textContent.trim()}"`);
    }
    for (const chart of document.querySelectorAll('.js-plotly-plot')) {
        const legend = [...chart.querySelectorAll('.legendtext')].filter(el => box(el).width > 0);
        const axes = [...chart.querySelectorAll('.g-xtitle text, .g-x2title text, .g-x3title text, .xtick text')]
            .filter(el => box(el).width > 0);
        for (const entry of legend) for (const axis of axes)
            if (overlap(box(entry), box(axis)) > 4)
                found.push(`legend "${entry.textContent.trim()}" over "${axis.textContent.trim()}"`);
    }
    const title = document.querySelector('[data-testid="stMain"] h1');
    for (const toast of document.querySelectorAll('[data-testid="stToast"]'))
        if (title && shown(toast) && overlap(box(toast), box(title)) > 4) found.push('a toast over the title');
    return found;
}"""


LATIN_WORD = re.compile(r"[A-Za-z][a-z]+(?:['’-][A-Za-z]+)*|[A-Z][A-Za-z]*")  # not d_model, 1/√step, x
CHINESE = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")  # a character or its punctuation
URL = re.compile(r"https?://\S+")  # an address: not words
GLOSS = re.compile(r"(?<=[\u3400-\u9fff])（[A-Za-z][A-Za-z /-]*）")  # 留出集（held-out set）: d2l's gloss


def english_words(lines: list[str], allowed: list[str]) -> list[str]:
    """The English words in `lines`, each with its line, once each allowed term, gloss and address is taken out."""
    terms = sorted(allowed, key=len, reverse=True)
    allowed_term = re.compile("|".join(rf"(?<![\w-]){re.escape(term)}(?![\w-])" for term in terms))
    found = []
    for line in lines:
        rest = CHINESE.sub(" ", allowed_term.sub(" ", GLOSS.sub(" ", URL.sub(" ", line))))
        words = [token for token in re.findall(r"[\w'’-]+", rest) if LATIN_WORD.fullmatch(token)]
        found += [f"{word} (in {line.strip()[:60]!r})" for word in words if len(word) > 1]
    return found


def test_the_word_finder_finds_english_and_lets_allowed_terms_glosses_and_chinese_through():
    allowed = ["Transformer", "d_model", "Attention Is All You Need", "reverse", "BOS"]
    assert english_words(["训练一个 Transformer 模型", "d_model 32 · 4 个头", "BOS 在前"], allowed) == []
    assert english_words(["论文 Attention Is All You Need 第 3 节", "在 reverse 上训练"], allowed) == []
    assert (
        english_words(
            [
                "留出集（held-out set）上的准确率",
                "位置编码",
                "x + 1",
                "1e-3",
                "d_k = 8",
                "http://h:8501/train?class=a&lang=zh-CN",
            ],
            allowed,
        )
        == []
    )
    assert english_words(["不带填充掩码（mask_padding=False）"], allowed) == [
        "False (in '不带填充掩码（mask_padding=False）')"
    ]
    assert english_words(["Upload", "1MB per file • CSV"], allowed) == [
        "Upload (in 'Upload')",
        "per (in '1MB per file • CSV')",
        "file (in '1MB per file • CSV')",
        "CSV (in '1MB per file • CSV')",
    ]
    assert english_words(["位置编码：sinusoidal", "最大 |Δ|", "max |Δ|", "Logit 透镜", "reverse-early"], allowed) == [
        "sinusoidal (in '位置编码：sinusoidal')",
        "max (in 'max |Δ|')",
        "Logit (in 'Logit 透镜')",
        "reverse-early (in 'reverse-early')",
    ]


def look(page, language: str, stop: str, allowed: list[str]) -> list[str]:
    """What is wrong with the page as it is now, at each viewport."""
    declared = page.evaluate(LANG_AND_FONT)
    problems = [] if declared["lang"] == language else [f"{language} {stop}: <html lang={declared['lang']!r}>"]
    if declared["skip"] != SKIP_LINK[language]:  # Streamlit's skip link, in the page's language
        problems.append(f"{language} {stop}: the skip link says {declared['skip']!r}")
    if language == "zh-CN" and SC_FONT not in [family.strip(' "') for family in declared["font"].split(",")]:
        problems.append(f"{language} {stop}: the title's fonts {declared['font']} name no Simplified Chinese one")
    for viewport, (width, height) in VIEWPORTS.items():
        page.set_viewport_size({"width": width, "height": height})
        settle(page)
        where = f"{language} {stop} {viewport}"
        found = [*page_errors(page), *(f"cut off: {text}" for text in page.evaluate(CUT_OFF))]
        found += [f"overlap: {pair}" for pair in page.evaluate(OVERLAPS)]
        found += [f"chart labels overlap: {pair}" for pair in page.evaluate(LABEL_OVERLAPS)]
        for table in page.evaluate(TABLES):
            if viewport == "phone" and table["past_screen"] > 1:
                found.append(f"a table reaches {table['past_screen']:.0f} px past the screen: {table['text']!r}")
            if viewport != "phone" and table["hidden"] > 1:
                found.append(f"a table hides {table['hidden']:.0f} px of columns: {table['text']!r}")
        if language == "zh-CN":
            found += [f"English: {word}" for word in english_words(page.evaluate(VISIBLE_LINES), allowed)]
        if found:
            screenshot(page, re.sub(r"\W+", "-", f"walk-{language}-{stop}-{viewport}"))
        problems += [f"{where}: {problem}" for problem in dict.fromkeys(found)]
    page.set_viewport_size({"width": VIEWPORTS["projector"][0], "height": VIEWPORTS["projector"][1]})
    settle(page)  # laid out again for the projector: a click while charts and labels move may land on nothing
    return problems


def train_to_the_end(page) -> None:
    """Train's Start with the default settings, until its outcome shows (a run of a few seconds); an error in its
    place fails the walk with its words."""
    button(page, "start_training").click()
    said = main(page).locator(f"{OUTCOME}, [data-testid='stAlertContentError']").first
    expect(said).to_be_visible(timeout=120_000)
    assert said.get_attribute("data-testid") != "stAlertContentError", said.inner_text()
    wait_idle(page)
    unfold(page)


def teacher_flow(page, language: str, allowed: list[str]) -> list[str]:
    """A new class: its key, then its board, assignment and export tabs, each looked at, and the page once the class
    is deleted."""
    go_to(page, "teacher")
    problems = look(page, language, "teacher", allowed)
    field = page.locator(".st-key-teacher_title input")
    field.fill("三年级二班" if language == "zh-CN" else "Period 3")
    field.press("Tab")
    button(page, "teacher_create_button").click()
    expect(main(page).locator("[data-testid='stCode']")).to_have_count(1, timeout=30_000)
    problems += look(page, language, "teacher key", allowed)
    button(page, "teacher_key_saved").click()
    expect(page.locator(".st-key-teacher_projector img")).to_be_visible(timeout=30_000)
    wait_idle(page)
    for index, tab in enumerate(["board", "assignment", "export"]):
        page.locator("[data-testid='stTab']").nth(index).click()
        wait_idle(page)
        unfold(page)
        problems += look(page, language, f"teacher {tab}", allowed)
    page.locator(".st-key-teacher_delete_sure label").click()  # the class goes: the server's database keeps nothing
    button(page, "teacher_delete").click()
    expect(page.locator(".st-key-teacher_title input")).to_be_visible(timeout=30_000)
    wait_idle(page)
    return problems + look(page, language, "teacher, class deleted", allowed)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("language", ["zh-CN", "en"])
def test_every_page_the_lesson_and_the_teacher_in_each_language_fit_every_screen(projector_page, lab_server, language):
    allowed, page = latin_terms(), projector_page
    open_at(page, lab_server, "home", language)  # one session, taken through the sidebar to every page
    problems = look(page, language, "home (the lesson)", allowed)
    for name in MODEL_PAGES:
        go_to(page, name)
        problems += look(page, language, name, allowed)
    go_to(page, "train")
    problems += look(page, language, "train", allowed)
    train_to_the_end(page)
    problems += look(page, language, "train, run ended", allowed)
    problems += teacher_flow(page, language, allowed)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def test_the_page_declares_its_language_and_a_switch_changes_it_at_once(page, lab_server):
    page.goto(f"{lab_server.url}/checkpoints", wait_until="domcontentloaded")
    expect(main(page).get_by_role("heading", name="Checkpoints", exact=True)).to_be_visible(timeout=90_000)
    wait_idle(page)
    expect(page.locator("html")).to_have_attribute("lang", "en")
    choose(page, "language_picker", "简体中文")
    expect(main(page).get_by_role("heading", name="检查点", exact=True)).to_be_visible()
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    uploader = main(page).locator("[data-testid='stFileUploaderDropzone']")  # Streamlit's English, in Chinese
    expect(uploader.locator("button")).to_have_accessible_name("上传")  # its only word
    expect(uploader.locator("[data-testid='stFileUploaderDropzoneInstructions']")).to_be_hidden()
    page.locator("[data-testid='stSidebarNav'] a[href*='/anatomy']").first.click()  # another page: still Chinese
    expect(main(page).get_by_role("heading", name="结构剖析", exact=True)).to_be_visible()
    wait_idle(page)
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    choose(page, "language_picker", "English")
    expect(main(page).get_by_role("heading", name="Anatomy", exact=True)).to_be_visible()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    assert not page_errors(page)


def test_a_language_switch_keeps_the_teacher_s_open_tab(page, lab_server):
    open_at(page, lab_server, "teacher", "en")
    page.locator(".st-key-teacher_title input").fill("Period 3")
    button(page, "teacher_create_button").click()
    button(page, "teacher_key_saved").click()
    tab = main(page).get_by_role("tab", name="Export and end")
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true", timeout=30_000)
    wait_idle(page)
    choose(page, "language_picker", "简体中文")
    expect(main(page).get_by_role("tab", name="导出与结束")).to_have_attribute("aria-selected", "true")
    expect(main(page).get_by_role("tab", name="看板")).to_have_attribute("aria-selected", "false")
    names = page.locator("body").evaluate(NAMES)
    assert any(name.startswith("全屏：") for name in names), names  # the QR code's full-screen button
    assert not page_errors(page)
