"""Random conditions and states: only a bool or a ConditionError ever comes out."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tnsai_eval.errors import ConditionError
from tnsai_eval.norms import ConditionEvaluator

NAMES = ["a", "b", "count", "hasConsent", "user", "tags"]

# Plain values CEL understands, nested, plus some it does not (sets, objects,
# ints past 64 bits) so that conversion failures are exercised too.
plain = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
values = st.recursive(
    plain | st.binary(max_size=4) | st.frozensets(st.integers(), max_size=2) | st.builds(object),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=3)
    ),
    max_leaves=8,
)
# Each known name present or not, plus a few arbitrary keys.
states = st.builds(
    lambda known, extra: {**extra, **known},
    st.fixed_dictionaries({}, optional=dict.fromkeys(NAMES, values)),
    st.dictionaries(st.text(max_size=6), values, max_size=2),
)

# Pieces of CEL, so that many random conditions parse and reach evaluation.
tokens = st.sampled_from(
    [*NAMES, "true", "false", "null", "1", "3.5", "-2", "'x'", '"y"', "b'z'", "==", "!=", "<",
     ">=", "&&", "||", "!", "+", "-", "*", "/", "%", "in", "?", ":", "(", ")", "[", "]", "{",
     "}", ",", ".", "size", "has", "all", "exists", "map", "filter", "int", "string", "x", " "]
)  # fmt: skip
cel_like = st.lists(tokens, max_size=25).map(" ".join)
# Well-formed comparisons of state names with literals, so that evaluation
# (conversion, type errors, unknown names, results) is reached often.
literals = st.sampled_from(["1", "-7", "2.5", "'a'", "true", "null", "[1, 'a']", "{'k': 1}"])
comparison = st.builds(
    "{} {} {}".format,
    st.sampled_from(NAMES),
    st.sampled_from(["==", "!=", "<", ">=", "in"]),
    literals,
)
well_formed = st.lists(comparison, min_size=1, max_size=4).flatmap(
    lambda parts: st.sampled_from([" && ", " || "]).map(lambda glue: glue.join(parts))
)
conditions = st.text(max_size=60) | cel_like | well_formed

EVALUATOR = ConditionEvaluator()


def _outcome(condition: str, state: dict[object, object]) -> object:
    try:
        return EVALUATOR.evaluate(condition, state)  # type: ignore[arg-type]
    except ConditionError as exc:
        return exc


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(condition=conditions, state=states)
def test_only_a_bool_or_condition_error(condition: str, state: dict[object, object]) -> None:
    outcome = _outcome(condition, state)
    assert isinstance(outcome, bool | ConditionError)
    if isinstance(outcome, ConditionError):
        assert outcome.condition == condition
        # The message quotes the condition (its first 200 characters).
        assert repr(condition[:200]) in str(outcome)


@settings(max_examples=60, deadline=None)
@given(
    depth=st.integers(min_value=33, max_value=20_000),
    brackets=st.lists(st.sampled_from(["()", "[]", "{}"]), min_size=1, max_size=3),
)
def test_deep_nesting_is_refused(depth: int, brackets: list[str]) -> None:
    openers = "".join(brackets[i % len(brackets)][0] for i in range(depth))
    closers = "".join(brackets[i % len(brackets)][1] for i in reversed(range(depth)))
    with pytest.raises(ConditionError, match=r"nests brackets|longer than the limit"):
        EVALUATOR.evaluate(openers + "1" + closers, {})


@settings(max_examples=30, deadline=None)
@given(length=st.integers(min_value=4097, max_value=1_000_000), char=st.sampled_from("a1(!- "))
def test_huge_conditions_are_refused(length: int, char: str) -> None:
    with pytest.raises(ConditionError, match="longer than the limit of 4096"):
        EVALUATOR.evaluate(char * length, {})


@pytest.mark.parametrize(
    "condition",
    [
        "!" * 4000 + "true",  # long unary chains: no brackets, still bounded by the length
        "-" * 4000 + "1 == 1",
        " && ".join(["true"] * 1000),
        "true ? " * 60 + "true" + " : false" * 60,  # deeper than the parser allows
        "x" + ".y" * 2000,
    ],
)
def test_pathological_but_short_conditions(condition: str) -> None:
    outcome = _outcome(condition, {"x": {}})
    assert isinstance(outcome, bool | ConditionError)
