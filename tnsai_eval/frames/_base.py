"""Helpers shared by ``tnsai_eval.frames`` and its private modules."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TypeAlias

import pandas as pd

from tnsai_eval.errors import ConfigError

__all__ = ["PathLike", "call_frame", "require_columns"]

PathLike: TypeAlias = str | os.PathLike[str]


def require_columns(frame: pd.DataFrame, columns: Iterable[str], *, what: str) -> None:
    """Raise ConfigError naming the columns ``frame`` lacks (``what`` names the frame)."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ConfigError(
            f"{what} lacks column(s) {', '.join(map(repr, missing))}; "
            f"it has {', '.join(map(repr, map(str, frame.columns)))}"
        )


def call_frame(result: object, method: str, *, what: str) -> pd.DataFrame:
    """``result.<method>()``, checked to be a DataFrame; ``what`` names the expected object."""
    fn = getattr(result, method, None)
    if not callable(fn):
        raise ConfigError(
            f"expected {what} (an object with {method}()), got {type(result).__name__}"
        )
    frame = fn()
    if not isinstance(frame, pd.DataFrame):
        raise ConfigError(f"{type(result).__name__}.{method}() returned {type(frame).__name__}")
    return frame
