"""The option group, its ini twins and how they resolve (pytester, in process)."""

from __future__ import annotations

import pytest

from tests.plugin.conftest import dedent, read_json

# A test that writes the resolved options where the outer test can read them.
SHOW_OPTIONS = """
import json
from tnsai_eval.pytest._session import get_session

def test_show(pytestconfig):
    options = get_session(pytestconfig).options
    with open("options.json", "w") as handle:
        json.dump(options.describe(), handle)
"""


def _options(pytester: pytest.Pytester, *args: str) -> dict[str, object]:
    pytester.makepyfile(test_show=SHOW_OPTIONS)
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(passed=1)
    return read_json(pytester.path / "options.json")


def test_defaults_record_locally(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    options = _options(pytester)
    assert options["record_mode"] == "record"
    assert options["record_mode_source"] == "default"
    assert options["store"] == "tests/llm-responses"  # relative to the rootdir
    assert options["repeat"] == 1
    assert options["tolerance"] == 0.05


def test_ci_true_defaults_to_replay(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    options = _options(pytester)
    assert (options["record_mode"], options["record_mode_source"]) == ("replay", "CI=true")


def test_ini_twins_apply_and_the_command_line_wins(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    pytester.makeini(
        dedent(
            """
            [pytest]
            tnsai_llm_base_url = http://127.0.0.1:9/v1
            tnsai_llm_model = from-ini
            tnsai_llm_record = refresh
            tnsai_llm_store = recorded
            tnsai_tolerance = 0.1
            tnsai_repeat = 1
            """
        )
    )
    options = _options(pytester, "--llm-model", "from-cli", "--tnsai-tolerance", "0.2")
    assert options["base_url"] == "http://127.0.0.1:9/v1"
    assert options["model"] == "from-cli"
    # ini beats the CI default; the source is named in the report.
    assert (options["record_mode"], options["record_mode_source"]) == (
        "refresh",
        "ini tnsai_llm_record",
    )
    assert options["store"] == "recorded"
    assert options["tolerance"] == 0.2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--llm-record", "sometimes"], "--llm-record: record mode 'sometimes' is not one of"),
        (["--tnsai-repeat", "0"], "--tnsai-repeat: expected a finite number >= 1, got '0'"),
        (["--tnsai-repeat", "2.5"], "--tnsai-repeat: '2.5' is not a valid int"),
        (["--tnsai-tolerance", "lots"], "--tnsai-tolerance: 'lots' is not a valid float"),
        (["--tnsai-tolerance", "nan"], "--tnsai-tolerance: expected a finite number >= 0, got"),
        (["--tnsai-tolerance", "-0.1"], "--tnsai-tolerance: expected a finite number >= 0"),
        (["-o", "tnsai_repeat=0"], "ini tnsai_repeat: expected a finite number >= 1, got '0'"),
        (["--tnsai-baseline", "nope.json"], "--tnsai-baseline: report file"),
    ],
)
def test_bad_values_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_help_lists_the_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess("--help")
    text = result.stdout.str()
    assert "tnsai-eval: LLM prompt regression tests" in text
    for flag in (
        "--llm-base-url",
        "--llm-record",
        "--llm-store",
        "--tnsai-report",
        "--tnsai-repeat",
    ):
        assert flag in text
    assert "tnsai_llm_record" in text  # the ini twin
    assert "TNSAI_LLM_API_KEY" in text


def test_markers_are_registered_for_strict_markers(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess("--markers")
    assert "@pytest.mark.norm_check(" in result.stdout.str()
    assert "@pytest.mark.refine_until(" in result.stdout.str()


def test_the_store_is_not_walked_when_collecting(pytester: pytest.Pytester) -> None:
    # A stand-in for thousands of recordings: were the store collected, this
    # failing test would run.
    trap = pytester.path / "tests" / "llm-responses" / "ab"
    trap.mkdir(parents=True)
    (trap / "test_trap.py").write_text("def test_trap():\n    assert False\n")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    pytester.runpytest_inprocess().assert_outcomes(passed=1)
    # The trap is real: without the plugin it is collected.
    pytester.runpytest_inprocess("-p", "no:tnsai").assert_outcomes(passed=1, failed=1)
    # A store that holds the tests themselves is not skipped.
    pytester.runpytest_inprocess("--llm-store=.").assert_outcomes(passed=1, failed=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--llm-base-url", "http://127.0.0.1:9/v1"],
            "--llm-base-url needs a model name: add --llm-model NAME",
        ),
        (["-o", "tnsai_llm_base_url=http://127.0.0.1:9/v1"], "ini tnsai_llm_base_url needs a"),
        (["--llm-model", "m"], "--llm-model names a model but no server: add --llm-base-url"),
        (["--tnsai-gate", "strict"], "--tnsai-gate: gate 'strict' is not one of tolerance, paired"),
        (["--tnsai-alpha", "1.5"], "--tnsai-alpha: expected a number between 0 and 1, got '1.5'"),
    ],
)
def test_bad_combinations_stop_at_start_up_naming_the_pytest_option(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.delenv("TNSAI_LLM_MODEL", raising=False)
    monkeypatch.delenv("TNSAI_LLM_BASE_URL", raising=False)
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
