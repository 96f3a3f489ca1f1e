"""Names that moved to another package and still resolve at their old home, for one release."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable

__all__ = ["moved_names"]


def moved_names(old: str, new: str, names: Iterable[str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``old`` that gives each of ``names`` from ``new``, with a
    ``DeprecationWarning``. ``new`` is looked up by name at run time (not imported), so the
    old home never depends on the package it points to."""
    known = frozenset(names)

    def __getattr__(name: str) -> object:
        if name not in known:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"{old}.{name} moved to {new}.{name}; import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new), name)

    return __getattr__
