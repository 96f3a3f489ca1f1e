"""compare_models: one prompt, one dataset, several models on fake servers; and score_vs_cost.

Two OpenAI-compatible fake servers on 127.0.0.1 stand for two named models:
"big" answers every capital and is priced high, "small" gets Spain and Japan
wrong, is cheap, and adds a known delay to each reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.capital_servers import DELAY_S, RIGHT, capital_servers
from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval import compare_models, frames, plots
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import MODEL_CASE_COLUMNS, MODEL_SUMMARY_COLUMNS
from tnsai_eval.llm import ModelTable
from tnsai_eval.scoring import ExactMatchEvaluator

CASES = [(f"What is the capital of {c}?", a) for c, a in RIGHT.items()]


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with capital_servers() as pair:
        yield pair


def table(big: FakeOpenAIServer, small: FakeOpenAIServer) -> ModelTable:
    return ModelTable.from_mapping(
        {
            "big": {
                "base_url": big.base_url,
                "model": "m-big",
                "price_in": 10,
                "price_out": 30,
                "api_key_env": "BIG_MODEL_KEY",
            },
            "small": {
                "base_url": small.base_url,
                "model": "m-small",
                "price_in": 0.1,
                "price_out": 0.2,
            },
        }
    )


def test_one_row_per_model_and_case_and_a_summary_per_model(
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BIG_MODEL_KEY", "sk-big-model-key-0000")
    frame = compare_models(
        "Answer with the city only.", CASES, ["big", "small"], table=table(*servers),
        evaluator=ExactMatchEvaluator(), progress=False,
    )  # fmt: skip
    assert list(frame.columns) == list(MODEL_CASE_COLUMNS)
    assert len(frame) == 8
    assert frame.groupby("model", sort=False)["score"].mean().to_dict() == {
        "big": 1.0,
        "small": 0.5,
    }
    small = frame[frame["model"] == "small"]
    assert small["output"].tolist() == ["Paris", "Rome", "Lisbon", "Kyoto"]
    assert small["passed"].tolist() == [True, True, False, False]
    # The paired verdict, as pytest's --tnsai-compare-models gives it: small broke 2 cases.
    verdict = frames.model_verdict(frame)
    assert verdict.startswith("small against big, case by case:")
    assert "2/0" in verdict

    summary = frames.model_summary(frame)
    assert list(summary.columns) == list(MODEL_SUMMARY_COLUMNS)
    assert summary["model"].tolist() == ["big", "small"]
    big_row, small_row = summary.to_dict("records")
    assert (big_row["score"], small_row["score"]) == (1.0, 0.5)
    assert small_row["score_low"] < 0.5 < small_row["score_high"] <= 1.0
    assert (small_row["pass_rate"], small_row["live_calls"]) == (0.5, 4)
    # Tokens come from the servers' usage; the cost from them at each model's prices.
    assert min(big_row["tokens_in"], big_row["tokens_out"]) > 0
    expected = (big_row["tokens_in"] * 10 + big_row["tokens_out"] * 30) / 1e6
    assert big_row["cost"] == pytest.approx(expected)
    assert small_row["cost"] < big_row["cost"]
    # Each small reply waited the server's delay: a lower bound, never a flaky upper one.
    assert small_row["latency_p50_s"] >= DELAY_S
    assert small_row["latency_p95_s"] >= small_row["latency_p50_s"]


def test_a_missing_key_or_unknown_name_fails_before_any_call(
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BIG_MODEL_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"\$BIG_MODEL_KEY is not set"):
        compare_models("Answer.", CASES, ["small", "big"], table=table(*servers), progress=False)
    with pytest.raises(ConfigError, match="unknown model name 'huge'"):
        compare_models("Answer.", CASES, ["small", "huge"], table=table(*servers), progress=False)
    with pytest.raises(ConfigError, match="no_such_dataset"):
        compare_models("Answer.", "no_such_dataset", ["small"], table=table(*servers))
    assert [len(s.requests) for s in servers] == [0, 0]


def test_replayed_replies_have_no_latency(
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer], tmp_path: Path
) -> None:
    models = table(*servers)
    options = {"table": models, "store": tmp_path / "store", "progress": False}
    compare_models("Answer.", CASES, ["small"], record_mode="record", **options)
    servers[1].reset(default=Step.error(500))  # a live call now would fail its case
    replayed = frames.model_summary(
        compare_models("Answer.", CASES, ["small"], record_mode="replay", **options)
    )
    assert servers[1].requests == []
    row = replayed.to_dict("records")[0]
    assert (row["live_calls"], row["latency_p50_s"], row["latency_p95_s"]) == (0, None, None)
    assert row["tokens_in"] > 0  # the recorded usage still counts towards tokens and cost


def test_per_model_params_and_clients_under_labels() -> None:
    from tnsai_eval.testing import ScriptedLLM

    scripted = ScriptedLLM(default="Paris")
    frame = compare_models(
        "Answer.", CASES[:1], {"short": scripted, "long": scripted},
        model_params={"short": {"max_tokens": 4}}, progress=False,
    )  # fmt: skip
    assert frame["model"].tolist() == ["short", "long"]
    assert [c.params["max_tokens"] for c in scripted.calls] == [4, 128]
    with pytest.raises(ConfigError, match="model_params names"):
        compare_models("A.", CASES, {"a": scripted}, model_params={"b": {}}, progress=False)
    with pytest.raises(ConfigError, match="no model summary"):
        frames.model_summary(frame[["model"]].reset_index().pipe(lambda f: type(f)(f.to_dict())))


def test_score_vs_cost_draws_intervals_and_the_frontier() -> None:
    import pandas as pd

    summary = pd.DataFrame(
        [
            ("cheap", 4, 0.5, 0.2, 0.8, 0.5, 0, 100, 10, 0.001, 4, 0.1, 0.2),
            ("mid", 4, 0.4, 0.1, 0.7, 0.5, 0, 100, 10, 0.002, 4, 0.1, 0.2),
            ("dear", 4, 0.9, 0.7, 1.0, 1.0, 0, 100, 10, 0.010, 4, 0.1, 0.2),
        ],
        columns=list(MODEL_SUMMARY_COLUMNS),
    )
    fig = plots.score_vs_cost(summary)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "estimated cost"
    frontier = next(line for line in ax.get_lines() if line.get_label() == "cost/score frontier")
    # "mid" costs more than "cheap" and scores less: it is not on the frontier.
    assert np.asarray(frontier.get_xdata()).tolist() == [0.001, 0.010]
    assert np.asarray(frontier.get_ydata()).tolist() == [0.5, 0.9]
    assert sorted(t.get_text() for t in ax.texts) == ["cheap", "dear", "mid"]
    assert plots.cost_frontier([("a", 1.0, 0.5), ("b", 1.0, 0.7)]) == ["b"]
    # Without prices everywhere the x axis is tokens, which every model has.
    unpriced = summary.assign(cost=[float("nan"), 0.002, 0.01])
    assert plots.score_vs_cost(unpriced).axes[0].get_xlabel() == "tokens (in + out)"
