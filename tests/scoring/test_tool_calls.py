"""ToolCallMatch and ToolCallF1: every match mode and argument mode, table by table."""

from __future__ import annotations

from typing import Any

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.records import ModelTurn, ToolCall, Trajectory
from tnsai_eval.scoring import TestCase, ToolCallF1, ToolCallMatch, metrics_of


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name, arguments)


LOOKUP = call("lookup_order", order_id="A1")
POLICY = call("check_policy", topic="refunds")
REFUND = call("issue_refund", order_id="A1")


def run(*calls: ToolCall) -> Trajectory:
    # Model turns between the calls, as an agent makes them: only the calls count.
    steps: list[ModelTurn | ToolCall] = [ModelTurn()]
    for made in calls:
        steps += [made, ModelTurn()]
    return Trajectory("task", steps=tuple(steps), output="done")


def score(
    evaluator: ToolCallMatch | ToolCallF1, expected: list[ToolCall], made: list[ToolCall]
) -> float:
    case = TestCase("task", expected_tool_calls=expected)
    return evaluator.evaluate_trajectory(run(*made), case).score


# (expected, made, verdicts) with arguments="exact": each row one situation; the
# verdicts are strict, in_order, any_order, superset, subset (T passes, F fails).
MODES = ("strict", "in_order", "any_order", "superset", "subset")
L, P, R = LOOKUP, POLICY, REFUND
OTHER_ID = call("lookup_order", order_id="B2")
TABLE: list[tuple[str, list[ToolCall], list[ToolCall], str]] = [
    ("identical",         [L, R],    [L, R],     "TTTTT"),
    ("swapped",           [L, R],    [R, L],     "FFTTT"),
    ("extra in between",  [L, R],    [L, P, R],  "FTFTF"),
    ("extra at the end",  [L, R],    [L, R, P],  "FTFTF"),
    ("one missing",       [L, P, R], [L, R],     "FFFFT"),
    ("none made",         [L],       [],         "FFFFT"),
    ("none expected",     [],        [L],        "FTFTF"),
    ("both empty",        [],        [],         "TTTTT"),
    ("repeated expected", [L, L],    [L],        "FFFFT"),
    ("repeated made",     [L],       [L, L],     "FTFTF"),
    ("repeats both",      [L, L],    [L, L],     "TTTTT"),
    ("wrong argument",    [L],       [OTHER_ID], "FFFFF"),
    ("wrong tool",        [L],       [P],        "FFFFF"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("expected", "made", "verdicts"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE]
)
def test_each_match_mode(expected: list[ToolCall], made: list[ToolCall], verdicts: str) -> None:
    got = "".join(
        "T" if score(ToolCallMatch(mode, arguments="exact"), expected, made) == 1.0 else "F"
        for mode in MODES
    )
    assert dict(zip(MODES, got, strict=True)) == dict(zip(MODES, verdicts, strict=True))


WITH_EXTRA = call("lookup_order", order_id="A1", verbose=True)
# (expected, made, verdicts): exact, subset, ignore.
ARGUMENT_TABLE = [
    ("same",             LOOKUP,                 LOOKUP,                        "TTT"),
    ("extra argument",   LOOKUP,                 WITH_EXTRA,                    "FTT"),
    ("missing argument", WITH_EXTRA,             LOOKUP,                        "FFT"),
    ("other value",      LOOKUP,                 OTHER_ID,                      "FFT"),
    ("no arguments",     call("lookup_order"),   LOOKUP,                        "FTT"),
    ("list vs tuple",    call("t", ids=[1, 2]),  call("t", ids=(1, 2)),         "TTT"),
    ("int vs float",     call("t", n=1),         call("t", n=1.0),              "TTT"),
    ("nested exact",     call("t", f={"a": 1}),  call("t", f={"a": 1, "b": 2}), "FFT"),
    ("other tool",       LOOKUP,                 REFUND,                        "FFF"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("expected", "made", "verdicts"),
    [row[1:] for row in ARGUMENT_TABLE],
    ids=[row[0] for row in ARGUMENT_TABLE],
)
def test_each_argument_mode(expected: ToolCall, made: ToolCall, verdicts: str) -> None:
    got = "".join(
        "T" if score(ToolCallMatch("strict", arguments), [expected], [made]) == 1.0 else "F"
        for arguments in ("exact", "subset", "ignore")
    )
    assert got == verdicts


def test_a_loose_call_cannot_stand_for_two_expected_ones() -> None:
    # subset arguments: the bare call could match either expected one, but only
    # a matching that pairs the specific one first finds both.
    expected = [call("t"), call("t", x=1)]
    made = [call("t", x=1), call("t", x=2)]
    assert score(ToolCallMatch("any_order", "subset"), expected, made) == 1.0
    assert score(ToolCallMatch("any_order", "subset"), expected, [call("t", x=1)] * 1) == 0.0


def test_in_order_takes_the_earliest_matching_call() -> None:
    expected = [call("t", x=1), call("t")]
    assert (
        score(ToolCallMatch("in_order", "subset"), expected, [call("t", x=1), call("t", x=1)])
        == 1.0
    )
    assert score(ToolCallMatch("in_order", "subset"), expected, [call("t"), call("t", x=1)]) == 0.0


@pytest.mark.parametrize(
    ("mode", "made", "reason"),
    [
        (
            "strict",
            [REFUND, LOOKUP],
            'strict: call 1 differs; expected lookup_order(order_id="A1"), issue_refund(',
        ),
        ("in_order", [REFUND], "found the first 0 of them"),
        (
            "any_order",
            [LOOKUP, POLICY],
            'missing issue_refund(order_id="A1"); unexpected check_policy(topic="refunds")',
        ),
        ("superset", [LOOKUP, POLICY], 'superset: missing issue_refund(order_id="A1"); calls made'),
        (
            "subset",
            [LOOKUP, POLICY],
            'subset: unexpected check_policy(topic="refunds"); calls made',
        ),
    ],
)
def test_a_failure_says_what_was_missing_or_extra(
    mode: str, made: list[ToolCall], reason: str
) -> None:
    case = TestCase("task", expected_tool_calls=[LOOKUP, REFUND])
    result = ToolCallMatch(mode, "exact").evaluate_trajectory(run(*made), case)
    assert result.score == 0.0
    assert reason in result.reason


F1_TABLE = [
    # id                expected           made                      f1    precision recall
    ("all right",       [LOOKUP, REFUND],  [REFUND, LOOKUP],         1.0,  1.0,  1.0),
    ("half made",       [LOOKUP, REFUND],  [LOOKUP],                 2 / 3, 1.0, 0.5),
    ("one extra",       [LOOKUP],          [LOOKUP, POLICY],         2 / 3, 0.5, 1.0),
    ("none right",      [LOOKUP],          [POLICY],                 0.0,  0.0,  0.0),
    ("none made",       [LOOKUP],          [],                       0.0,  0.0,  0.0),
    ("none expected",   [],                [LOOKUP],                 0.0,  0.0,  0.0),
    ("both empty",      [],                [],                       1.0,  1.0,  1.0),
    ("repeat counted once", [LOOKUP],      [LOOKUP, LOOKUP],         2 / 3, 0.5, 1.0),
]  # fmt: skip


@pytest.mark.parametrize(
    ("expected", "made", "f1", "precision", "recall"),
    [row[1:] for row in F1_TABLE],
    ids=[row[0] for row in F1_TABLE],
)
def test_tool_call_f1_gives_partial_credit(
    expected: list[ToolCall], made: list[ToolCall], f1: float, precision: float, recall: float
) -> None:
    for measure, value in (("f1", f1), ("precision", precision), ("recall", recall)):
        assert score(ToolCallF1("exact", measure=measure), expected, made) == pytest.approx(value)


def test_names_thresholds_and_bad_options() -> None:
    assert [
        m.name for m in metrics_of([ToolCallMatch("strict"), ToolCallF1(measure="recall")])
    ] == [
        "tool_calls_strict",
        "tool_call_recall",
    ]
    assert ToolCallF1(threshold=0.5).threshold == 0.5
    with pytest.raises(ConfigError, match="mode 'sideways' is not one of"):
        ToolCallMatch("sideways")
    with pytest.raises(ConfigError, match="arguments 'fuzzy' is not one of"):
        ToolCallMatch(arguments="fuzzy")
    with pytest.raises(
        ConfigError, match="measure must be one of f1, precision, recall; got 'auc'"
    ):
        ToolCallF1(measure="auc")
    with pytest.raises(ConfigError, match="threshold must be a number from 0 to 1, got 2"):
        ToolCallMatch(threshold=2)


def test_a_plain_text_output_is_a_trajectory_without_calls() -> None:
    (metric,) = metrics_of(ToolCallMatch("strict"))
    assert metric.score("done", TestCase("task")).score == 1.0
    assert metric.score("done", TestCase("task", expected_tool_calls=[LOOKUP])).score == 0.0
