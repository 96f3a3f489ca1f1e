"""The cost and latency gates under hostile numbers (issue 34, fourth round).

10**400 tokens from a server or in a report file, an empty
``--tnsai-gate-costs=``, a median latency of 1.5e308 s on the HTML page, a
price of 1e308 that made a report its own reader refused, and a
``pyproject.toml`` nested 3,000 deep: each a typed error or a total step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step, completion_body
from tnsai_eval.errors import ConfigError, ReportError
from tnsai_eval.llm import ModelTable, OpenAIClient
from tnsai_eval.plots import render_html
from tnsai_eval.reports import MetricStats, Report, TestStatus, TrackedTest, compare, read_report
from tnsai_eval.settings import project_settings

HUGE = 10**400


def _test(**fields: Any) -> TrackedTest:
    return TrackedTest(
        "t.py::test_q", TestStatus.PASSED, {"score": MetricStats("score", (1.0,))}, **fields
    )


def test_a_report_holding_10_400_tokens_is_refused_by_its_reader(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    Report((_test(model="m", tokens=10, tokens_in=10, tokens_out=1),)).save(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["tests"][0]["tokens"] = HUGE  # json writes a 401-digit integer as it is
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ReportError, match=r"tests\[0\]\.tokens: expected an integer <= "):
        read_report(path)
    # It used to read back, then the cost gate raised OverflowError converting it.
    baseline = Report((_test(model="m", tokens=10),))
    with pytest.raises(ReportError):
        compare(read_report(path), baseline, gate_costs=0.2)


def test_a_servers_usage_of_10_400_tokens_is_not_a_count() -> None:
    def huge(request: Recorded) -> bytes:
        body = json.loads(completion_body(request, "ok"))
        body["usage"] = {"prompt_tokens": HUGE, "completion_tokens": 3}
        return json.dumps(body).encode()

    with FakeOpenAIServer(default=Step(body=huge)) as server:
        client = OpenAIClient("m", base_url=server.base_url, api_key="", max_retries=0)
        with client:
            reply = client.chat("hi")
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (0, 3)
    table = ModelTable.from_mapping({"m": {"base_url": "http://x/v1", "model": "m", "price_in": 1}})
    # A client of our own may still report one: the cost estimate stays a number.
    cost = table.get("m").cost(HUGE, 0)
    assert cost is not None
    assert cost < float("inf")


def test_an_empty_gate_costs_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess("--tnsai-gate-costs=")
    # An unset CI variable used to turn the cost gate off without a word.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--tnsai-gate-costs: expected a fraction such as 0.2, got an empty value" in (
        result.stderr.str()
    )


def test_an_empty_models_file_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess("--tnsai-model=embedded", "--tnsai-models-file=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--tnsai-models-file: expected a path, got an empty value" in result.stderr.str()


def test_a_latency_of_1_5e308_seconds_still_renders_the_page() -> None:
    slow = Report((_test(live_calls=3, latency_p50_s=1.5e308, latency_p95_s=1.5e308),))
    fast = Report((_test(live_calls=3, latency_p50_s=0.1, latency_p95_s=0.2),))
    comparison = compare(slow, fast, gate_latency=0.5)
    assert [c.metric for c in comparison.regressions] == ["latency_p50_s"]
    page = render_html(slow, comparison=comparison)  # was ValueError: axis limits inf
    assert "latency_p50_s" in page
    assert "<img" in page


def test_a_price_past_any_real_one_is_refused_where_it_is_declared(tmp_path: Path) -> None:
    for price in (1e308, 1e10, -1):
        with pytest.raises(ConfigError, match=r"model 'big': price_in must be a number from 0"):
            ModelTable.from_mapping(
                {"big": {"base_url": "http://x/v1", "model": "m", "price_in": price}}
            )
    # The highest price taken still gives a report its own reader reads back.
    table = ModelTable.from_mapping(
        {"big": {"base_url": "http://x/v1", "model": "m", "price_in": 1e9, "price_out": 1e9}}
    )
    cost = table.get("big").cost(2**53, 2**53)
    report = Report((_test(model="big", tokens_in=2**53, tokens_out=2**53, cost=cost),))
    report.save(tmp_path / "r.json")
    assert read_report(tmp_path / "r.json").cost == cost  # 1e308 wrote "Infinity"


def test_a_pyproject_nested_3000_deep_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.x]\na = " + "[" * 3000 + "]" * 3000 + "\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"pyproject\.toml' is nested too deeply") as caught:
        project_settings(tmp_path)  # was a bare RecursionError
    assert str(tmp_path) in str(caught.value)
