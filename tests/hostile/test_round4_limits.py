"""Round 4, limits and keys: the call budget, the concurrency cap, a token as a variable name.

``CallBudget`` must add holds up, refuse non-counts and fail closed when its
shared count file is not a count; ``--llm-concurrency`` and ``OpenAIClient``
refuse a bound no pool should be built for; a token pasted into
``api_key_env`` is refused without being echoed, in errors or reports.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tests.llm.fake_server import FakeOpenAIServer
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import CallBudget, ModelTable, NamedModel, OpenAIClient
from tnsai_eval.settings import MAX_CONCURRENCY

# ---------------------------------------------------------------- CallBudget


def test_holds_add_up() -> None:
    budget = CallBudget(10)
    budget.hold(3)
    budget.hold(4)  # a second phase sets its own share aside
    assert budget.held == 7
    assert [budget.try_reserve() for _ in range(4)] == [True, True, True, False]
    budget.release(4)
    assert budget.held == 3
    assert [budget.try_reserve() for _ in range(5)] == [True, True, True, True, False]
    budget.release()
    assert budget.held == 0
    assert budget.left == 3


@pytest.mark.parametrize("method", ["add", "refund", "hold", "release"])
@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 1.5, -1, True, "3"])
def test_a_count_that_is_not_an_int_at_least_0_is_refused(method: str, bad: object) -> None:
    budget = CallBudget(5)
    with pytest.raises(ConfigError, match=rf"CallBudget.{method}\(\) takes an int >= 0"):
        getattr(budget, method)(bad)
    assert (budget.spent, budget.held, budget.left) == (0, 0, 5)


@pytest.mark.parametrize("content", ["garbage", "-5", "inf", "1e9", "3 4", "9" * 40, "\x00\x00"])
def test_a_shared_count_file_that_is_not_a_count_fails_closed(tmp_path: Path, content: str) -> None:
    shared = tmp_path / "calls"
    shared.write_text(content, encoding="ascii")
    budget = CallBudget(100, shared=shared)
    assert budget.try_reserve() is False
    assert budget.left == 0
    message = str(budget.exceeded("the call"))
    assert str(shared) in message
    assert "fails closed" in message
    # Giving back or counting more never turns it into a fresh count.
    budget.refund(1)
    budget.add(1)
    assert shared.read_text(encoding="ascii") == content


def test_a_shared_count_that_is_a_directory_or_a_fifo_fails_closed(tmp_path: Path) -> None:
    folder = tmp_path / "calls-dir"
    folder.mkdir()
    assert CallBudget(5, shared=folder).try_reserve() is False
    fifo = tmp_path / "calls-fifo"
    os.mkfifo(fifo)
    budget = CallBudget(5, shared=fifo)
    outcome: list[object] = []

    def reserve() -> None:
        try:
            outcome.append(budget.try_reserve())
        except Exception as exc:
            outcome.append(exc)

    worker = threading.Thread(target=reserve, daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():  # before the fix: blocked reading the FIFO; release it
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, b"0")
        os.close(fd)
        worker.join(60)
        pytest.fail("reading the shared count hung on a FIFO")
    assert outcome == [False]
    assert "not a regular file" in str(budget.exceeded())


def test_a_healthy_shared_count_still_counts_across_budgets(tmp_path: Path) -> None:
    shared = tmp_path / "calls"
    first, second = CallBudget(3, shared=shared), CallBudget(3, shared=shared)
    assert [first.try_reserve(), second.try_reserve(), first.try_reserve()] == [True] * 3
    assert second.try_reserve() is False
    assert shared.read_text(encoding="ascii") == "3"
    assert "fails closed" not in str(second.exceeded())


# ---------------------------------------------------------------- the concurrency cap


@pytest.mark.parametrize("bound", [MAX_CONCURRENCY + 1, 1_000_000])
def test_a_client_refuses_a_concurrency_past_the_cap_naming_it(bound: int) -> None:
    with pytest.raises(ConfigError, match=rf"from 1 to {MAX_CONCURRENCY}.*got {bound}"):
        OpenAIClient("m", base_url="http://127.0.0.1:9/v1", max_concurrency=bound)
    client = OpenAIClient("m", base_url="http://127.0.0.1:9/v1")
    with client, pytest.raises(ConfigError, match=rf"got {bound}"):
        client.ensure_concurrency(bound)
    assert client.max_concurrency == 16


def test_the_cap_itself_is_accepted_and_serves_calls() -> None:
    with (
        FakeOpenAIServer() as server,
        OpenAIClient("m", base_url=server.base_url, api_key="") as client,
    ):
        assert client.ensure_concurrency(MAX_CONCURRENCY) == MAX_CONCURRENCY
        assert client.chat("hi").text == "echo: hi"


PLAIN = """
def test_nothing():
    pass
"""


def test_llm_concurrency_past_the_cap_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain=PLAIN)
    result = pytester.runpytest_inprocess("--llm-concurrency=1000000")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"expected at most {MAX_CONCURRENCY} calls in flight" in result.stderr.str()
    assert "'1000000'" in result.stderr.str()
    pytester.makeini(f"[pytest]\ntnsai_llm_concurrency = {MAX_CONCURRENCY + 1}\n")
    assert pytester.runpytest_inprocess().ret == pytest.ExitCode.USAGE_ERROR
    pytester.makeini(f"[pytest]\ntnsai_llm_concurrency = {MAX_CONCURRENCY}\n")
    pytester.runpytest_inprocess().assert_outcomes(passed=1)


# ---------------------------------------------------------------- a token in api_key_env

TOKENS = {
    "github": "ghp_" + "R2d2C3po" * 4 + "Xy9z",
    "huggingface": "hf_" + "QwErTy12" * 4 + "zz",
    "groq": "gsk_" + "aB3dE5gH" * 6 + "Zz",
    "openai": "sk-proj-" + "Kx7Lm9Np" * 5,
    "random": "a8F3k2L9q0W7e6R5t4Y3u2I1",
}


@pytest.mark.parametrize("token", list(TOKENS.values()), ids=list(TOKENS))
def test_a_token_pasted_into_api_key_env_is_refused_without_echo(token: str) -> None:
    entry = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": token}
    with pytest.raises(ConfigError) as caught:
        ModelTable.from_mapping({"hosted": entry})
    message = str(caught.value)
    assert "NAME of an environment variable" in message
    assert token not in message
    assert token[:8] not in message
    with pytest.raises(ConfigError) as direct:
        NamedModel("hosted", "http://127.0.0.1:9/v1", "m", api_key_env=token)
    assert token not in str(direct.value)


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "HF_TOKEN", "GROQ_API_KEY", "my_key_2"])
def test_real_variable_names_are_still_accepted(name: str) -> None:
    entry = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": name}
    assert ModelTable.from_mapping({"hosted": entry}).get("hosted").api_key_env == name


ASK_HOSTED = """
def test_hosted(tnsai_model, llm):
    llm.chat("hi")
"""


def test_a_token_in_api_key_env_reaches_neither_output_nor_report(
    pytester: pytest.Pytester,
) -> None:
    token = TOKENS["huggingface"]
    pytester.makepyprojecttoml(
        "[tool.tnsai-eval.models.hosted]\n"
        'base_url = "http://127.0.0.1:9/v1"\n'
        'model = "m"\n'
        f'api_key_env = "{token}"\n'
    )
    pytester.makepyfile(test_hosted=ASK_HOSTED)
    result = pytester.runpytest_inprocess(
        "--tnsai-model=hosted", "--tnsai-report=report.json", "--llm-record=off"
    )
    output = result.stdout.str() + result.stderr.str()
    assert result.ret != pytest.ExitCode.OK
    assert "NAME of an environment variable" in output
    assert token not in output
    assert token[:8] not in output
    report = pytester.path / "report.json"
    if report.exists():
        assert token not in report.read_text(encoding="utf-8")
    assert json.dumps(token)[1:9] not in output
