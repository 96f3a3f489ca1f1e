"""Stop hooks on hand-made loop states, and one inside a real loop."""

from __future__ import annotations

import shlex
import sys

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.refinement import (
    CheckKind,
    CheckOutcome,
    CompletionCriteria,
    LoopState,
    RefinementLoop,
    RefinementStatus,
    StopHook,
)
from tnsai_eval.testing import ScriptedLLM


def outcome(source: str, passed: bool) -> CheckOutcome:
    kind = CheckKind.COMMAND if source == "compiler_check" else CheckKind.DETERMINISTIC
    return CheckOutcome(f"{source}-{passed}", passed, "", kind, source)


def state(
    scores: tuple[float, ...],
    *,
    outputs: tuple[str, ...] | None = None,
    improved: tuple[bool, ...] | None = None,
    checks: tuple[CheckOutcome, ...] = (),
) -> LoopState:
    return LoopState(
        iteration=len(scores),
        scores=scores,
        outputs=outputs or tuple(f"output {i}" for i in range(len(scores))),
        improved=improved or (False,) * len(scores),
        checks=checks,
        tokens=0,
    )


def test_on_score_above_is_inclusive() -> None:
    hook = StopHook.on_score_above(0.75)
    assert hook(state((0.5, 0.75)))
    assert not hook(state((0.9, 0.5)))  # only the latest score counts


def test_on_no_improvement_counts_revisions_only() -> None:
    hook = StopHook.on_no_improvement(2)
    assert not hook(state((0.5,)))  # the draft alone: nothing to compare
    assert not hook(state((0.5, 0.5)))
    assert hook(state((0.5, 0.5, 0.5)))
    assert not hook(state((0.5, 0.5, 0.7), improved=(False, False, True)))
    assert hook(state((0.5, 0.7, 0.6, 0.6), improved=(False, True, False, False)))


def test_on_cost_exceeds_uses_the_estimated_size_of_every_output() -> None:
    hook = StopHook.on_cost_exceeds(10)
    assert not hook(state((0.1, 0.2), outputs=("x" * 20, "y" * 20)))  # 5 + 5 tokens
    assert hook(state((0.1, 0.2, 0.3), outputs=("x" * 20, "y" * 20, "z")))  # 11


def test_on_compile_success_needs_every_compiler_check_passing() -> None:
    hook = StopHook.on_compile_success()
    assert not hook(state((0.5,), checks=(outcome("must_contain", True),)))
    assert not hook(
        state((0.5,), checks=(outcome("compiler_check", True), outcome("compiler_check", False)))
    )
    assert hook(
        state((0.5,), checks=(outcome("compiler_check", True), outcome("valid_json", False)))
    )


def test_any_and_all() -> None:
    high = StopHook.on_score_above(0.8)
    stalled = StopHook.on_no_improvement(1)
    either, both = StopHook.any(high, stalled), StopHook.all(high, stalled)
    rising = state((0.1, 0.9), improved=(False, True))
    flat_high = state((0.9, 0.9))
    flat_low = state((0.1, 0.1))
    assert (either(rising), both(rising)) == (True, False)
    assert (either(flat_high), both(flat_high)) == (True, True)
    assert (either(flat_low), both(flat_low)) == (True, False)
    assert not either(state((0.1, 0.5), improved=(False, True)))
    assert either.name == "any(on_score_above(0.8), on_no_improvement(1))"


def test_custom_hook_from_a_function() -> None:
    hook = StopHook(lambda s: s.iteration >= 3, name="three rounds")
    assert not hook(state((0.0, 0.0)))
    assert hook(state((0.0, 0.0, 0.0)))
    assert repr(hook) == "StopHook(three rounds)"


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: StopHook.on_score_above(80), "must be a number in [0, 1]"),
        (lambda: StopHook.on_score_above("high"), "must be a number in [0, 1]"),  # type: ignore[arg-type]
        (lambda: StopHook.on_no_improvement(0), "an int >= 1, got 0"),
        (lambda: StopHook.on_cost_exceeds(-1), "an int >= 0, got -1"),
        (lambda: StopHook.any(), "at least one hook"),
        (lambda: StopHook.all(lambda s: True), "expects StopHooks"),  # type: ignore[arg-type]
        (lambda: StopHook("nope"), "expects a callable"),  # type: ignore[arg-type]
    ],
)
def test_hook_errors(make, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        make()


def test_on_compile_success_stops_a_loop_once_the_code_compiles() -> None:
    compile_cmd = f"{shlex.quote(sys.executable)} -m py_compile $OUTPUT"
    criteria = (
        CompletionCriteria.builder().compiler_check(compile_cmd).must_contain("def main").build()
    )
    llm = ScriptedLLM(["x = 1\n", "never used"])
    loop = RefinementLoop("Write main().", criteria, stop_hook=StopHook.on_compile_success())
    result = loop.execute(llm, "x = (\n")
    assert result.status is RefinementStatus.STOPPED
    assert result.final_output == "x = 1\n"
    assert result.metrics.score_progression == [0.0, 0.5]
    assert len(llm.calls) == 1


def test_on_cost_exceeds_stops_a_growing_loop() -> None:
    criteria = CompletionCriteria.builder().must_contain("never").build()
    # Each reply differs (a repeated one would stop the loop by itself).
    llm = ScriptedLLM(fn=lambda messages, params: "word " * 40 + str(len(messages[-1].content)))
    loop = RefinementLoop("t", criteria, stop_hook=StopHook.on_cost_exceeds(100))
    result = loop.execute(llm, "draft")
    assert result.status is RefinementStatus.STOPPED
    # draft 2 tokens, then 51 a reply: 2 + 51 = 53 <= 100, 2 + 51 + 51 = 104 > 100.
    assert result.iteration_count == 3
    assert len(llm.calls) == 2
