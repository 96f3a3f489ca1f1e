"""The loop with the embedded model (SmolLM2-135M via llama.cpp, greedy)."""

from __future__ import annotations

import pytest

from tnsai_eval.refinement import (
    CompletionCriteria,
    RefinementLoop,
    RefinementStatus,
    first_code_block,
)

pytestmark = pytest.mark.local_model


def test_smollm2_turns_a_draft_into_json_that_passes() -> None:
    from tnsai_eval.llm import LocalLLM

    criteria = CompletionCriteria.builder().valid_json().must_contain('"name"', '"Alice"').build()
    loop = RefinementLoop(
        "Write a JSON object describing a person named Alice who is 30 years old, "
        "with the keys name and age.",
        criteria,
        max_iterations=3,
        # Bounded replies keep this test to seconds. SmolLM2-135M answers with
        # a ```json block followed by a sentence about it, so the block is
        # taken (the default parser only unwraps a reply that is just a block).
        chat_params={"max_tokens": 40},
        reply_parser=first_code_block,
    )
    result = loop.execute(LocalLLM(), "name: Alice, age: 30")

    draft = result.iterations[0]
    assert [c.passed for c in draft.checks] == [False, False, False]
    assert result.status is RefinementStatus.SUCCESS, result.to_dataframe().to_string()
    assert result.final_score == 1.0
    assert result.metrics.score_progression[0] == 0.0
    assert not result.metrics.tokens_estimated  # llama.cpp reports usage
    assert result.metrics.total_tokens > 0
