"""Variants beyond one user message: demo search (bootstrapped, chat and inline),
system messages and response_format, best_messages; racing on constructed ties;
the rewrite step (failures shown, its own model)."""

from __future__ import annotations

from typing import Any

from tests.optimizer.conftest import REWRITE_MARK, split_message
from tnsai_eval.llm import Message
from tnsai_eval.optimizer import (
    ContainsEvaluator,
    Demo,
    PromptOptimizer,
    PromptStrategy,
    PromptVariant,
    TestCase,
    VariantStatus,
)
from tnsai_eval.optimizer._racing import rung_sizes, surely_worse
from tnsai_eval.optimizer._run import example_order
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


# -- racing on constructed ties ------------------------------------------------------------


def test_surely_worse_needs_enough_cases_and_a_bound_below_zero() -> None:
    assert not surely_worse([0.0] * 200)  # a tie, however long
    assert not surely_worse([-1.0] * 7)  # too few cases
    assert surely_worse([-1.0] * 8)
    assert not surely_worse([-0.5] * 10 + [0.5] * 10)  # behind on some, ahead on others


def test_a_challenger_that_ties_early_and_wins_later_is_kept() -> None:
    # The defect: racing dropped any challenger not ahead on the first rung.
    n, seed = 16, 4
    order = example_order(n, seed)
    first = {f"q{i + 1}" for i in order[: rung_sizes(n)[0]]}

    def reply(messages: list[Message], params: dict[str, Any]) -> str:
        text = messages[-1].content
        if text.startswith(REWRITE_MARK):
            return ""
        prompt, case_input = split_message(text)
        # CONCISE ties the initial prompt on the first rung, then wins every case.
        if "Be brief" in prompt and case_input not in first:
            return f"a{case_input[1:]}"
        return "no idea"

    results = {}
    for search in ("exhaustive", "racing"):
        results[search] = PromptOptimizer(
            ScriptedLLM(fn=reply),
            candidate_strategies=[S.CONCISE, S.ANSWER_ONLY],
            search=search,
            split=None,
            seed=seed,
            max_iterations=1,
        ).optimize("P", numbered(n))
    assert results["racing"].best_prompt == results["exhaustive"].best_prompt
    assert results["racing"].best_prompt == S.CONCISE.apply("P")
    # Small dataset, ties everywhere: racing drops nothing and costs what exhaustive costs.
    assert results["racing"].calls == results["exhaustive"].calls
    assert all(v.status is VariantStatus.SCORED for v in results["racing"].variants)


def test_racing_says_when_it_declined_to_eliminate() -> None:
    def reply(messages: list[Message], params: dict[str, Any]) -> str:
        text = messages[-1].content
        if text.startswith(REWRITE_MARK):
            return ""
        prompt, case_input = split_message(text)
        number = int(case_input[1:])
        # The initial prompt is right on every fourth case; CONCISE on none.
        return f"a{number}" if prompt == "P" and number % 4 == 0 else "no idea"

    result = PromptOptimizer(
        ScriptedLLM(fn=reply),
        candidate_strategies=[S.CONCISE],
        search="racing",
        split=None,
        max_iterations=1,
    ).optimize("P", numbered(12))
    note = result.history[1].racing_note
    assert note is not None
    assert note.startswith("racing declined to eliminate 1 challenger(s) behind but not surely")
    assert "(bound +-1.36 at 4 cases)" in note
    assert result.variants[1].status is VariantStatus.SCORED


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
