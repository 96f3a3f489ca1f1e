"""``tnsai-eval optimize`` end to end, with a ScriptedLLM given to ``main(llm=...)``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.cli import main
from tnsai_eval.optimizer import PromptStrategy
from tnsai_eval.testing import ScriptedLLM


@pytest.fixture
def scripted_default() -> ScriptedLLM:
    # Right (one word) only when told to answer briefly; chatty otherwise.
    llm = ScriptedLLM(
        rules=[
            (r"^You improve prompts", "Answer the question."),
            (r"Be brief[\s\S]*capital of France", "Paris"),
            (r"capital of France", "The capital of France is Paris."),
            (r"Be brief[\s\S]*capital of (\w+)", "I do not know"),
        ],
        default="The capital is somewhere in the country.",
    )
    return llm


def test_optimize_writes_its_three_files(
    scripted_default: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = main(
        ["optimize", "capitals", "--strategies", "concise", "--rounds", "1", "--out", str(out)],
        llm=scripted_default,
    )
    assert code == 0
    captured = capsys.readouterr()
    printed = captured.out
    # The tqdm bar (stderr) ends full even though the run stopped below its bound.
    assert "optimize: 100%" in captured.err
    assert "rank" in printed
    assert "strategy" in printed
    assert PromptStrategy.CONCISE.value in printed
    assert "stopped: max_iterations" in printed

    results = pd.read_csv(out / "results.csv")
    assert {"round", "variant", "strategy", "case", "output", "score", "cached"} <= set(
        results.columns
    )
    # initial + concise + rewrite on the 14 selection cases; the initial and the
    # best prompt on the 6 held out.
    assert (results["split"] == "train").sum() == 3 * 14
    assert (results["split"] == "validation").sum() == 2 * 6
    assert "optimizing 'capitals': 20 cases (14 to select on, 6 held out)" in printed
    assert "held-out " in printed
    assert "training score" in printed
    rounds = pd.read_csv(out / "rounds.csv")
    assert list(rounds["round"]) == [0, 1]
    assert (out / "score_progression.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The prompt given by default for capitals, then the first selection case
    # (France is held out with seed 0).
    assert scripted_default.prompts[0] == (
        "Answer the geography question.\n\nWhat is the capital of Japan?"
    )
    assert all(
        call.params["max_tokens"] == 32
        for call in scripted_default.calls
        if not call.messages[-1].content.startswith("You improve prompts")
    )


def test_optimize_options_reach_the_optimizer(
    scripted_default: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "optimize", "capitals", "--prompt", "Capital?", "--strategies", "concise,role",
            "--search", "racing", "--no-rewrite", "--max-calls", "70", "--reply-tokens", "8",
            "--validation", "capitals", "--out", str(tmp_path), "--no-progress",
        ],
        llm=scripted_default,
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "stopped: max_calls" in printed
    # 40 of the 70 are set aside for the held-out check (the initial and the best
    # prompt on 20 cases): the search spends 30, the check what it needs (here
    # the held-out cases are the selection cases, whose replies it reuses).
    assert 30 < len(scripted_default.calls) <= 70
    assert "held-out score incomplete" not in printed
    assert scripted_default.prompts[0].startswith("Capital?\n\n")
    assert not any(p.startswith("You improve prompts") for p in scripted_default.prompts)


def test_optimize_reports_bad_input(
    scripted_default: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["optimize", "capitols", "--out", str(tmp_path)], llm=scripted_default) == 2
    assert "unknown dataset 'capitols'" in capsys.readouterr().err
    bad = ["optimize", "capitals", "--strategies", "magic", "--out", str(tmp_path)]
    assert main(bad, llm=scripted_default) == 2
    assert "prompt strategy 'magic' is not one of" in capsys.readouterr().err


def test_optimize_uses_the_datasets_evaluator_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm = ScriptedLLM(
        rules=[
            (r"^You improve prompts", "Hello! How can I help you today?"),
            (r"loved|fantastic|great|wonderful|friendly|perfect", "The review is positive."),
        ],
        default="It is negative.",
    )
    out = tmp_path / "out"
    code = main(
        [
            "optimize",
            "sentiment",
            "--strategies",
            "concise",
            "--rounds",
            "1",
            "--no-progress",
            "--out",
            str(out),
        ],
        llm=llm,
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert (
        "evaluator: label evaluator (scores are accuracy; labels: positive, negative), "
        "from sentiment.meta.json" in printed
    )
    assert "accuracy " in printed
    assert "rejected 1 model rewrite(s) that were not prompts for the task" in printed
    scores = set(pd.read_csv(out / "results.csv")["score"])
    assert scores <= {0.0, 1.0}
    assert all("response_format" not in call.params for call in llm.calls)


def test_constrain_sends_the_labels_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm = ScriptedLLM(default='{"label": "positive"}')
    code = main(
        [
            "optimize",
            "sentiment",
            "--constrain",
            "--no-rewrite",
            "--strategies",
            "concise",
            "--rounds",
            "1",
            "--no-progress",
            "--out",
            str(tmp_path / "o"),
        ],
        llm=llm,
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "replies constrained to the labels: positive, negative" in printed
    # A label dataset's scores are accuracies, and the headline says so.
    assert "\nheld-out accuracy 0.500 -> 0.500 " in printed
    schema = llm.calls[0].params["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["label"]["enum"] == ["positive", "negative"]


def test_label_evaluator_and_constrain_need_labels(
    scripted_default: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = ["optimize", "capitals", "--evaluator", "label", "--out", str(tmp_path)]
    assert main(labels, llm=scripted_default) == 2
    assert "declares none" in capsys.readouterr().err
    constrain = ["optimize", "capitals", "--constrain", "--out", str(tmp_path)]
    assert main(constrain, llm=scripted_default) == 2
    assert "constrain needs labels" in capsys.readouterr().err


# -- --rewrite-llm: another model writes the rewrites --------------------------------------


@pytest.fixture
def no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TNSAI_LLM_BASE_URL", "TNSAI_LLM_MODEL", "TNSAI_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_rewrite_llm_url_sends_the_rewrite_to_that_server(
    fake_server: FakeOpenAIServer,
    scripted_default: ScriptedLLM,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_model_env: None,
) -> None:
    # The rewrite server fails once (503), then proposes a prompt.
    fake_server.script(
        Step.error(503, retry_after="0"),
        Step.ok("Give only the capital city for this geography question."),
    )
    url = fake_server.base_url
    out = tmp_path / "out"
    code = main(
        [
            "optimize", "capitals", "--strategies", "concise", "--rounds", "1", "--no-progress",
            "--rewrite-llm", url, "--rewrite-model", "strong-rewriter", "--out", str(out),
        ],
        llm=scripted_default,
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert f"rewrites by 'strong-rewriter' at {url}" in printed
    # The request reached the rewrite server (twice: the 503 and its retry), not the task model.
    assert len(fake_server.requests) == 2
    sent = fake_server.requests[-1].json
    assert sent["model"] == "strong-rewriter"
    assert sent["messages"][-1]["content"].startswith("You improve prompts")
    assert not any(p.startswith("You improve prompts") for p in scripted_default.prompts)
    # Its proposal was scored like any variant, and its retry counted as a call.
    results = pd.read_csv(out / "results.csv")
    rewrite_rows = results[results["strategy"] == "rewrite"]
    assert len(rewrite_rows) == 14
    assert "Give only the capital city for this geography question." in printed
    task_calls = len(scripted_default.calls)
    assert f"{task_calls + 2} calls (1 retries" in printed


def test_rewrite_llm_model_name_uses_the_task_models_server(
    fake_server: FakeOpenAIServer,
    scripted_default: ScriptedLLM,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_model_env: None,
) -> None:
    fake_server.script(Step.ok("Give only the capital city for this geography question."))
    code = main(
        [
            "optimize", "capitals", "--strategies", "concise", "--rounds", "1", "--no-progress",
            "--base-url", fake_server.base_url, "--model", "task-model",
            "--rewrite-llm", "bigger-model", "--out", str(tmp_path / "out"),
        ],
        llm=scripted_default,  # the task model itself is scripted
    )  # fmt: skip
    assert code == 0
    assert f"rewrites by 'bigger-model' at {fake_server.base_url}" in capsys.readouterr().out
    assert [r.json["model"] for r in fake_server.requests] == ["bigger-model"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--rewrite-llm", "bigger-model"], "names a model, but the task model has no server"),
        (["--rewrite-llm", "ftp://me:pw@host/v1"], "'ftp://***@host/v1' is not an http"),
        (["--rewrite-llm", "http://127.0.0.1:9/v1"], "needs a model name: give --rewrite-model"),
        (["--rewrite-llm", "m", "--no-rewrite"], "--rewrite-llm has no use with --no-rewrite"),
        (["--rewrite-model", "m"], "--rewrite-model needs --rewrite-llm URL"),
        # Credentials never go in a URL (the client says so), and are not printed.
        (
            ["--rewrite-llm", "http://me:hunter2pass@127.0.0.1:9/v1", "--rewrite-model", "m"],
            "base_url must not hold credentials",
        ),
    ],
)
def test_rewrite_llm_bad_settings_exit_2_naming_them(
    arguments: list[str],
    message: str,
    scripted_default: ScriptedLLM,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_model_env: None,
) -> None:
    code = main(["optimize", "capitals", "--out", str(tmp_path), *arguments], llm=scripted_default)
    assert code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "hunter2pass" not in err
    assert scripted_default.calls == []


def test_a_label_dataset_prints_the_constant_answer_and_the_gains_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The brief prompt makes the model answer "sports" to every headline: a
    # training gain, and exactly what a constant answer scores held out.
    llm = ScriptedLLM(
        rules=[(r"^You improve prompts", ""), (r"Be brief", "sports")],
        default="It is a news headline.",
    )
    out = tmp_path / "out"
    argv = ["optimize", "headlines", "--strategies", "concise", "--rounds", "1",
            "--no-rewrite", "--no-progress", "--alpha", "0.1", "--out", str(out)]  # fmt: skip
    assert main(argv, llm=llm) == 0
    printed = capsys.readouterr().out
    headline = next(line for line in printed.splitlines() if line.startswith("held-out"))
    assert "gain +0.333, 90% CI [+" in headline
    assert "constant answer 'sports' 0.333 (majority class 0.333)" in headline
    assert headline.endswith("answers 'sports' to 21 of 21: no better than a constant answer")
    assert ": inconclusive;" in headline
    assert "(training gain) on 45 selection cases" in printed
    held_out = json.loads((out / "variants.json").read_text())["held_out"]
    assert held_out["verdict"] == "inconclusive"
    assert held_out["alpha"] == 0.1
    assert held_out["constant_baseline"]["label"] == "sports"
    assert held_out["gain_interval"][0] > 0


def test_alpha_must_be_a_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["optimize", "headlines", "--alpha", "1.5", "--out", str(tmp_path)], llm=ScriptedLLM())
    assert exited.value.code == 2
    assert "expected a level in (0, 1), got '1.5'" in capsys.readouterr().err
