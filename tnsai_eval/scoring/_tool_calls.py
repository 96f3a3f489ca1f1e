"""Comparing the tool calls an agent made with the ones a case expects.

Two calls match when their names are equal and their arguments agree under
one of three argument modes:

* ``exact``: the same arguments, no more, no fewer (values compared as JSON:
  a tuple equals a list, 1 equals 1.0);
* ``subset``: every expected argument is there with its value; the agent may
  pass more (an optional ``limit``, a ``reason`` text);
* ``ignore``: the names alone.

The call lists are compared in one of five modes (E the expected calls, A the
actual ones; a call of A is used for at most one of E):

========== ==================================================== ==================
mode       passes when                                          extra calls in A
========== ==================================================== ==================
strict     A is E, call for call, in order                       fail
in_order   E's calls appear in A in E's order                    allowed
any_order  A is E in some order                                  fail
superset   every call of E is in A, in any order                 allowed
subset     every call of A is one of E (E may hold more)         fail
========== ==================================================== ==================

An empty E means "no tool calls expected": ``strict``, ``any_order`` and
``subset`` then pass only an agent that called nothing; ``in_order`` and
``superset`` pass anything. Pairing calls where one actual call could serve
several expected ones (repeated tools, ``subset`` arguments) is a maximum
bipartite matching, so the verdict never depends on which pairing was tried
first.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any

from tnsai_eval._util.enums import parse_member
from tnsai_eval.errors import ConfigError
from tnsai_eval.records import ToolCall, Trajectory
from tnsai_eval.scoring._cases import TestCase
from tnsai_eval.scoring._trajectory import MetricScore, check_threshold

__all__ = [
    "ArgumentMode",
    "MatchMode",
    "ToolCallF1",
    "ToolCallMatch",
    "calls_match",
    "matched_pairs",
]


class MatchMode(StrEnum):
    """How the list of calls made is compared with the list expected (see the module doc)."""

    STRICT = "strict"
    IN_ORDER = "in_order"
    ANY_ORDER = "any_order"
    SUBSET = "subset"
    SUPERSET = "superset"


class ArgumentMode(StrEnum):
    """How one call's arguments are compared with the expected ones."""

    EXACT = "exact"
    SUBSET = "subset"
    IGNORE = "ignore"


def _plain(value: Any) -> Any:
    # Compared as JSON data: tuples and lists alike, mapping types alike.
    try:
        return json.loads(json.dumps(value, sort_keys=True, default=str))
    except (TypeError, ValueError):
        return value


def calls_match(expected: ToolCall, actual: ToolCall, arguments: ArgumentMode | str) -> bool:
    """Whether ``actual`` is a call of ``expected``'s tool with agreeing arguments.

    >>> want = ToolCall("lookup_order", {"order_id": "A1"})
    >>> calls_match(want, ToolCall("lookup_order", {"order_id": "A1", "verbose": True}), "subset")
    True
    >>> calls_match(want, ToolCall("lookup_order", {"order_id": "A1", "verbose": True}), "exact")
    False
    """
    mode = ArgumentMode(arguments)
    if expected.name != actual.name:
        return False
    if mode is ArgumentMode.IGNORE:
        return True
    want, got = _plain(dict(expected.arguments)), _plain(dict(actual.arguments))
    if mode is ArgumentMode.EXACT:
        return bool(want == got)
    return all(key in got and got[key] == value for key, value in want.items())


def matched_pairs(
    expected: Sequence[ToolCall], actual: Sequence[ToolCall], agree: Callable[[int, int], bool]
) -> dict[int, int]:
    """A maximum matching of expected to actual calls, as ``{expected index: actual index}``.

    ``agree(i, j)`` says whether actual call ``j`` may stand for expected call
    ``i``. Kuhn's augmenting paths: the lists are a conversation's worth of
    calls, so the cubic worst case is small.

    >>> e = [ToolCall("a"), ToolCall("a", {"x": 1})]
    >>> a = [ToolCall("a", {"x": 1})] * 2
    >>> sorted(matched_pairs(e, a, lambda i, j: calls_match(e[i], a[j], "subset")).items())
    [(0, 1), (1, 0)]
    """
    owner: dict[int, int] = {}  # actual index -> expected index

    def place(i: int, seen: set[int]) -> bool:
        for j in range(len(actual)):
            if j in seen or not agree(i, j):
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(expected)):
        place(i, set())
    return {i: j for j, i in owner.items()}


def _in_order(
    expected: Sequence[ToolCall], actual: Sequence[ToolCall], agree: Callable[[int, int], bool]
) -> int:
    """How many of ``expected``, from the first, appear in ``actual`` in order.

    Taking the earliest agreeing call for each expected one is optimal for a
    subsequence: any later choice leaves fewer calls for the rest.
    """
    j = 0
    for i in range(len(expected)):
        while j < len(actual) and not agree(i, j):
            j += 1
        if j == len(actual):
            return i
        j += 1
    return len(expected)


def _listed(calls: Sequence[ToolCall]) -> str:
    return ", ".join(call.describe() for call in calls) or "none"


def _calls_of(output: Trajectory) -> tuple[ToolCall, ...]:
    if not isinstance(output, Trajectory):
        raise TypeError(f"a tool-call evaluator needs a Trajectory, got {type(output).__name__}")
    return output.tool_calls


class ToolCallMatch:
    """Scores 1.0 when an agent's tool calls match the case's ``expected_tool_calls``, else 0.0.

    ``mode`` compares the lists (``strict``, ``in_order``, ``any_order``,
    ``subset``, ``superset``) and ``arguments`` each pair (``exact``,
    ``subset``, ``ignore``); see the module doc. The reason of a failure
    names what was missing, extra or out of order. ``name`` is the metric's
    name (default ``tool_calls_<mode>``).

    >>> from tnsai_eval.records import Trajectory
    >>> case = TestCase("Refund A1", expected_tool_calls=[
    ...     {"name": "lookup_order", "arguments": {"order_id": "A1"}},
    ...     {"name": "issue_refund", "arguments": {"order_id": "A1"}}])
    >>> run = Trajectory("Refund A1", steps=(ToolCall("issue_refund", {"order_id": "A1"}),
    ...                                      ToolCall("lookup_order", {"order_id": "A1"})))
    >>> ToolCallMatch("any_order").evaluate_trajectory(run, case).score
    1.0
    >>> print(ToolCallMatch("in_order").evaluate_trajectory(run, case).reason)
    in order, expected lookup_order(order_id="A1"), issue_refund(order_id="A1"); \
found the first 1 of them; calls made: issue_refund(order_id="A1"), lookup_order(order_id="A1")
    """

    def __init__(
        self,
        mode: MatchMode | str = MatchMode.IN_ORDER,
        arguments: ArgumentMode | str = ArgumentMode.SUBSET,
        *,
        name: str | None = None,
        threshold: float = 1.0,
    ) -> None:
        self.mode = parse_member(MatchMode, mode, what="mode")
        self.arguments = parse_member(ArgumentMode, arguments, what="arguments")
        self.name = name or f"tool_calls_{self.mode.value}"
        self.threshold = check_threshold(threshold)

    def __repr__(self) -> str:
        return f"ToolCallMatch(mode={self.mode.value!r}, arguments={self.arguments.value!r})"

    def evaluate_trajectory(self, trajectory: Trajectory, case: TestCase) -> MetricScore:
        """1.0 with an empty reason when the calls match, else 0.0 and why."""
        expected, actual = case.expected_tool_calls, _calls_of(trajectory)
        problem = self._problem(expected, actual)
        return MetricScore(0.0, problem) if problem else MetricScore(1.0)

    def _problem(self, expected: Sequence[ToolCall], actual: Sequence[ToolCall]) -> str:
        def agree(i: int, j: int) -> bool:
            return calls_match(expected[i], actual[j], self.arguments)

        made = f"calls made: {_listed(actual)}"
        if self.mode is MatchMode.STRICT:
            for index in range(max(len(expected), len(actual))):
                if index >= len(expected) or index >= len(actual) or not agree(index, index):
                    return f"strict: call {index + 1} differs; expected {_listed(expected)}; {made}"
            return ""
        if self.mode is MatchMode.IN_ORDER:
            found = _in_order(expected, actual, agree)
            if found == len(expected):
                return ""
            return (
                f"in order, expected {_listed(expected)}; found the first {found} of them; {made}"
            )
        pairs = matched_pairs(expected, actual, agree)
        missing = [call for i, call in enumerate(expected) if i not in pairs]
        used = set(pairs.values())
        extra = [call for j, call in enumerate(actual) if j not in used]
        complaints = []
        if missing and self.mode is not MatchMode.SUBSET:
            complaints.append(f"missing {_listed(missing)}")
        if extra and self.mode is not MatchMode.SUPERSET:
            complaints.append(f"unexpected {_listed(extra)}")
        return f"{self.mode.value}: {'; '.join(complaints)}; {made}" if complaints else ""


class ToolCallF1:
    """Partial credit for tool calls: precision, recall or their F1 over matched calls.

    Calls are paired by a maximum matching, order ignored, under the
    ``arguments`` mode; precision is the share of the calls made that match
    an expected one, recall the share of the expected calls that were made.
    ``measure`` picks ``"f1"`` (default), ``"precision"`` or ``"recall"``.
    With no calls expected and none made every measure is 1.0; with either
    list empty and the other not, 0.0. ``threshold`` (default 1.0) is where a
    case passes this metric.

    >>> case = TestCase("q", expected_tool_calls=[{"name": "a"}, {"name": "b"}])
    >>> run = Trajectory("q", steps=(ToolCall("a"), ToolCall("c")))
    >>> result = ToolCallF1(arguments="ignore").evaluate_trajectory(run, case)
    >>> result.score, result.reason
    (0.5, 'precision 0.50 (1 of 2 calls made), recall 0.50 (1 of 2 expected)')
    """

    _MEASURES = ("f1", "precision", "recall")

    def __init__(
        self,
        arguments: ArgumentMode | str = ArgumentMode.SUBSET,
        *,
        measure: str = "f1",
        name: str | None = None,
        threshold: float = 1.0,
    ) -> None:
        self.arguments = parse_member(ArgumentMode, arguments, what="arguments")
        if measure not in self._MEASURES:
            raise ConfigError(
                f"measure must be one of {', '.join(self._MEASURES)}; got {measure!r}"
            )
        self.measure = measure
        self.name = name or f"tool_call_{measure}"
        self.threshold = check_threshold(threshold)

    def __repr__(self) -> str:
        return f"ToolCallF1(arguments={self.arguments.value!r}, measure={self.measure!r})"

    def evaluate_trajectory(self, trajectory: Trajectory, case: TestCase) -> MetricScore:
        """The measure in [0, 1], with precision and recall in the reason."""
        expected, actual = case.expected_tool_calls, _calls_of(trajectory)
        if not expected and not actual:
            return MetricScore(1.0, "no tool calls expected and none made")
        pairs = matched_pairs(
            expected, actual, lambda i, j: calls_match(expected[i], actual[j], self.arguments)
        )
        hits = len(pairs)
        precision = hits / len(actual) if actual else 0.0
        recall = hits / len(expected) if expected else 0.0
        f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
        value = {"f1": f1, "precision": precision, "recall": recall}[self.measure]
        reason = (
            f"precision {precision:.2f} ({hits} of {len(actual)} calls made), "
            f"recall {recall:.2f} ({hits} of {len(expected)} expected)"
        )
        return MetricScore(value, reason)
