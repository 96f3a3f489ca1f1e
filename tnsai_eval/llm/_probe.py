"""Probe the llama.cpp build in a subprocess before the first in-process load.

Why: a llama.cpp build can run CPU instructions that the machine refuses. A
native build on a recent Intel Xeon runs AMX tile instructions in its worker
threads, and where the kernel does not grant them the process dies with SIGILL:
no Python exception, no message, and the user's whole run (a pytest session,
a notebook kernel) is gone. So before a model is loaded in process, a child
process loads the same file with the same ``n_threads`` and generates a few
tokens of a chat reply, first with llama.cpp's defaults, then, only when that
dies, without its extra buffer types (see ``_llama``). An import alone would
not do: the crash happens while computing, in the worker threads.

``guard`` turns the verdict into what ``LocalLLM`` and ``serve_local_model``
load: the defaults when they work (nothing changes then); the fallback with
one ``LocalModelWarning`` per process; or ``LocalModelUnavailable`` naming the
signal, the likely cause and the fix when nothing works.

The verdict is cached, so the probe (a second or two) runs once per machine
and build, in ``<user cache dir>/llama-probe.json``. The user cache directory
is ``$TNSAI_EVAL_CACHE_DIR`` when set, else ``tnsai-eval`` in
``$XDG_CACHE_HOME`` (default ``~/.cache``) on Linux, ``~/Library/Caches`` on
macOS and ``%LOCALAPPDATA%`` on Windows. The file holds the build key the
verdicts were measured under: the llama.cpp libraries' paths, sizes and
modification times, the CPU flags the machine reports and the kernel release.
When any of these differ (a rebuild, another machine sharing a home
directory, a kernel upgrade), every verdict in it is discarded and the probe
runs again. Verdicts with an inconclusive attempt (a timeout, a Python error
in the child) are not cached. A cache that cannot be read (not a regular
file: a FIFO, ``/dev/zero``; larger than ``_CACHE_MAX_BYTES``; not JSON,
nested too deeply) is an empty cache, and a stored verdict whose fields are
not what the probe writes is no verdict: the probe runs again. Probes of
several processes at once (xdist workers) are serialized by a lock file
beside it, so one probes and the others read its verdict.

``TNSAI_EVAL_PROBE_FAULT`` makes the probe's child behave as on a broken
machine, for tests and for trying the fallback out: ``sigill`` kills every
attempt with SIGILL, ``sigill-extra-bufts`` only the one with the extra buffer
types, ``pass`` passes without loading anything. Its value is part of the
build key, so a verdict faked with it is never used without it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tnsai_eval._util.files import atomic_write_text, read_regular_file
from tnsai_eval._util.secrets import mask_then_cut
from tnsai_eval._util.text import shown_label
from tnsai_eval.errors import ConfigError, LocalModelUnavailable, LocalModelWarning
from tnsai_eval.llm._llama import library_files, run_python
from tnsai_eval.settings import ENV_BASE_URL, ENV_MODEL

__all__ = [
    "ENV_CACHE_DIR",
    "ENV_PROBE_FAULT",
    "PORTABLE_BUILD_HINT",
    "ProbeAttempt",
    "ProbeVerdict",
    "build_key",
    "cached_verdict",
    "cpu_flags",
    "crash_error",
    "fallback_message",
    "guard",
    "probe",
    "probe_cache_file",
    "probe_main",
    "signal_name",
    "user_cache_dir",
]

#: Overrides the user cache directory (the probe's verdicts live there).
ENV_CACHE_DIR = "TNSAI_EVAL_CACHE_DIR"
#: Fault injection for the probe's child: ``pass``, ``sigill`` or ``sigill-extra-bufts``.
ENV_PROBE_FAULT = "TNSAI_EVAL_PROBE_FAULT"
_FAULTS = ("pass", "sigill", "sigill-extra-bufts")

#: The command that rebuilds llama.cpp without CPU-specific instructions.
PORTABLE_BUILD_HINT = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" '
    "pip install --no-cache-dir --force-reinstall llama-cpp-python"
)

_CACHE_NAME = "llama-probe.json"
_FORMAT = 1
# A real cache holds a few verdicts (well under 10 kB).
_CACHE_MAX_BYTES = 1024 * 1024
_OUTCOMES = frozenset({"ok", "signal", "timeout", "error", "unsupported"})
# Loading the 135M model and replying takes a second or two; the bound is for
# a shared, loaded machine. A probe that runs out is not cached.
_PROBE_TIMEOUT_S = 180.0
# The child's exit status when llama.cpp has no use_extra_bufts switch.
_EXIT_NO_SWITCH = 3
# Command-line flags that say which instructions the machine runs: the probe's
# verdict depends on them, the rest of /proc/cpuinfo (MHz, bugs) does not.
_FLAGS_FIELDS = ("flags", "Features")

Outcome = Literal["ok", "signal", "timeout", "error", "unsupported"]

# Verdicts whose fallback was announced in this process: one warning each.
_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class ProbeAttempt:
    """One child process: load with or without the extra buffer types, reply, exit.

    ``outcome``: ``ok``; ``signal`` (killed by ``signal``, e.g. ``SIGILL``);
    ``timeout``; ``error`` (exited non-zero: a Python error, shown in
    ``detail``); ``unsupported`` (this llama.cpp cannot switch the extra
    buffer types off).
    """

    extra_bufts: bool
    outcome: Outcome
    signal: str = ""
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    def describe(self) -> str:
        """``with extra buffer types: killed by SIGILL (Illegal instruction)`` and the like."""
        setting = "with" if self.extra_bufts else "without"
        what = {
            "ok": "loaded and replied",
            "signal": f"killed by {self.signal}",
            "timeout": f"no reply within {_PROBE_TIMEOUT_S:g} s",
            "error": "failed",
            "unsupported": "not possible with this llama-cpp-python",
        }[self.outcome]
        detail = f" ({self.detail})" if self.detail and self.outcome != "ok" else ""
        return f"{setting} extra buffer types: {what}{detail}"


@dataclass(frozen=True, slots=True)
class ProbeVerdict:
    """What the probe found for one model file and thread count on this build.

    ``extra_bufts`` is the setting to load with: ``True`` (llama.cpp's
    default), ``False`` (the fallback), or ``None`` when no attempt passed.
    """

    model_path: Path
    n_threads: int | None
    attempts: tuple[ProbeAttempt, ...]
    from_cache: bool
    cache_file: Path
    probed_at: str

    @property
    def extra_bufts(self) -> bool | None:
        return next((a.extra_bufts for a in self.attempts if a.ok), None)

    @property
    def crashed(self) -> ProbeAttempt | None:
        """The first attempt that died by a signal or hung, if any."""
        return next((a for a in self.attempts if a.outcome in ("signal", "timeout")), None)

    @property
    def conclusive(self) -> bool:
        """No attempt ended in a way that says nothing about the build."""
        return all(a.outcome in ("ok", "signal", "unsupported") for a in self.attempts)

    def describe(self) -> str:
        """One line per attempt, for ``tnsai-eval doctor`` and error messages."""
        return "; ".join(a.describe() for a in self.attempts)


# ---------------------------------------------------------------- where and what is cached


def user_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """tnsai-eval's directory in the user cache directory (see the module docstring)."""
    env = os.environ if environ is None else environ
    explicit = env.get(ENV_CACHE_DIR)
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "win32":
        base = Path(env.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tnsai-eval"


def probe_cache_file(environ: Mapping[str, str] | None = None) -> Path:
    """The file holding the probe's verdicts and the build key they belong to."""
    return user_cache_dir(environ) / _CACHE_NAME


def build_key(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What a verdict depends on: llama.cpp's libraries, the CPU's flags, the kernel.

    JSON-ready; two keys are the same build on the same machine when equal.
    """
    env = os.environ if environ is None else environ
    fault = env.get(ENV_PROBE_FAULT, "")
    if fault and fault not in _FAULTS:
        raise ConfigError(
            f"{ENV_PROBE_FAULT}={fault!r} is not one of {', '.join(map(repr, _FAULTS))}"
        )
    libraries = []
    for path in library_files():
        stat = path.stat()
        libraries.append([str(path), stat.st_size, stat.st_mtime_ns])
    return {
        "libraries": libraries,
        "cpu_flags": " ".join(cpu_flags()),
        "kernel": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "fault": fault,
    }


def cpu_flags() -> list[str]:
    """The instruction-set flags the kernel reports for this CPU (sorted), from
    ``/proc/cpuinfo``; on systems without it, the processor's name."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [platform.processor() or platform.machine()]
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in _FLAGS_FIELDS:
            return sorted(set(value.split()))
    return [platform.processor() or platform.machine()]


def _entry_name(model_path: Path, n_threads: int | None) -> str:
    return f"{model_path}|n_threads={'auto' if n_threads is None else n_threads}"


def _read_cache(path: Path) -> dict[str, Any]:
    # A missing, unreadable or foreign file is an empty cache: the probe runs
    # again and rewrites it, which is all a cache can ask for. Only a regular
    # file is read, so a FIFO cannot hang the reader nor /dev/zero fill memory.
    try:
        raw = read_regular_file(path, limit=_CACHE_MAX_BYTES)
        data = json.loads(raw.decode("utf-8")) if raw is not None else None
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return {}
    return data


def _cached_verdict(
    key: Mapping[str, Any], model_path: Path, n_threads: int | None, cache_file: Path
) -> ProbeVerdict | None:
    data = _read_cache(cache_file)
    if data.get("build") != key:
        return None
    verdicts = data.get("verdicts")
    entry = _entry_name(model_path, n_threads)
    stored = verdicts.get(entry) if isinstance(verdicts, dict) else None
    if not isinstance(stored, dict):
        return None
    listed = stored.get("attempts")
    probed_at = stored.get("probed_at")
    if not isinstance(listed, list) or not listed or not isinstance(probed_at, str):
        return None
    attempts = tuple(a for a in map(_stored_attempt, listed) if a is not None)
    if len(attempts) != len(listed):
        return None
    # A time stamp, shown by doctor: a hand edit must not put a control
    # sequence or a page of text on the terminal.
    shown_time = shown_label(probed_at)[:40]
    return ProbeVerdict(model_path, n_threads, attempts, True, cache_file, shown_time)


def _stored_attempt(item: object) -> ProbeAttempt | None:
    """The attempt a cache entry describes, or ``None`` when it is not one the probe writes."""
    if not isinstance(item, dict):
        return None
    extra, outcome = item.get("extra_bufts"), item.get("outcome")
    signal_text, detail = item.get("signal", ""), item.get("detail", "")
    if (
        not isinstance(extra, bool)
        or outcome not in _OUTCOMES
        or not isinstance(signal_text, str)
        or not isinstance(detail, str)
    ):
        return None
    if outcome == "signal" and not signal_text:
        return None
    # Shown by doctor and in errors: on one line, masked, cut as the probe cuts it.
    return ProbeAttempt(extra, outcome, shown_label(signal_text)[:80], shown_label(detail)[:300])


def _store(verdict: ProbeVerdict, key: Mapping[str, Any], entry: str) -> None:
    data = _read_cache(verdict.cache_file)
    verdicts = data.get("verdicts") if data.get("build") == key else None
    verdicts = dict(verdicts) if isinstance(verdicts, dict) else {}
    verdicts[entry] = {
        "attempts": [dataclasses.asdict(a) for a in verdict.attempts],
        "probed_at": verdict.probed_at,
    }
    text = json.dumps({"format": _FORMAT, "build": key, "verdicts": verdicts}, indent=1)
    with contextlib.suppress(OSError):  # a read-only home only costs a probe per process
        atomic_write_text(verdict.cache_file, text + "\n")


@contextlib.contextmanager
def _probe_lock(cache_file: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # Windows: concurrent probes only cost time
        yield
        return
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        # Not blocking: a FIFO in its place fails here (no reader) instead of hanging.
        fd = os.open(
            cache_file.with_suffix(".lock"),
            os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC,
            0o600,
        )
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# ---------------------------------------------------------------- probing


def cached_verdict(
    model_path: Path, n_threads: int | None, *, environ: Mapping[str, str] | None = None
) -> ProbeVerdict | None:
    """The cached verdict for this build, or ``None``; never runs the probe."""
    env = os.environ if environ is None else environ
    return _cached_verdict(build_key(env), model_path, n_threads, probe_cache_file(env))


def probe(
    model_path: Path,
    n_threads: int | None,
    *,
    fresh: bool = False,
    environ: Mapping[str, str] | None = None,
) -> ProbeVerdict:
    """The verdict for ``model_path`` at ``n_threads``: cached, or measured now.

    ``fresh=True`` probes even when a cached verdict exists (and replaces it).
    """
    env = os.environ if environ is None else environ
    key = build_key(env)
    cache_file = probe_cache_file(env)
    cached = None if fresh else _cached_verdict(key, model_path, n_threads, cache_file)
    if cached is not None:
        return cached
    with _probe_lock(cache_file):
        # Another process may have probed while this one waited for the lock.
        cached = None if fresh else _cached_verdict(key, model_path, n_threads, cache_file)
        if cached is not None:
            return cached
        attempts: list[ProbeAttempt] = []
        for extra_bufts in (True, False):
            attempt = _attempt(model_path, n_threads, extra_bufts, env)
            attempts.append(attempt)
            # Only a crash or a hang makes the fallback worth trying: an error
            # (a bad model file...) would be the same without the extra buffer types.
            if attempt.outcome not in ("signal", "timeout"):
                break
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        verdict = ProbeVerdict(model_path, n_threads, tuple(attempts), False, cache_file, now)
        if verdict.conclusive:
            _store(verdict, key, _entry_name(model_path, n_threads))
    return verdict


def _attempt(
    model_path: Path, n_threads: int | None, extra_bufts: bool, env: Mapping[str, str]
) -> ProbeAttempt:
    code = "from tnsai_eval.llm._probe import probe_main; raise SystemExit(probe_main())"
    args = [str(model_path), str(n_threads or 0), "1" if extra_bufts else "0"]
    try:
        done = run_python(code, args, env, _PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return ProbeAttempt(extra_bufts, "timeout")
    if done.returncode == 0:
        return ProbeAttempt(extra_bufts, "ok")
    if done.returncode < 0:
        return ProbeAttempt(extra_bufts, "signal", signal=signal_name(-done.returncode))
    if done.returncode == _EXIT_NO_SWITCH:
        return ProbeAttempt(extra_bufts, "unsupported")
    tail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
    return ProbeAttempt(extra_bufts, "error", detail=mask_then_cut(tail[0], 300))


def signal_name(number: int) -> str:
    """``SIGILL (Illegal instruction)`` for 4, and the like."""
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    description = signal.strsignal(number)
    return f"{name} ({description})" if description else name


def probe_main(argv: Sequence[str] | None = None) -> int:
    """The probe's child: ``MODEL N_THREADS EXTRA_BUFTS``; load, reply, exit 0."""
    model, threads, extra = sys.argv[1:] if argv is None else argv
    extra_bufts = extra == "1"
    fault = os.environ.get(ENV_PROBE_FAULT, "")
    _no_core_dump()
    if fault == "pass":
        return 0
    if fault == "sigill" or (fault == "sigill-extra-bufts" and extra_bufts):
        signal.raise_signal(signal.SIGILL)
    from tnsai_eval.llm._llama import new_llama, supports_extra_bufts_switch

    if not extra_bufts and not supports_extra_bufts_switch():
        return _EXIT_NO_SWITCH
    llama = new_llama(
        Path(model), n_ctx=512, n_threads=int(threads) or None, extra_bufts=extra_bufts
    )
    # A chat reply like LocalLLM's: the prompt runs through the batched kernels,
    # the reply through the one-token ones, both in llama.cpp's worker threads.
    llama.create_chat_completion(
        messages=[
            {"role": "system", "content": "You are a careful assistant. Answer briefly."},
            {"role": "user", "content": "Name three colours of the rainbow, one per line."},
        ],
        max_tokens=4,
        temperature=0.0,
    )
    llama.close()
    return 0


def _no_core_dump() -> None:
    # A crash the probe exists to catch must not leave a core file behind.
    try:
        import resource
    except ImportError:
        return
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# ---------------------------------------------------------------- the guard


def guard(model_path: Path, n_threads: int | None, *, what: str = "LocalLLM") -> bool:
    """Whether to load ``model_path`` with llama.cpp's extra buffer types.

    ``True`` where the probe passes with llama.cpp's defaults (nothing
    changes); ``False`` where only the fallback works, with one
    ``LocalModelWarning`` per process; ``LocalModelUnavailable`` when no
    setting survives the probe. An inconclusive probe (a Python error in the
    child) answers ``True``: loading in process then raises that same error.
    """
    verdict = probe(model_path, n_threads)
    choice = verdict.extra_bufts
    if choice is None:
        if verdict.crashed is not None:
            raise crash_error(verdict, what=what)
        return True
    if choice is False:
        entry = _entry_name(model_path, n_threads)
        with _WARNED_LOCK:
            first = entry not in _WARNED
            _WARNED.add(entry)
        if first:
            warnings.warn(fallback_message(verdict, what=what), LocalModelWarning, stacklevel=3)
    return choice


def fallback_message(verdict: ProbeVerdict, *, what: str = "LocalLLM") -> str:
    crash = verdict.crashed
    how = f"was {crash.describe().split(': ', 1)[1]}" if crash else "failed"
    return (
        f"llama.cpp {how} in a probe with its extra buffer types (repacked weights, "
        f"such as AMX kernels) on this machine, so {what} loads the model without them: "
        f"it works, somewhat slower (bench/README.md). A portable build keeps the "
        f"probe passing: {PORTABLE_BUILD_HINT}. Details: tnsai-eval doctor"
    )


def crash_error(verdict: ProbeVerdict, *, what: str = "LocalLLM") -> LocalModelUnavailable:
    """The typed error for a build that no setting keeps alive, naming signal, cause and fix."""
    crash = verdict.crashed
    assert crash is not None
    if crash.signal.startswith("SIGILL"):
        cause = (
            "this llama.cpp build runs CPU instructions the machine refuses: a native "
            "build made for another CPU, or AMX tile instructions the kernel does not "
            "grant to llama.cpp's worker threads (Intel Xeon Sapphire Rapids and later)"
        )
    elif crash.outcome == "timeout":
        cause = (
            f"llama.cpp did not generate a few tokens within {_PROBE_TIMEOUT_S:g} s: a hang "
            f"in this build, or a machine far too loaded (such a verdict is not cached)"
        )
    else:
        cause = "a crash inside llama.cpp on this machine"
    return LocalModelUnavailable(
        f"the embedded model cannot run: a probe that loaded {str(verdict.model_path)!r} "
        f"and generated a few tokens in a subprocess died ({verdict.describe()}), "
        f"so {what} did not load it in this process. Likely cause: {cause}. Fix: "
        f"rebuild llama-cpp-python portably: {PORTABLE_BUILD_HINT}; or use a served "
        f"model: set {ENV_BASE_URL} and {ENV_MODEL}. Then check with: tnsai-eval doctor --fresh",
        signal=crash.signal.split(" ", 1)[0],
    )
