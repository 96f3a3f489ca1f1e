"""One short run against the embedded SmolLM2 model (llama.cpp in process)."""

from __future__ import annotations

import pytest

from tnsai_eval import datasets
from tnsai_eval.llm import LocalLLM
from tnsai_eval.optimizer import PromptOptimizer, PromptStrategy, StopReason


@pytest.mark.local_model
def test_optimizer_runs_on_the_embedded_model() -> None:
    cases = datasets.load("capitals")[:1]
    optimizer = PromptOptimizer(
        LocalLLM(),
        max_iterations=1,
        target_score=1.0,
        candidate_strategies=[PromptStrategy.ANSWER_ONLY],
        rewrite=False,
        concurrency=2,
        call_params={"temperature": 0.0, "max_tokens": 12},
    )
    first = optimizer.optimize("Answer the geography question.", cases)
    assert first.calls == 2
    assert first.failed_calls == 0
    assert first.tokens > 0
    assert first.stop_reason in (StopReason.MAX_ITERATIONS, StopReason.TARGET_REACHED)
    outputs = [r.output for r in first.case_results]
    assert all(output and output.strip() for output in outputs)
    # "Paris" is well within a 135M model's reach.
    assert "paris" in (outputs[0] or "").lower()
    # Greedy decoding from an empty context: the same run gives the same replies.
    second = optimizer.optimize("Answer the geography question.", cases)
    assert [r.output for r in second.case_results] == outputs
    assert second.score == first.score
