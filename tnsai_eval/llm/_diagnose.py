"""``diagnose()``: does the model ``default_llm()`` would use work here, and if not, why.

The core of ``tnsai-eval doctor`` (the command only prints it). It never loads
a model in this process: llama.cpp's facts come from subprocesses (its build
features, the probe of ``_probe``), so a build that crashes on this machine is
reported, not suffered. A configured server, and the server of every named
model (``[tool.tnsai-eval.models.NAME]``), is asked ``GET {base_url}/models``,
bounded: ``server_timeout`` seconds for the whole answer (each wait for a byte
at most ``_SERVER_WAIT_S``, so a server that sends nothing, or one byte at a
time, costs that much and no more) and ``_MAX_SERVER_BYTES`` of body (an
endless or huge body is cut there). The model ids it lists are shown masked,
on one line and cut, at most ``_SHOWN_IDS`` of them: they come from the server.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from tnsai_eval._util.checks import seconds
from tnsai_eval._util.secrets import mask_then_cut, redact_url, remember
from tnsai_eval._util.text import shown_label
from tnsai_eval.errors import ConfigError, LocalModelUnavailable
from tnsai_eval.llm._llama import build_features, library_files
from tnsai_eval.llm._model_path import INSTALL_HINT, smollm2_gguf_path
from tnsai_eval.llm._models import ModelTable, NamedModel
from tnsai_eval.llm._probe import (
    ProbeVerdict,
    cached_verdict,
    cpu_flags,
    crash_error,
    probe,
)
from tnsai_eval.settings import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, resolve_model

__all__ = ["Diagnosis", "DiagnosisItem", "diagnose"]

# The CPU flags that decide which llama.cpp kernels can run; the rest of the
# machine's long list says nothing about the model.
_RELEVANT_FLAGS = (
    "sse3", "ssse3", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw",
    "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16",
    "asimd", "sve", "i8mm",
)  # fmt: skip
#: The whole check of one server: connecting, the answer's head and its body.
_SERVER_TIMEOUT_S = 10.0
# The longest wait for any one step (connect, a read): what a silent server costs past it.
_SERVER_WAIT_S = 5.0
# A model list is a few kB; a body past this is not read further.
_MAX_SERVER_BYTES = 1024 * 1024
# Model ids shown from a server's list, and characters of each.
_SHOWN_IDS = 10
_SHOWN_ID_CHARS = 80


@dataclass(frozen=True, slots=True)
class DiagnosisItem:
    """One line of the diagnosis.

    ``ok`` is ``False`` when this item keeps the default client from working,
    ``True`` when it was checked and is fine, ``None`` for information.
    """

    name: str
    value: str
    ok: bool | None = None


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Every item checked, in order; ``ok`` when none of them is a problem."""

    items: tuple[DiagnosisItem, ...]
    client: str

    @property
    def ok(self) -> bool:
        return all(item.ok is not False for item in self.items)

    @property
    def problems(self) -> tuple[DiagnosisItem, ...]:
        return tuple(item for item in self.items if item.ok is False)

    def __getitem__(self, name: str) -> DiagnosisItem:
        for item in self.items:
            if item.name == name:
                return item
        raise KeyError(name)


def diagnose(
    *,
    fresh: bool = False,
    environ: Mapping[str, str] | None = None,
    models: ModelTable | None = None,
    server_timeout: float = _SERVER_TIMEOUT_S,
) -> Diagnosis:
    """Check what ``default_llm()`` would use, with ``environ`` (default ``os.environ``),
    and the server of every named model.

    ``fresh=True`` runs llama.cpp's probe now instead of reading its cached
    verdict (and caches the new one). ``models`` is the named-model table
    (default: ``ModelTable.load()``, from the nearest ``pyproject.toml``; a
    table that cannot be read is one failed item). ``server_timeout`` bounds
    each server's check (see the module docstring).
    """
    server_timeout = seconds("server_timeout", server_timeout)
    env = os.environ if environ is None else environ
    items = [
        DiagnosisItem("python", f"{platform.python_version()} ({sys.executable})"),
        DiagnosisItem("tnsai-eval", _version("tnsai-eval") or "(not installed as a package)"),
    ]
    settings = resolve_model(environ=env)
    remember(settings.api_key)  # masked in every item, whichever environment it came from
    client, why, client_ok = _client(settings.base_url, settings.model)
    items.extend(_local_items(settings.embedded, fresh, env))
    items.append(DiagnosisItem("default client", f"{client}: {why}", client_ok))
    if settings.base_url is not None:
        # Asked even when the model name is missing: its list says which to set.
        items.append(
            _server_item("server", settings.base_url, settings.api_key, settings.model,
                         server_timeout)
        )  # fmt: skip
    else:
        items.append(DiagnosisItem("server", f"none configured ({ENV_BASE_URL} is not set)"))
    items.extend(_named_items(models, env, server_timeout))
    return Diagnosis(tuple(items), client)


def _named_items(
    models: ModelTable | None, env: Mapping[str, str], timeout: float
) -> list[DiagnosisItem]:
    """One item per named model with a server, checked as the default one is."""
    if models is None:
        try:
            models = ModelTable.load()
        except ConfigError as exc:
            return [DiagnosisItem("named models", mask_then_cut(str(exc), 300), False)]
    items = []
    for name in models.names:
        model: NamedModel = models.get(name)
        if model.base_url is None:  # the embedded model: checked above
            continue
        label = f"model {name}"
        try:
            key = model.api_key(env)
        except ConfigError as exc:
            items.append(DiagnosisItem(label, mask_then_cut(str(exc), 300), False))
            continue
        items.append(_server_item(label, model.base_url, key, model.model, timeout))
    return items


def _client(url: str | None, model: str | None) -> tuple[str, str, bool | None]:
    if url is None and model is None:
        return (
            "LocalLLM",
            f"the embedded model, because neither {ENV_BASE_URL} nor {ENV_MODEL} is set",
            None,
        )
    if url is None or model is None:
        given, missing = (
            (f"{ENV_MODEL}={model!r}", ENV_BASE_URL)
            if url is None
            else (f"{ENV_BASE_URL}={redact_url(url)!r}", ENV_MODEL)
        )
        return "default_llm()", f"raises ConfigError: {given} is set but {missing} is not", False
    return (
        f"OpenAIClient(model={model!r}, base_url={redact_url(url)!r})",
        f"{ENV_BASE_URL} and {ENV_MODEL} are set",
        None,
    )


def _local_items(embedded: bool, fresh: bool, env: Mapping[str, str]) -> list[DiagnosisItem]:
    # Problems with the embedded model only count when it is what default_llm() uses.
    needed: bool | None = False if embedded else None
    fine: bool | None = True if embedded else None
    items: list[DiagnosisItem] = []
    version = _version("llama-cpp-python")
    items.append(
        DiagnosisItem("llama-cpp-python", f"{version}{_library_versions()}", fine)
        if version
        else DiagnosisItem(
            "llama-cpp-python", f"not installed; install it with: {INSTALL_HINT}", needed
        )
    )
    flags = set(cpu_flags())
    granted = [f for f in _RELEVANT_FLAGS if f in flags]
    items.append(DiagnosisItem("machine CPU", " ".join(granted) or "(no SIMD flags reported)"))
    items.append(DiagnosisItem("kernel", f"{platform.system()} {platform.release()}"))
    try:
        model = smollm2_gguf_path()
    except LocalModelUnavailable as exc:
        items.append(DiagnosisItem("model file", str(exc), needed))
        model = None
    else:
        items.append(DiagnosisItem("model file", str(model), fine))
    if version is None or model is None:
        items.append(DiagnosisItem("probe", "not run (the embedded model is not installed)"))
        return items
    features = build_features(env)
    items.append(DiagnosisItem("llama.cpp build", features or "(could not be read)"))
    if embedded or fresh:
        verdict: ProbeVerdict | None = probe(model, None, fresh=fresh, environ=env)
    else:
        # default_llm() uses the server: the embedded model's probe is shown
        # when it has run, and not spent time on otherwise.
        verdict = cached_verdict(model, None, environ=env)
    if verdict is None:
        items.append(DiagnosisItem("probe", "not run (a server is configured; --fresh runs it)"))
    else:
        items.append(_probe_item(verdict, needed))
    return items


def _library_versions() -> str:
    """`` (libllama 0.5.0, libggml 0.25.3)``: the llama.cpp libraries' own versions,
    read from their file names (``libllama.so.0.5.0``), where the platform gives them."""
    found = []
    for path in library_files():
        name, _, version = path.name.partition(".so.")
        if name in ("libllama", "libggml") and version.count(".") == 2:
            found.append(f"{name} {version}")
    return f" ({', '.join(found)})" if found else ""


def _version(distribution: str) -> str | None:
    # From the installed metadata: the llm layer does not import the package above it.
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _probe_item(verdict: ProbeVerdict, needed: bool | None) -> DiagnosisItem:
    when = (
        f"cached {verdict.probed_at} in {verdict.cache_file}; --fresh runs it again"
        if verdict.from_cache
        else f"run now, cached in {verdict.cache_file}"
    )
    if verdict.extra_bufts is None:
        failure = crash_error(verdict) if verdict.crashed is not None else verdict.describe()
        return DiagnosisItem("probe", f"FAILS: {failure} [{when}]", needed)
    text = (
        f"passes with llama.cpp's defaults ({verdict.describe()})"
        if verdict.extra_bufts
        else f"FALLBACK: {verdict.describe()}; LocalLLM loads without the extra buffer types "
        "(slower)"
    )
    return DiagnosisItem("probe", f"{text} [{when}]", None if needed is None else True)


def _server_item(
    label: str, base_url: str, api_key: str | None, model: str | None, timeout: float
) -> DiagnosisItem:
    """``GET {base_url}/models``, bounded in time and size, as one item named ``label``."""
    url = f"{base_url.rstrip('/')}/models"
    shown = redact_url(url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    answer = _bounded_get(url, headers, timeout)
    if isinstance(answer, str):
        return DiagnosisItem(label, f"GET {shown} {answer}", False)
    status, body = answer
    if status != 200:
        key_hint = ""
        if status in (401, 403):
            key = ENV_API_KEY if label == "server" else "its key variable"
            key_hint = f" (is {key} right?)"
        return DiagnosisItem(label, f"GET {shown} answered HTTP {status}{key_hint}", False)
    return DiagnosisItem(label, f"GET {shown} answers (HTTP 200{_model_names(body, model)})", True)


def _bounded_get(url: str, headers: Mapping[str, str], timeout: float) -> tuple[int, bytes] | str:
    """(status, body) of ``GET url``, or what went wrong, within ``timeout`` seconds overall.

    No single wait lasts more than ``_SERVER_WAIT_S`` (or ``timeout``), the
    deadline is checked as each piece of the body arrives, and reading stops
    past ``_MAX_SERVER_BYTES``.
    """
    deadline = time.monotonic() + timeout
    wait = httpx.Timeout(min(timeout, _SERVER_WAIT_S))
    try:
        with (
            httpx.Client(timeout=wait, follow_redirects=False) as client,
            client.stream("GET", url, headers=headers) as response,
        ):
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > _MAX_SERVER_BYTES:
                    return (
                        f"answered HTTP {response.status_code} with a body over "
                        f"{_MAX_SERVER_BYTES} bytes; not read further"
                    )
                if time.monotonic() >= deadline:
                    return f"did not finish answering within {timeout:g} s"
            return response.status_code, bytes(body)
    except httpx.HTTPError as exc:
        problem = mask_then_cut(f"{type(exc).__name__}: {exc}", 300)
        return f"does not answer ({problem})"


def _model_names(body: bytes, model: str | None) -> str:
    """``, models: a, b`` from a model list (each id masked, on one line, cut)."""
    try:
        data = json.loads(body).get("data")
        ids = [m.get("id") for m in data if isinstance(m, dict)]
    except (ValueError, AttributeError, TypeError, RecursionError):
        return ""
    names = [shown_label(str(i))[:_SHOWN_ID_CHARS] for i in ids if isinstance(i, str | int)]
    if not names:
        return ""
    more = f" and {len(names) - _SHOWN_IDS} more" if len(names) > _SHOWN_IDS else ""
    missing = ""
    if model is not None and model not in ids:
        missing = f"; {shown_label(model)[:_SHOWN_ID_CHARS]!r} is not among them"
    return f", models: {', '.join(names[:_SHOWN_IDS])}{more}{missing}"
