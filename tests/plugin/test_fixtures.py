"""The plugin's fixtures inside pytester runs (in process)."""

from __future__ import annotations

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tests.plugin.conftest import read_json
from tnsai_eval.llm import ResponseStore

ASK = """
def test_recorded(llm, tnsai_record):
    reply = llm.chat("What is the capital of France?")
    tnsai_record("score", 1.0 if reply.text == "Paris" else 0.0)
"""

MISS = """
def test_not_recorded(llm):
    llm.chat("A question nobody recorded")
"""


def test_llm_records_then_replays_without_the_model(
    pytester: pytest.Pytester, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TNSAI_LLM_API_KEY", "sk-secret-test-key")
    pytester.makepyfile(test_ask=ASK)
    model = ["--llm-base-url", server.base_url, "--llm-model", "fake", "--llm-store", "store"]

    recorded = pytester.runpytest_inprocess(*model, "--llm-record", "record")
    recorded.assert_outcomes(passed=1)
    assert len(server.requests) == 1
    # The key comes from the environment only, and never reaches the store.
    assert server.requests[0].headers["authorization"] == "Bearer sk-secret-test-key"
    files = list((pytester.path / "store").rglob("*.json"))
    # One cassette per test, named by its node id.
    assert files == [ResponseStore(pytester.path / "store").cassette_path(
        "test_ask.py::test_recorded")]  # fmt: skip
    assert "sk-secret" not in files[0].read_text()

    server.reset(default=Step.error(500))  # a model call now would fail loudly
    pytester.makepyfile(test_miss=MISS)
    replayed = pytester.runpytest_inprocess(
        *model, "--llm-record", "replay", "--tnsai-report", "r.json"
    )
    replayed.assert_outcomes(passed=1, failed=1)
    assert server.requests == []
    replayed.stdout.fnmatch_lines(["*ReplayMissError: no recorded response for model 'fake'*"])
    report = read_json(pytester.path / "r.json")
    assert report["config"]["record_mode"] == "replay"
    assert report["config"]["model"] == "fake"
    by_id = {t["nodeid"]: t for t in report["tests"]}
    assert by_id["test_ask.py::test_recorded"]["cache_hits"] == 1
    assert by_id["test_ask.py::test_recorded"]["metrics"]["score"]["mean"] == 1.0
    assert by_id["test_miss.py::test_not_recorded"]["status"] == "failed"
    assert "sk-secret" not in (pytester.path / "r.json").read_text()

    # With --tnsai-repeat each sample has its own recording: sample 0 replays,
    # sample 1 is new and asks the model.
    server.reset(default=Step.ok("Paris"))
    repeated = pytester.runpytest_inprocess(
        *model, "--llm-record", "record", "--tnsai-repeat", "2", "test_ask.py"
    )
    repeated.assert_outcomes(passed=1)
    assert len(server.requests) == 1
    assert len(ResponseStore(pytester.path / "store")) == 2

    # Off: the model is asked every time and the store is left alone.
    server.reset(default=Step.ok("Paris"))
    direct = pytester.runpytest_inprocess(*model, "--llm-record", "off", "test_ask.py")
    direct.assert_outcomes(passed=1)
    assert len(server.requests) == 1
    assert len(ResponseStore(pytester.path / "store")) == 2


EVALUATE = """
import pytest
from tnsai_eval.errors import LLMError
from tnsai_eval.optimizer import TestCase

CASES = [
    ("What is the capital of France?", "Paris"),
    TestCase("What is the capital of Italy?", "Rome"),
    {"input": "What is the capital of Spain?", "expected": "Madrid"},
]


def test_result_has_scores_and_a_frame(evaluate_prompt):
    result = evaluate_prompt("Answer in one word.", CASES)
    assert result.scores[:2] == (1.0, 1.0)
    assert result.scores[2] < 0.5
    assert result.mean_score == pytest.approx(sum(result.scores) / 3)
    frame = result.to_dataframe()
    assert list(frame.columns[:4]) == ["input", "expected", "output", "score"]
    assert frame["output"].tolist()[2] == "Lisbon"


def test_min_score_met(evaluate_prompt):
    evaluate_prompt("Answer in one word.", CASES[:2], min_score=0.9, name="capitals")


def test_min_score_missed_lists_the_worst_cases(evaluate_prompt):
    evaluate_prompt("Answer in one word.", CASES, min_score=0.9)


def test_a_failed_call_fails_after_scoring_the_rest(evaluate_prompt, llm):
    llm.add_replies(LLMError("server on fire"))
    evaluate_prompt("Answer in one word.", CASES[:2], concurrency=1)


class RaisesOnRome:
    def evaluate(self, actual, expected):
        if expected == "Rome":
            raise ValueError("cannot judge Rome")
        return 1.0 if actual == expected else 0.0


def test_an_evaluator_raising_on_one_case_fails_after_scoring_the_rest(evaluate_prompt):
    evaluate_prompt("Answer in one word.", CASES[:2], evaluator=RaisesOnRome())


def test_dataset_file(evaluate_prompt):
    from pathlib import Path

    Path("cases.jsonl").write_text(
        '{"input": "What is the capital of France?", "expected": "Paris"}\\n'
    )
    assert evaluate_prompt("Answer in one word.", Path("cases.jsonl")).scores == (1.0,)


def test_prompt_optimizer(prompt_optimizer):
    result = prompt_optimizer.optimize("Answer in one word.", [CASES[1]])
    assert result.score == 1.0


def test_feedback_store(feedback_store):
    from tnsai_eval.feedback import Feedback

    feedback_store.save(Feedback.correction("Use metric units"))
    assert feedback_store.count() == 1


def test_each_test_gets_a_fresh_store(feedback_store):
    assert feedback_store.count() == 0
"""


def test_evaluate_prompt_and_feedback_store(scripted: pytest.Pytester) -> None:
    scripted.makepyfile(test_eval=EVALUATE)
    result = scripted.runpytest_inprocess("--tnsai-report", "r.json")
    result.assert_outcomes(passed=6, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*prompt scored 0.* < min_score 0.9 over 3 case(s)",
            "*worst 3:",
            "*input*expected*output*score",
            "*What is the capital of Spain?*Madrid*Lisbon*0.*",
            "*1 of 2 case(s) failed to run",
            "*LLMError: server on fire*",
            "*1 of 2 case(s) failed to run",
            "*'What is the capital of Italy?': evaluator ValueError: cannot judge Rome",
        ]
    )
    tests = {t["nodeid"].split("::")[1]: t for t in read_json(scripted.path / "r.json")["tests"]}
    assert tests["test_min_score_met"]["metrics"]["capitals"]["mean"] == 1.0
    assert tests["test_min_score_met"]["calls"] == 2
    assert tests["test_prompt_optimizer"]["calls"] >= 1  # the optimizer's calls are metered
    assert tests["test_min_score_missed_lists_the_worst_cases"]["status"] == "failed"
    # The failed call still left the other case's score in the report.
    assert tests["test_a_failed_call_fails_after_scoring_the_rest"]["metrics"]["score"][
        "mean"
    ] == pytest.approx(0.5)
    # An evaluator raising on one case is that case's error, as in the optimizer
    # (it used to escape as an exception and lose the other case's score).
    raising = tests["test_an_evaluator_raising_on_one_case_fails_after_scoring_the_rest"]
    assert raising["status"] == "failed"
    assert raising["metrics"]["score"]["mean"] == pytest.approx(0.5)


def test_tnsai_record_rejects_bad_values(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="def test_bad(tnsai_record):\n    tnsai_record('score', 'high')\n\n"
        "def test_nan(tnsai_record):\n    tnsai_record('score', float('nan'))\n"
    )
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*metric 'score': sample 'high' is not a number*"])
    result.stdout.fnmatch_lines(["*metric 'score': sample nan is not finite*"])


def test_plugin_disabled_costs_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:tnsai")
    result.assert_outcomes(passed=1)
    assert "tnsai-eval" not in result.stdout.str()
    untouched = pytester.runpytest_inprocess()
    assert "== tnsai-eval ==" not in untouched.stdout.str()  # no section when unused


def test_a_replay_miss_says_how_to_record(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    pytester.makepyfile(test_miss="def test_miss(llm):\n    llm.chat('never recorded')\n")
    result = pytester.runpytest_inprocess("--llm-base-url=http://127.0.0.1:9/v1", "--llm-model=m")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ReplayMissError: no recorded response for model*'never recorded'*",
            "*tnsai: the `llm` fixture is in replay mode (CI=true); record the reply with "
            "`pytest --llm-record record` against a model and commit tests/llm-responses",
        ]
    )


REPEATED = """
def test_capitals(evaluate_prompt):
    evaluate_prompt("Name the capital.", [("France?", "Paris"), ("Italy?", "Rome")])
"""


def test_evaluate_prompt_gives_each_repeat_sample_its_own_recording(
    pytester: pytest.Pytester, server: FakeOpenAIServer
) -> None:
    # --tnsai-repeat measures run-to-run spread: a sample that replayed sample
    # 0's recording would report no spread at all.
    pytester.makepyfile(test_repeat=REPEATED)
    model = ["--llm-base-url", server.base_url, "--llm-model", "fake", "--llm-store", "store"]
    server.reset(default=Step.ok("Paris"))
    pytester.runpytest_inprocess(*model, "--llm-record", "record").assert_outcomes(passed=1)
    assert len(server.requests) == 2

    server.reset(default=Step.ok("Paris"))
    repeated = pytester.runpytest_inprocess(*model, "--llm-record", "record", "--tnsai-repeat", "3")
    repeated.assert_outcomes(passed=1)
    # Sample 0 replays; samples 1 and 2 each ask the model for both cases.
    assert len(server.requests) == 4
    assert len(ResponseStore(pytester.path / "store")) == 6
