"""Secrets never travel: check environments, masking, recorded params, URLs."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.hostile.conftest import API_KEY, SERVICE_TOKEN
from tnsai_eval._util.secrets import drop_credentials, mask, mask_then_cut, redact_url
from tnsai_eval.errors import BadResponseError
from tnsai_eval.llm import CachedLLM, OpenAIClient, ResponseStore, StoredRequest
from tnsai_eval.refinement import CompletionCriteria, RefinementLoop
from tnsai_eval.testing import ScriptedLLM

pytestmark = pytest.mark.usefixtures("secret_env")


def _all_text(*parts: object) -> str:
    return "\n".join(str(part) for part in parts)


def test_a_check_that_prints_its_environment_sees_only_the_allowlist() -> None:
    criteria = CompletionCriteria.builder().compiler_check("env; exit 1").build()
    (outcome,) = criteria.evaluate("x")
    assert not outcome.passed
    assert "PATH=" in outcome.message  # the allowlist is there
    assert "OUTPUT=" in outcome.message
    for leaked in (API_KEY, SERVICE_TOKEN, "TNSAI_LLM_API_KEY", "HOSTILE_PLAIN"):
        assert leaked not in outcome.message


def test_env_argument_adds_variables_and_secret_named_ones_are_masked() -> None:
    criteria = (
        CompletionCriteria.builder()
        .test_command(
            "echo CC=$CC DEPLOY=$DEPLOY_PASSWORD; exit 1",
            env={"CC": "clang", "DEPLOY_PASSWORD": "pw-given-to-the-check"},
        )
        .build()
    )
    (outcome,) = criteria.evaluate("x")
    assert "CC=clang" in outcome.message
    assert "pw-given-to-the-check" not in outcome.message
    assert "DEPLOY=***" in outcome.message


def test_a_check_that_leaks_a_secret_leaks_it_nowhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The command prints the key it found some other way (here: a file), and
    # its environment: the key must reach no message, frame, prompt or store file.
    secret_file = tmp_path / "found.txt"
    secret_file.write_text(f"key={API_KEY} token={SERVICE_TOKEN}\n")
    criteria = (
        CompletionCriteria.builder()
        .compiler_check(f"cat {secret_file}; env; exit 1", name="compile")
        .build()
    )
    store = ResponseStore(tmp_path / "store")
    inner = ScriptedLLM(default="still wrong")
    llm = CachedLLM(inner, store)
    loop = RefinementLoop("Write code", criteria, max_iterations=3)
    result = loop.execute(llm, "draft")
    frame = result.to_dataframe()
    checks = result.checks_dataframe()
    store_text = "".join(p.read_text() for p in (tmp_path / "store").rglob("*.json"))
    prompts = "".join(m.content for call in inner.calls for m in call.messages)
    captured = capsys.readouterr()
    everything = _all_text(
        frame.to_csv(),
        checks.to_csv(),
        result,
        result.metrics,
        prompts,
        store_text,
        captured.out,
        captured.err,
    )
    assert "***" in prompts  # the leak was there, masked
    assert "***" in checks.to_csv()
    assert API_KEY not in everything
    assert SERVICE_TOKEN not in everything
    assert API_KEY[:12] not in everything


def test_a_long_output_is_masked_before_it_is_cut_to_its_tail() -> None:
    # The key straddles the start of the 4 KiB tail the message keeps.
    command = (
        f"printf 'x%.0s' $(seq 1 200); echo {API_KEY}; head -c 4090 /dev/zero | tr '\\0' y; exit 1"
    )
    criteria = CompletionCriteria.builder().lint_check(command, env={"K": API_KEY}).build()
    (outcome,) = criteria.evaluate("x")
    assert API_KEY[-10:] not in outcome.message
    assert API_KEY[-6:] not in outcome.message


def test_error_text_is_masked_before_it_is_cut() -> None:
    # A 2xx body that is not JSON, echoing the key across the old 200-byte cut.
    body = b"x" * 190 + API_KEY.encode() + b" trailing"
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body))
    client = OpenAIClient(
        "m", base_url="http://models.test/v1", api_key=API_KEY, transport=transport
    )
    with client, pytest.raises(BadResponseError) as caught:
        client.chat("hi")
    assert API_KEY[:10] not in str(caught.value)
    assert "***" in str(caught.value)


def test_mask_then_cut_never_shows_part_of_a_secret() -> None:
    text = "a" * 20 + API_KEY
    for limit in range(18, 60):
        assert API_KEY[:4] not in mask_then_cut(text, limit)


def test_recorded_params_drop_the_clients_credentials_in_any_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOSTILE_SERVICE_TOKEN", "k5-hostile-nested")
    params = {
        "temperature": 0,
        "max_tokens": 5,
        "API_KEY": "k1-hostile-secret",
        "apiKey": "k2-hostile-secret",
        "Authorization": "Bearer k3-hostile-secret",
        "extra_body": {
            "api-key": "k4-hostile-secret",
            "top_k": 2,
            # Deeper down a name is not a credential (it may be a schema property),
            # but a known secret's value is still masked when it is written.
            "nested": [{"Token": "k5-hostile-nested"}],
        },
        "default_headers": {"X-Api-Key": "k6-hostile-secret"},
    }
    request = StoredRequest.build("m", "hi", params)
    assert request.params == {
        "temperature": 0,
        "max_tokens": 5,
        "extra_body": {"top_k": 2, "nested": [{"Token": "k5-hostile-nested"}]},
    }
    store = ResponseStore(tmp_path)
    text = store.put(request, ScriptedLLM(default="ok").chat("hi")).read_text()
    assert "hostile" not in text
    assert '"Token": "***"' in text


def test_urls_are_redacted_wherever_they_are_shown() -> None:
    url = "https://bob:hunter22@api.example.com/v1?api_key=abc123&api-version=2024"
    shown = redact_url(url)
    assert "hunter22" not in shown
    assert "abc123" not in shown
    assert "api-version=2024" in shown
    assert "hunter22" not in mask(f"connecting to {url}")


def test_a_bad_base_url_error_does_not_echo_its_key() -> None:
    from tnsai_eval.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        OpenAIClient("m", base_url="http://127.0.0.1:8080/v1?api_key=zz-secret-query")
    assert "zz-secret-query" not in str(caught.value)


def test_drop_credentials_keeps_ordinary_names() -> None:
    kept = drop_credentials({"max_tokens": 1, "top_logprobs": 2, "logit_bias": {"1": 2}})
    assert kept == {"max_tokens": 1, "top_logprobs": 2, "logit_bias": {"1": 2}}


def test_plugin_report_redacts_a_base_url_with_credentials(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import pytest\nfrom tnsai_eval.testing import ScriptedLLM\n\n"
        "@pytest.fixture(scope='session')\ndef llm():\n    return ScriptedLLM(default='ok')\n"
    )
    pytester.makepyfile(test_x="def test_metric(tnsai_record):\n    tnsai_record('score', 1.0)\n")
    report = pytester.path / "report.json"
    result = pytester.runpytest_inprocess(
        "--tnsai-report",
        str(report),
        "--llm-base-url",
        "http://bob:hunter22@127.0.0.1:9/v1?api_key=qq-secret-in-url",
        "--llm-model",
        "m",
    )
    assert result.ret == 0, result.stdout.str()
    text = report.read_text()
    assert "hunter22" not in text
    assert "qq-secret-in-url" not in text
    assert "hunter22" not in result.stdout.str()
    assert json.loads(text)  # still a report
