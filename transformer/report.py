"""A lab report as one self-contained HTML file: a run's settings, curves, held-out examples with the model's answers,
attention maps, alignment and length test, and for a class student their group, prediction and the class's result.
Data in (`report_data`), one HTML string out, in the language of the translator it is given.

The file needs nothing outside itself: plotly.js is inlined once however many reports it holds, each figure's JSON
sits beside its place and is drawn as it scrolls into view (or before printing), and its Content-Security-Policy
forbids every request (no CDN, font or image). Every text from students, teachers and task files is escaped.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import pandas as pd

from . import settings as spec
from .alignment import FOUND, found_at, shown_score
from .evaluation import PEEKED
from .figures import PHONE_CHART_PX
from .figures.alignment import best_head_figure, head_name, ideal_over_learned
from .figures.attention import attention_heatmaps
from .figures.lengths import length_accuracy_figure
from .figures.standalone import figure_json, plotly_js, template_json
from .figures.summary import describe
from .figures.theme import FONT_FAMILY, Figure
from .figures.training import accuracy_figure, loss_figure
from .i18n import N_, Translator
from .lengths import summary, untested
from .live_examples import COLUMNS
from .report_data import ClassPart, ReportData
from .shares import shown_share
from .tasks import DataConfig, get_task

# Each part of a report's file name (its run's name, its student's name), in UTF-8 bytes: the name stays within the
# 255 bytes a file system allows, with a task file's Chinese name (3 bytes a character) and a name of 4-byte ones.
FILE_PART_BYTES = 100
CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:"
FONTS = f"body {{ font-family: {FONT_FAMILY}, system-ui, sans-serif; }}"  # the app's: Chinese in a Chinese face
STYLE = """
body { max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #111; }
h1 { font-size: 1.7em; } h2 { margin-top: 2em; border-bottom: 2px solid #1f5fbf; } h3 { margin-top: 1.5em; }
table { border-collapse: collapse; margin: 0.5em 0; } td, th { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f0f4fa; text-align: left; } .seq { font-family: ui-monospace, monospace; }
.pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(420px, 100%), 1fr)); gap: 1em; }
.note { color: #444; } section.report + section.report { break-before: page; }
"""
DRAW = """(() => {
  const template = JSON.parse(document.getElementById("plotly-template").textContent);
  const config = {displaylogo: false, responsive: true};
  const figures = document.querySelectorAll("div.figure");
  const draw = (div) => {
    if (div.dataset.drawn) return;
    div.dataset.drawn = "1";
    const figure = JSON.parse(document.getElementById(div.id + "-json").textContent);
    figure.layout.template = template;
    Plotly.newPlot(div, figure.data, figure.layout, config);
  };
  window.addEventListener("beforeprint", () => figures.forEach(draw));
  if (!("IntersectionObserver" in window)) return figures.forEach(draw);
  const observer = new IntersectionObserver((seen) => seen.forEach((entry) => {
    if (entry.isIntersecting) { observer.unobserve(entry.target); draw(entry.target); }
  }), {rootMargin: "800px 0px"});
  figures.forEach((div) => observer.observe(div));
})();"""
KIND_TITLES = {
    "cross": N_("Cross-attention, layer {layer}"),
    "encoder": N_("Encoder self-attention, layer {layer}"),
    "decoder_self": N_("Decoder self-attention, layer {layer}"),
}
ENDINGS = {
    "solved": N_("Finished after {steps} steps in {seconds:.1f} s: it got every held-out sequence right."),
    "step budget": N_("Finished after {steps} steps in {seconds:.1f} s, when its step budget ran out."),
    "time budget": N_("Finished after {steps} steps in {seconds:.1f} s, when its time budget ran out."),
    "stopped": N_("Stopped at step {steps} after {seconds:.1f} s of training."),
    "page closed": N_("Stopped at step {steps} after {seconds:.1f} s of training, when no page watched it any more."),
    "ended by the server": N_("Stopped by the server at step {steps} after {seconds:.1f} s of training."),
}  # a stop by its reason (`Run.stop_reason`), as the class's board says it


@dataclass(frozen=True)
class Section:
    """One student's or one run's part of a file: its heading, and its report, or why there is none."""

    heading: str
    report: ReportData | None
    seat: ClassPart | None = None
    missing: str = ""


def escaped(text: object) -> str:
    """Text as HTML that reads character for character."""
    return html.escape(str(text))


class _Page:
    """What one file's parts share: its translator, and the numbering of its figures."""

    def __init__(self, tr: Translator):
        self.tr, self.figures = tr, 0

    def t(self, message: str, **params: object) -> str:
        """`message` in the file's language, escaped."""
        return escaped(self.tr.gettext(message, **params))

    def heading(self, message: str) -> str:
        return f"<h3>{self.t(message)}</h3>"

    def para(self, message: str, **params: object) -> str:
        return f"<p>{self.t(message, **params)}</p>"

    def figure(self, fig: Figure) -> str:
        """A placeholder sized to `fig`, named by its text alternative (`describe`) for screen readers, and `fig`'s
        JSON (the file's one template is given to it as it is drawn)."""
        self.figures += 1
        data, height = figure_json(fig)
        name = f"figure-{self.figures}"
        return (
            f'<div class="figure" id="{name}" role="img" aria-label="{html.escape(describe(fig, self.tr))}" '
            f'style="min-height:{height}px"></div>'
            f'<script type="application/json" id="{name}-json">{data}</script>'
        )


def run_report_html(
    report: ReportData, tr: Translator, seat: ClassPart | None = None, student: str = "", made: datetime | None = None
) -> str:
    """One run's report as a file, titled by the run's name; `seat`: the student's place in their class; `student`:
    the name of the student who made it ("" when they gave none); `made`: when (None: now)."""
    title = tr.gettext(N_("Lab report: {name}"), name=report.name)
    return report_html([Section("", report, seat)], tr, title, student, made)


def report_file_name(run: str, student: str, browser: str, made: datetime) -> str:
    """A report's file name that two students with the same settings do not share: the run's name, the student's
    name ("" for none), four hex digits of their browser's id (for students who give no name) and the time to the
    second. Each name is kept to letters (in any script), digits, "_" and "-", so that no part can be a path, and cut
    to FILE_PART_BYTES."""
    words = (re.sub(r"[^\w-]+", "-", text) for text in (run, student))
    names = (w.encode()[:FILE_PART_BYTES].decode(errors="ignore").strip("-") for w in words)  # whole characters
    tag = hashlib.sha256(browser.encode()).hexdigest()[:4]
    return "-".join([*filter(None, names), tag, f"{made:%Y%m%d-%H%M%S}", "report.html"])


def report_html(
    sections: Sequence[Section], tr: Translator, title: str, student: str = "", made: datetime | None = None
) -> str:
    """One HTML file of `sections` under `title`, saying who made it (`student`, "" for no one named) and when
    (`made`; None: now), with a list of the sections first when there are several."""
    page = _Page(tr)
    parts = [_section(page, section, i) for i, section in enumerate(sections)]
    contents = ""
    if len(sections) > 1:
        links = "".join(f'<li><a href="#report-{i}">{escaped(s.heading)}</a></li>' for i, s in enumerate(sections))
        contents = f"<nav><ol>{links}</ol></nav>"
    return _document(
        tr,
        title,
        f"<script>{plotly_js()}</script>",
        [
            _byline(tr, student, made or datetime.now().astimezone()),
            contents,
            *parts,
            f'<script type="application/json" id="plotly-template">{template_json()}</script>',
            f"<script>{DRAW}</script>",
        ],
    )


def _byline(tr: Translator, student: str, made: datetime) -> str:
    """Who made the file, if they gave their name, and when, to the minute, in `made`'s time zone."""
    date = f"{made:%Y-%m-%d %H:%M %Z}".strip()
    if student:
        line = tr.gettext(N_("Made by {name} on {date}."), name=student, date=date)
    else:
        line = tr.gettext(N_("Made on {date}."), date=date)
    return f'<p class="note">{escaped(line)}</p>'


def notice_html(tr: Translator, title: str, message: str) -> str:
    """A file that says why it holds no report (a class that ended before its reports were made)."""
    return _document(tr, title, "", [f"<p>{escaped(message)}</p>"])


def _document(tr: Translator, title: str, head: str, body: Sequence[str]) -> str:
    """An HTML document that makes no request outside itself (its Content-Security-Policy forbids any), its content
    in one `main` landmark, where a screen reader's reader jumps to it."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="{escaped(tr.language)}"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escaped(title)}</title><style>{FONTS}{STYLE}</style>{head}</head><body><main>",
            f"<h1>{escaped(title)}</h1>",
            *body,
            "</main></body></html>",
        ]
    )


def _section(page: _Page, section: Section, index: int) -> str:
    """A section: its heading, the class part, and every part of its report (or why it has none)."""
    parts = [f'<section class="report" id="report-{index}">']
    if section.heading:
        parts.append(f"<h2>{escaped(section.heading)}</h2>")
    if section.seat is not None:
        parts.append(_class_part(page, section.seat))
    if section.report is None:
        parts.append(f'<p class="note">{escaped(section.missing)}</p>')
    else:
        parts += [build(page, section.report) for build in PARTS]
    return "\n".join([*parts, "</section>"])


def _table(rows: Sequence[Sequence[str]], header: Sequence[str] = ()) -> str:
    """An HTML table of cells already escaped: a header cell per row's first cell unless `header` is given."""
    head = "<tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr>" if header else ""
    if header:
        body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    else:
        body = "".join(f"<tr><th>{row[0]}</th>" + "".join(f"<td>{c}</td>" for c in row[1:]) + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>"


def _class_part(page: _Page, seat: ClassPart) -> str:
    """The student's place in the class experiment: class, group, prediction, and what the class's runs measured."""
    rows = [
        (page.t(N_("Class")), escaped(seat.title)),
        (page.t(N_("Student")), escaped(seat.student)),
        (page.t(N_("Group")), page.t(seat.group) if seat.group else page.t(N_("no groups"))),  # a value's words
    ]
    if seat.question is not None:
        rows += [
            (page.t(N_("Question")), page.t(seat.question)),
            (page.t(N_("Prediction")), page.t(seat.prediction or N_("none"))),
            (page.t(N_("Measured by the class's runs")), page.t(seat.measured or N_("not measured yet"))),
        ]
    rows.append((page.t(N_("The class's runs")), page.t(seat.outcome)))
    return page.heading(N_("In the class")) + _table(rows)


def _settings(page: _Page, report: ReportData) -> str:
    """The run's settings, what its task asks, and how it ended."""
    rows = [_setting_row(page, spec.setting(name), value) for name, value in report.settings.items()]
    parts = [page.heading(N_("Settings")), _task_line(page, report.task), _table(rows)]
    if (result := report.result) is not None:
        scores = N_("On the held-out set: exact match {exact_match:.1%}, token accuracy {token_acc:.1%}.")
        ending = page.t(ENDINGS.get(result["reason"], ENDINGS["stopped"]), **result)
        shares = {name: shown_share(result[name]) for name in ("exact_match", "token_acc")}
        second = page.t(scores, **{**result, **shares})
        said = page.tr.gettext(N_("{first} {second}"), first=ending, second=second)  # each escaped; 。 needs no space
        parts += [page.heading(N_("Outcome")), f"<p>{said}</p>"]
        if report.settings.get("causal_mask") is False:
            parts.append(f"<p>{page.t(PEEKED)}</p>")
    return "".join(parts)


def _setting_row(page: _Page, setting: spec.Setting, value: spec.Value) -> tuple[str, str]:
    """A setting's label and its value's words; "yes" or "no" for a switch whose words for on would only say the
    label again ("Causal mask: causal mask", in Chinese the same two words), so that its two values read alike."""
    label = page.t(setting.label)
    if setting.kind == "bool" and page.t(setting.word(True)).casefold() == label.casefold():
        return label, page.t(N_("yes") if value else N_("no"))
    return label, page.t(setting.word(value))


def _task_line(page: _Page, name: str) -> str:
    """What the task asks, for a task known by name."""
    try:
        return page.para(get_task(name).description)
    except ValueError:  # a task from examples, or one this lab no longer has
        return ""


def _curves(page: _Page, report: ReportData) -> str:
    """Loss and accuracy against the training step, from the metric rows."""
    rows = [row for row in report.rows if None not in row.values()]
    if not rows:
        return page.heading(N_("Curves")) + page.para(N_("No metric row was recorded."))
    loss = loss_figure(rows, train_floor=report.loss_floor or None, height=380, tr=page.tr)
    accuracy = accuracy_figure(rows, height=380, tr=page.tr)
    return page.heading(N_("Curves")) + f'<div class="pair">{page.figure(loss)}{page.figure(accuracy)}</div>'


def _sequence(text: str) -> str:
    """A sequence, escaped, in a monospaced face: in the page's face a space is a third of a digit, and "5 4 3 3 7"
    read as one number."""
    return f'<span class="seq">{escaped(text)}</span>'


def _examples(page: _Page, report: ReportData) -> str:
    """Held-out inputs, the model's greedy answers and their targets, each marked right or wrong, in the columns of
    the Train page's table (`live_examples.COLUMNS`)."""
    rows = []
    for x in report.examples:
        output = _sequence(x.output) if x.output else page.t(N_("(nothing)"))
        cells = {"right": "✓" if x.right else "✗", "input": _sequence(x.source), "model output": output}
        rows.append([{**cells, "target": _sequence(x.target)}[column] for column in COLUMNS])
    header = [page.t(column) for column in COLUMNS]
    intro = N_("Held-out inputs, which training never saw, decoded greedily by the final model:")
    return page.heading(N_("Held-out examples")) + page.para(intro) + _table(rows, header)


def _attention(page: _Page, report: ReportData) -> str:
    """Every kept attention map of the first held-out input, the task's ideal outlined on the cross-attention."""
    probe = report.attention
    if probe is None:
        return page.heading(N_("Attention maps")) + page.para(N_("This model has no attention to draw."))
    labels = {"cross": (probe.queries, probe.source), "encoder": (probe.source, probe.source)}
    labels["decoder_self"] = (probe.queries, probe.queries)
    intro = N_("The first held-out input, at step {step}. Rows are queries, columns keys.")
    parts = [page.heading(N_("Attention maps")), page.para(intro, step=probe.step)]
    outlined = probe.ideal is not None and probe.scores is not None
    fitted = dict(tr=page.tr, fit_px=PHONE_CHART_PX)  # a report is read on a phone too: as few heads a row as fit
    for kind, layers in probe.maps.items():
        for layer, weights in enumerate(layers):
            title = page.tr.gettext(KIND_TITLES[kind], layer=layer)
            if kind == "cross" and outlined:
                fig = ideal_over_learned(weights, probe.ideal, probe.scores[layer], *labels[kind], title, **fitted)
            else:
                fig = attention_heatmaps(weights, *labels[kind], title, **fitted)
            parts.append(page.figure(fig))
    if outlined and "cross" in probe.maps:
        rule = N_(
            "Outlined: where each output token comes from in the source. Each head's score, under its name, is the "
            "attention it puts there, averaged over the output tokens."
        )
        parts.append(page.para(rule))
    return "\n".join(parts)


def _alignment(page: _Page, report: ReportData) -> str:
    """The best head's alignment over the run, or why there is none."""
    heading = page.heading(N_("Alignment"))
    line = report.alignment
    if line is None:
        if report.attention is None:
            return heading + page.para(N_("This model has no attention to score."))
        message = N_(
            "The task {task} has no fixed source position for each output token, so there is no ideal "
            "cross-attention to score the heads against."
        )
        return heading + page.para(message, task=report.task)
    fig = best_head_figure(line.steps, line.best, line.chance, FOUND, height=340, tr=page.tr)
    found = found_at(line.steps, [score for _, score in line.best])
    head, score = line.best[-1]
    if found is not None:
        text = N_(
            "A head found the task's algorithm at step {found}: it put {threshold:g} of its attention on the ideal "
            "source tokens. At the end the best head is {head}, at {score:.2f}."
        )
    else:
        text = N_(
            "No head reached {threshold:g}; at the end the best head is {head}, at {score:.2f}. Heads can share the "
            "work and still get every output right."
        )
    head = head_name(head, page.tr)
    return (
        heading + page.figure(fig) + page.para(text, found=found, threshold=FOUND, head=head, score=shown_score(score))
    )


def _lengths(page: _Page, report: ReportData) -> str:
    """The length test of the run's model, or that none was run."""
    heading = page.heading(N_("Length test"))
    if not report.lengths:
        return heading + page.para(N_("No length test was run on this model before this report was made."))
    scores = pd.DataFrame(report.lengths)
    low, high = report.settings.get("min_len"), report.settings.get("max_len")
    if type(low) is not int or type(high) is not int:
        return heading + page.figure(length_accuracy_figure(scores, tr=page.tr))
    trained = replace(DataConfig(), min_len=low, max_len=high)
    asked = sorted({*range(low, high + 1), *scores["length"]})  # every length it trained on, and those tested
    lines = "".join(f"<li>{page.t(line)}</li>" for line in summary(scores, trained, asked))
    left_out = untested(scores, asked, trained, page.tr)  # lengths it trained on that the test could not score
    note = "".join(f"<p>{escaped(reason)}</p>" for reason in left_out)
    return f"{heading}<ul>{lines}</ul>{note}{page.figure(length_accuracy_figure(scores, tr=page.tr))}"


PARTS: tuple[Callable[[_Page, ReportData], str], ...] = (
    _settings,
    _curves,
    _examples,
    _attention,
    _alignment,
    _lengths,
)
