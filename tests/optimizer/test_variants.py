"""Variants beyond one user message: demo search (bootstrapped, chat and inline),
system messages and response_format, best_messages; the rewrite step (failures shown,
its own model). Racing's elimination rule is in test_racing.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.optimizer.conftest import REWRITE_MARK, split_message
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Message
from tnsai_eval.optimizer import Demo, PromptOptimizer, PromptStrategy, PromptVariant, VariantStatus
from tnsai_eval.optimizer._run import example_order
from tnsai_eval.scoring import ContainsEvaluator, LabelEvaluator, TestCase
from tnsai_eval.testing import ScriptedLLM

S = PromptStrategy


def numbered(n: int) -> list[TestCase]:
    return [TestCase(f"q{i}", f"a{i}") for i in range(1, n + 1)]


def demo_aware(messages: list[Message], params: dict[str, Any]) -> str:
    """Right ("answer a7") when shown at least one demo turn, or on odd cases anyway."""
    text = messages[-1].content
    if text.startswith(REWRITE_MARK):
        return ""
    _prompt, case_input = split_message(text)
    number = int(case_input[1:])
    if any(m.role == "assistant" for m in messages) or number % 2:
        return f"answer a{number}"
    return "no idea"


def test_demo_search_bootstraps_correct_replies_as_chat_turns() -> None:
    llm = ScriptedLLM(fn=demo_aware)
    result = PromptOptimizer(
        llm,
        candidate_strategies=[],
        rewrite=False,
        demo_sets=2,
        few_shot_examples=2,
        evaluator=ContainsEvaluator(),
        split=None,
        concurrency=1,
        max_iterations=1,
    ).optimize("P", numbered(10))
    chat = next(v for v in result.variants if v.strategy == "demos")
    inline = next(v for v in result.variants if v.strategy == "demos_inline")
    # The first set is drawn from the model's own correct replies (odd cases).
    assert all(
        d.bootstrapped and d.output == f"answer {d.input.replace('q', 'a')}" for d in chat.demos
    )
    assert all(int(d.input[1:]) % 2 for d in chat.demos)
    assert (chat.demo_style, inline.demo_style) == ("chat", "inline")
    assert inline.demos == chat.demos
    assert chat.score == 1.0
    assert result.best_variant == chat.id
    assert "Input: " in inline.prompt
    assert "Input: " not in chat.prompt
    # best_prompt stays the instruction; best_messages is the whole variant.
    assert result.best_prompt == "P"
    sent = result.best_messages("q4")
    assert [m.role for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    assert sent[-1].content == "P\n\nq4"
    assert result.best_spec == chat.spec


def test_racing_with_a_demo_search_bootstraps_from_every_case() -> None:
    # Racing scores the starting prompt on the first rung only, except when
    # the demo search needs its correct replies: they are the bootstrapped
    # demos' pool, so it is scored on every selection case first. Here it is
    # right on the cases of the racing order's second half only, none of
    # which is in the first rung.
    order = example_order(40, seed=0)
    right = {i + 1 for i in order[20:]}

    def reply(messages: list[Message], params: dict[str, Any]) -> str:
        number = int(split_message(messages[-1].content)[1][1:])
        shown = any(m.role == "assistant" for m in messages) or "Input: " in messages[-1].content
        return f"answer a{number}" if shown or number in right else "no idea"

    result = PromptOptimizer(
        ScriptedLLM(fn=reply),
        candidate_strategies=[],
        rewrite=False,
        demo_sets=2,
        few_shot_examples=2,
        evaluator=ContainsEvaluator(),
        search="racing",
        split=None,
        concurrency=1,
        max_iterations=1,
    ).optimize("P", numbered(40))
    assert result.history[0].racing_note is None
    chat = next(v for v in result.variants if v.strategy == "demos")
    assert len(chat.demos) == 2
    assert all(d.bootstrapped and int(d.input[1:]) in right for d in chat.demos)
    # Every demo set beats the starting prompt, which racing then drops; it
    # was scored on every case, so its record keeps a (complete) score.
    initial = result.variants[0]
    assert (initial.status, initial.cases_scored, initial.score) == (
        VariantStatus.DROPPED,
        40,
        0.5,
    )
    assert result.initial_cases == 40
    assert (result.best_variant, result.score) == (chat.id, 1.0)


def test_a_case_is_never_scored_with_itself_as_a_demo() -> None:
    llm = ScriptedLLM(fn=demo_aware)
    PromptOptimizer(
        llm,
        candidate_strategies=[S.FEW_SHOT],
        rewrite=False,
        demo_sets=4,
        few_shot_examples=3,
        split=None,
        concurrency=1,
        max_iterations=2,
        target_score=1.0,
    ).optimize("P", numbered(8))
    demo_calls = 0
    for call in llm.calls:
        _prompt, case_input = split_message(call.messages[-1].content)
        shown = [split_message(m.content)[1] for m in call.messages[:-1] if m.role == "user"]
        assert case_input not in shown
        assert f"Input: {case_input}\n" not in call.messages[-1].content
        demo_calls += len(shown) > 0 or "Input: " in call.messages[-1].content
    assert demo_calls > 0


def test_few_shot_inline_leaves_the_case_out_of_its_own_examples() -> None:
    cases = numbered(6)
    llm = ScriptedLLM(default="x")
    result = PromptOptimizer(
        llm, candidate_strategies=[S.FEW_SHOT], rewrite=False, split=None, seed=5
    ).optimize("P", cases)
    few = result.variants[1]
    assert few.demo_style == "inline"
    shown = {d.input for d in few.demos}
    for call in llm.calls:
        case_input = call.messages[-1].content.rsplit("\n\n", 1)[1]
        if case_input in shown and "Examples:" in call.messages[-1].content:
            assert f"Input: {case_input}\n" not in call.messages[-1].content


def test_a_system_message_and_response_format_travel_with_the_variant() -> None:
    fmt = {"type": "json_object"}
    llm = ScriptedLLM(default="{}")
    start = PromptVariant("Reply in JSON.", system="You are terse.", response_format=fmt)
    result = PromptOptimizer(
        llm,
        candidate_strategies=[S.CONCISE],
        rewrite=False,
        split=None,
        max_iterations=1,
        target_score=1.0,
    ).optimize(start, [TestCase("x", "{}"), TestCase("y", "a list")])
    for call in llm.calls:
        assert call.messages[0] == Message("system", "You are terse.")
        assert call.params["response_format"] == fmt
    record = result.variants[1]
    assert (record.system, record.response_format) == ("You are terse.", fmt)
    assert record.spec.instruction == S.CONCISE.apply("Reply in JSON.")
    frame = result.variants_dataframe()
    assert {"system", "demos", "demo_style", "response_format"} <= set(frame.columns)
    assert result.best_messages("z")[0].role == "system"


def test_variant_record_spec_round_trips_inline_demos() -> None:
    spec = PromptVariant("Add.", demos=(Demo("1 + 1", "2"),), demo_style="inline")
    llm = ScriptedLLM(default="2")
    result = PromptOptimizer(llm, split=None).optimize(spec, [TestCase("2 + 0", "2")])
    assert result.variants[0].spec == spec
    assert result.best_prompt == spec.prompt_text()


# -- the rewrite step ----------------------------------------------------------------------


def test_the_rewrite_uses_its_own_model_and_sees_failures_first() -> None:
    def task(messages: list[Message], params: dict[str, Any]) -> str:
        prompt, case_input = split_message(messages[-1].content)
        if "Say only" in prompt or case_input == "q1":
            return f"a{case_input[1:]}"
        return "no idea"

    rewriter = ScriptedLLM(default="Say only the answer.")
    task_llm = ScriptedLLM(fn=task)
    result = PromptOptimizer(
        task_llm,
        candidate_strategies=[],
        rewrite_llm=rewriter,
        split=None,
        concurrency=1,
        max_iterations=1,
    ).optimize("P", numbered(6))
    assert not any(c.messages[-1].content.startswith(REWRITE_MARK) for c in task_llm.calls)
    (request,) = rewriter.calls
    text = request.messages[-1].content
    assert request.params["max_tokens"] == 256
    # The failures (q2..q5 by worst score, then index) are shown; q1, right, is not.
    assert "Input: q2\nExpected: a2\nGot: no idea" in text
    assert "Input: q1\n" not in text
    assert result.best_prompt == "Say only the answer."
    assert result.calls == 6 + 1 + 6  # the rewrite model's call counts too


# -- the LABELS strategy: the answer format from the task's labels ---------------------------


def test_labels_states_the_declared_labels_or_the_cases_closed_set() -> None:
    cases = [
        TestCase("great", "positive"),
        TestCase("awful", "negative"),
        TestCase("ok", "positive"),
    ]
    assert S.LABELS.apply("Classify.", labels=["yes", "no"]).endswith(
        "Answer with one word: yes or no."
    )
    assert S.LABELS.apply("Classify.", cases).endswith(
        "Answer with one word: positive or negative."
    )
    many = ["very good", "bad", "neutral"]
    assert S.LABELS.apply("Rate.", labels=many).endswith(
        "Answer with only one of these labels: very good, bad or neutral."
    )
    # Open answers (arithmetic) are no labels: unchanged, so never scored as a variant.
    assert S.LABELS.apply("Add.", [TestCase("1 + 1", "2"), TestCase("2 + 2", "4")]) == "Add."
    once = S.LABELS.apply("Classify.", labels=["yes", "no"])
    assert S.LABELS.apply(once, labels=["yes", "no"]) == once  # idempotent


def test_the_optimizer_takes_the_label_evaluators_labels() -> None:
    llm = ScriptedLLM(rules=[(r"one word: yes or no", "yes")], default="Well, maybe yes or no.")
    optimizer = PromptOptimizer(
        llm,
        candidate_strategies=[S.LABELS],
        evaluator=LabelEvaluator(["yes", "no"]),
        rewrite=False,
        split=None,
        max_iterations=1,
    )
    assert optimizer.config.labels == ("yes", "no")
    result = optimizer.optimize("Answer.", [TestCase("q1", "yes"), TestCase("q2", "yes")])
    assert result.best_prompt == "Answer.\n\nAnswer with one word: yes or no."
    assert (result.initial_score, result.score) == (0.0, 1.0)
    explicit = PromptOptimizer(llm, labels=["no", "yes"], evaluator=LabelEvaluator(["yes", "no"]))
    assert explicit.config.labels == ("no", "yes")
    with pytest.raises(ConfigError, match="labels must be a sequence of non-empty strings"):
        PromptOptimizer(llm, labels="yes,no")
