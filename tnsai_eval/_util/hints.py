"""Naming unknown keywords with a close match as a hint: a typo is the usual cause."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["unknown_names"]


def unknown_names(given: Iterable[str], known: Iterable[str]) -> str:
    """The names in ``given`` not in ``known``, each with a close match as a hint ("" if none).

    >>> unknown_names(["must_contian", "zz", "ok"], ["must_contain", "ok"])
    'must_contian (did you mean must_contain?), zz'
    """
    names = list(known)
    shown = []
    for name in sorted(set(given) - set(names)):
        close = difflib.get_close_matches(name, names, n=1)
        shown.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return ", ".join(shown)
