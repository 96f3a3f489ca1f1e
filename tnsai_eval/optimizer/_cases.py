"""The unit of a prompt evaluation: one input and the answer expected for it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from tnsai_eval.errors import ConfigError

__all__ = ["TestCase", "check_cases"]


@dataclass(frozen=True, slots=True)
class TestCase:
    """One input sent with the prompt and the answer expected back.

    >>> case = TestCase("What is the capital of France?", "Paris")
    >>> case.expected
    'Paris'

    ``id`` is an optional stable name for the case (a dataset line's ``"id"``);
    reports use it to match the case across runs, else a hash of input and
    expected answer (see ``tnsai_eval.reports.case_ids``).
    """

    # A class named Test* would otherwise be collected by pytest in users' test modules.
    __test__: ClassVar[bool] = False

    input: str
    expected: str
    # Left out of repr: most cases have none, and the pair is what a reader looks for.
    id: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in ("input", "expected"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ConfigError(
                    f"TestCase.{name} must be a str, got {type(value).__name__}: {value!r}"
                )
        if self.id is not None and (not isinstance(self.id, str) or not self.id.strip()):
            raise ConfigError(f"TestCase.id must be a non-blank str or None, got {self.id!r}")


def check_cases(
    cases: Sequence[TestCase] | None, name: str, *, allow_empty: bool = False
) -> list[TestCase]:
    """``cases`` as a list, after checking that each is a ``TestCase``.

    >>> check_cases((TestCase("2+2", "4"),), "cases")
    [TestCase(input='2+2', expected='4')]
    """
    items = list(cases or ())
    if not items and not allow_empty:
        raise ConfigError(f"{name} must hold at least one TestCase, got none")
    for index, case in enumerate(items):
        if not isinstance(case, TestCase):
            raise ConfigError(
                f"{name}[{index}] must be a TestCase, got {type(case).__name__}: {case!r}"
            )
    return items
