"""One task model: every task, a file's included, is a `Task` that answers for its own ideal alignment and default
run; the tasks chosen by name are registered one way, in one registry; and the task modules import without a
cycle."""

import ast
from pathlib import Path

import pytest

from transformer import settings as spec
from transformer.run_configs import run_configs
from transformer.task import REGISTRY, Task, register
from transformer.task_file import read_task_file
from transformer.tasks import GALLERY, TASKS, DataConfig, TaskData, get_task, task_names

PACKAGE = Path(__file__).resolve().parent.parent / "transformer"
TASK_MODULES = ("task", "tasks", "gallery", "pairs", "task_file", "alignment")
ALIGNED = {"copy", "reverse", "sort", "increment", "swap_pairs", "translate", "dedup", "caesar", "repeat"}
FILE = b"source,target\n" + b"".join(f"{a} {b},{b} {a}\n".encode() for a in "xyz" for b in "xyz")


def runtime_imports(path: Path, package: Path) -> set[str]:
    """The modules of `package` that `path` imports when it is imported: its module-level imports, inside `if`s and
    `try`s too, but not those under `if TYPE_CHECKING:` (read by type checkers only) nor inside functions."""
    found, body = set(), list(ast.parse(path.read_text(encoding="utf-8")).body)
    while body:
        node = body.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            body += node.body + node.orelse
        elif isinstance(node, ast.Try):
            body += node.body + node.orelse + node.finalbody + [n for h in node.handlers for n in h.body]
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module] if node.module else [alias.name for alias in node.names]
            found.update(name.split(".")[0] for name in names)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            for name in [module] if module else [alias.name for alias in node.names]:
                if name.startswith(package.name + "."):
                    found.add(name.split(".")[1])
    return {name for name in found if (package / f"{name}.py").exists() or (package / name).is_dir()}


def cycles_through(modules: tuple[str, ...], package: Path) -> list[list[str]]:
    """Each import cycle of `package` (its top-level modules, imported at run time) that passes through one of
    `modules`, as the modules along it from that module back to it."""
    graph = {p.stem: runtime_imports(p, package) for p in package.glob("*.py") if p.stem != "__init__"}
    cycles = []
    for start in modules:
        stack = [[start]]
        seen = set()
        while stack:
            path = stack.pop()
            for nxt in graph.get(path[-1], ()):
                if nxt == start:
                    cycles.append([*path, start])
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append([*path, nxt])
    return cycles


def test_the_task_modules_import_without_a_cycle():
    assert all((PACKAGE / f"{m}.py").exists() for m in TASK_MODULES)
    assert cycles_through(TASK_MODULES, PACKAGE) == []


def test_an_import_cycle_is_caught_however_late_its_import_comes(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    files = {
        "a.py": "from .b import B\nA = 1\n",
        "b.py": "import pkg.c\nB = 2\nfrom . import a  # last\n",
        "c.py": "import typing\nif typing.TYPE_CHECKING:\n    from .a import A\ndef f():\n    from . import a\n",
    }
    for name, text in files.items():
        (package / name).write_text(text)
    assert runtime_imports(package / "b.py", package) == {"a", "c"}
    assert cycles_through(("a", "c"), package) == [["a", "b", "a"]]  # c names a only for type checkers, or late


def test_every_task_chosen_by_name_is_a_task_registered_once_in_one_registry():
    assert task_names() == list(REGISTRY) and len(REGISTRY) == 12
    assert list(REGISTRY) == [*TASKS, *GALLERY] and all(get_task(name) is REGISTRY[name] for name in REGISTRY)
    assert all(isinstance(task, Task) and task.name == name for name, task in REGISTRY.items())
    with pytest.raises(TypeError, match="only a Task"):
        register(TASKS["copy"].fn)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_task_by_name_owns_its_alignment_and_its_default_run(name):
    task = get_task(name)
    assert task.default_run == {"task": name, **task.defaults} and all(map(spec.setting, task.default_run))
    assert spec.default_run(name) == {**spec.form_defaults(), **task.default_run}
    model, data, train = run_configs({**task.default_run, "device": "cpu"}, shared=False)
    assert data.task == name
    config = DataConfig(name, data.min_len, data.max_len, data.n_symbols, n_valid=20)
    for source in TaskData(config).valid_sources:
        positions = task.source_positions(source)
        assert (positions is not None) == (name in ALIGNED)
        if positions is not None:
            assert len(positions) == len(task.target(source, config.n_symbols))
            assert all(0 <= p < len(source) for p in positions)


def test_a_task_from_a_file_is_a_task_with_no_alignment_run_on_the_settings_defaults():
    pairs = read_task_file(FILE, "flip.csv")
    task = DataConfig.from_pairs(pairs).pairs.task
    assert isinstance(task, Task) and task not in REGISTRY.values()
    assert task.target([0, 1], len(pairs.symbols)) == [1, 0]
    assert task.source_positions([0, 1]) is None and task.default_run == {}
