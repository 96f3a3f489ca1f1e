"""Every docstring example in the library runs and holds.

Walks the whole package, so a module added later is covered without listing it.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import tnsai_eval


def _all_modules() -> list[str]:
    names = ["tnsai_eval"]
    for info in pkgutil.walk_packages(tnsai_eval.__path__, prefix="tnsai_eval."):
        names.append(info.name)
    return sorted(names)


MODULES = _all_modules()


def test_the_walk_finds_every_subpackage() -> None:
    for package in ("llm", "feedback", "norms", "refinement", "optimizer", "widgets"):
        assert f"tnsai_eval.{package}" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
