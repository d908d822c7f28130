"""The package's public face, its choice of device, and what the tests and benchmarks around it may import: a test
module shares code with others only through tests/helpers and conftest fixtures, and a benchmark takes nothing from
tests/ (what it shares with the browser tests, the driver of a served lab, is in harness/)."""

import ast
import re
import symtable
from pathlib import Path

import pytest
import torch

import transformer
from transformer import checkpoint, decoding, model, vocab
from transformer.device import pick_device

ROOT = Path(__file__).resolve().parent.parent


def test_the_public_names_import_from_the_package():
    from transformer import ModelConfig, Transformer, Vocab, greedy_decode, load_checkpoint, save_checkpoint

    assert (ModelConfig, Transformer) == (model.ModelConfig, model.Transformer)
    assert (Vocab, greedy_decode) == (vocab.Vocab, decoding.greedy_decode)
    assert (load_checkpoint, save_checkpoint) == (checkpoint.load_checkpoint, checkpoint.save_checkpoint)
    assert all(hasattr(transformer, name) for name in transformer.__all__)


@pytest.mark.parametrize("cuda, mps, expected", [(True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")])
def test_auto_picks_cuda_then_mps_then_cpu(monkeypatch, cuda, mps, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert pick_device() == torch.device(expected)
    assert pick_device("cpu") == torch.device("cpu")  # a named device overrides the choice


@pytest.mark.parametrize(
    "name, message",
    [
        ("banana", "unknown device 'banana'"),
        ("xpu", "unknown device 'xpu'"),  # devices PyTorch names but the lab never computes on
        ("hpu:0", "unknown device 'hpu:0'"),
        ("cuda", "no CUDA GPU"),
        ("mps", "MPS was asked for"),
    ],
)
def test_an_unknown_or_missing_device_is_a_clear_error(monkeypatch, name, message):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(ValueError, match=message):
        pick_device(name)


def imported(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) for each import in a Python file, anywhere in it; relative imports resolved from `root`, and
    `from package import name` read as the module package.name (it may be one)."""
    package = path.relative_to(root).parent.parts
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            within = [*package[: len(package) - node.level + 1], *filter(None, [node.module])]
            module = ".".join(within) if node.level else node.module
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def importable_names(folder: Path) -> set[str]:
    """The names a script could import from `folder` with one of its folders on `sys.path`: its modules and
    packages."""
    return {p.stem for p in folder.rglob("*.py")} | {p.name for p in folder.rglob("*") if p.is_dir()}


def borrowed_from_tests(path: Path, root: Path = ROOT) -> list[str]:
    """What a file imports from tests/ that it may not, as "file:line module": a test module, conftest or helper
    takes only tests.helpers (fixtures come by name from conftest.py, never from another test module); a benchmark
    takes nothing, by the package `tests` or by a module or package of tests/ put on `sys.path` (`conftest`,
    `helpers`, a test module), but for the names it means for its own: the repository's top level and its siblings."""
    if path.is_relative_to(root / "tests"):
        return [
            f"{path.relative_to(root)}:{line} {module}"
            for line, module in imported(path, root)
            if (module.split(".")[0] in ("tests", "benchmarks") and not (module + ".").startswith("tests.helpers."))
            or module.startswith("test_")
        ]
    own = {p.stem for p in root.iterdir()} | {p.stem for p in path.parent.glob("*.py")}
    from_tests = {"tests"} | (importable_names(root / "tests") - own)
    return [
        f"{path.relative_to(root)}:{line} {module}"
        for line, module in imported(path, root)
        if module.split(".")[0] in from_tests
    ]


def test_tests_share_code_only_through_helpers_and_benchmarks_take_nothing_from_tests():
    tests = sorted((ROOT / "tests").rglob("*.py"))
    benchmarks = sorted((ROOT / "benchmarks").rglob("*.py"))
    assert len(tests) > 50 and benchmarks
    assert [line for path in tests + benchmarks for line in borrowed_from_tests(path)] == []


def test_a_borrowed_import_is_caught(tmp_path: Path):
    for empty in ("tests/browser/conftest.py", "tests/browser/screenshots.py", "tests/browser/test_e2e.py"):
        (tmp_path / empty).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / empty).write_text("")
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "load_test.py").write_text("")
    files = {
        "tests/pages/test_a.py": "from tests.helpers.apptest import kept\nfrom tests.pages.test_b import open_b\n",
        "tests/figures/test_c.py": "def f():\n    from .test_d import TOKENS\n",
        "tests/helpers/models.py": "from tests.helpers import array\nimport tests.test_e\n",
        "tests/browser/test_f.py": "from conftest import choose\nfrom harness import page\nfrom test_e2e import URL\n",
        "benchmarks/bench.py": (
            "from harness.server import LabServer\nfrom conftest import LabServer\nfrom tests.helpers import array\n"
            "import test_e2e\nfrom screenshots import IMAGES\nfrom load_test import Renicer\n"
            "def f():\n    from helpers.models import tiny\n"
        ),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert [line for name in files for line in borrowed_from_tests(tmp_path / name, tmp_path)] == [
        "tests/pages/test_a.py:2 tests.pages.test_b.open_b",
        "tests/figures/test_c.py:2 tests.figures.test_d.TOKENS",
        "tests/helpers/models.py:2 tests.test_e",
        "tests/browser/test_f.py:3 test_e2e.URL",
        "benchmarks/bench.py:2 conftest.LabServer",
        "benchmarks/bench.py:3 tests.helpers.array",
        "benchmarks/bench.py:4 test_e2e",
        "benchmarks/bench.py:5 screenshots.IMAGES",
        "benchmarks/bench.py:8 helpers.models.tiny",
    ]


def test_pages_holds_only_the_pages_the_frame_lists():
    """pages/ is the app's pages and nothing else: what they share lives in ui/."""
    listed = set(re.findall(r'"(pages/\w+\.py)"', (ROOT / "streamlit_app.py").read_text()))
    assert {f"pages/{path.name}" for path in (ROOT / "pages").glob("*.py")} == listed


def globals_read_in_functions(path: Path) -> list[str]:
    """Each module variable that a function of a script reads (any scope within a `def` or class), as
    "function:name": a page reads top to bottom and hands its functions what they need. Imports, UPPER_CASE
    constants, `log` and the module's own functions and classes may be read."""
    text = path.read_text(encoding="utf-8")
    defined = {n.name for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    top = symtable.symtable(text, str(path), "exec")
    variables = {
        s.get_name()
        for s in top.get_symbols()
        if s.is_assigned()
        and not (s.is_imported() or s.is_namespace() or s.get_name().isupper() or s.get_name() == "log")
    }

    def reads(table: symtable.SymbolTable, owner: str) -> list[str]:
        found = [f"{owner}:{s.get_name()}" for s in table.get_symbols() if s.is_global() and s.get_name() in variables]
        return found + [read for child in table.get_children() for read in reads(child, owner)]

    return sorted(
        {read for table in top.get_children() if table.get_name() in defined for read in reads(table, table.get_name())}
    )


def test_page_functions_take_what_they_need_instead_of_reading_the_pages_variables():
    pages = sorted((ROOT / "pages").glob("*.py"))
    assert pages
    assert {page.stem: found for page in pages if (found := globals_read_in_functions(page))} == {}


def test_a_page_function_reading_a_page_variable_is_caught(tmp_path: Path):
    page = tmp_path / "page.py"
    page.write_text(
        "import streamlit as st\nfrom x import y\nLIMIT = 3\nlog = None\nmodel = st.text_input('m')\n\n\n"
        "def helper():\n    return y\n\n\n"
        "def show(n):\n    log.info(LIMIT)\n    helper()\n    st.write([model for _ in range(n)])\n\n\n"
        "class View:\n    def draw(self):\n        return model, st\n\n\n"
        "st.write(model, [model for _ in 'ab'], show(model))\n"
    )
    assert globals_read_in_functions(page) == ["View:model", "show:model"]
