"""Checks of plain data read from an untrusted file (a checkpoint's parts): its shape and size before anything is
built from it, the keys of a dict, and a config dataclass made from one."""

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

from .i18n import N_, Message, joined
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
                raise ValueError(Message(N_("{what} is too large or too deeply nested"), what=what))
            if kind is dict and not all(type(k) is str for k in item):
                raise ValueError(Message(N_("{what} has a dict key that is not a string"), what=what))
            stack.extend((child, depth + 1) for child in (item.values() if kind is dict else item))
        elif kind not in _SCALARS:
            template = N_("{what} holds a {kind}; only dicts, lists, strings and numbers are allowed")
            raise ValueError(Message(template, what=what, kind=kind.__name__[:40]))
        elif kind is int and item.bit_length() > 64:
            raise ValueError(Message(N_("{what} holds an integer too large for a setting"), what=what))


def check_keys(found: Iterable[str], expected: Iterable[str], what: str) -> None:
    """ValueError naming (a few of) the missing and unexpected keys."""
    found, expected = set(found), list(expected)
    missing = [repr(k) for k in expected if k not in found]
    unexpected = sorted(repr(k)[:60] for k in found - set(expected))
    problems = []
    for template, keys in ((N_("missing {keys}"), missing), (N_("unexpected {keys}"), unexpected)):
        if keys:
            named = ", ".join(keys[:5])
            if len(keys) > 5:
                named = Message(N_("{keys} and {more} more"), keys=named, more=len(keys) - 5)
            problems.append(Message(template, keys=named))
    if problems:
        raise ValueError(Message(N_("{what} has {problems}"), what=what, problems=joined(problems, N_("; "))))


def config_from(cls: type, d: dict, what: str, built: Mapping[str, Any] | None = None) -> Any:
    """cls(**d, **built) for a dict `d` holding exactly cls's fields but those `built` gives (objects already made
    and checked), each of the type of its default."""
    built = built or {}
    own = [f for f in fields(cls) if f.name not in built]
    check_keys(d, [f.name for f in own], what)
    for f in own:
        value, kind = d[f.name], type(f.default)
        if not (type(value) is kind or (kind is float and type(value) is int)):
            template = N_("{what}.{field} must be {kind}, got {got}")
            raise ValueError(Message(template, what=what, field=f.name, kind=kind.__name__, got=type(value).__name__))
    try:
        return cls(**d, **built)
    except (TypeError, ValueError) as e:
        raise ValueError(Message(N_("{what}: {reason}"), what=what, reason=e)) from None
