"""ConditionEvaluator: CEL semantics, errors that name the problem, guards, cache."""

from __future__ import annotations

import enum

import pytest

from tnsai_eval.errors import ConditionError, ConfigError
from tnsai_eval.norms import ConditionEvaluator

API_EXAMPLE = "hasConsent == false && count > 3"


@pytest.fixture
def evaluator() -> ConditionEvaluator:
    return ConditionEvaluator()


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"hasConsent": False, "count": 5}, True),
        ({"hasConsent": True, "count": 5}, False),
        ({"hasConsent": False, "count": 3}, False),
    ],
)
def test_api_example(
    evaluator: ConditionEvaluator, state: dict[str, object], expected: bool
) -> None:
    assert evaluator.evaluate(API_EXAMPLE, state) is expected


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_blank_condition_is_true(evaluator: ConditionEvaluator, blank: str) -> None:
    assert evaluator.evaluate(blank, {}) is True


@pytest.mark.parametrize(
    ("condition", "state", "expected"),
    [
        ("user.role == 'admin'", {"user": {"role": "admin"}}, True),
        ("'b' in tags", {"tags": ["a", "b"]}, True),
        ("size(items) == 2", {"items": (1, 2)}, True),
        ("ratio > 0.5", {"ratio": 0.75}, True),
        ("count > 3.5", {"count": 4}, True),  # CEL compares int with double
        ("missing == null", {"missing": None}, True),
        ("data == b'\\x00\\x01'", {"data": b"\x00\x01"}, True),
        ("scores.all(s, s >= 50)", {"scores": [50, 80]}, True),
        ("m[1] == 'one'", {"m": {1: "one"}}, True),
        ("name.startsWith('Al')", {"name": "Bob"}, False),
        ("has(user.email)", {"user": {"name": "x"}}, False),
        ("false && nosuchname", {}, False),  # CEL short-circuits; the name is never needed
    ],
)
def test_cel_semantics(
    evaluator: ConditionEvaluator, condition: str, state: dict[str, object], expected: bool
) -> None:
    assert evaluator.evaluate(condition, state) is expected


class Level(enum.IntEnum):
    HIGH = 3


class Colour(str, enum.Enum):  # noqa: UP042 - the str-mixin form is the case to test
    RED = "red"


def test_enum_state_values_become_their_values(evaluator: ConditionEvaluator) -> None:
    assert evaluator.evaluate(
        "level == 3 && colour == 'red'", {"level": Level.HIGH, "colour": Colour.RED}
    )


def test_unknown_name(evaluator: ConditionEvaluator) -> None:
    with pytest.raises(ConditionError) as caught:
        evaluator.evaluate(API_EXAMPLE, {"count": 5})
    message = str(caught.value)
    assert repr(API_EXAMPLE) in message
    assert "unknown name 'hasConsent'" in message
    assert "the state has: count" in message
    assert caught.value.condition == API_EXAMPLE
    # It is an input error in the project's tree, and a ValueError.
    assert isinstance(caught.value, ConfigError)
    assert isinstance(caught.value, ValueError)


def test_syntax_error(evaluator: ConditionEvaluator) -> None:
    with pytest.raises(ConditionError, match=r"'count >' is not valid CEL: .*[Ss]yntax") as caught:
        evaluator.evaluate("count >", {"count": 1})
    assert caught.value.condition == "count >"


def test_python_syntax_is_not_cel(evaluator: ConditionEvaluator) -> None:
    # Python's eval would accept this; CEL has no `and` or `not`.
    with pytest.raises(ConditionError, match="not valid CEL"):
        evaluator.evaluate("not hasConsent and count > 3", {"hasConsent": False, "count": 5})


def test_python_builtins_are_not_reachable(evaluator: ConditionEvaluator) -> None:
    with pytest.raises(ConditionError):
        evaluator.evaluate("__import__('os').system('true') == 0", {})


def test_non_bool_result(evaluator: ConditionEvaluator) -> None:
    with pytest.raises(ConditionError, match=r"'count \+ 1' evaluates to int 6, expected a bool"):
        evaluator.evaluate("count + 1", {"count": 5})


def test_type_error(evaluator: ConditionEvaluator) -> None:
    with pytest.raises(ConditionError, match=r"'count \+ \"a\" == 1': type error"):
        evaluator.evaluate('count + "a" == 1', {"count": 5})


def test_division_by_zero(evaluator: ConditionEvaluator) -> None:
    with pytest.raises(ConditionError, match="arithmetic error"):
        evaluator.evaluate("count / 0 == 1", {"count": 5})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({1, 2}, r"'x' has type set"),
        (object(), r"'x' has type object"),
        ({"ok": [1, {"deep": {2}}]}, r"\"x\['ok'\]\[1\]\['deep'\]\" has type set"),
        ({(1, 2): "pair"}, r"'x' has a key of type tuple"),
        (2**63, r"'x' = 9223372036854775808 does not fit CEL's 64-bit int"),
        ("\ud800", r"'x' is not valid text"),
    ],
)
def test_unsupported_state_values(
    evaluator: ConditionEvaluator, value: object, message: str
) -> None:
    with pytest.raises(ConditionError, match=message):
        evaluator.evaluate("x == x", {"x": value})


def test_self_referencing_state_is_refused(evaluator: ConditionEvaluator) -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ConditionError, match="nests deeper than"):
        evaluator.evaluate("size(x) == 1", {"x": loop})


def test_values_the_condition_does_not_read_are_ignored(evaluator: ConditionEvaluator) -> None:
    assert evaluator.evaluate("count == 1", {"count": 1, "unused": object()})


def test_state_must_be_a_mapping(evaluator: ConditionEvaluator) -> None:
    with pytest.raises(ConditionError, match=r"must be a mapping.*list"):
        evaluator.evaluate("true", [("a", 1)])  # type: ignore[arg-type]


def test_condition_must_be_a_string(evaluator: ConditionEvaluator) -> None:
    with pytest.raises(ConditionError, match="must be a str, got int 3"):
        evaluator.evaluate(3, {})  # type: ignore[arg-type]


def test_too_long_is_refused(evaluator: ConditionEvaluator) -> None:
    condition = " || ".join(["count == 1"] * 1000)  # valid CEL, 13,996 characters
    with pytest.raises(
        ConditionError, match=r"\(13996 characters\) is longer than the limit of 4096"
    ):
        evaluator.evaluate(condition, {"count": 1})
    assert ConditionEvaluator(max_length=20_000).evaluate(condition, {"count": 1})


def test_too_deep_is_refused(evaluator: ConditionEvaluator) -> None:
    condition = "(" * 33 + "true" + ")" * 33
    with pytest.raises(ConditionError, match="nests brackets 33 deep, more than the limit of 32"):
        evaluator.evaluate(condition, {})
    assert evaluator.evaluate("(" * 32 + "true" + ")" * 32, {})
    mixed = "[" * 20 + "{1: (" * 20 + "1" + ")}" * 20 + "]" * 20
    with pytest.raises(ConditionError, match="nests brackets 61 deep"):
        evaluator.evaluate(f"size({mixed}) == 1", {})


def test_brackets_inside_string_literals_do_not_count(evaluator: ConditionEvaluator) -> None:
    for literal in ['"' + "(" * 50 + '"', "'" + "[" * 50 + "'", '"""' + "{" * 50 + '"""']:
        assert evaluator.evaluate(f"size({literal}) == 50", {})
    escaped = "'\\'" + "(" * 50 + "'"  # an escaped quote does not end the string
    assert evaluator.evaluate(f"size({escaped}) == 51", {})


def test_check_and_names(evaluator: ConditionEvaluator) -> None:
    evaluator.check(API_EXAMPLE)
    evaluator.check("")
    with pytest.raises(ConditionError, match="not valid CEL"):
        evaluator.check("count >")
    assert evaluator.names(API_EXAMPLE) == {"hasConsent", "count"}
    assert evaluator.names("user.role == 'admin'") == {"user"}
    assert evaluator.names(" ") == frozenset()


def test_compiled_conditions_are_cached_and_bounded() -> None:
    evaluator = ConditionEvaluator(cache_size=2)
    for count in range(5):
        evaluator.evaluate(API_EXAMPLE, {"hasConsent": False, "count": count})
    info = evaluator.cache_info()
    assert (info.misses, info.hits) == (1, 4)
    evaluator.evaluate("true", {})
    evaluator.evaluate("false", {})
    assert evaluator.cache_info().currsize == 2


def test_bad_condition_is_reported_again_each_time(evaluator: ConditionEvaluator) -> None:
    for _ in range(2):
        with pytest.raises(ConditionError, match="not valid CEL"):
            evaluator.evaluate("count >", {})


@pytest.mark.parametrize("option", ["cache_size", "max_length", "max_depth"])
@pytest.mark.parametrize("value", [0, -1, True, 2.5])
def test_options_must_be_positive_ints(option: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"{option} must be a positive int, got {value!r}"):
        ConditionEvaluator(**{option: value})  # type: ignore[arg-type]


def test_huge_non_bool_result_is_clipped_in_the_message(evaluator: ConditionEvaluator) -> None:
    with pytest.raises(
        ConditionError, match=r"evaluates to list \[0, 0, .*\.\.\. \(\d+ characters\)"
    ):
        evaluator.evaluate("items", {"items": [0] * 100})


def test_limits_are_read_only() -> None:
    evaluator = ConditionEvaluator(max_length=100, max_depth=3)
    assert (evaluator.max_length, evaluator.max_depth) == (100, 3)
    with pytest.raises(AttributeError):
        evaluator.max_depth = 50  # type: ignore[misc]
