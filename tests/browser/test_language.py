"""The session's language in Chromium: a browser set to Chinese opens the lab in Chinese on a first visit (Streamlit's
`st.context.locale`), and the sidebar's picker switches it, the address keeping `?lang=` through a page change and
dropping it again for English (but where the browser's own language is another: a reload then stays English)."""

import re

from conftest import choose, open_page, open_tab, page_errors, requires_chromium
from playwright.sync_api import expect

from harness.chromium import VIEWPORT
from harness.page import button, fill, main, wait_idle

pytestmark = requires_chromium

DROPPED = "切换语言后，这个表单显示的是它的按钮将要使用的设置"  # what a form drawn again by a switch says


def test_a_browser_in_chinese_opens_the_lab_in_chinese(new_context, lab_server):
    context = new_context(viewport=VIEWPORT, locale="zh-CN")
    try:
        home = context.new_page()
        home.goto(lab_server.url, wait_until="domcontentloaded")
        expect(main(home).get_by_role("heading", name="先试一个训练好的模型")).to_be_visible(timeout=90_000)
        wait_idle(home)
        expect(home).to_have_url(re.compile(r"\?lang=zh-CN$"))  # kept in the address: a copied link opens in Chinese
        choose(home, "language_picker", "English")  # English picked in this browser stays English after a reload
        expect(home).to_have_url(re.compile(r"\?lang=en$"))
        home.reload(wait_until="domcontentloaded")
        expect(main(home).get_by_role("heading", name="Try a trained model now")).to_be_visible(timeout=90_000)
        wait_idle(home)
        assert not page_errors(home)
    finally:
        context.close()


def test_the_picker_switches_the_language_and_the_address_follows(page, lab_server):
    page.goto(lab_server.url, wait_until="domcontentloaded")
    expect(main(page).get_by_role("heading", name="Try a trained model now")).to_be_visible(timeout=90_000)
    wait_idle(page)
    choose(page, "language_picker", "简体中文")
    expect(main(page).get_by_role("heading", name="先试一个训练好的模型")).to_be_visible()
    expect(page).to_have_url(re.compile(r"\?lang=zh-CN$"))
    page.locator("[data-testid='stSidebarNav'] a[href$='/checkpoints']").first.click()
    expect(main(page).get_by_role("heading", name="检查点", exact=True)).to_be_visible()
    expect(page).to_have_url(re.compile(r"/checkpoints\?lang=zh-CN$"))
    wait_idle(page)
    choose(page, "language_picker", "English")
    expect(main(page).get_by_role("heading", name="Checkpoints", exact=True)).to_be_visible()
    expect(page).to_have_url(re.compile(r"/checkpoints$"))
    assert not page_errors(page)


def test_a_language_picked_in_a_browser_stands_when_a_link_in_another_opens(page, lab_server):
    """A student who picked English on their class's Chinese link keeps English when they open that link again (a
    closed tab, the QR code scanned again); a link opened in a browser whose reader never picked keeps its language."""
    chinese_link = lab_server.url + "/?lang=zh-CN"
    page.goto(chinese_link, wait_until="domcontentloaded")
    expect(main(page).get_by_role("heading", name="先试一个训练好的模型")).to_be_visible(timeout=90_000)
    wait_idle(page)
    choose(page, "language_picker", "English")
    expect(main(page).get_by_role("heading", name="Try a trained model now")).to_be_visible()
    wait_idle(page)
    again = page.context.new_page()
    again.goto(chinese_link, wait_until="domcontentloaded")
    expect(main(again).get_by_role("heading", name="Try a trained model now")).to_be_visible(timeout=90_000)
    expect(again).to_have_url(re.compile(r"/$"))  # and the address says so: a copied link opens in English
    wait_idle(again)
    choose(again, "language_picker", "简体中文")  # picked back: the next session follows that pick instead
    expect(main(again).get_by_role("heading", name="先试一个训练好的模型")).to_be_visible()
    wait_idle(again)
    third = page.context.new_page()
    third.goto(lab_server.url, wait_until="domcontentloaded")
    expect(main(third).get_by_role("heading", name="先试一个训练好的模型")).to_be_visible(timeout=90_000)
    wait_idle(third)
    assert not any(page_errors(tab) for tab in (page, again, third))


def test_a_choice_made_in_one_language_stands_after_a_switch_and_the_next_click(page, lab_server, tmp_path):
    """Streamlit's browser code keeps a select box's choice as the words it showed: after a language switch it sent
    the English title back with the next click, which no option had, and the Compare page broke."""
    open_page(page, lab_server, "compare")
    choose(page, "compare_experiment", "Train without the causal mask")
    wait_idle(page)
    choose(page, "language_picker", "简体中文")
    expect(main(page).get_by_role("heading", name="对比训练", exact=True)).to_be_visible()
    wait_idle(page)
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    page.locator(".st-key-compare_upload input[type=file]").set_input_files(str(empty))  # any click that reruns
    expect(main(page).get_by_text("empty.json").first).to_be_visible()
    wait_idle(page)
    assert not page_errors(page)
    box = page.locator(".st-key-compare_experiment").get_by_role("combobox")
    assert "不用因果掩码训练" in box.aria_snapshot() and "Train without" not in box.aria_snapshot()


def test_an_open_expander_stays_open_across_a_switch_that_rewords_it(page, lab_server):
    open_page(page, lab_server, "compare")
    choose(page, "compare_experiment", "Custom")
    folded = main(page).locator("[data-testid=stExpander]").filter(has_text=re.compile("other settings|其他设置"))
    folded.get_by_text("The Train page's other settings").click()
    expect(folded.locator("[data-testid='stExpanderDetails']")).to_be_visible()
    wait_idle(page)
    choose(page, "language_picker", "简体中文")
    expect(folded.get_by_text("训练页面上的其他设置")).to_be_visible()
    wait_idle(page)
    expect(folded.locator("[data-testid='stExpanderDetails']")).to_be_visible()
    assert not page_errors(page)


def test_what_a_form_has_not_sent_before_a_switch_is_dropped_and_start_trains_what_it_shows(page, lab_server):
    """The browser keeps what was typed into a form and not sent, and sent it whatever the page showed since: after
    a switch to Chinese the Train form showed seed 0 and sinusoidal PE, and Start trained seed 77 without any. Now
    the form sends what it shows, and says under it that what was typed before the switch was dropped."""
    open_page(page, lab_server, "train")
    fill(page, "train_seed", 77)
    page.locator(".st-key-train_positional").get_by_text("no PE", exact=True).click()
    wait_idle(page)
    choose(page, "language_picker", "简体中文")
    expect(main(page).get_by_role("heading", name="训练一个 Transformer")).to_be_visible()
    wait_idle(page)
    expect(page.locator(".st-key-train_seed input")).to_have_value("0")
    expect(page.locator(".st-key-train_positional").get_by_role("radio", name="正弦位置编码")).to_be_checked()
    expect(main(page).get_by_text(DROPPED)).to_be_visible()  # and the page says so under the form
    button(page, "start_training").click()
    summary = main(page).get_by_text(re.compile(r"^reverse，长度 6-8"))
    expect(summary).to_be_visible(timeout=60_000)
    assert summary.inner_text().endswith("种子 0") and "无位置编码" not in summary.inner_text()
    assert not page_errors(page)


def test_a_choice_a_form_has_not_sent_before_a_switch_is_dropped_and_save_saves_what_it_shows(page, lab_server):
    """The same on the teacher's assignment form: after a switch to Chinese it showed no groups and saved the split
    picked before. (A form sent a choice it had not sent yet as the words the browser showed when it was picked,
    which no option had after the switch, and the page broke.)"""
    open_page(page, lab_server, "teacher")
    fill(page, "teacher_title", "Period 3")
    button(page, "teacher_create_button").click()
    button(page, "teacher_key_saved").click()
    expect(page.locator(".st-key-teacher_projector img")).to_be_visible(timeout=30_000)
    wait_idle(page)
    open_tab(page, "Assignment")
    choose(page, "teacher_split", "sinusoidal PE / no PE")  # picked, not saved
    wait_idle(page)
    choose(page, "language_picker", "简体中文")
    expect(main(page).get_by_role("heading", name="教师：把全班当作一次实验")).to_be_visible()
    wait_idle(page)
    open_tab(page, "实验设置")
    box = page.locator(".st-key-teacher_split").get_by_role("combobox")
    expect(box).to_have_accessible_name("各组的不同之处")
    assert "不分组：全班一起" in box.aria_snapshot()  # the pick was never sent: dropped, as shown
    expect(main(page).get_by_text(DROPPED)).to_be_visible()  # and said
    choose(page, "teacher_split", "正弦位置编码 / 无位置编码")
    button(page, "teacher_save").click()
    wait_idle(page)
    assert not page_errors(page), page_errors(page)
    expect(main(page).get_by_text("已保存：学生下次加载页面时会在训练页看到。")).to_be_visible()
    assert "正弦位置编码 / 无位置编码" in box.aria_snapshot()  # saved as picked


def test_a_patching_input_typed_before_a_switch_is_what_patch_uses(page, lab_server):
    """Patching's form holds texts alone: a switch keeps its key, and with it what was typed and not yet sent. Drawn
    under a new key, it showed the typed input and patched the one before it."""
    page.goto(f"{lab_server.url}/knockout?model=reverse", wait_until="domcontentloaded")
    expect(main(page).get_by_text("Activation patching").first).to_be_visible(timeout=90_000)
    wait_idle(page)
    page.locator(".st-key-patch_clean input").fill("3 1 4 1 5")
    page.locator(".st-key-patch_corrupted input").fill("3 1 4 2 5")
    choose(page, "language_picker", "简体中文")
    expect(main(page).get_by_role("heading", name="消融：哪些头在干活？")).to_be_visible()
    wait_idle(page)
    expect(page.locator(".st-key-patch_clean input")).to_have_value("3 1 4 1 5")
    expect(main(page).get_by_text(DROPPED)).to_have_count(0)  # nothing was dropped here
    button(page, "patch_run").click()
    wait_idle(page)
    expect(main(page)).to_contain_text("5 1 4 1 3 EOS")  # the typed clean input's answer
    assert not page_errors(page)
