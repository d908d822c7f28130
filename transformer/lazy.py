"""A package's public names, each imported from its module on first use (PEP 562): importing the package itself
costs nothing, so a module that needs no torch imports without it."""

import sys
from collections.abc import Callable, Mapping
from importlib import import_module


def lazy_exports(package: str, where: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: each name in `where` (name -> the submodule defining it) is taken
    from its submodule when first asked for."""

    def __getattr__(name: str) -> object:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f".{where[name]}", package), name)

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
