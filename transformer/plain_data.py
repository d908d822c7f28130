"""Checks of plain data read from an untrusted file (a checkpoint's parts): its shape and size before anything is
built from it, the keys of a dict, and a config dataclass made from one."""

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

from .limits import MAX_PLAIN_DEPTH, MAX_PLAIN_ITEMS

_SCALARS = (str, int, float, bool, type(None))


def check_plain(value: object, what: str) -> None:
    """ValueError unless `value` is built only of str-keyed dicts, lists, tuples, str, int, float, bool and None,
    within MAX_PLAIN_ITEMS values and MAX_PLAIN_DEPTH levels of nesting."""
    stack, count = [(value, 0)], 1
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind in (dict, list, tuple):
            count += len(item)
            if count > MAX_PLAIN_ITEMS or depth >= MAX_PLAIN_DEPTH:
                raise ValueError(f"{what} is too large or too deeply nested")
            if kind is dict and not all(type(k) is str for k in item):
                raise ValueError(f"{what} has a dict key that is not a string")
            stack.extend((child, depth + 1) for child in (item.values() if kind is dict else item))
        elif kind not in _SCALARS:
            raise ValueError(f"{what} holds a {kind.__name__:.40}; only dicts, lists, strings and numbers are allowed")
        elif kind is int and item.bit_length() > 64:
            raise ValueError(f"{what} holds an integer too large for a setting")


def check_keys(found: Iterable[str], expected: Iterable[str], what: str) -> None:
    """ValueError naming (a few of) the missing and unexpected keys."""
    found, expected = set(found), list(expected)
    missing = [repr(k) for k in expected if k not in found]
    unexpected = sorted(repr(k)[:60] for k in found - set(expected))
    problems = []
    for label, keys in (("missing", missing), ("unexpected", unexpected)):
        if keys:
            more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
            problems.append(f"{label} {', '.join(keys[:5])}{more}")
    if problems:
        raise ValueError(f"{what} has {'; '.join(problems)}")


def config_from(cls: type, d: dict, what: str, built: Mapping[str, Any] | None = None) -> Any:
    """cls(**d, **built) for a dict `d` holding exactly cls's fields but those `built` gives (objects already made
    and checked), each of the type of its default."""
    built = built or {}
    own = [f for f in fields(cls) if f.name not in built]
    check_keys(d, [f.name for f in own], what)
    for f in own:
        value, kind = d[f.name], type(f.default)
        if not (type(value) is kind or (kind is float and type(value) is int)):
            raise ValueError(f"{what}.{f.name} must be {kind.__name__}, got {type(value).__name__}")
    try:
        return cls(**d, **built)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what}: {e}") from None
