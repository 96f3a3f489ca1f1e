"""The guard in front of llama.cpp: a probe in a subprocess, its cached verdict, the fallback.

This machine's llama.cpp does not crash, so the tests make the probe's child
crash on purpose: ``TNSAI_EVAL_PROBE_FAULT`` makes it kill itself with a real
SIGILL (every attempt, or only the one with llama.cpp's extra buffer types).
Each test gets its own cache directory, so the user's real verdict is never
read or written here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from tnsai_eval.errors import ConfigError, LocalModelUnavailable, LocalModelWarning
from tnsai_eval.llm import LocalLLM, OpenAIClient, _probe, serve_local_model, smollm2_gguf_path
from tnsai_eval.llm._llama import child_env, library_files
from tnsai_eval.llm._probe import (
    ENV_CACHE_DIR,
    ENV_PROBE_FAULT,
    build_key,
    guard,
    probe,
    probe_cache_file,
)

pytestmark = pytest.mark.local_model

SECRET = "sk-probe-test-0123456789"

FIX = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" '
    "pip install --no-cache-dir --force-reinstall llama-cpp-python"
)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache directory, no fault, and no fallback announced yet in this process."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(ENV_CACHE_DIR, str(folder))
    monkeypatch.delenv(ENV_PROBE_FAULT, raising=False)
    monkeypatch.setattr(_probe, "_WARNED", set())
    return folder


def _cache(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "llama-probe.json").read_text())
    return data


# ---------------------------------------------------------------- the real probe


def test_the_real_probe_loads_and_replies_then_its_verdict_is_cached(cache_dir: Path) -> None:
    model = smollm2_gguf_path()
    first = probe(model, None)
    assert not first.from_cache
    assert first.cache_file == cache_dir / "llama-probe.json"
    # Here the defaults pass; on a machine where they crash the fallback must pass.
    assert first.attempts[0].extra_bufts is True
    assert first.attempts[0].outcome in ("ok", "signal")
    assert first.extra_bufts is (first.attempts[0].outcome == "ok")
    again = probe(model, None)
    assert again.from_cache
    assert again.attempts == first.attempts
    stored = _cache(cache_dir)
    assert stored["build"] == build_key()
    assert list(stored["verdicts"]) == [f"{model}|n_threads=auto"]


def test_where_the_probe_passes_nothing_changes(cache_dir: Path) -> None:
    # LocalLLM loads with what the real probe found: llama.cpp's defaults
    # wherever they work (this machine), so their repacked speed is kept.
    local = LocalLLM()
    verdict = probe(smollm2_gguf_path(), None)
    assert verdict.from_cache  # LocalLLM's own probe, not a second one
    assert local.extra_bufts is verdict.extra_bufts
    if verdict.extra_bufts:
        assert local._loaded.llama.model_params.use_extra_bufts is True


def test_a_forced_pass_answers_the_defaults_without_a_warning(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_PROBE_FAULT, "pass")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        assert guard(smollm2_gguf_path(), 2) is True
    verdict = probe(smollm2_gguf_path(), 2)
    assert [a.outcome for a in verdict.attempts] == ["ok"]


# ---------------------------------------------------------------- a crashing build


def test_sigill_with_extra_bufts_falls_back_with_one_warning_and_the_run_goes_on(
    cache_dir: Path,
) -> None:
    # A whole user run in a fresh interpreter: two clients, a reply, warnings
    # shown every time they are raised (so "once" is ours, not the filter's).
    script = (
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "from tnsai_eval.llm import LocalLLM\n"
        "a = LocalLLM()\n"
        "b = LocalLLM(n_ctx=1024)\n"
        "reply = a.chat('What is the capital of France? Answer in one word.', max_tokens=8)\n"
        "print(a.extra_bufts, b.extra_bufts, a._loaded.llama.model_params.use_extra_bufts)\n"
        "print(reply.text)\n"
    )
    env = {**os.environ, ENV_CACHE_DIR: str(cache_dir), ENV_PROBE_FAULT: "sigill-extra-bufts"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    flags, text = done.stdout.strip().splitlines()
    assert flags == "False False False"
    assert "paris" in text.lower()
    assert done.stderr.count("LocalModelWarning") == 1
    assert "SIGILL (Illegal instruction)" in done.stderr
    assert "without them" in done.stderr
    assert "tnsai-eval doctor" in done.stderr
    (verdict,) = _cache(cache_dir)["verdicts"].values()
    assert [(a["extra_bufts"], a["outcome"], a["signal"]) for a in verdict["attempts"]] == [
        (True, "signal", "SIGILL (Illegal instruction)"),
        (False, "ok", ""),
    ]


def test_the_fallback_is_announced_once_per_process(cache_dir: Path) -> None:
    model = smollm2_gguf_path()
    _write_verdict(model, 3, [("signal", True), ("ok", False)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # so a second warning would be seen
        first = guard(model, 3)
        second = guard(model, 3)
    assert (first, second) == (False, False)
    (warning,) = [w for w in caught if w.category is LocalModelWarning]
    assert re.search(r"SIGILL.*without them.*CMAKE_ARGS", str(warning.message))


def _write_verdict(model: Path, n_threads: int, attempts: list[tuple[str, bool]]) -> None:
    """A cache file holding this build's key and the given verdict, as a probe would leave it."""
    entry = {
        "attempts": [
            {
                "extra_bufts": extra_bufts,
                "outcome": outcome,
                "signal": "SIGILL (Illegal instruction)" if outcome == "signal" else "",
            }
            for outcome, extra_bufts in attempts
        ],
        "probed_at": "2026-01-01T00:00:00Z",
    }
    path = probe_cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "format": 1,
                "build": build_key(),
                "verdicts": {f"{model}|n_threads={n_threads}": entry},
            }
        )
    )


def test_sigill_everywhere_raises_the_typed_error_and_this_process_lives_on(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_PROBE_FAULT, "sigill")
    with pytest.raises(LocalModelUnavailable) as caught:
        LocalLLM(n_ctx=160)  # a setting no other test loads: nothing shared to reuse
    error = caught.value
    message = str(error)
    assert error.signal == "SIGILL"
    assert isinstance(error, ValueError)  # in the tree: a ConfigError
    assert "killed by SIGILL (Illegal instruction)" in message
    assert "with extra buffer types" in message
    assert "without extra buffer types" in message
    assert "AMX tile instructions" in message  # the likely cause
    assert FIX in message  # the fix...
    assert "TNSAI_LLM_BASE_URL" in message  # ...or a served model
    assert "tnsai-eval doctor --fresh" in message
    # Both attempts died in their child; this process is here to check it.
    (verdict,) = _cache(cache_dir)["verdicts"].values()
    assert [a["outcome"] for a in verdict["attempts"]] == ["signal", "signal"]


def test_the_served_model_refuses_to_start_on_a_crashing_build(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_PROBE_FAULT, "sigill")
    with (
        pytest.raises(LocalModelUnavailable, match=r"so serve_local_model did not load it"),
        serve_local_model(),
    ):
        pytest.fail("the server must not start")


def test_the_served_model_falls_back_like_local_llm_and_gets_no_secrets(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_PROBE_FAULT, "sigill-extra-bufts")
    monkeypatch.setenv("TNSAI_LLM_API_KEY", SECRET)
    alias = f"fallback-{os.getpid()}"
    with warnings.catch_warnings(record=True) as caught, serve_local_model(alias=alias) as url:
        warnings.simplefilter("always")
        servers = _processes_naming(alias)
        with OpenAIClient(alias, base_url=url, timeout=60) as llm:
            reply = llm.chat("What is the capital of France? Answer in one word.", max_tokens=8)
    # Our entry point was told to load without the extra buffer types...
    (command, environ) = servers
    assert "--extra-bufts\0off" in command
    # ...and the server it started answers, without the key in its environment.
    assert "paris" in reply.text.lower()
    assert SECRET not in environ
    (warning,) = [w for w in caught if w.category is LocalModelWarning]
    assert "serve_local_model loads the model without them" in str(warning.message)


def test_children_get_no_secrets_and_find_this_tnsai_eval() -> None:
    env = child_env({"PATH": "/bin", "TNSAI_LLM_API_KEY": SECRET, "PYTHONPATH": "/elsewhere"})
    root = str(Path(_probe.__file__).resolve().parents[2])
    assert env == {"PATH": "/bin", "PYTHONPATH": f"{root}{os.pathsep}/elsewhere"}


def _processes_naming(text: str) -> tuple[str, str]:
    """The command line and environment of the one process whose command line has ``text``."""
    found = []
    for folder in Path("/proc").glob("[0-9]*"):
        try:
            command = (folder / "cmdline").read_bytes().decode(errors="replace")
            if text in command:
                found.append((command, (folder / "environ").read_bytes().decode(errors="replace")))
        except OSError:  # the process ended while we looked
            continue
    (only,) = found
    return only


# ---------------------------------------------------------------- the cache and its key


def test_the_key_names_the_libraries_cpu_flags_and_kernel() -> None:
    key = build_key(environ={})
    libraries = library_files()
    assert libraries, "llama-cpp-python ships its libraries in llama_cpp/lib"
    assert key["libraries"] == [[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in libraries]
    assert any("llama" in Path(entry[0]).name for entry in key["libraries"])
    assert key["cpu_flags"]  # /proc/cpuinfo's flags here
    assert os.uname().release in key["kernel"]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda build: build.update(kernel="Linux 0.0.0-another"), id="kernel"),
        pytest.param(
            lambda build: build.update(cpu_flags=build["cpu_flags"] + " amx_tile"),
            id="cpu-flags",
        ),
        pytest.param(lambda build: build["libraries"][0].__setitem__(2, 1), id="library-mtime"),
        pytest.param(lambda build: build["libraries"][0].__setitem__(1, 7), id="library-size"),
        pytest.param(
            lambda build: build["libraries"][0].__setitem__(0, "/elsewhere/libllama.so"),
            id="library-path",
        ),
    ],
)
def test_a_verdict_made_under_another_key_is_discarded(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, change: Any
) -> None:
    # Both attempts crash (their children die at once, so the test is quick).
    model = smollm2_gguf_path()
    monkeypatch.setenv(ENV_PROBE_FAULT, "sigill")
    assert probe(model, 1).extra_bufts is None
    assert probe(model, 1).from_cache
    # The file now says: made on another machine or build, where everything passed.
    path = probe_cache_file()
    data = _cache(cache_dir)
    change(data["build"])
    for entry in data["verdicts"].values():
        entry["attempts"] = [{"extra_bufts": True, "outcome": "ok"}]
    path.write_text(json.dumps(data))
    again = probe(model, 1)
    assert not again.from_cache  # probed again...
    assert again.extra_bufts is None  # ...so this build's crash is seen
    assert _cache(cache_dir)["build"] == build_key()


def test_the_same_key_reuses_the_stored_verdict(cache_dir: Path) -> None:
    # The other side of the test above: with the key unchanged, the file is believed.
    model = smollm2_gguf_path()
    _write_verdict(model, 3, [("signal", True), ("ok", False)])
    verdict = probe(model, 3)
    assert verdict.from_cache
    assert verdict.extra_bufts is False
    assert verdict.probed_at == "2026-01-01T00:00:00Z"


def test_a_changed_fault_setting_is_a_changed_key(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = smollm2_gguf_path()
    monkeypatch.setenv(ENV_PROBE_FAULT, "sigill")
    assert probe(model, 1).extra_bufts is None
    monkeypatch.setenv(ENV_PROBE_FAULT, "pass")
    verdict = probe(model, 1)
    assert not verdict.from_cache
    assert verdict.extra_bufts is True


def test_a_corrupt_cache_file_is_probed_over(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_PROBE_FAULT, "pass")
    cache_dir.mkdir()
    (cache_dir / "llama-probe.json").write_text("{not json")
    verdict = probe(smollm2_gguf_path(), 1)
    assert not verdict.from_cache
    assert verdict.extra_bufts is True
    assert _cache(cache_dir)["format"] == 1


def test_fresh_probes_even_with_a_cached_verdict(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_PROBE_FAULT, "pass")
    probe(smollm2_gguf_path(), 1)
    assert not probe(smollm2_gguf_path(), 1, fresh=True).from_cache


def test_an_unreadable_model_is_not_a_crash_and_is_not_cached(
    cache_dir: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file" * 100)
    with pytest.raises(LocalModelUnavailable, match=r"could not load the model file .*bad\.gguf"):
        LocalLLM(bad)
    verdict = probe(bad.resolve(), None)
    assert [a.outcome for a in verdict.attempts] == ["error"]  # one attempt: no fallback tried
    assert not verdict.from_cache  # inconclusive verdicts are probed again next time


def test_an_unknown_fault_is_named(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_PROBE_FAULT, "segfault")
    with pytest.raises(ConfigError, match=r"TNSAI_EVAL_PROBE_FAULT='segfault' is not one of"):
        probe(smollm2_gguf_path(), None)


def test_the_cache_lives_in_the_user_cache_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _probe.probe_cache_file({ENV_CACHE_DIR: "/tmp/mine"}) == Path(
        "/tmp/mine/llama-probe.json"
    )
    assert _probe.probe_cache_file({"XDG_CACHE_HOME": "/x"}) == Path(
        "/x/tnsai-eval/llama-probe.json"
    )
    monkeypatch.setenv("HOME", "/home/someone")
    assert _probe.probe_cache_file({}) == Path("/home/someone/.cache/tnsai-eval/llama-probe.json")


_LOAD_VERBOSE = """
import sys
import llama_cpp
from tnsai_eval.llm._llama import extra_bufts_setting
with extra_bufts_setting(sys.argv[2] == "on"):
    llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, verbose=True)
"""


@pytest.mark.parametrize("setting", ["on", "off"])
def test_the_fallback_really_loads_without_the_extra_buffer_types(setting: str) -> None:
    # The fallback is only worth something if llama.cpp obeys it: with the
    # extra buffer types on, its load log weighs the repacking buffer type
    # (CPU_REPACK, and AMX where the CPU has it) for the weights; off, never.
    done = subprocess.run(
        [sys.executable, "-c", _LOAD_VERBOSE, str(smollm2_gguf_path()), setting],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        check=True,
    )
    assert ("CPU_REPACK" in done.stderr) is (setting == "on")
