"""The docs cite only what exists: every file a Markdown page names in code (`pages/train.py`, a test file and its
test, `kv_cache.py` for a module of the package, a library's own file) and every relative link it makes."""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted(p for p in ROOT.rglob("*.md") if not {".git", "artifacts", ".pytest_cache"} & set(p.parts))
FILES = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py") if ".git" not in p.parts]
CODE_SPAN = re.compile(r"`([^`\n]+)`")
PY_PATH = re.compile(r"([\w./-]+\.py)(?:::(\w+))?")  # a file, and a test in it
LINK = re.compile(r"\]\(([^)\s]+)\)")


def cited_file(word: str, doc: Path) -> Path | None:
    """The repository file a doc means by `word`: a path from the root or the doc's folder; a test file from tests/
    (docs/security.md's tables cite `pages/test_train.py`); a module by its path inside a package (`kv_cache.py`,
    `classroom/board.py`)."""
    for place in (ROOT / word, doc.parent / word, ROOT / "tests" / word):
        if place.is_file():
            return place
    if Path(word).name.startswith("test_"):
        return None  # a test file is cited from the root or from tests/, never by a shorter tail
    tails = [f for f in FILES if f.endswith("/" + word)]
    return ROOT / tails[0] if tails else library_file(word)


def library_file(word: str) -> Path | None:
    """A file of an installed library, cited from its package (`streamlit/runtime/scriptrunner/script_runner.py`)."""
    package, _, rest = word.partition("/")
    spec = importlib.util.find_spec(package) if rest and package.isidentifier() else None
    place = Path(spec.origin).parent / rest if spec and spec.origin else None
    return place if place and place.is_file() else None


def citations(doc: Path) -> list[tuple[int, str, str | None]]:
    """Each (line number, file, test name or None) a doc cites in code; a `::test` alone in a line's cell names a
    test of the last file cited before it on that line."""
    found = []
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        last = None
        for span in CODE_SPAN.findall(line):
            for word in span.split():
                if word.startswith("::") and last:
                    found.append((number, last, word[2:].split("[")[0]))
                    continue
                match = PY_PATH.fullmatch(word.split("[")[0])
                if match:
                    last = match.group(1)
                    found.append((number, last, match.group(2)))
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_file_and_test_a_doc_cites_exists(doc: Path) -> None:
    missing = []
    for number, word, test in citations(doc):
        if word.startswith(("http", "//")) or "NAME" in word:
            continue
        path = cited_file(word, doc)
        if path is None:
            missing.append(f"line {number}: {word}")
        elif test and not re.search(rf"^(async )?def {test}\(", path.read_text(encoding="utf-8"), re.M):
            missing.append(f"line {number}: {word}::{test}")
    assert not missing, f"{doc.name} cites what does not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_of_a_doc_leads_to_a_file(doc: Path) -> None:
    text = CODE_SPAN.sub("", doc.read_text(encoding="utf-8"))  # a link shown as code is an example, not a link
    targets = [t.split("#")[0] for t in LINK.findall(text) if not t.startswith(("http", "#", "mailto:"))]
    assert [t for t in targets if t and not (doc.parent / t).exists()] == []


def test_a_stale_citation_is_caught(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("`pages/train.py`, `test_training.py::test_no_such_test`, `gone/away.py` [x](missing.md)\n")
    assert [(w, t) for _, w, t in citations(doc)] == [
        ("pages/train.py", None),
        ("test_training.py", "test_no_such_test"),
        ("gone/away.py", None),
    ]
    assert cited_file("pages/train.py", doc) == ROOT / "pages" / "train.py"
    assert cited_file("gone/away.py", doc) is None
    assert cited_file("test_no_such_file.py", doc) is None
    assert cited_file("streamlit/runtime/scriptrunner/script_runner.py", doc).is_file()
