"""The unit of an evaluation (one input and what is expected for it) and the split."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from tnsai_eval.errors import ConfigError
from tnsai_eval.records import ToolCall, tool_calls_from

__all__ = ["TestCase", "check_cases", "split_cases"]


@dataclass(frozen=True, slots=True, repr=False, init=False)
class TestCase:
    """One input and what is expected back: an answer, and for an agent its tool calls.

    >>> case = TestCase("What is the capital of France?", "Paris")
    >>> case.expected
    'Paris'

    ``expected_tool_calls`` are the calls an agent is expected to make (each a
    ``ToolCall`` or a ``{"name", "arguments"}`` mapping; the trajectory
    evaluators compare them with what it did) and ``state`` the facts a norm's
    condition is evaluated against (``NormCompliance``); both are read-only.

    >>> TestCase("Refund order A1", expected_tool_calls=[
    ...     {"name": "lookup_order", "arguments": {"order_id": "A1"}}])
    TestCase(input='Refund order A1', expected='', \
expected_tool_calls=(ToolCall('lookup_order', {'order_id': 'A1'}),))

    ``id`` is an optional stable name for the case (a dataset line's ``"id"``);
    reports use it to match the case across runs, else a hash of input and
    expected answer (see ``tnsai_eval.records.case_ids``).
    """

    # A class named Test* would otherwise be collected by pytest in users' test modules.
    __test__: ClassVar[bool] = False

    input: str
    expected: str
    # Not hashed: ToolCall arguments and the state are mappings.
    expected_tool_calls: tuple[ToolCall, ...] = field(hash=False)
    state: Mapping[str, Any] | None = field(hash=False)
    id: str | None

    # Written out (not generated) so that the expected calls may be given as
    # ToolCalls or mappings, in any sequence, while the field is a tuple of ToolCalls.
    def __init__(
        self,
        input: str,
        expected: str = "",
        expected_tool_calls: Iterable[ToolCall | Mapping[str, Any]] = (),
        state: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
    ) -> None:
        for name, value in (("input", input), ("expected", expected)):
            if not isinstance(value, str):
                raise ConfigError(
                    f"TestCase.{name} must be a str, got {type(value).__name__}: {value!r}"
                )
        if id is not None and (not isinstance(id, str) or not id.strip()):
            raise ConfigError(f"TestCase.id must be a non-blank str or None, got {id!r}")
        calls = tool_calls_from(expected_tool_calls, "TestCase.expected_tool_calls")
        if state is not None and not isinstance(state, Mapping):
            raise ConfigError(
                f"TestCase.state must be a mapping of names to values or None, "
                f"got {type(state).__name__}: {state!r}"
            )
        object.__setattr__(self, "input", input)
        object.__setattr__(self, "expected", expected)
        object.__setattr__(self, "expected_tool_calls", calls)
        object.__setattr__(self, "state", None if state is None else MappingProxyType(dict(state)))
        object.__setattr__(self, "id", id)

    def __repr__(self) -> str:
        # The id is left out (most cases have none; input and expected are what a
        # reader looks for), and so are the agent fields when they are unset.
        parts = [f"input={self.input!r}", f"expected={self.expected!r}"]
        if self.expected_tool_calls:
            parts.append(f"expected_tool_calls={self.expected_tool_calls!r}")
        if self.state is not None:
            parts.append(f"state={dict(self.state)!r}")
        return f"TestCase({', '.join(parts)})"


def split_cases(
    cases: Sequence[TestCase], share: float, seed: int
) -> tuple[list[TestCase], list[TestCase]]:
    """``(selection, held_out)``: a seeded split holding out about ``share`` of the cases.

    Cases with the same input stay on one side (else the held-out score would
    partly be a training score). When the expected values are labels (each
    occurs more than once: at most half as many distinct values as cases), the
    split is stratified: every label is held out in about the same share, so a
    small held-out set is not all one class. Each side keeps the cases' order.
    With fewer than two distinct inputs, or a share that rounds to no case,
    nothing is held out.

    >>> cases = [TestCase(f"review {i}", "positive" if i % 2 else "negative") for i in range(10)]
    >>> selection, held_out = split_cases(cases, 0.4, seed=0)
    >>> len(selection), sorted(c.expected for c in held_out)
    (6, ['negative', 'negative', 'positive', 'positive'])
    """
    groups: dict[str, list[int]] = {}
    for index, case in enumerate(cases):
        groups.setdefault(case.input, []).append(index)
    keys = list(groups)
    rng = random.Random(seed)
    expected = [cases[groups[key][0]].expected for key in keys]
    labels = sorted(set(expected))
    strata: list[list[str]]
    if len(labels) * 2 <= len(keys):
        strata = [
            [k for k, e in zip(keys, expected, strict=True) if e == label] for label in labels
        ]
    else:
        strata = [keys]
    held: set[str] = set()
    for stratum in strata:
        order = list(stratum)
        rng.shuffle(order)
        held.update(order[: round(len(order) * share)])
    if not held or len(held) == len(keys):
        return list(cases), []
    selection = [c for c in cases if c.input not in held]
    held_out = [c for c in cases if c.input in held]
    return selection, held_out


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
