"""The named-models table: where it is read from, what it refuses, what it builds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import EMBEDDED_MODEL, ModelTable, NamedModel, OpenAIClient
from tnsai_eval.settings import project_settings

GOOD = """
[tool.tnsai-eval.models.fast]
base_url = "http://127.0.0.1:9/v1"
model = "fast-1"
api_key_env = "FAST_KEY"
price_in = 0.5
price_out = 1.5
"""


def test_pyproject_is_found_from_a_subfolder(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(GOOD, encoding="utf-8")
    inner = tmp_path / "tests" / "deep"
    inner.mkdir(parents=True)
    table = ModelTable.load(start=inner)
    assert table.names == (EMBEDDED_MODEL, "fast")
    fast = table.get("fast")
    assert (fast.base_url, fast.model, fast.api_key_env) == (
        "http://127.0.0.1:9/v1",
        "fast-1",
        "FAST_KEY",
    )
    assert fast.cost(2_000_000, 1_000_000) == pytest.approx(2.5)
    assert project_settings(inner).file == tmp_path / "pyproject.toml"


def test_no_file_means_embedded_only(tmp_path: Path) -> None:
    table = ModelTable.load(start=tmp_path)
    assert table.names == (EMBEDDED_MODEL,)
    embedded = table.get(EMBEDDED_MODEL)
    assert embedded.embedded
    assert embedded.cost(100, 100) is None


def test_a_file_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(
        '[models.a]\nbase_url = "https://x.example/v1"\nmodel = "m"\n', encoding="utf-8"
    )
    assert ModelTable.load(path).get("a").model == "m"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('base_url = "ftp://x"\nmodel = "m"', "base_url must be an http(s) URL, got 'ftp://x'"),
        ('base_url = "http://x/v1"', "model must be a non-blank string, got None"),
        (
            'base_url = "http://x/v1"\nmodel = "m"\nprice_in = -1',
            "price_in must be a number from 0 to 1e+09",
        ),
        (
            'base_url = "http://x/v1"\nmodel = "m"\nprice_out = "cheap"',
            "price_out must be a number from 0 to 1e+09",
        ),
        ('base_url = "http://x/v1"\nmodel = "m"\npric_in = 1', "unknown key(s) 'pric_in'"),
    ],
)
def test_bad_entries_name_the_model_and_value(tmp_path: Path, entry: str, message: str) -> None:
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.tnsai-eval.models.bad]\n{entry}\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as info:
        ModelTable.load(start=tmp_path)
    assert "model 'bad'" in str(info.value)
    assert message in str(info.value)


def test_embedded_cannot_be_redefined(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tnsai-eval.models.embedded]\nbase_url = "http://x/v1"\nmodel = "m"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="'embedded' is built in"):
        ModelTable.load(start=tmp_path)


def test_malformed_toml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text("[models.a\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"models.toml' is not valid TOML"):
        ModelTable.load(path)


def test_repeated_name_is_refused() -> None:
    table = ModelTable.from_mapping({"a": {"base_url": "http://x/v1", "model": "m"}})
    with pytest.raises(ConfigError, match="model name 'a' is given twice"):
        table.select(["a", "a"])


def test_client_sends_the_key_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAIServer(default=Step.ok("hi")) as server:
        named = NamedModel("s", server.base_url, "served", "SERVED_MODEL_KEY")
        monkeypatch.delenv("SERVED_MODEL_KEY", raising=False)
        with pytest.raises(ConfigError, match=r"model 's': its key variable \$SERVED_MODEL_KEY"):
            named.client()
        monkeypatch.setenv("SERVED_MODEL_KEY", "sk-served-model-key-42")
        client = named.client()
        assert isinstance(client, OpenAIClient)
        assert client.chat("hello").text == "hi"
        assert server.requests[0].json["model"] == "served"
        assert server.requests[0].headers["authorization"] == "Bearer sk-served-model-key-42"
        assert "sk-served" not in repr(named.describe())


AZURE = """
[models.azure]
base_url = "{url}"
model = "deployment-1"
headers = {{api-version = "2024-06-01", api-key = "$AZURE_TEST_KEY"}}
params = {{max_completion_tokens = 64, temperature = 1}}
"""


def test_headers_may_name_variables_and_params_go_with_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAIServer(default=Step.ok("hi")) as server:
        path = tmp_path / "models.toml"
        path.write_text(AZURE.format(url=server.base_url), encoding="utf-8")
        azure = ModelTable.load(path).get("azure")
        monkeypatch.delenv("AZURE_TEST_KEY", raising=False)
        client = azure.front()
        with pytest.raises(ConfigError, match=r"header 'api-key' names \$AZURE_TEST_KEY"):
            client.chat("hello")
        monkeypatch.setenv("AZURE_TEST_KEY", "azure-secret-value-123456")
        client = azure.front()
        client.chat("hello", temperature=0.0, max_tokens=8)
        (sent,) = server.requests
        assert sent.headers["api-key"] == "azure-secret-value-123456"
        assert sent.headers["api-version"] == "2024-06-01"
        # The model's params go over the call's own.
        assert (sent.json["temperature"], sent.json["max_completion_tokens"]) == (1, 64)
        assert sent.json["max_tokens"] == 8
        shown = repr(azure.describe()) + repr(azure) + repr(client)
        assert "azure-secret" not in shown
        assert azure.describe()["headers"] == ["api-key", "api-version"]


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ("{api-key = 5}", "headers must be a table of header names to strings"),
        ('{api-key = "$not a name"}', "must be \\$ and the NAME of an environment variable"),
    ],
)
def test_bad_headers_are_named_without_their_value(
    tmp_path: Path, headers: str, message: str
) -> None:
    path = tmp_path / "models.toml"
    path.write_text(
        f'[models.m]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\nheaders = {headers}\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=message):
        ModelTable.load(path)
