"""``CriteriaSpec``: completion criteria from options, the one spec for marker, refine() and CLI."""

from __future__ import annotations

import re

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.refinement import CriteriaSpec
from tnsai_eval.testing import ScriptedLLM


def test_options_become_the_builders_checks() -> None:
    spec = CriteriaSpec.from_options(
        must_contain=["id", "name"],
        must_not_contain="TODO",
        matches_pattern=re.compile(r"\d"),
        valid_json=True,
        word_count=(1, 50),
        min_lines=1,
    )
    assert spec.must_contain == ("id", "name")
    assert spec.must_not_contain == ("TODO",)
    assert spec.word_count == (1, 50)
    criteria = spec.build()
    outcomes = criteria.evaluate('{"id": 7, "name": "x"}')
    assert [o.passed for o in outcomes] == [True] * len(outcomes)
    assert len(outcomes) == 7
    assert not all(o.passed for o in criteria.evaluate('{"id": "TODO"}'))


def test_a_minimum_word_count_alone_has_no_maximum() -> None:
    assert CriteriaSpec.from_options(word_count=3).word_count == (3, None)


def test_commands_take_the_shared_timeout_and_suffix() -> None:
    spec = CriteriaSpec.from_options(
        compiler_check="python3 -m py_compile $OUTPUT", command_timeout_s=5, suffix=".py"
    )
    criteria = spec.build()
    assert [o.passed for o in criteria.evaluate("x = 1\n")] == [True]
    assert [o.passed for o in criteria.evaluate("def f(:\n")] == [False]


def test_llm_check_needs_and_uses_a_judge() -> None:
    spec = CriteriaSpec.from_options(llm_check=("Is it polite?", 0.5))
    assert spec.llm_check == ("Is it polite?", 0.5)
    with pytest.raises(ConfigError, match="needs a judge model"):
        spec.build()
    spec.validate()  # checks the values without a judge
    judge = ScriptedLLM(default="SCORE: 90")
    assert [o.passed for o in spec.build(judge).evaluate("Thank you!")] == [True]
    assert CriteriaSpec.from_options(llm_check="Polite?").llm_check == ("Polite?", 0.7)


def test_nothing_given_has_no_checks() -> None:
    assert not CriteriaSpec.from_options(must_contain=None, suffix=".py").has_checks
    assert CriteriaSpec.from_options(valid_json=True).has_checks
    with pytest.raises(ConfigError, match="needs at least one check"):
        CriteriaSpec.from_options().build()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"must_contian": "x"},
            "unknown criteria option(s) must_contian (did you mean must_contain?)",
        ),
        ({"must_contain": 5}, "must_contain=5 is not valid; expected a str or a list of str"),
        ({"must_contain": []}, "must_contain=[] is not valid"),
        ({"valid_json": "yes"}, "valid_json='yes' is not valid; expected a bool"),
        ({"word_count": "many"}, "word_count='many' is not valid"),
        ({"llm_check": 3}, "llm_check=3 is not valid; expected a question str"),
    ],
)
def test_bad_shapes_are_named(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        CriteriaSpec.from_options(**options)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"must_contain": ""}, "must_contain expects non-empty strings, got ''"),
        ({"matches_pattern": "("}, "matches_pattern: '(' is not a valid regex"),
        ({"min_lines": 0}, "min_lines expects an int >= 1, got 0"),
        ({"word_count": (5, 2)}, "word_count"),
        ({"llm_check": ("Polite?", 70)}, "llm_check threshold must be a number in [0, 1]"),
        ({"compiler_check": "  "}, "compiler_check"),
    ],
)
def test_bad_values_are_named_by_the_builder(options: dict[str, object], message: str) -> None:
    spec = CriteriaSpec.from_options(**options)
    with pytest.raises(ConfigError) as info:
        spec.validate()
    assert message in str(info.value)
