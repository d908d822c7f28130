"""Reading a task from examples out of what a person gives: a task file (its bytes, or its path on the command line)
or a table of pairs typed on the Train page.

A task file is CSV or TSV, UTF-8 (a byte-order mark is skipped), one `source,target` pair a line, each sequence's
symbols separated by spaces:

    source,target
    1 2 + 3 4,4 6
    big cat sees dog,miko gra doro selu

The first line says the separator: a tab makes it TSV, else it is CSV (commas, and quotes as the csv module reads
them); a first line with a full-width comma (，, as a Chinese keyboard types it) and no comma separates with that.
Chinese written without spaces holds one symbol per character (`pairs.pairs_from_rows`). A header line
`source,target` or `input,output` (or those words in another language of the lab: "源,目标", "输入,输出") is
skipped, and so are blank lines; a first line in other words ("原文,译文") is left out where it is the only pair
that shares no symbol with another (`pairs.pairs_from_rows`). Every bound is checked before what it bounds is read:
the file's size first, then each line's length and the number of lines as they come, then the pairs
(`pairs.pairs_from_rows`). Anything else gets a ValueError with a one-line reason naming the line.
"""

import codecs
import csv
import io
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from .i18n import LANGUAGES, N_, Message, translator
from .limits import MAX_TASK_FILE_BYTES, MAX_TASK_FILE_MB, MAX_TASK_LINE_CHARS, MAX_TASK_PAIRS
from .pairs import TaskPairs, pairs_from_rows

HEADER = (N_("source"), N_("target"))  # a table's columns, and a task file's header line in any of LANGUAGES
HEADERS = (HEADER, (N_("input"), N_("output")))  # header lines a task file may begin with, in any of LANGUAGES
TOO_LARGE = N_("the task file has {size:,} bytes, more than {mb} MB ({most:,} bytes)")
NOT_UTF8 = N_(
    "the task file is not UTF-8 text (byte {at}): save it as UTF-8 (in Excel, as the type "
    "“CSV UTF-8 (Comma delimited)”)"
)
FULL_WIDTH_COMMA = "，"  # a Chinese keyboard's comma, which separates the cells of a file whose first line has no ","


def too_large(size: int) -> Message:
    """A task file of `size` bytes is over the bound: both figures in bytes, so that a file the uploader shows as
    "1.0MB" reads as what it is."""
    return Message(TOO_LARGE, size=size, mb=MAX_TASK_FILE_MB, most=MAX_TASK_FILE_BYTES)


def read_task_path(path: str | os.PathLike) -> TaskPairs:
    """The task in the file at `path`; ValueError, before anything is read, unless it is an ordinary file of at most
    MAX_TASK_FILE_BYTES."""
    if not stat.S_ISREG(os.stat(path).st_mode):  # a folder, a device or a pipe that could block or never end
        raise ValueError(Message(N_("{path} is not an ordinary file"), path=str(path)[:80]))
    with open(path, "rb") as f:
        if (size := os.fstat(f.fileno()).st_size) > MAX_TASK_FILE_BYTES:
            raise ValueError(too_large(size))
        return read_task_file(f.read(MAX_TASK_FILE_BYTES + 1), Path(path).name)


def read_task_file(data: bytes, name: str) -> TaskPairs:
    """The task in a task file's bytes, called `name` (e.g. the file's name)."""
    if len(data) > MAX_TASK_FILE_BYTES:
        raise ValueError(too_large(len(data)))
    utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))  # Excel's "Unicode Text" saves UTF-16
    if not utf16 and 0 in data[:2]:  # "1" in UTF-16 is 31 00 or 00 31: no text file of this lab's begins so
        raise ValueError(N_("the task file looks like UTF-16 text without its byte-order mark: save it as UTF-8"))
    try:
        text = data.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError as err:
        unreadable = N_("the task file begins as UTF-16 text but is not (byte {at})") if utf16 else NOT_UTF8
        raise ValueError(Message(unreadable, at=err.start + 1)) from None
    lines = io.StringIO(text, newline="").readlines()  # lines end at \n, \r or \r\n only, as the csv module's do
    first = next((line for line in lines if line.strip()), "")
    tsv = "\t" in first
    delimiter = "\t" if tsv else FULL_WIDTH_COMMA if FULL_WIDTH_COMMA in first and "," not in first else ","
    reader = csv.reader(_bounded(lines, tsv), delimiter=delimiter, strict=True)
    named = bool(lines) and _column_names([cell.strip().strip('"') for cell in lines[0].split(delimiter)])
    return pairs_from_rows(_pairs(reader, delimiter), name, first_may_be_header=not named)


def _bounded(lines: list[str], tsv: bool) -> Iterator[str]:
    """`lines` one by one, each checked before the csv module reads it: its length, the count so far, and in a CSV
    file no tab (tabs and commas mixed)."""
    for number, line in enumerate(lines, 1):
        where = Message(N_("line {n}"), n=number)
        if number > MAX_TASK_PAIRS + 1:  # the pairs and a header
            raise ValueError(Message(N_("{where}: more than {most} pairs"), where=where, most=f"{MAX_TASK_PAIRS:,}"))
        if len(line) > MAX_TASK_LINE_CHARS:
            template = N_("{where} has {n} characters; a pair has at most {most}")
            raise ValueError(Message(template, where=where, n=f"{len(line):,}", most=f"{MAX_TASK_LINE_CHARS:,}"))
        if not tsv and "\t" in line:
            template = N_("{where} holds a tab, but the first line separates with a comma: use one separator")
            raise ValueError(Message(template, where=where))
        yield line


SEPARATORS = {"\t": N_("a tab"), ",": N_("a comma"), FULL_WIDTH_COMMA: N_("a full-width comma (，)")}


def _pairs(reader: Iterable[list[str]], delimiter: str) -> Iterator[tuple[str, str, str]]:
    """(where, source, target) of each pair the csv `reader`, separating cells with `delimiter`, reads; blank lines
    and a header are skipped."""
    try:
        for cells in reader:
            where = Message(N_("line {n}"), n=reader.line_num)
            if not cells or (len(cells) == 1 and not cells[0].strip()):
                continue
            if len(cells) != 2:
                template = N_("{where} is not two cells: write the source and the target separated by {separator}")
                if delimiter != FULL_WIDTH_COMMA and any(FULL_WIDTH_COMMA in cell for cell in cells):
                    template = N_(
                        "{where} is not two cells: write the source and the target separated by {separator}, as "
                        "the first line does, not by a full-width comma (，)"
                    )
                raise ValueError(Message(template, where=where, separator=Message(SEPARATORS[delimiter])))
            if reader.line_num == 1 and _column_names(cells):
                continue
            yield where, cells[0], cells[1]
    except csv.Error as err:
        raise ValueError(Message(N_("line {n}: {reason}"), n=reader.line_num, reason=_csv_reason(err))) from None


def _column_names(cells: list[str]) -> bool:
    """Whether a line's `cells` are one of HEADERS in one of LANGUAGES ("source,target", "输入,输出")."""
    named = {tuple(translator(code).gettext(word).lower() for word in words) for words in HEADERS for code in LANGUAGES}
    return tuple(c.strip().lower() for c in cells) in named


def _csv_reason(err: csv.Error) -> Message:
    """Why the csv module could not read a line, in the lab's words (its own are English only)."""
    said = str(err)
    if said.startswith("unexpected end of data"):
        return Message(N_('a quoted cell is never closed: a cell that starts with " must end with "'))
    if "expected after '\"'" in said:
        return Message(N_('a closing " is followed by more text: write a " inside a quoted cell as ""'))
    return Message(N_("the quotes or line breaks of this line cannot be read"))


def read_task_table(rows: Iterable[Mapping[str, object]], name: str) -> TaskPairs:
    """The task in a table's rows, each {"source": ..., "target": ...}; a cell that holds no text counts as empty,
    and rows with both cells empty are skipped."""

    def pairs() -> Iterator[tuple[str, str, str]]:
        for number, row in enumerate(rows, 1):
            source, target = (row.get(key) if isinstance(row.get(key), str) else "" for key in HEADER)
            if source.strip() or target.strip():
                yield Message(N_("row {n}"), n=number), source, target

    return pairs_from_rows(pairs(), name)
