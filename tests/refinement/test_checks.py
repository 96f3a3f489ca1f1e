"""In-process checks, the builder's errors, ordering and the judge check."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Completion, Message, Usage
from tnsai_eval.refinement import CheckKind, CompletionCriteria, parse_score, strip_code_fence
from tnsai_eval.testing import ScriptedLLM


def outcomes_of(criteria: CompletionCriteria, output: str) -> dict[str, tuple[bool, str]]:
    return {o.name: (o.passed, o.message) for o in criteria.evaluate(output)}


def test_must_contain_one_check_per_string_and_names_the_missing_one() -> None:
    criteria = CompletionCriteria.builder().must_contain("alpha", "beta").build()
    results = criteria.evaluate("alpha only")
    assert [(o.name, o.passed) for o in results] == [
        ("must_contain('alpha')", True),
        ("must_contain('beta')", False),
    ]
    assert "'beta'" in results[1].message
    assert criteria.score(results) == 0.5
    assert criteria.score("alpha beta") == 1.0


def test_must_not_contain_counts_occurrences() -> None:
    criteria = CompletionCriteria.builder().must_not_contain("TODO").build()
    assert criteria.score("done") == 1.0
    [outcome] = criteria.evaluate("TODO a, TODO b")
    assert not outcome.passed
    assert "2 time(s)" in outcome.message


def test_matches_pattern_searches_and_accepts_compiled_patterns() -> None:
    criteria = (
        CompletionCriteria.builder()
        .matches_pattern(r"\d{3}-\d{4}")
        .matches_pattern(re.compile(r"^total: \d+$", re.M))
        .build()
    )
    assert [o.passed for o in criteria.evaluate("call 555-1234\ntotal: 3")] == [True, True]
    failed = criteria.evaluate("nothing")
    assert not any(o.passed for o in failed)
    assert r"\d{3}-\d{4}" in failed[0].message


@pytest.mark.parametrize(
    ("text", "passed", "fragment"),
    [
        ("one two", False, "at least 3"),
        ("one two three", True, "3 words"),
        ("a b c d e", True, "5 words"),
        ("a b c d e f", False, "at most 5"),
    ],
)
def test_word_count_bounds_are_inclusive(text: str, passed: bool, fragment: str) -> None:
    [outcome] = CompletionCriteria.builder().word_count(3, 5).build().evaluate(text)
    assert outcome.passed is passed
    assert fragment in outcome.message


def test_word_count_without_max() -> None:
    criteria = CompletionCriteria.builder().word_count(2).build()
    assert criteria.score("x " * 1000) == 1.0
    assert criteria.score("x") == 0.0


def test_min_lines() -> None:
    criteria = CompletionCriteria.builder().min_lines(3).build()
    assert criteria.score("a\nb\nc") == 1.0
    [outcome] = criteria.evaluate("a\nb")
    assert not outcome.passed
    assert "2 line(s)" in outcome.message


def test_valid_json_reports_where_it_broke() -> None:
    criteria = CompletionCriteria.builder().valid_json().build()
    assert criteria.score(' {"a": [1, 2]}\n') == 1.0
    [outcome] = criteria.evaluate('{"a": 1,}')
    assert not outcome.passed
    assert "line 1 column" in outcome.message
    assert criteria.score("```json\n{}\n```") == 0.0  # fences are the loop's business


def test_custom_check_both_forms() -> None:
    criteria = (
        CompletionCriteria.builder()
        .custom_check("short", lambda s: len(s) < 5)
        .custom_check("upper", str.isupper, fail_message="write it in capitals")
        .build()
    )
    short, upper = criteria.evaluate("long text")
    assert (short.passed, short.kind, short.source) == (False, CheckKind.CUSTOM, "custom_check")
    assert short.message == "custom check 'short' failed"
    assert (upper.passed, upper.message) == (False, "write it in capitals")
    assert criteria.score("OK") == 1.0


def test_a_raising_predicate_fails_its_check_only() -> None:
    def boom(_: str) -> bool:
        raise RuntimeError("kaput")

    criteria = CompletionCriteria.builder().custom_check("boom", boom).must_contain("x").build()
    boom_outcome, contain = criteria.evaluate("x")
    assert not boom_outcome.passed
    assert "RuntimeError: kaput" in boom_outcome.message
    assert contain.passed


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        (lambda b: b.must_contain(), "at least one string"),
        (lambda b: b.must_contain(""), "non-empty"),
        (lambda b: b.must_not_contain(3), "non-empty strings"),
        (lambda b: b.matches_pattern("("), "not a valid regex"),
        (lambda b: b.word_count(-1), "min must be an int >= 0"),
        (lambda b: b.word_count(5, 2), "max must be an int >= min (5)"),
        (lambda b: b.min_lines(0), "min_lines expects an int >= 1, got 0"),
        (lambda b: b.custom_check("", str.isupper), "non-empty name"),
        (lambda b: b.custom_check("x", "not callable"), "must be callable"),
        (lambda b: b.compiler_check("  "), "non-empty shell command"),
        (lambda b: b.test_command("true", timeout_s=0), "timeout_s must be a finite number > 0"),
        (lambda b: b.lint_check("true", suffix="a/b"), "suffix"),
        (lambda b: b.llm_check("Is it polite?"), "call .with_llm(client) before .llm_check"),
        (lambda b: b.with_llm(object()), "LLM client with chat()"),
        (lambda b: b.with_llm(ScriptedLLM()).llm_check("q", 85), "not a percentage"),
        (lambda b: b.build(), "at least one check"),
        (lambda b: b.must_contain("a").must_contain("a").build(), "two checks are named"),
    ],
)
def test_builder_errors_name_the_bad_value(build, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=re.escape(fragment)):
        build(CompletionCriteria.builder())


def test_config_errors_are_value_errors() -> None:
    with pytest.raises(ValueError, match="with_llm"):
        CompletionCriteria.builder().llm_check("q")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Score: 85", 0.85),
        ("SCORE: 85/100", 0.85),
        ("**SCORE:** 85.5", 0.855),
        ("Looks fine.\nscore = 7/10", 0.7),
        ("SCORE: 90%", 0.9),
        ("I was asked for SCORE: 0-100.\nSCORE: 40", 0.4),  # the last one counts
        ("SCORE: 250", 1.0),  # clamped
        ("The score of this answer is high", None),
        ("no verdict at all", None),
    ],
)
def test_parse_score_is_tolerant(reply: str, expected: float | None) -> None:
    score = parse_score(reply)
    if expected is None:
        assert score is None
    else:
        assert score == pytest.approx(expected)


def test_llm_check_passes_at_threshold_and_counts_tokens() -> None:
    judge = ScriptedLLM(
        [
            Completion("Clear.\nSCORE: 80", usage=Usage(100, 5)),
            "Unclear.\nSCORE: 79",
        ]
    )
    criteria = CompletionCriteria.builder().with_llm(judge).llm_check("Is it clear?", 0.8).build()
    [first] = criteria.evaluate("text one")
    [second] = criteria.evaluate("text two")
    assert (first.passed, first.score, first.tokens, first.kind) == (True, 0.8, 105, CheckKind.LLM)
    assert (second.passed, second.score) == (False, 0.79)
    assert second.tokens > 0  # estimated: the client reported no usage
    assert "Is it clear?" in judge.calls[0].prompt
    assert "text one" in judge.calls[0].prompt
    assert "SCORE: N" in judge.calls[0].prompt


def test_llm_check_without_score_or_with_failed_call_fails() -> None:
    judge = ScriptedLLM(["I think it is good.", RuntimeError("server down")])
    criteria = CompletionCriteria.builder().with_llm(judge).llm_check("Good?", 0.1).build()
    [no_score] = criteria.evaluate("a")
    [broken] = criteria.evaluate("a")
    assert not no_score.passed
    assert no_score.score is None
    assert "no 'SCORE: N' line" in no_score.message
    assert not broken.passed
    assert "RuntimeError: server down" in broken.message


def test_checks_run_cheapest_first_and_report_in_declaration_order() -> None:
    ran: list[str] = []

    def judge_reply(messages: list[Message], params: dict[str, Any]) -> str:
        ran.append("llm")
        return "SCORE: 100"

    def custom(output: str) -> bool:
        ran.append("custom")
        return True

    criteria = (
        CompletionCriteria.builder()
        .with_llm(ScriptedLLM(fn=judge_reply))
        .llm_check("ok?", 0.5)
        .compiler_check("true")
        .custom_check("custom", custom)
        .must_contain("x")
        .build()
    )
    outcomes = criteria.evaluate("x")
    assert [o.source for o in outcomes] == [
        "llm_check",
        "compiler_check",
        "custom_check",
        "must_contain",
    ]
    assert all(o.passed for o in outcomes)
    assert ran == ["custom", "llm"]  # custom before the judge
    assert [o.kind for o in outcomes] == [
        CheckKind.LLM,
        CheckKind.COMMAND,
        CheckKind.CUSTOM,
        CheckKind.DETERMINISTIC,
    ]


def test_llm_check_is_skipped_while_a_cheaper_check_fails() -> None:
    judge = ScriptedLLM(default="SCORE: 100")
    criteria = (
        CompletionCriteria.builder().with_llm(judge).llm_check("ok?").must_contain("needle").build()
    )
    judged, contain = criteria.evaluate("haystack")
    assert not contain.passed
    assert (judged.passed, judged.skipped) == (False, True)
    assert "skipped" in judged.message
    assert "must_contain('needle')" in judged.message
    assert judge.calls == []
    assert criteria.score("haystack") == 0.0
    judged, _ = criteria.evaluate("needle")
    assert (judged.passed, judged.skipped, len(judge.calls)) == (True, False, 1)


def test_llm_checks_always_runs_the_judge_anyway() -> None:
    judge = ScriptedLLM(default="SCORE: 100")
    criteria = (
        CompletionCriteria.builder()
        .with_llm(judge)
        .llm_check("ok?")
        .must_contain("needle")
        .llm_checks_always()
        .build()
    )
    judged, contain = criteria.evaluate("haystack")
    assert (judged.passed, judged.skipped, contain.passed) == (True, False, False)
    assert len(judge.calls) == 1
    assert criteria.score("haystack") == 0.5


def test_evaluate_rejects_non_text() -> None:
    criteria = CompletionCriteria.builder().valid_json().build()
    with pytest.raises(ConfigError, match="as a str, got dict"):
        criteria.evaluate({"a": 1})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('```json\n{"a": 1}\n```', '{"a": 1}'),
        ('\n```\n{"a": 1}\n```\n\n', '{"a": 1}'),
        ("~~~python\nx = 1\n~~~", "x = 1"),
        ("````md\nhas ``` inside\n````", "has ``` inside"),
        ("```\n```", ""),
        ("text before\n```\nx\n```", "text before\n```\nx\n```"),
        ("```\nx\n```\ntext after", "```\nx\n```\ntext after"),
        ("```\na\n```\n```\nb\n```", "```\na\n```\n```\nb\n```"),
        ("plain", "plain"),
    ],
)
def test_strip_code_fence_only_unwraps_a_whole_reply(reply: str, expected: str) -> None:
    assert strip_code_fence(reply) == expected


def test_a_failing_judge_does_not_skip_the_next_judge() -> None:
    judge = ScriptedLLM(["SCORE: 10", "SCORE: 95"])
    criteria = (
        CompletionCriteria.builder()
        .with_llm(judge)
        .llm_check("Is it funny?")
        .llm_check("Is it short?")
        .build()
    )
    funny, short = criteria.evaluate("a joke")
    assert (funny.passed, funny.skipped) == (False, False)
    assert (short.passed, short.skipped) == (True, False)
    assert len(judge.calls) == 2
