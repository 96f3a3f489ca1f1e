"""The examples in the feedback modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "tnsai_eval.feedback",
    "tnsai_eval.feedback._types",
    "tnsai_eval.feedback._store",
    "tnsai_eval.feedback._sqlite",
    "tnsai_eval.feedback._collector",
    "tnsai_eval.feedback._agent",
    "tnsai_eval.feedback._learner",
    "tnsai_eval.feedback._enricher",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
