"""A variant's system message, demo turns and response_format show everywhere:
the result records, the frames, the plots and the files ``tnsai-eval optimize --out`` writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd
import pytest

from tnsai_eval import frames, plots
from tnsai_eval.cli import main
from tnsai_eval.llm import Message
from tnsai_eval.optimizer import OptimizationResult, PromptOptimizer, PromptStrategy, PromptVariant
from tnsai_eval.scoring import ExactMatchEvaluator, TestCase
from tnsai_eval.testing import ScriptedLLM

matplotlib.use("Agg")

FORMAT = {"type": "json_object"}
SYSTEM = "You answer with one word."


def right_after_a_demo(messages: list[Message], params: dict[str, Any]) -> str:
    """Right only when the request shows at least one demo turn."""
    case_input = messages[-1].content.rsplit("\n\n", 1)[-1]
    if any(m.role == "assistant" for m in messages):
        return f"a{case_input[1:]}"
    return "no idea"


@pytest.fixture(scope="module")
def result() -> OptimizationResult:
    start = PromptVariant("Answer.", system=SYSTEM, response_format=FORMAT)
    cases = [TestCase(f"q{i}", f"a{i}") for i in range(1, 11)]
    return PromptOptimizer(
        ScriptedLLM(fn=right_after_a_demo),
        candidate_strategies=[PromptStrategy.CONCISE],
        rewrite=False,
        demo_sets=1,
        few_shot_examples=2,
        evaluator=ExactMatchEvaluator(),
        split=None,
        max_iterations=1,
        target_score=1.0,
    ).optimize(start, cases)


def test_the_records_carry_the_whole_variant(result: OptimizationResult) -> None:
    demos = next(v for v in result.variants if v.strategy == "demos")
    assert demos.became_best
    assert (demos.system, demos.response_format, demos.demo_style) == (SYSTEM, FORMAT, "chat")
    assert len(demos.demos) == 2
    data = demos.to_dict()
    json.dumps(data)  # plain data
    assert data["system"] == SYSTEM
    assert data["response_format"] == FORMAT
    assert data["demos"] == [
        {"input": d.input, "output": d.output, "bootstrapped": d.bootstrapped} for d in demos.demos
    ]
    assert data["details"] == "system message; 2 demo(s) as chat; response_format json_object"
    assert result.best_spec == demos.spec


def test_the_frames_show_system_demos_and_response_format(result: OptimizationResult) -> None:
    board = frames.leaderboard(result)
    top = board.iloc[0]
    assert top["strategy"] == "demos"
    assert top["system"] == SYSTEM
    assert json.loads(top["response_format"]) == FORMAT
    first = result.variants[-1].demos[0]
    assert top["demos"].startswith(f"chat: {first.input} -> {first.output}")
    assert top["details"] == "system message; 2 demo(s) as chat; response_format json_object"
    initial = board[board["strategy"] == "initial"].iloc[0]
    assert initial["demos"] == ""
    assert initial["details"] == "system message; response_format json_object"

    cases = frames.optimizer_cases(result)
    assert set(cases.loc[cases["strategy"] == "demos", "details"]) == {top["details"]}
    scores = frames.variant_scores(result)
    assert scores.set_index("strategy").loc["demos", "details"] == top["details"]

    variants = result.variants_dataframe()
    row = variants[variants["strategy"] == "demos"].iloc[0]
    assert row["system"] == SYSTEM
    assert json.loads(row["response_format"]) == FORMAT
    assert row["demos"].startswith(f"{first.input} -> {first.output}")


def test_the_plots_name_the_details(result: OptimizationResult) -> None:
    figure = plots.plot_optimizer_rounds(result)
    box = figure.axes[0].get_legend()
    assert box is not None
    legend = [t.get_text() for t in box.get_texts()]
    assert "demos [system message; 2 demo(s) as chat; response_format json_object]" in legend
    assert "initial [system message; response_format json_object]" in legend
    heatmap = plots.plot_variant_case_heatmap(result)
    rows = [t.get_text() for t in heatmap.axes[0].get_yticklabels()]
    assert any(r.startswith("r1 v2 demos [system message; 2 demo(s)") for r in rows)


def test_optimize_out_writes_every_variant_in_full(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Replies with the bare label only after a demo turn; the labels come from
    # sentiment.meta.json (label evaluator).
    def reply(messages: list[Message], params: dict[str, Any]) -> str:
        if messages[-1].content.startswith("You improve prompts"):
            return ""
        shown = [m.content for m in messages if m.role == "assistant"]
        return shown[0] if shown else "I cannot tell."

    out = tmp_path / "out"
    code = main(
        [
            "optimize", "sentiment", "--strategies", "concise", "--rounds", "1",
            "--demo-sets", "2", "--no-progress", "--out", str(out),
        ],
        llm=ScriptedLLM(fn=reply),
    )  # fmt: skip
    assert code == 0
    assert f"{out / 'variants.json'}" in capsys.readouterr().out
    written = json.loads((out / "variants.json").read_text())
    by_strategy = {v["strategy"]: v for v in written["variants"]}
    assert set(by_strategy) >= {"initial", "concise", "demos", "demos_inline"}
    chat = by_strategy["demos"]
    assert chat["spec"]["demo_style"] == "chat"
    assert len(chat["demos"]) == 3
    assert all(set(d) == {"input", "output", "bootstrapped"} for d in chat["demos"])
    assert chat["details"].startswith("3 demo(s) as chat")
    assert written["best_variant"] in {v["id"] for v in written["variants"]}
    results = pd.read_csv(out / "results.csv", keep_default_na=False)
    assert "3 demo(s) as chat" in set(results["details"])
