"""The support desk agent scored from its committed replies: real trajectories, no model call.

``bench/stores/support_desk`` holds the embedded model's replies to the 48
requests of ``datasets/support_desk.jsonl`` (see bench/README.md, "Support
desk agent"). Replayed here with the desk's tools run live, exactly as
``bench/support_desk.py --replay`` runs them; the model is never loaded (a
miss raises ``ReplayMissError``). Each call of ``desk_evaluation`` scores the
48 cases afresh (about 0.1 s).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from tnsai_eval import datasets
from tnsai_eval.agents import Agent
from tnsai_eval.evaluation import TargetEvaluation, score_target
from tnsai_eval.llm import FrontClient, LLMClient, LocalLLM, smollm2_gguf_path
from tnsai_eval.scoring import (
    ContainsEvaluator,
    FinalAnswer,
    NormCompliance,
    TestCase,
    ToolCallF1,
    ToolCallMatch,
)

REPO = Path(__file__).resolve().parents[1]
STORE = REPO / "bench" / "stores" / "support_desk"
if str(REPO / "datasets") not in sys.path:
    sys.path.append(str(REPO / "datasets"))  # the desk's tools and norms
import make_support_desk as desk  # noqa: E402  (datasets/, put on the path above)

#: The metrics the desk is scored with, in this order (their names are the frames' columns).
METRICS = ("tool_calls_in_order", "tool_call_f1", "norms", "final_answer")


def replay_client() -> FrontClient:
    """The embedded model's committed replies; the model itself is never made."""
    return FrontClient(factory=LocalLLM, model=smollm2_gguf_path().stem, store=STORE,
                       mode="replay")  # fmt: skip


def desk_agent(llm: LLMClient, max_steps: int = 4) -> Callable[[], Agent]:
    """A factory of desk agents as bench/support_desk.py makes them."""

    def factory() -> Agent:
        return Agent(llm, desk.SYSTEM_PROMPT, tools=desk.TOOLS, max_steps=max_steps,
                     learning=False, llm_params={"temperature": 0.0, "max_tokens": 96},
                     send_tool_schemas=True)  # fmt: skip

    return factory


def desk_cases() -> list[TestCase]:
    return datasets.load("support_desk")


def desk_evaluation(max_steps: int = 4, cases: list[TestCase] | None = None) -> TargetEvaluation:
    """The desk's 48 cases (or ``cases``) scored with ``METRICS`` from the committed replies."""
    return score_target(
        desk_agent(replay_client(), max_steps),
        desk_cases() if cases is None else cases,
        evaluator=[ToolCallMatch("in_order", "subset"), ToolCallF1("subset"),
                   NormCompliance(desk.SupportDesk), FinalAnswer(ContainsEvaluator())],
    )  # fmt: skip
