"""The unit of a prompt evaluation: one input and the answer expected for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tnsai_eval.errors import ConfigError

__all__ = ["TestCase"]


@dataclass(frozen=True, slots=True)
class TestCase:
    """One input sent with the prompt and the answer expected back.

    >>> case = TestCase("What is the capital of France?", "Paris")
    >>> case.expected
    'Paris'
    """

    # A class named Test* would otherwise be collected by pytest in users' test modules.
    __test__: ClassVar[bool] = False

    input: str
    expected: str

    def __post_init__(self) -> None:
        for name in ("input", "expected"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ConfigError(
                    f"TestCase.{name} must be a str, got {type(value).__name__}: {value!r}"
                )
