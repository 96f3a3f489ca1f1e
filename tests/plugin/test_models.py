"""Named models: --tnsai-model (ids, records, recordings, gate), --tnsai-compare-models, prices.

Two fake OpenAI-compatible servers on 127.0.0.1 stand for two models: "old"
knows all four capitals; "new" gets Spain and Japan wrong. Everything the
tests assert about which cases flipped follows from that.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step, completion_body
from tests.plugin.conftest import read_json
from tnsai_eval.reports import format_cost

RIGHT = {"France": "Paris", "Italy": "Rome", "Spain": "Madrid", "Japan": "Tokyo"}
WRONG_ON = {"Spain": "Lisbon", "Japan": "Kyoto"}

CAPITALS = """
from tnsai_eval.scoring import ExactMatchEvaluator

CASES = [(f"What is the capital of {c}?", a) for c, a in
         [("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Japan", "Tokyo")]]

def test_capitals(evaluate_prompt):
    evaluate_prompt("Answer with the city only.", CASES, evaluator=ExactMatchEvaluator())

def test_plain(tnsai_record):
    tnsai_record("score", 1.0)
"""


def answering(answers: Mapping[str, str]) -> Step:
    """A step that names the capital of the country in the prompt (from ``answers``)."""

    def body(request: Recorded) -> bytes:
        prompt = str(request.json["messages"][-1]["content"])
        city = next((a for c, a in answers.items() if c in prompt), "I do not know")
        return completion_body(request, city)

    return Step(body=body)


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with (
        FakeOpenAIServer(default=answering(RIGHT)) as old,
        FakeOpenAIServer(default=answering({**RIGHT, **WRONG_ON})) as new,
    ):
        yield old, new


def models_table(old: FakeOpenAIServer, new: FakeOpenAIServer, **extra: str) -> str:
    table = f"""
[tool.tnsai-eval.models.old]
base_url = "{old.base_url}"
model = "m-old"
api_key_env = "OLD_MODEL_KEY"
price_in = 1.0
price_out = 2.0

[tool.tnsai-eval.models.new]
base_url = "{new.base_url}"
model = "m-new"
api_key_env = "NEW_MODEL_KEY"
price_in = 0.5
price_out = 1.0
"""
    return table + "".join(f"{k} = {v}\n" for k, v in extra.items())


@pytest.fixture
def suite(
    pytester: pytest.Pytester,
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer],
    monkeypatch: pytest.MonkeyPatch,
) -> pytest.Pytester:
    # Each test picks its record mode; under CI=true the default would be replay
    # (where a named model needs no key), as in the CI run of this very suite.
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("OLD_MODEL_KEY", "sk-old-model-key-123456")
    monkeypatch.setenv("NEW_MODEL_KEY", "sk-new-model-key-654321")
    pytester.makepyprojecttoml(models_table(*servers))
    pytester.makepyfile(test_suite=CAPITALS)
    return pytester


def _tests(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["nodeid"]: t for t in report["tests"]}


def test_two_models_one_test_each_with_the_model_in_the_id(
    suite: pytest.Pytester, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    result = suite.runpytest_inprocess(
        "-v", "--tnsai-model", "old", "--tnsai-model", "new", "--tnsai-report", "r.json",
        "--llm-store", "store",
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*test_suite.py::test_capitals?old? PASSED*",
            "*test_suite.py::test_capitals?new? PASSED*",
            "*test_suite.py::test_plain PASSED*",
            "models: old, new*",
        ]
    )
    old, new = servers
    # Each model was asked on its own server, under its own model name and key.
    assert {r.json["model"] for r in old.requests} == {"m-old"}
    assert {r.json["model"] for r in new.requests} == {"m-new"}
    assert len(old.requests) == len(new.requests) == 4
    assert old.requests[0].headers["authorization"] == "Bearer sk-old-model-key-123456"
    report = read_json(suite.path / "r.json")
    assert report["config"]["models"] == ["old", "new"]
    tests = _tests(report)
    assert tests["test_suite.py::test_capitals[old]"]["model"] == "old"
    assert tests["test_suite.py::test_capitals[new]"]["model"] == "new"
    assert "model" not in tests["test_suite.py::test_plain"]  # not a scoring test
    scores = {nodeid: [c["output"] for c in t["cases"]] for nodeid, t in tests.items()}
    assert scores["test_suite.py::test_capitals[old]"] == ["Paris", "Rome", "Madrid", "Tokyo"]
    assert scores["test_suite.py::test_capitals[new]"] == ["Paris", "Rome", "Lisbon", "Kyoto"]
    # No key ever reaches the report.
    assert "sk-old-model-key" not in (suite.path / "r.json").read_text(encoding="utf-8")


def _report_command(cwd: Path, a: str, b: str, *more: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tnsai_eval.cli", "report", "r.json", "--compare-models", a, b]
    command += more
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def test_one_model_keeps_test_ids_and_records_it(suite: pytest.Pytester) -> None:
    result = suite.runpytest_inprocess(
        "-v", "--tnsai-model", "new", "--tnsai-report", "r.json", "--llm-store", "store"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_suite.py::test_capitals PASSED*"])
    tests = _tests(read_json(suite.path / "r.json"))
    assert tests["test_suite.py::test_capitals"]["model"] == "new"


def test_ini_names_the_models(suite: pytest.Pytester) -> None:
    suite.makeini("[pytest]\ntnsai_models = old new\n")
    result = suite.runpytest_inprocess("-v", "--llm-store", "store")
    result.stdout.fnmatch_lines(["*test_capitals?old? PASSED*", "*test_capitals?new? PASSED*"])


def test_recordings_are_kept_per_model(
    suite: pytest.Pytester, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    both = ["--tnsai-model", "old", "--tnsai-model", "new", "--llm-store", "store"]
    suite.runpytest_inprocess(*both, "--llm-record", "record").assert_outcomes(passed=3)
    # One cassette per test and model, named by its node id; nothing in `default`.
    files = sorted((suite.path / "store").glob("*.json"))
    cassettes = sorted(p.name for p in files)
    assert [name.split("~")[0] for name in cassettes if "capitals" in name] == [
        "test_suite.py-test_capitals",  # the parameters are never in a file name
        "test_suite.py-test_capitals",
    ]
    assert sorted(read_json(f)["cassette"] for f in files if "capitals" in f.name) == [
        "test_suite.py::test_capitals[new]",
        "test_suite.py::test_capitals[old]",
    ]
    assert "default.json" not in cassettes
    for server in servers:
        server.reset(default=Step.error(500))  # a model call now would fail the test
    replayed = suite.runpytest_inprocess(
        *both, "--llm-record", "replay", "--tnsai-report", "r.json"
    )
    replayed.assert_outcomes(passed=3)
    assert servers[0].requests == []
    assert servers[1].requests == []
    tests = _tests(read_json(suite.path / "r.json"))
    # Each model replayed its own answers, not the other's.
    new_outputs = [c["output"] for c in tests["test_suite.py::test_capitals[new]"]["cases"]]
    old_outputs = [c["output"] for c in tests["test_suite.py::test_capitals[old]"]["cases"]]
    assert new_outputs[2:] == ["Lisbon", "Kyoto"]
    assert old_outputs[2:] == ["Madrid", "Tokyo"]


def test_a_second_model_finds_the_replies_recorded_before_the_test_had_a_model_parameter(
    suite: pytest.Pytester, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    # Recorded one model at a time: the test ids have no model parameter, so
    # both models' replies are in the cassette of `test_capitals` (keyed by model).
    for name in ("old", "new"):
        suite.runpytest_inprocess(
            "--tnsai-model", name, "--llm-store", "store", "--llm-record", "record"
        ).assert_outcomes(passed=2)
    (cassette,) = (suite.path / "store").glob("*.json")
    assert read_json(cassette)["cassette"] == "test_suite.py::test_capitals"
    assert len(read_json(cassette)["replies"]) == 8
    for server in servers:
        server.reset(default=Step.error(500))  # a model call now would fail the test
    # Both models at once: the ids gain the model (test_capitals[old]), and each
    # model's replies are found under the unparametrized test's cassette.
    both = ["--tnsai-model", "old", "--tnsai-model", "new", "--llm-store", "store"]
    replayed = suite.runpytest_inprocess(
        *both, "--llm-record", "replay", "--tnsai-report", "r.json", "-v"
    )
    replayed.assert_outcomes(passed=3)
    replayed.stdout.fnmatch_lines(["*test_capitals?old? PASSED*", "*test_capitals?new? PASSED*"])
    assert servers[0].requests == servers[1].requests == []
    tests = _tests(read_json(suite.path / "r.json"))
    outputs = {n: [c["output"] for c in t["cases"]] for n, t in tests.items() if t["cases"]}
    assert outputs == {
        "test_suite.py::test_capitals[old]": ["Paris", "Rome", "Madrid", "Tokyo"],
        "test_suite.py::test_capitals[new]": ["Paris", "Rome", "Lisbon", "Kyoto"],
    }
    assert {t["cache_hits"] for t in tests.values() if t["cases"]} == {4}


def test_replay_needs_no_key(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    both = ["--tnsai-model", "old", "--tnsai-model", "new", "--llm-store", "store"]
    suite.runpytest_inprocess(*both, "--llm-record", "record").assert_outcomes(passed=3)
    monkeypatch.delenv("OLD_MODEL_KEY")
    monkeypatch.delenv("NEW_MODEL_KEY")
    suite.runpytest_inprocess(*both, "--llm-record", "replay").assert_outcomes(passed=3)


def test_baseline_gate_compares_each_test_and_model_pair(
    suite: pytest.Pytester, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    new = servers[1]
    new.reset(default=answering(RIGHT))  # the baseline: both models right everywhere
    both = ["--tnsai-model", "old", "--tnsai-model", "new", "--llm-record", "off"]
    suite.runpytest_inprocess(*both, "--tnsai-report", "baseline.json").assert_outcomes(passed=3)
    new.reset(default=answering({**RIGHT, **WRONG_ON}))
    gated = suite.runpytest_inprocess(*both, "--tnsai-baseline", "baseline.json")
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    gated.stdout.fnmatch_lines(
        [
            "1 regression(s) beyond tolerance*",
            "*test_suite.py::test_capitals?new?*score*1.000*0.500*-0.500*",
            "*test_suite.py::test_capitals?new? (score): fell -0.500, 2 broken, 0 fixed*",
        ]
    )
    # The old model's pair is compared with its own baseline, unchanged: no flips listed.
    assert not any("test_capitals[old] (score)" in line for line in gated.outlines)


def test_compare_models_names_the_flipped_cases(suite: pytest.Pytester) -> None:
    result = suite.runpytest_inprocess(
        "--tnsai-model", "old", "--tnsai-model", "new", "--tnsai-compare-models", "old", "new",
        "--llm-record", "off", "--tnsai-report", "r.json",
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "model new (B) against old (A)",
            "*test*verdict*score A -> B*delta*sign test p*broken/fixed*calls A/B*",
            "*test_suite.py::test_capitals*regressed*1.000 -> 0.500*-0.500*0.25*2/0*4/4*",
            "*test_suite.py::test_capitals (score): fell -0.500, 2 broken, 0 fixed, *over 4 common "
            "case(s)*",
            "*broken*capital of Spain*Madrid*1.00 'Madrid'*0.00 'Lisbon'*",
            "*broken*capital of Japan*Tokyo*1.00 'Tokyo'*0.00 'Kyoto'*",
            "*model new regressed against old; this fails the session*",
        ]
    )
    # The report command gives the same verdict on the saved report.
    cli = _report_command(suite.path, "old", "new")
    assert cli.returncode == 1, cli.stderr
    assert "test_suite.py::test_capitals" in cli.stdout
    assert re.search(r"test_capitals\s+regressed", cli.stdout)
    assert "'Kyoto'" in cli.stdout
    assert "'Lisbon'" in cli.stdout
    # Markdown (for a pull request) and the HTML page say the same.
    markdown = _report_command(suite.path, "old", "new", "--format", "markdown", "--html", "r.html")
    assert markdown.returncode == 1, markdown.stderr
    assert "**model new (B) against old (A)**" in markdown.stdout
    assert re.search(
        # Cells are escaped Markdown: "_" would start emphasis, ">" a quote.
        r"\| test\\_suite.py::test\\_capitals \| regressed \| 1.000 -\\> 0.500 \|",
        markdown.stdout,
    )
    page = (suite.path / "r.html").read_text(encoding="utf-8")
    assert "<h2>Model new against old: " in page
    assert '<tr class="regressed"><td>test_suite.py::test_capitals</td><td>regressed</td>' in page
    assert "estimated cost" in page
    # The other way round, new -> old is an improvement: exit 0.
    back = _report_command(suite.path, "new", "old")
    assert back.returncode == 0, back.stdout + back.stderr
    assert re.search(r"test_capitals\s+improved", back.stdout)


def test_prices_apply_to_token_counts(suite: pytest.Pytester) -> None:
    result = suite.runpytest_inprocess(
        "--tnsai-model", "old", "--tnsai-model", "new", "--llm-record", "off",
        "--tnsai-report", "r.json",
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test*tokens in/out*cost*"])
    tests = _tests(read_json(suite.path / "r.json"))
    old, new = (
        tests["test_suite.py::test_capitals[old]"],
        tests["test_suite.py::test_capitals[new]"],
    )
    for record, (price_in, price_out) in ((old, (1.0, 2.0)), (new, (0.5, 1.0))):
        tokens_in, tokens_out = record["tokens_in"], record["tokens_out"]
        assert isinstance(tokens_in, int)
        assert tokens_out == 4  # one word per reply, four cases (the fake server's usage)
        assert tokens_in > 0
        assert tokens_in + tokens_out == record["tokens"]
        assert record["cost"] == pytest.approx(
            (tokens_in * price_in + tokens_out * price_out) / 1e6
        )
    # The terminal row shows the same split and cost.
    row = next(line for line in result.outlines if "test_capitals[old]" in line and "/" in line)
    assert f"{old['tokens_in']}/4" in row
    assert format_cost(old["cost"]) in row  # three significant digits


def test_cost_gate_against_a_baseline(
    suite: pytest.Pytester, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    old_server, new_server = servers
    run = ["--tnsai-model", "old", "--llm-record", "off"]
    suite.runpytest_inprocess(*run, "--tnsai-report", "baseline.json").assert_outcomes(passed=2)
    # The same model, now priced four times higher: same scores, more cost.
    suite.makepyprojecttoml(
        models_table(old_server, new_server).replace("price_in = 1.0", "price_in = 4.0")
    )
    shown = suite.runpytest_inprocess(*run, "--tnsai-baseline", "baseline.json")
    assert shown.ret == pytest.ExitCode.OK  # costs are only shown by default
    gated = suite.runpytest_inprocess(
        *run, "--tnsai-baseline", "baseline.json", "--tnsai-gate-costs", "0.2"
    )
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    # Only the cost moved: tokens and calls are the same, so one regression.
    # The line names the ratio and the gate's rule, not a delta of 0.000 in a score table.
    gated.stdout.fnmatch_lines(
        [
            "1 regression(s) beyond tolerance*",
            "  test_suite.py::test_capitals: cost 0.0000520 -> 0.000184, 3.54x, limit 1.2x "
            "(gate_costs 0.2): regressed",
        ]
    )


def test_unknown_name_is_a_usage_error_naming_it(suite: pytest.Pytester) -> None:
    result = suite.runpytest_inprocess("--tnsai-model", "old", "--tnsai-model", "nosuch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--tnsai-model: unknown model name 'nosuch': known names are embedded, new, old*"]
    )


def test_unset_key_variable_is_a_usage_error_naming_both(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NEW_MODEL_KEY")
    result = suite.runpytest_inprocess("--tnsai-model", "old", "--tnsai-model", "new")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*model 'new': its key variable $NEW_MODEL_KEY is not set*"])


def test_compare_needs_models_that_ran(suite: pytest.Pytester) -> None:
    result = suite.runpytest_inprocess(
        "--tnsai-model", "old", "--tnsai-model", "new", "--tnsai-compare-models", "old", "gpt"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tnsai-compare-models: 'gpt' not among the models run*"])


def test_models_file_option(
    pytester: pytest.Pytester,
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old, _ = servers
    monkeypatch.delenv("OLD_MODEL_KEY", raising=False)
    (pytester.path / "models.toml").write_text(
        f'[models.local]\nbase_url = "{old.base_url}"\nmodel = "m-local"\n', encoding="utf-8"
    )
    pytester.makepyfile(test_suite=CAPITALS)
    result = pytester.runpytest_inprocess(
        "--tnsai-models-file", "models.toml", "--tnsai-model", "local", "--llm-record", "off",
        "--tnsai-report", "r.json",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    assert {r.json["model"] for r in old.requests} == {"m-local"}
    config = read_json(pytester.path / "r.json")["config"]
    assert config["model_table"]["local"]["api_key_env"] is None


def test_a_key_in_place_of_a_variable_name_is_refused_unshown(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        '[tool.tnsai-eval.models.x]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
        'api_key_env = "sk-pasted-key-0123456789"\n'
    )
    pytester.makepyfile(test_suite=CAPITALS)
    result = pytester.runpytest_inprocess("--tnsai-model", "x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*api_key_env must be the NAME of an environment variable*"])
    assert "sk-pasted" not in result.stderr.str()


def test_report_keeps_model_fields(tmp_path: Path) -> None:
    from tnsai_eval.reports import Report, TestStatus, TrackedTest, read_report

    test = TrackedTest("t::a[m]", TestStatus.PASSED, model="m", tokens_in=7, tokens_out=3, cost=0.5)
    path = tmp_path / "r.json"
    Report((test,), {"models": ["m"]}).save(path)
    again = read_report(path).tests[0]
    assert (again.model, again.tokens_in, again.tokens_out, again.cost) == ("m", 7, 3, 0.5)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["tests"][0]["cost"] = "cheap"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=r"\$\.tests\[0\]\.cost: expected a number"):
        read_report(path)


REFINED = """
from tnsai_eval.pytest import refine_until

@refine_until(task="Return the order as JSON", valid_json=True, must_contain='"id"')
def test_order_json(refine):
    refine("id: 7")
"""


def test_refine_until_runs_once_per_model(
    suite: pytest.Pytester, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]
) -> None:
    for server in servers:
        server.reset(default=Step.ok('{"id": 7}'))
    suite.makepyfile(test_refined=REFINED)
    result = suite.runpytest_inprocess(
        "-v", "test_refined.py", "--tnsai-model", "old", "--tnsai-model", "new",
        "--llm-record", "off", "--tnsai-report", "r.json",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_order_json?old? PASSED*", "*test_order_json?new? PASSED*"])
    tests = _tests(read_json(suite.path / "r.json"))
    assert tests["test_refined.py::test_order_json[old]"]["model"] == "old"
    assert tests["test_refined.py::test_order_json[new]"]["model"] == "new"
    assert len(servers[0].requests) == len(servers[1].requests) == 1


def test_xdist_workers_keep_each_records_model_and_cost(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess(
        "-n", "2", "--tnsai-model", "old", "--tnsai-model", "new",
        "--tnsai-compare-models", "old", "new", "--llm-record", "off", "--tnsai-report", "r.json",
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the controller judged new against old
    result.stdout.fnmatch_lines(["*test_suite.py::test_capitals*regressed*1.000 -> 0.500*"])
    tests = _tests(read_json(suite.path / "r.json"))
    for model in ("old", "new"):
        record = tests[f"test_suite.py::test_capitals[{model}]"]
        assert record["model"] == model
        assert record["tokens_out"] == 4
        assert record["cost"] > 0


def test_a_swap_gated_against_the_other_models_baseline(suite: pytest.Pytester) -> None:
    # One model each time: the ids match, so the gate judges the swap itself.
    off = ["--llm-record", "off"]
    baseline = suite.runpytest_inprocess("--tnsai-model", "old", *off, "--tnsai-report", "b.json")
    baseline.assert_outcomes(passed=2)
    swapped = suite.runpytest_inprocess(
        "--tnsai-model", "new", *off, "--tnsai-baseline", "b.json", "--tnsai-report", "r.json"
    )
    assert swapped.ret == pytest.ExitCode.TESTS_FAILED
    swapped.stdout.fnmatch_lines(
        [
            "*test_suite.py::test_capitals*score*1.000*0.500*-0.500*",
            "model changed: test_suite.py::test_capitals (old -> new)",
        ]
    )
    command = [sys.executable, "-m", "tnsai_eval.cli", "report", "r.json", "--baseline", "b.json"]
    cli = subprocess.run(command, cwd=suite.path, capture_output=True, text=True, check=False)
    assert cli.returncode == 1, cli.stderr
    assert "model changed: test_suite.py::test_capitals (old -> new)" in cli.stdout
