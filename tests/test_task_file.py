"""Task files and tables of pairs: what loads, and the one-line reason for what does not, hostile files included.
Every bound holds before what it bounds is read."""

import codecs
import csv
import os
import re

import pytest

import transformer.task_file as task_file
from transformer.i18n import translator
from transformer.limits import MAX_TASK_FILE_BYTES, MAX_TASK_LINE_CHARS, MAX_TASK_PAIRS
from transformer.task_file import read_task_file, read_task_path, read_task_table

PAIRS = [
    ("1 2 + 3 4", "4 6"),
    ("5 + 5", "1 0"),
    ("9 9 + 1", "1 0 0"),
    ("2 + 2", "4"),
    ("7 + 1 1", "1 8"),
    ("3 + 4", "7"),
]


def csv_bytes(pairs=PAIRS, separator=",", header=True) -> bytes:
    lines = ([f"source{separator}target"] if header else []) + [f"{s}{separator}{t}" for s, t in pairs]
    return "\n".join(lines).encode()


def every_pair(task) -> list[tuple[str, str]]:
    return sorted((*task.train, *task.held_out))


@pytest.mark.parametrize(
    "data",
    [
        csv_bytes(),
        csv_bytes(separator="\t"),
        csv_bytes(header=False),
        b"\xef\xbb\xbf" + csv_bytes(),  # a byte-order mark, as spreadsheets write
        csv_bytes().replace(b"\n", b"\r\n") + b"\r\n\r\n",  # Windows line ends, blank lines at the end
        b"\n\n" + csv_bytes(header=False),  # blank lines first
        csv_bytes(separator=",").replace(b"1 2 + 3 4", b'"1 2 + 3 4"'),  # a quoted cell
        csv_bytes(separator="\t").replace(b"4 6", b"  4   6 "),  # extra spaces
        "源,目标\n".encode() + csv_bytes(header=False),  # the header as the Chinese page heads the table
        b"Source , TARGET\n" + csv_bytes(header=False),
    ],
)
def test_a_task_file_loads_as_csv_or_tsv(data):
    task = read_task_file(data, "sums.csv")
    assert task.name == "sums.csv" and every_pair(task) == sorted(PAIRS)
    assert set(task.symbols) == {"1", "2", "+", "3", "4", "6", "5", "0", "9", "7", "8"}


def test_only_the_first_line_can_be_a_header_in_the_table_s_words_or_as_the_only_pair_sharing_no_symbol():
    task = read_task_file("源,目标\n".encode() + csv_bytes(header=False) + "\n源,目标".encode(), "sums.csv")
    assert ("源", "目 标") in every_pair(task) and task.header is None  # a pair further down, a symbol a character
    task = read_task_file("原文,译文\n".encode() + csv_bytes(header=False), "sums.csv")
    assert every_pair(task) == sorted(PAIRS) and task.header == ("原 文", "译 文")  # a header in words of its own
    assert "原" not in task.symbols and task == read_task_file(csv_bytes(), "sums.csv")
    words = [(f"w{i}", f"v{i}") for i in range(20)]  # word -> word: every pair shares no symbol with another
    task = read_task_file(csv_bytes([("question", "answer"), *words], header=False), "words.csv")
    assert ("question", "answer") in every_pair(task) and task.header is None
    task = read_task_file(csv_bytes([("1 2 + 3 4", "4 6"), ("a", "b"), *PAIRS[1:]], header=False), "sums.csv")
    assert task.header is None and ("a", "b") in every_pair(task)  # the first line shares symbols; another not
    typed = read_task_table([{"source": s, "target": t} for s, t in [("x", "y"), *PAIRS]], "typed pairs")
    assert typed.header is None and ("x", "y") in every_pair(typed)  # a table's columns have their names


@pytest.mark.parametrize("first", ["输入,输出", "input,output", "Input , Output", "源,目标"])
def test_a_header_in_the_lab_s_own_column_words_is_skipped_beside_pairs_of_symbols_no_other_pair_uses(first):
    """A teacher's file began "输入,输出" and held "你 好 → 好 你" and "中 文 字 → 字 文 中": three pairs sharing no
    symbol with another, so the header was no lone island, and every student's model learned to answer "输 出"."""
    pairs = [*PAIRS, ("你 好", "好 你"), ("中 文 字", "字 文 中")]
    task = read_task_file(f"{first}\n".encode() + csv_bytes(pairs, header=False), "reverse_zh.csv")
    assert every_pair(task) == sorted(pairs) and not {"输", "入", "出", "源", "目"} & set(task.symbols)


def test_cells_starting_with_an_equals_sign_are_literal_symbols():
    pairs = [("=1+1", "2"), ("=SUM(A1:A2)", "=cmd|"), ("@x", "-y"), ("+1", "1"), ("a", "b")]
    task = read_task_file(csv_bytes(pairs), "formulas.csv")
    assert every_pair(task) == sorted(pairs) and "=SUM(A1:A2)" in task.symbols


def test_a_target_symbol_no_source_has_duplicate_pairs_and_commas_in_tsv_load():
    pairs = [("a b", "x"), ("b a", "y"), ("a", "z"), ("b", "w"), ("a a", "x , y")]
    task = read_task_file(csv_bytes([*pairs, pairs[0], pairs[1]], separator="\t"), "tsv")
    assert every_pair(task) == sorted(pairs) and {"x", "y", "z", "w", ","} <= set(task.symbols)


REVERSED = [(a + b + c, c + b + a) for a in "我你他" for b in "爱看" for c in "猫狗"]  # Chinese, as it is written


@pytest.mark.parametrize("separator", [",", "\t", "，"])
def test_chinese_written_without_spaces_holds_one_symbol_per_character(separator):
    task = read_task_file("源,目标\n".replace(",", separator).encode() + csv_bytes(REVERSED, separator, False), "倒序")
    spaced = [(" ".join(s), " ".join(t)) for s, t in REVERSED]
    assert every_pair(task) == sorted(spaced) and set(task.symbols) == set("我你他爱看猫狗")
    assert (task.min_len, task.max_len) == (3, 3)


def test_spaces_keep_chinese_words_and_a_mixed_or_one_character_sequence_stays_whole():
    pairs = [("我们 爱 你", "你 爱 我们"), ("NLP很好", "好"), ("猫", "狗"), ("ｗｏｒｄ", "ｗ"), ("你们 好", "好")]
    task = read_task_file(csv_bytes(pairs), "words")
    assert "我们" in task.symbols and "NLP很好" in task.symbols and "你们" in task.symbols
    assert ("ｗ ｏ ｒ ｄ", "ｗ") in every_pair(task)  # full-width letters are drawn wide, as Chinese is


def test_a_table_of_chinese_pairs_reads_as_the_file_does():
    rows = [{"source": s, "target": t} for s, t in REVERSED]
    assert read_task_table(rows, "倒序") == read_task_file(csv_bytes(REVERSED, header=False), "倒序")


@pytest.mark.parametrize(
    "data, message",
    [
        ("源,目标\n我爱你，你爱我".encode(), "line 2 is not two cells: .* by a comma, as the first line does, not by"),
        ("源,目标\n我爱你,你爱我".encode("gbk"), "not UTF-8 text \\(byte 6\\): save it as UTF-8 \\(in Excel, as"),
        ("源，目标\n我爱你".encode(), "line 2 is not two cells: .* separated by a full-width comma"),
    ],
)
def test_a_chinese_spreadsheet_s_file_is_told_how_to_fix_it(data, message):
    with pytest.raises(ValueError, match=message) as error:
        read_task_file(data, "excel.csv")
    said = translator("zh-CN").gettext(error.value)
    assert not re.search("[A-Za-z]{3}", said.replace("UTF-8", "").replace("Excel", "").replace("CSV", "")), said


@pytest.mark.parametrize(
    "data, message",
    [
        (csv_bytes([*PAIRS, ("2 + 2", "5")]), "line 8: the source 2 \\+ 2 has the target 5 here but 4 at line 5"),
        (csv_bytes().replace(b"5 + 5,1 0", b"5 + 5\t1 0"), "line 3 holds a tab, but the first line separates with"),
        (csv_bytes(separator="\t").replace(b"5 + 5\t1 0", b"5 + 5,1 0"), "line 3 is not two cells: .*by a tab"),
        (csv_bytes(separator=";"), "line 1 is not two cells: .* separated by a comma"),
        (csv_bytes() + b"\n1,2,3", "line 8 is not two cells"),
        (csv_bytes() + "\n1\u20282,3\n1,2,3".encode(), "line 9 is not two cells"),  # U+2028 ends no line
        (csv_bytes() + b'\n"1 2,3', 'line 8: a quoted cell is never closed: a cell that starts with " must end'),
        (csv_bytes() + b'\n"1 2"x,3', 'line 8: a closing " is followed by more text'),
        (csv_bytes() + b"\n1\x002,3", "line 8: symbol .* control characters"),
        (b"\xff\xfe" + "1,2\n".encode("utf-16-le") + b"\x00\xd8", "begins as UTF-16 text but is not \\(byte 11\\)"),
        (b"\xfe\xff\x00a\x00", "begins as UTF-16 text but is not \\(byte 5\\)"),  # an odd byte at the end
        ("1,2\n".encode("utf-16-le"), "UTF-16 text without its byte-order mark"),
        ("1,2\n".encode("utf-16-be"), "UTF-16 text without its byte-order mark"),
        (b"\xc3\x28" + csv_bytes(), "not UTF-8 text \\(byte 1\\)"),
        (csv_bytes(PAIRS[:3]), "at least 5 different pairs"),
        (b"", "at least 5 different pairs"),
        (csv_bytes() + b"\n1 2 ,", "line 8: the target is empty"),
    ],
)
def test_a_bad_file_gets_a_one_line_reason(data, message):
    with pytest.raises(ValueError, match=message) as error:
        read_task_file(data, "bad.csv")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_file_in_utf_16_with_its_byte_order_mark_reads_as_in_utf_8(encoding):
    text = csv_bytes(separator="\t").decode() + "\n张 三\t三 张\n"
    data = (codecs.BOM_UTF16_BE if encoding == "utf-16-be" else b"") + text.encode(encoding)  # utf-16 writes its own
    assert data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
    assert read_task_file(data, "excel.txt") == read_task_file(text.encode(), "excel.txt")


@pytest.mark.parametrize("line", [b'"1 2,3', b'"1 2"x,3'])
def test_why_the_csv_module_cannot_read_a_line_is_said_in_chinese(line):
    with pytest.raises(ValueError) as error:
        read_task_file(csv_bytes() + b"\n" + line, "bad.csv")
    said = translator("zh-CN").gettext(error.value)
    assert said.startswith("第 8 行：") and not re.search("[A-Za-z]{2}", said), said  # no English word of csv's


@pytest.mark.parametrize(
    "data, said",
    [
        (b"a,b,c\n", "第 1 行不是两个单元格"),
        (b"a,b\nc\td,e\n", "第 2 行含有制表符"),
        (b"a," + b"b" * MAX_TASK_LINE_CHARS + b"\n", "第 1 行有 "),
    ],
)
def test_a_line_s_refusal_reads_as_one_chinese_phrase(data, said):
    with pytest.raises(ValueError) as error:
        read_task_file(data, "bad.csv")
    assert translator("zh-CN").gettext(error.value).startswith(said)  # no space inside a Chinese phrase


@pytest.fixture
def spy_reading(monkeypatch):
    """The lines the csv module was given to read."""
    given = []
    real = csv.reader

    def reader(lines, **options):
        return real((given.append(line) or line for line in lines), **options)

    monkeypatch.setattr(task_file.csv, "reader", reader)
    return given


def test_a_5_mb_file_is_refused_by_its_size_before_it_is_decoded(spy_reading):
    big = csv_bytes() + b"\n" + b"1 2,3\n" * (5 * 2**20 // 6)
    assert len(big) > 5 * 2**20
    with pytest.raises(ValueError, match="more than 1 MB"):
        read_task_file(big, "big.csv")
    assert spy_reading == []


def test_a_file_the_app_s_uploader_refuses_as_over_1_mb_the_lab_refuses_too(spy_reading):
    """Streamlit's uploader counts a megabyte as 10^6 bytes on Linux and macOS: a file of 10^6 + 1 bytes is over
    "1.0MB" there, and over the lab's 1 MB on the command line and in a class's file alike."""
    just_over = csv_bytes() + b"\n" + b"1 2,3\n" * ((10**6 - len(csv_bytes())) // 6 + 1)
    assert 10**6 < len(just_over) < 2**20
    with pytest.raises(ValueError, match=rf"has {len(just_over):,} bytes, more than 1 MB \(1,000,000 bytes\)"):
        read_task_file(just_over, "just_over.csv")
    assert spy_reading == []


def test_a_million_rows_are_refused_by_the_size_and_more_pairs_than_allowed_at_the_first_row_past_them(spy_reading):
    million = b"1,2\n" * 10**6
    with pytest.raises(ValueError, match="more than 1 MB"):
        read_task_file(million, "million.csv")
    assert spy_reading == []
    rows = b"source,target\n" + b"".join(f"{i % 50} {i // 50 % 50},x\n".encode() for i in range(MAX_TASK_PAIRS + 5))
    assert len(rows) <= MAX_TASK_FILE_BYTES
    with pytest.raises(ValueError, match=f"line {MAX_TASK_PAIRS + 2}: more than {MAX_TASK_PAIRS:,} pairs"):
        read_task_file(rows, "many.csv")
    assert len(spy_reading) == MAX_TASK_PAIRS + 1  # the line past the bound never reached the csv module


def test_a_10000_character_line_is_refused_before_the_csv_module_reads_it(spy_reading):
    long_line = ("a " * 5000).encode() + b",b"
    with pytest.raises(ValueError, match=f"line 8 has 10,002 characters; a pair has at most {MAX_TASK_LINE_CHARS:,}"):
        read_task_file(csv_bytes() + b"\n" + long_line, "long.csv")
    assert len(spy_reading) == 7 and all(len(line) < 100 for line in spy_reading)


def test_a_path_must_be_an_ordinary_file_within_the_size_read_no_further(tmp_path):
    path = tmp_path / "sums.csv"
    path.write_bytes(csv_bytes())
    assert every_pair(read_task_path(path)) == sorted(PAIRS) and read_task_path(path).name == "sums.csv"
    with pytest.raises(ValueError, match="not an ordinary file"):
        read_task_path(tmp_path)
    sparse = tmp_path / "sparse.csv"
    with open(sparse, "wb") as f:
        f.truncate(10 * 2**30)  # 10 GB that take no disk: refused by their size, unread
    with pytest.raises(ValueError, match="more than 1 MB"):
        read_task_path(sparse)
    with pytest.raises(FileNotFoundError):
        read_task_path(tmp_path / "missing.csv")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.csv")
        with pytest.raises(ValueError, match="not an ordinary file"):
            read_task_path(tmp_path / "pipe.csv")


def test_a_table_of_pairs_loads_and_names_its_rows_in_reasons():
    rows = [{"source": s, "target": t} for s, t in PAIRS] + [{"source": None, "target": ""}, {"source": float("nan")}]
    assert every_pair(read_task_table(rows, "typed")) == sorted(PAIRS)
    with pytest.raises(ValueError, match="row 7: the target is empty"):
        read_task_table([*rows[:6], {"source": "1 + 1", "target": None}], "typed")
