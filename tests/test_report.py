"""The lab report as one HTML file: plotly.js in it once however many reports, no reference outside itself, every text
from students and task files escaped, each part of the report (or why it is missing), in the translator's language,
every sentence it writes translated into zh-CN with its placeholders."""

import json
import re
import string
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_file
from plotly.offline import get_plotlyjs

from tests.helpers import array
from transformer.figures import PHONE_CHART_PX
from transformer.figures.attention import key_labels
from transformer.i18n import read_catalogue, translator
from transformer.lengths import score_lengths
from transformer.limits import MAX_NAME_CHARS
from transformer.live_examples import COLUMNS, live_examples
from transformer.model import ModelConfig, Transformer
from transformer.report import Section, notice_html, report_file_name, report_html, run_report_html
from transformer.report_data import ClassPart, Example, gather
from transformer.serving import finished_run
from transformer.tasks import DataConfig, TaskData

ROOT = Path(__file__).resolve().parents[1]
ENGLISH, CHINESE = translator("en"), translator("zh-CN")
HOSTILE = '</script><script>alert("x")</script>'
SEAT = ClassPart("Period 3", "Ada", "no PE", "Without positional encoding, reverse will be solved:", "sooner", None, "")


@pytest.fixture(scope="module")
def report():
    with finished_run(task="reverse", min_len=3, max_len=4, seed=0) as run:
        scores = score_lengths(run.model(), run.data().vocab, run.data_config, range(1, 7), 10).scores
        yield gather(run, (run.model(), scores))


def figures(page: str) -> list[dict]:
    """Each figure's JSON, in the order of the page."""
    return [
        json.loads(text)
        for text in re.findall(r'<script type="application/json" id="figure-\d+-json">(.*?)</script>', page)
    ]


def test_a_file_holds_plotly_js_once_and_asks_for_nothing_outside_itself(report):
    page = report_html([Section(str(i), report) for i in range(3)], ENGLISH, "Reports")
    assert page.count(get_plotlyjs()) == 1
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    outside = re.findall(r'(?:src|href)\s*=\s*"([^"#][^"]*)"', page.replace(get_plotlyjs(), ""))
    assert outside == []  # no script, style, font, image or link from elsewhere; links go to its own sections
    assert re.findall(r'href="(#[^"]*)"', page) == ["#report-0", "#report-1", "#report-2"]


def test_every_figure_has_its_data_beside_its_place(report):
    page = run_report_html(report, ENGLISH)
    drawn = figures(page)
    places = re.findall(r'<div class="figure" id="(figure-\d+)"', page)
    assert places == [f"figure-{i}" for i in range(1, len(drawn) + 1)]
    layers = len(report.attention.maps["cross"])
    assert len(drawn) == 2 + 3 * layers + 1 + 1  # curves, three kinds of attention, the alignment, the length test
    loss = drawn[0]
    assert array(loss["data"][0]["x"]).tolist() == [row["step"] for row in report.rows]
    cross = drawn[2]["data"][0]  # head 0 of layer 0
    assert array(cross["z"]).tolist() == report.attention.maps["cross"][0][0]


def test_attention_maps_put_as_few_heads_a_row_as_a_phone_fits_their_key_labels():
    def per_row(figure: dict) -> int:  # panels side by side: the distinct left edges of their key axes
        return len({figure["layout"][axis]["domain"][0] for axis in figure["layout"] if axis.startswith("xaxis")})

    with finished_run(task="reverse", min_len=12, max_len=12, steps=25, seed=0) as run:  # 12 keys a head
        data = gather(run)
    cross = figures(run_report_html(data, ENGLISH))[2]  # layer 0's cross-attention, head by head
    n_heads, queries, source = data.settings["n_heads"], data.attention.queries, data.attention.source
    fits = key_labels(n_heads, queries, source, 4, PHONE_CHART_PX).per_row
    assert fits < n_heads and per_row(cross) == fits  # four panels a row on a phone ran their labels together


def test_text_from_students_and_task_files_is_escaped(report):
    example = Example(HOSTILE, HOSTILE, HOSTILE, False)
    hostile = replace(report, examples=[example], name=HOSTILE)
    seat = ClassPart(HOSTILE, HOSTILE, HOSTILE, HOSTILE, HOSTILE, HOSTILE, HOSTILE)
    page = report_html(
        [Section(HOSTILE, hostile, seat, HOSTILE), Section(HOSTILE, None, None, HOSTILE)], ENGLISH, HOSTILE
    )
    assert HOSTILE not in page and "<script>alert" not in page
    assert page.count("&lt;/script&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;") >= 10
    assert page.count("<script") == page.count("</script>")  # no text closed a script early
    tokens = replace(report.attention, source=[HOSTILE] * len(report.attention.source))
    page = run_report_html(replace(report, attention=tokens), ENGLISH)  # figure labels: Plotly's JSON escapes "<"
    assert HOSTILE not in page and "<script>alert" not in page and page.count("<script") == page.count("</script>")


@pytest.mark.parametrize(
    "language, words",
    [
        ("en", ["Settings", "Curves", "Attention maps", "Alignment", "Length test"]),
        ("zh-CN", ["设置", "曲线", "注意力图", "对齐得分", "长度测试"]),
    ],
)
def test_the_report_speaks_the_translator_s_language(report, language, words):
    page = run_report_html(report, translator(language))
    assert f'<html lang="{language}">' in page
    assert all(f"<h3>{word}</h3>" in page for word in words)
    ending = {"en": "it got every held-out sequence right", "zh-CN": "留出集中的每个序列都答对了"}[language]
    assert ending in page and f"{report.result['steps']}" in page
    then = {"en": "right. On the held-out set", "zh-CN": "答对了。留出集上"}[language]  # no space after 。
    assert then in page and "。 " not in page


@pytest.mark.parametrize(
    "language, rows",
    [
        ("en", ["<th>Causal mask</th><td>yes</td>", "<th>LayerNorm</th><td>post-norm</td>"]),
        ("zh-CN", ["<th>因果掩码</th><td>是</td>", "<th>层归一化</th><td>后置归一化</td>"]),
    ],
)
def test_a_setting_s_value_never_only_repeats_its_label(report, language, rows):
    page = run_report_html(report, translator(language))
    assert all(row in page for row in rows), [row for row in rows if row not in page]


@pytest.mark.parametrize(
    "language, off", [("en", "<th>Causal mask</th><td>no</td>"), ("zh-CN", "<th>因果掩码</th><td>否</td>")]
)
def test_a_switch_off_reads_as_its_on_does(report, language, off):
    """A class split on the causal mask: one group's reports said "Causal mask: yes", the other's "Causal mask: no
    causal mask"."""
    blind = replace(report, settings={**report.settings, "causal_mask": False})
    assert off in run_report_html(blind, translator(language))


def test_every_sentence_the_report_writes_has_a_zh_cn_translation_with_its_placeholders():
    catalogue, sentences = read_catalogue("zh-CN"), set()
    for path in ("transformer/report.py", "transformer/classroom/reports.py", "ui/report_view.py"):
        sentences |= {m for _, m, _, _ in extract_from_file("python", ROOT / path, keywords={"N_": None, "_": None})}
    assert len(sentences) > 40
    fields = lambda text: sorted(name for _, name, _, _ in string.Formatter().parse(text) if name)  # noqa: E731
    missing = [s for s in sentences if s not in catalogue or fields(catalogue[s]) != fields(s)]
    assert missing == []


def test_an_empty_output_is_said_in_words(report):
    silent = replace(report, examples=[Example("1 2 3", "3 2 1", "", False)])
    assert "<td>(nothing)</td>" in run_report_html(silent, ENGLISH)
    assert "<td>（空）</td>" in run_report_html(silent, CHINESE)


def test_the_examples_table_has_the_train_page_s_columns_in_its_order(report):
    silent = replace(report, examples=[Example("1 2 3", "3 2 1", "3 2 2", False)])
    page = run_report_html(silent, ENGLISH)
    table = page[page.index("Held-out examples") :]
    header = re.findall(r"<th>(.*?)</th>", table[: table.index("</tr>")])
    row = re.findall(r"<td>(.*?)</td>", table[table.index("<td>") : table.index("</tr>", table.index("<td>"))])
    assert header == list(COLUMNS) == ["right", "input", "model output", "target"]
    seq = '<span class="seq">{}</span>'  # monospaced: in the page's face "1 2 3" read as one number
    assert row == ["✗", seq.format("1 2 3"), seq.format("3 2 2"), seq.format("3 2 1")]
    assert ".seq { font-family: ui-monospace, monospace; }" in page
    model = Transformer(ModelConfig()).eval()
    assert list(live_examples(model, TaskData(DataConfig(max_len=6)), n=2).columns) == list(COLUMNS)  # Train's


def test_a_task_without_an_ideal_alignment_says_so(report):
    attention = replace(report.attention, ideal=None, scores=None)
    page = run_report_html(replace(report, alignment=None, attention=attention), ENGLISH)
    assert "The task reverse has no fixed source position for each output token" in page
    assert "Outlined:" not in page
    assert len(figures(page)) == len(figures(run_report_html(report, ENGLISH))) - 1  # the maps, without the line
    assert "没有固定的来源位置" in run_report_html(replace(report, alignment=None, attention=attention), CHINESE)


def test_a_model_without_attention_and_a_run_without_a_length_test_say_so(report):
    page = run_report_html(replace(report, attention=None, alignment=None, lengths=None), ENGLISH)
    assert "This model has no attention to draw." in page and "This model has no attention to score." in page
    assert "No length test was run on this model" in page
    assert len(figures(page)) == 2  # the curves alone


def test_the_length_test_shows_its_lengths_and_what_they_show(report):
    page = run_report_html(report, ENGLISH)
    lengths = figures(page)[-1]
    assert array(lengths["data"][0]["x"]).tolist() == list(range(1, 7))
    assert "At lengths it trained on (3-4)" in page
    chinese = figures(run_report_html(report, CHINESE))[-1]
    assert chinese["layout"]["title"]["text"] != lengths["layout"]["title"]["text"]  # the figure speaks zh-CN too


def test_a_length_the_run_trained_on_that_its_test_could_not_score_is_named_not_dropped(report):
    """As the Length test page says it: a task from examples may hold out no pair of a length it trained on."""
    unscored = replace(report, lengths=[row for row in report.lengths if row["length"] != 4])
    page = run_report_html(unscored, ENGLISH)
    assert "At lengths it trained on (3-4)" in page  # 4 is a length it trained on, scored or not
    assert "The test leaves out length 4:" in page
    assert "测试不包括长度 4" in run_report_html(unscored, CHINESE)


def test_a_class_student_s_report_holds_their_group_prediction_and_the_class_s_result(report):
    seat = replace(SEAT, measured="later", outcome="Solved: 3 of 4 (with PE) against 0 of 4 (no PE).")
    page = run_report_html(report, ENGLISH, seat)
    for row in ["Period 3", "Ada", "no PE", "Without positional encoding", "sooner", "later", "3 of 4 (with PE)"]:
        assert row in page
    chinese = run_report_html(report, CHINESE, replace(seat, question=None, group=None, measured=None))
    assert "不分组" in chinese and "问题" not in chinese and "预测" not in chinese


def test_a_section_without_a_report_says_why(report):
    page = report_html(
        [Section("Ada", report, SEAT), Section("Bob", None, SEAT, "No report yet: not started.")], ENGLISH, "Lab"
    )
    assert page.count("<h2>") == 2 and "No report yet: not started." in page
    assert page.count('<section class="report"') == 2


def test_each_file_holds_its_content_in_one_main_landmark(report):
    """A screen reader jumps to the main landmark: everything in the body, the title first, lies in the one."""
    pages = [
        report_html([Section("Ada", report, SEAT), Section("Bob", None, SEAT, "not started")], ENGLISH, "Lab"),
        notice_html(CHINESE, "报告", "这个班级没有报告。"),
    ]
    for page in pages:
        body = page[page.index("<body>") : page.index("</html>")]
        assert body.startswith("<body><main>\n<h1>") and body.endswith("</main></body>")
        assert body.count("<main") == 1 and body.count("</main>") == 1


def test_a_report_says_who_made_it_if_they_gave_their_name_and_when(report):
    made = datetime(2026, 11, 28, 16, 5, 42, tzinfo=UTC)
    page = run_report_html(report, ENGLISH, student="张伟 <b>", made=made)
    assert '<p class="note">Made by 张伟 &lt;b&gt; on 2026-11-28 16:05 UTC.</p>' in page
    beijing = made.astimezone(timezone(timedelta(hours=8), "CST"))
    assert "生成于 2026-11-29 00:05 CST。" in run_report_html(report, CHINESE, made=beijing)
    assert "Made on 2026-11-28 16:05 UTC." in report_html([Section("Ada", report)], ENGLISH, "Lab", made=made)


def test_a_report_s_file_name_differs_by_student_browser_and_second_and_cannot_be_a_path():
    made, run = datetime(2026, 11, 28, 16, 5, 42), "reverse-1to10-d32h4n1-noPE"
    ada = report_file_name(run, "Ada", "browser-a", made)
    assert ada.startswith(f"{run}-Ada-") and ada.endswith("-20261128-160542-report.html")
    names = {
        ada,
        report_file_name(run, "张伟", "browser-a", made),
        report_file_name(run, "", "browser-a", made),
        report_file_name(run, "", "browser-b", made),
        report_file_name(run, "Ada", "browser-a", made + timedelta(seconds=1)),
    }
    assert len(names) == 5 and "-张伟-" in report_file_name(run, "张伟", "browser-a", made)
    hostile = report_file_name(run, '../..\\<b> C:"x"|?*\n.', "browser-a", made)
    assert re.fullmatch(r"[\w-]+\.html", hostile) and "--" not in hostile.replace("-report", "")
    for run in ("x" * 160, "汉" * 160):  # a task file's Chinese name: 3 bytes a character in UTF-8
        longest = report_file_name(run, "𠀀" * MAX_NAME_CHARS, "browser-a", made)  # 4 bytes each
        assert len(longest.encode()) < 255 and longest.startswith(run[:20])  # what file systems allow


def test_a_notice_is_a_small_file_that_needs_nothing_else():
    page = notice_html(CHINESE, "没有实验报告", "<b>gone</b>")
    assert "&lt;b&gt;gone&lt;/b&gt;" in page and "<script" not in page and len(page) < 2000


@pytest.mark.parametrize("tr, loss", [(ENGLISH, "Loss. training loss: "), (CHINESE, "损失。训练损失：")])
def test_every_figure_is_named_by_what_it_shows_for_screen_readers(report, tr, loss):
    page = run_report_html(report, tr)
    names = re.findall(r'<div class="figure" id="figure-\d+" role="img" aria-label="([^"]+)"', page)
    assert len(names) == len(figures(page)) and names[0].startswith(loss)


def test_the_token_accuracy_of_a_run_without_its_causal_mask_is_said_to_peek(report):
    peeked = "Without the causal mask, token accuracy is scored with the right answer fed to the decoder"
    assert peeked not in run_report_html(report, ENGLISH)
    blind = replace(report, settings={**report.settings, "causal_mask": False})
    assert peeked in run_report_html(blind, ENGLISH)
    assert "没有因果掩码时，词元准确率" in run_report_html(blind, CHINESE)


@pytest.mark.parametrize(
    "notice, unwatched, said",
    [
        ("it held a training slot for over 600 s by the clock, the most one run may", None, "被服务器停止"),
        (None, "no page polled it", "因为已经没有页面在关注它"),
        (None, None, "步停止。"),
    ],
)
def test_a_stopped_run_s_report_says_who_stopped_it_as_the_class_board_does(notice, unwatched, said):
    """A run the server stopped at its slot's limit read 'Stopped at step 1980 after 54.5 s of training.' in the
    student's report, where Train and the teacher's board said the server stopped it."""
    with finished_run(task="reverse", min_len=3, max_len=4, seed=0, steps=20, early_stop=False) as run:
        run.result, run.notice, run.unwatched = replace(run.result, reason="stopped"), notice, unwatched
        data = gather(run)
    assert data.result["reason"] == run.stop_reason()
    page = run_report_html(data, CHINESE)
    assert said in page and f"第 {data.result['steps']} 步" in page
