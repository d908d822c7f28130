import ast
import contextlib
import pickle
import re
import shlex
from pathlib import Path

import pytest
from babel.messages.frontend import CommandLineInterface
from babel.messages.pofile import read_po

from transformer import i18n
from transformer.i18n import (
    LANGUAGES,
    N_,
    Message,
    Translator,
    bounded,
    catalogue_files,
    joined,
    keeps_placeholders,
    language_for,
    latin_terms,
    message_of,
    read_catalogue,
    translator,
)

CATALOGUE = {
    "seed must be in 0..{top}": "种子必须在 0..{top} 之间",
    "could not read {name}: {reason}": "无法读取 {name}：{reason}",
}


def test_an_exception_raised_with_a_message_reads_english_and_translates():
    error = ValueError(Message("seed must be in 0..{top}", top=9))
    assert str(error) == "seed must be in 0..9"
    assert Translator("zh-CN", CATALOGUE).gettext(error) == "种子必须在 0..9 之间"
    assert Translator("en", {}).gettext(error) == "seed must be in 0..9"


def test_a_parameter_that_is_a_message_or_an_exception_is_translated_too():
    inner = ValueError(Message("seed must be in 0..{top}", top=9))
    outer = Message("could not read {name}: {reason}", name="a.pt", reason=inner)
    assert str(outer) == "could not read a.pt: seed must be in 0..9"
    assert Translator("zh-CN", CATALOGUE).gettext(outer) == "无法读取 a.pt：种子必须在 0..9 之间"


def test_any_other_exception_shows_its_english_text():
    assert message_of(RuntimeError("out of memory")) == "out of memory"
    assert Translator("zh-CN", CATALOGUE).gettext(OSError(2, "No such file")) == "[Errno 2] No such file"


def test_an_exception_carrying_a_message_survives_pickling():  # runs cross process boundaries (Ray workers)
    error = pickle.loads(pickle.dumps(ValueError(Message("seed must be in 0..{top}", top=9))))
    assert message_of(error) == Message("seed must be in 0..{top}", top=9)


def test_a_message_is_its_english_sentence_wherever_text_is_read():
    message = Message("{n} of {m} solved", n=2, m=3)
    assert message == "2 of 3 solved" and message.startswith("2 of") and f"[{message}]" == "[2 of 3 solved]"
    assert Translator("zh-CN", {"{n} of {m} solved": "{m} 个中 {n} 个已解出"}).gettext(message) == "3 个中 2 个已解出"
    again = pickle.loads(pickle.dumps(message))
    assert (again, again.template, again.params) == (message, "{n} of {m} solved", {"n": 2, "m": 3})


@pytest.mark.parametrize(
    "build",
    [
        lambda m: m[:10],
        lambda m: m[0],
        lambda m: m + "x",
        lambda m: "x" + m,
        lambda m: m % 1,
        lambda m: "%s" % m,  # noqa: UP031 (the operation under test)
        lambda m: m * 2,
        lambda m: 2 * m,
    ],
    ids=["slice", "index", "add", "radd", "mod", "rmod", "mul", "rmul"],
)
def test_text_built_from_a_message_raises_and_says_to_translate_it_first(build):
    with pytest.raises(TypeError, match="translate it first"):
        build(Message("seed must be in 0..{top}", top=9))


def test_a_message_still_reads_as_english_where_text_is_compared_or_logged():
    message = Message("seed must be in 0..{top}", top=9)
    assert (
        message.english[:4] == "seed" and type(message.english) is str and str(message) + "!" == "seed must be in 0..9!"
    )
    assert "0..9" in message and message.endswith("9") and {message: 1}["seed must be in 0..9"] == 1
    assert f"{message}" == "{}".format(message) == "seed must be in 0..9"  # noqa: UP032 (log lines, exception texts)


def test_what_a_sentence_says_of_an_error_is_its_message_or_its_text_cut_short():
    error = ValueError(Message("seed must be in 0..{top}", top=9))
    assert bounded(error, 4) is error.args[0]  # translated where shown, never cut into English
    assert bounded(RuntimeError("out of memory"), 6) == "out of"


def test_joined_parts_read_as_english_and_translate_each():
    parts = joined(["d_model 32", Message("seed {seed}", seed=3), "no PE"])
    assert parts == "d_model 32 · seed 3 · no PE"
    chinese = Translator("zh-CN", {"seed {seed}": "种子 {seed}", "no PE": "无位置编码"})
    assert chinese(parts) == "d_model 32 · 种子 3 · 无位置编码"
    listed = joined(["a", "b"], N_("; "))  # a mark that has its own Chinese
    assert listed == "a; b" and Translator("zh-CN", {"; ": "；"})(listed) == "a；b"


# ------------------------------------------------------------------------------------------ the zh-CN catalogue

ROOT = Path(__file__).resolve().parent.parent
APP = [ROOT / "streamlit_app.py", *(ROOT / "pages").glob("*.py"), *(ROOT / "ui").glob("*.py")]
SOURCES = sorted([*APP, *(ROOT / "transformer").rglob("*.py")])
MARKS = {"_", "N_", "gettext", "ngettext", "Message"}


def extraction_command() -> list[str]:
    """The one command docs/translation.md gives for extracting every marked sentence (`pybabel extract -F
    babel.cfg ...`), as its words."""
    lines = (ROOT / "docs" / "translation.md").read_text(encoding="utf-8").splitlines()
    commands = [shlex.split(line) for line in lines if line.startswith("pybabel extract ")]
    assert len(commands) == 1, commands
    return commands[0]


@pytest.fixture(scope="module")
def marked(tmp_path_factory: pytest.TempPathFactory) -> dict[str | tuple[str, ...], list[str]]:
    """Every sentence marked in the app's code, with where: docs/translation.md's extraction command, run with
    Babel in-process from the repository's root."""
    command, template = extraction_command(), tmp_path_factory.mktemp("extracted") / "messages.pot"
    command[command.index("-o") + 1] = str(template)
    with contextlib.chdir(ROOT):
        CommandLineInterface().run(command)
    with template.open("rb") as file:
        entries = [entry for entry in read_po(file) if entry.id]
    return {
        tuple(entry.id) if isinstance(entry.id, (list, tuple)) else entry.id: [f"{f}:{n}" for f, n in entry.locations]
        for entry in entries
    }


def po_entries(language: str) -> dict[str | tuple[str, ...], list[tuple[str, object]]]:
    """Every entry of a language's .po files: msgid -> [(file, its translation, or None when fuzzy)]."""
    entries: dict = {}
    for path in catalogue_files(language):
        with path.open("rb") as file:
            for entry in read_po(file):
                if entry.id:
                    key = tuple(entry.id) if isinstance(entry.id, (list, tuple)) else entry.id
                    text = tuple(entry.string) if isinstance(entry.string, (list, tuple)) else entry.string
                    entries.setdefault(key, []).append((path.name, None if entry.fuzzy else text))
    return entries


def test_the_extractor_finds_the_marked_sentences(marked):  # the catalogue test below relies on what it finds
    assert "Copy link" in marked and "Teacher: the class as one experiment" in marked  # pages, streamlit_app.py
    assert ("{n} head", "{n} heads") in marked and "- **{name}**: {what}" in marked  # ngettext, Message
    assert len(marked) > 300


def test_every_marked_sentence_has_a_zh_cn_translation_with_its_placeholders(marked):
    entries = po_entries("zh-CN")
    missing, wrong = [], []
    for message, where in marked.items():
        texts = [text for _file, text in entries.get(message, []) if text and any(text)]
        if not texts:
            missing.append(f"{where[0]}: {message!r}")
        wrong += [f"{where[0]}: {message!r} -> {text!r}" for text in texts if not keeps_placeholders(message, text)]
    assert not missing, f"{len(missing)} sentences have no zh-CN translation:\n" + "\n".join(missing)
    assert not wrong, "translations whose placeholders differ from their sentence's:\n" + "\n".join(wrong)


def test_a_sentence_in_two_catalogue_files_is_translated_the_same_in_both():
    differ = {m: e for m, e in po_entries("zh-CN").items() if len({text for _file, text in e}) > 1}
    assert not differ, "\n".join(f"{m!r}: {e}" for m, e in differ.items())


def test_the_placeholder_check_catches_a_lost_added_or_renamed_placeholder():
    assert keeps_placeholders("Step {step} of {steps:,}", "第 {step} 步，共 {steps:,} 步")
    assert not keeps_placeholders("Step {step} of {steps}", "第 {step} 步")  # lost
    assert not keeps_placeholders("Step {step}", "第 {step} 步，共 {steps} 步")  # added
    assert not keeps_placeholders("Step {step}", "第 {stap} 步")  # renamed
    assert not keeps_placeholders("Step {step}", "第 {step 步")  # does not parse
    assert keeps_placeholders(("{n} head", "{n} heads"), ("{n} 个头",))


def test_a_translation_that_lost_a_placeholder_is_left_out_and_the_english_shows(tmp_path, monkeypatch):
    (tmp_path / "zh_CN").mkdir()
    (tmp_path / "zh_CN" / "a.po").write_text(
        'msgid "Step {step}"\nmsgstr "步"\n\nmsgid "Load {name}"\nmsgstr "加载 {name}"\n', encoding="utf-8"
    )
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    catalogue = read_catalogue("zh-CN")
    assert catalogue == {"Load {name}": "加载 {name}"}
    assert Translator("zh-CN", catalogue).gettext("Step {step}", step=3) == "Step 3"


def marks_in(path: Path) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKS and node.args
    ]


def test_no_marked_sentence_is_built_before_translation():
    """An f-string or a sum of strings in _() or N_() has no fixed sentence for the catalogue: pass parameters."""
    built = [
        f"{path.relative_to(ROOT)}:{call.lineno}"
        for path in SOURCES
        for call in marks_in(path)
        if isinstance(call.args[0], (ast.JoinedStr, ast.BinOp))
        or (call.func.id == "N_" and not isinstance(call.args[0], ast.Constant))
    ]
    assert not built, "\n".join(built)


def test_no_sentence_is_marked_inside_an_f_string():
    """Babel does not read inside f-strings on Python 3.11: a sentence marked there never reaches the catalogue."""
    hidden = []
    for path in SOURCES:
        for f_string in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(f_string, ast.JoinedStr):
                calls = [n for n in ast.walk(f_string) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
                literal = [c for c in calls if c.func.id in MARKS and c.args and isinstance(c.args[0], ast.Constant)]
                hidden += [f"{path.relative_to(ROOT)}:{c.lineno}" for c in literal]
    assert not hidden, "\n".join(hidden)


def test_a_page_that_translates_never_uses_underscore_as_a_throwaway_name():
    """`_` is the translation function in pages: `checkpoint, _ = ...` would shadow it for the rest of the scope."""
    shadowed = []
    for path in APP:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        stores = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "_" and isinstance(n.ctx, ast.Store)]
        shadowed += [f"{path.relative_to(ROOT)}:{n.lineno}" for n in stores]
    assert not shadowed, "\n".join(shadowed)


# --------------------------------------------------------------------------------- one translator per language


def test_each_language_has_its_own_translator_and_english_needs_no_catalogue():
    english, chinese = translator("en"), translator("zh-CN")
    assert (english.language, chinese.language) == ("en", "zh-CN") and english is not chinese
    assert translator("zh-CN") is chinese  # read once per process, shared by the sessions of that language
    assert english.gettext("Copy link") == "Copy link" and chinese.gettext("Copy link") == "复制链接"
    assert translator("fr").language == "en"  # a language the lab has no interface in: English
    assert chinese.ngettext("{n} head", "{n} heads", 1) == "1 个头"
    assert (english.ngettext("{n} head", "{n} heads", 1), english.ngettext("{n} head", "{n} heads", 4)) == (
        "1 head",
        "4 heads",
    )


POLISH_PLURALS = "nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);"


def write_po(path: Path, plural_forms: str, entries: str = "") -> None:
    header = f'msgid ""\nmsgstr ""\n"Plural-Forms: {plural_forms}\\n"\n\n'
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + entries, encoding="utf-8")


def test_a_plural_sentence_takes_the_form_the_catalogues_plural_forms_choose(tmp_path, monkeypatch):
    forms = "".join(f'msgstr[{i}] "{{n}} {word}"\n' for i, word in enumerate(["głowa", "głowy", "głów"]))
    heads = f'msgid "{{n}} head"\nmsgid_plural "{{n}} heads"\n{forms}'
    write_po(tmp_path / "pl" / "app.po", POLISH_PLURALS, heads)
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    catalogue = read_catalogue("pl")
    polish = Translator("pl", catalogue, catalogue.plural)
    said = [polish.ngettext("{n} head", "{n} heads", n) for n in (1, 3, 5, 22, 25)]
    assert said == ["1 głowa", "3 głowy", "5 głów", "22 głowy", "25 głów"]
    assert polish.ngettext("{n} step", "{n} steps", 5) == "5 steps"  # not in the catalogue: English, by its rule


def test_a_catalogue_whose_files_differ_in_plural_forms_is_refused(tmp_path, monkeypatch):
    write_po(tmp_path / "pl" / "app.po", POLISH_PLURALS)
    write_po(tmp_path / "pl" / "lab.po", "nplurals=2; plural=(n != 1);")
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    with pytest.raises(ValueError, match="differ in their Plural-Forms"):
        read_catalogue("pl")


@pytest.mark.parametrize(
    "tag, language",
    [
        ("zh-CN", "zh-CN"),
        ("zh", "zh-CN"),
        ("zh_Hans_CN", "zh-CN"),
        ("en-GB", "en"),
        ("fr", None),
        ("", None),
        (None, None),
    ],
)
def test_a_language_tag_from_a_link_or_a_browser_names_an_interface_language(tag, language):
    assert language_for(tag) == language


def test_a_language_added_to_languages_is_read_from_links_and_browsers(monkeypatch):
    monkeypatch.setattr(i18n, "LANGUAGES", {**i18n.LANGUAGES, "pt-BR": "Português"})
    assert (language_for("pt"), language_for("pt-PT"), language_for("zh")) == ("pt-BR", "pt-BR", "zh-CN")


def test_languages_are_named_only_in_languages():
    """A language's tag or name written anywhere but `LANGUAGES` (transformer/i18n.py) is a place that a new
    language would miss; docstrings may name them."""
    names = {*LANGUAGES, *(tag.split("-")[0] for tag in LANGUAGES)}
    named = []
    for path in SOURCES:
        if path == Path(i18n.__file__):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        named += [
            f"{path.relative_to(ROOT)}:{n.lineno}: {n.value!r}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
            if n.value in names or any(name in n.value for name in LANGUAGES.values())
        ]
    assert not named, "\n".join(named)


def installs_a_translation(source: str) -> bool:
    """Whether `source` puts a translation in builtins for the whole process: `gettext.install`, a translations
    object's `.install()`, or `_` set on builtins."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "gettext" and "install" in {a.name for a in node.names}:
            return True
        if isinstance(node, ast.Attribute) and node.attr == "install":
            if getattr(node.value, "id", None) == "gettext" or isinstance(node.value, ast.Call):
                return True
        if isinstance(node, ast.Attribute) and node.attr == "_" and getattr(node.value, "id", None) == "builtins":
            return True
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and node.args:
            if getattr(node.args[0], "id", None) == "builtins":
                return True
    return False


@pytest.mark.parametrize(
    "source",
    [
        "import gettext\ngettext.install('lab')",
        "from gettext import install\ninstall('lab')",
        "import gettext\ngettext.translation('lab', 'locale').install()",
        "from babel.support import Translations\nTranslations.load('locale').install()",
        "import builtins\nbuiltins._ = str",
        "import builtins\nsetattr(builtins, '_', str)",
    ],
)
def test_the_check_below_finds_each_way_of_installing_a_translation(source):
    assert installs_a_translation(source)


def test_nothing_installs_a_process_wide_translation():
    """`gettext.install` puts one `_` in builtins for every session of the server: every student would see the
    language of whoever set it last. Each session has its own translator instead (ui/language.py)."""
    files = [*SOURCES, *ROOT.glob("tests/**/*.py"), *ROOT.glob("benchmarks/*.py")]
    found = [str(p.relative_to(ROOT)) for p in files if installs_a_translation(p.read_text(encoding="utf-8"))]
    assert not found, found


def test_the_latin_terms_are_listed_once_each():
    terms = latin_terms()
    assert {"d_model", "Softmax", "Q/K/V", "PAD", "BOS", "EOS"} <= set(terms) and len(terms) == len(set(terms))


def test_a_message_made_of_a_message_is_that_message():
    message = Message("seed {seed}", seed=3)
    assert Message(message) is message
    assert Translator("zh-CN", {"seed {seed}": "种子 {seed}"})(Message(message)) == "种子 3"


def test_the_glossary_names_every_latin_term():
    glossary = (ROOT / "docs" / "zh-CN" / "glossary.md").read_text(encoding="utf-8")
    assert not [term for term in latin_terms() if term not in glossary]


# ------------------------------------------------------------------------------- the zh-CN glossary's choices

GLOSSARY = ROOT / "docs" / "zh-CN" / "glossary.md"


def rejected_terms() -> list[str]:
    """The renderings the glossary rejects: the first cell, in backticks, of each row of its 不用的译法 table."""
    section = GLOSSARY.read_text(encoding="utf-8").split("\n## 不用的译法\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


def using_rejected_terms(entries: dict, rejected: list[str]) -> list[str]:
    """`file: msgid -> msgstr` for every translation in `entries` (as po_entries gives) holding a rejected term."""
    return [
        f"{file}: {message!r} -> {text!r} uses {term!r}"
        for message, found in entries.items()
        for file, text in found
        for term in rejected
        if text and term in "".join(text)
    ]


def italics_in(text: str) -> list[str]:
    """The spans of `text` that Markdown sets in italics (*x* or _x_), code spans left out."""
    prose = re.sub(r"`[^`]*`", "", text)
    return re.findall(
        r"(?<![*\\\w])\*(?![\s*])[^*\n]+?(?<![\s*\\])\*(?![*\w])|(?<![\\\w])_(?!\s)[^_\n]+?(?<!\s)_(?!\w)", prose
    )


def test_the_glossary_rejects_the_data_structure_and_the_drifting_terms():
    assert {"堆栈", "栈", "预算", "重跑", "对齐度", "假设"} <= set(rejected_terms())


def test_the_rejected_term_check_finds_a_rejected_term_in_a_translation():
    entries = {"Layers per stack": [("app.po", "每个堆栈的层数")], "Time budget (s)": [("app.po", "时间上限（秒）")]}
    assert using_rejected_terms(entries, ["堆栈", "预算"]) == [
        "app.po: 'Layers per stack' -> '每个堆栈的层数' uses '堆栈'"
    ]


def test_no_zh_cn_translation_uses_a_term_the_glossary_rejects():
    found = using_rejected_terms(po_entries("zh-CN"), rejected_terms())
    assert not found, "see docs/zh-CN/glossary.md, 不用的译法:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text, spans",
    [
        ("按 *开始训练*", ["*开始训练*"]),
        ("把 _任务_ 设为 sort", ["_任务_"]),
        ("**当前模型：** 内置模型 reverse", []),
        ("d_model × √d_k，`mask_padding=False`，`*args*`", []),
        ("QKᵀ * 2 * 3", []),
    ],
)
def test_the_italics_finder_finds_markdown_emphasis_and_nothing_else(text, spans):
    assert italics_in(text) == spans


def test_no_zh_cn_translation_sets_chinese_in_italics():
    """Chinese has no italics (a browser slants the glyphs): UI names are quoted “…” or bold."""
    found = [
        f"{file}: {message!r} -> {text!r}"
        for message, entries in po_entries("zh-CN").items()
        for file, text in entries
        if text and any(italics_in(form) for form in ([text] if isinstance(text, str) else text))
    ]
    assert not found, "\n".join(found)


CJK = "\u2e80-\u9fff\u3000-\u303f\uff00-\uffef“”"


def prose_lines(markdown: str) -> list[str]:
    """The lines of `markdown` outside fenced code blocks."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def cjk_line_breaks(markdown: str) -> list[str]:
    """Soft line breaks between two Chinese characters: a browser draws each as a space."""
    lines = prose_lines(markdown)
    return [
        f"{a.strip()[-8:]}⏎{b.strip()[:8]}"
        for a, b in zip(lines, lines[1:])
        if re.search(f"[{CJK}]$", a) and re.match(f"\\s*[{CJK}]", b)
    ]


def test_the_line_break_finder_finds_a_break_between_chinese_characters_only():
    assert cjk_line_breaks("每一步的\n交叉注意力\n\n段落\n- 列表\n```\n代码\n代码\n```") == ["每一步的⏎交叉注意力"]


@pytest.mark.parametrize("doc", sorted((ROOT / "docs" / "zh-CN").glob("*.md")), ids=lambda p: p.name)
def test_the_chinese_docs_have_no_italics_and_no_line_break_inside_a_chinese_sentence(doc):
    text = doc.read_text(encoding="utf-8")
    italics = [span for line in prose_lines(text) for span in italics_in(line)]
    assert not italics and not cjk_line_breaks(text), (italics, cjk_line_breaks(text))


def test_no_zh_cn_bold_ends_on_full_width_punctuation():
    """Markdown closes `**` after punctuation only before a space or more punctuation, so "**标题。**正文" would show
    its asterisks, and "**标题。** 正文" puts a Latin space after "。": the punctuation goes after the bold."""
    found = [
        text
        for translations in po_entries("zh-CN").values()
        for _, translation in translations
        for text in ([translation] if isinstance(translation, str) else translation or ())
        if any(bold.endswith(tuple("。，、：；！？")) for bold in text.split("**")[1::2])
    ]
    assert not found, "\n".join(found)


def test_chinese_drops_a_template_s_space_before_the_lab_s_own_words_in_chinese_and_keeps_every_other():
    zh = i18n.Translator("zh-CN", {"all {n:,}": "全部 {n:,}", "on {sample} sequences": "在 {sample} 个序列上"})
    assert zh("on {sample} sequences", sample=48) == "在 48 个序列上"  # a number keeps its spaces
    assert zh("on {sample} sequences", sample=Message("all {n:,}", n=1000)) == "在全部 1,000 个序列上"
    assert zh("on {sample} sequences", sample="交换 两个.csv") == "在 交换 两个.csv 个序列上"  # a file's name: spaced
    english = i18n.Translator("en", {})
    assert english("on {sample} sequences", sample="全部") == "on 全部 sequences"


def test_a_chinese_refusal_is_a_sentence_of_its_own_not_a_colon_after_a_colon():
    zh = translator("zh-CN")
    reason = Message(
        N_(
            "the shortest input (min_len {low}) is longer than the longest (max_len {high}): lower the first or "
            "raise the second"
        ),
        low=12,
        high=4,
    )
    said = zh("These settings don't work: {reason}", reason=reason)
    assert said == "这些设置无法使用。最短输入（min_len 12）比最长输入（max_len 4）还长：请调低前者或调高后者。"
    assert zh("Could not load {name}: {reason}", name="x.pt", reason=reason).endswith("。")
