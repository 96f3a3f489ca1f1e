"""Command checks (compiler, tests, linter): the security boundary of the loop.

The model's output is untrusted text. It never becomes part of a command line:

* it is written to ``output<suffix>`` in a fresh private temp directory
  (``mkdtemp``: mode 0700, unique name);
* ``$OUTPUT`` (or ``${OUTPUT}``) in the user's command is replaced by that
  file's path passed through ``shlex.quote``, and the path is also exported as
  the ``OUTPUT`` environment variable; nothing else is substituted;
* the command runs as ``sh -c <command>`` with stdin closed, in a new session
  (so a new process group): at the timeout the whole group is killed, not just
  ``sh``, so a compiler's children cannot outlive the check;
* the temp directory (with anything the command wrote there) is removed in a
  ``finally`` whatever happens.

Pass is exit status 0. On failure the message carries the tail (4 KiB) of the
command's combined stdout and stderr, which is what the revision prompt shows
the model. Output is read by a thread that keeps only that tail, so a command
that prints gigabytes cannot exhaust memory.

Secrets stay out of checks. The command runs with a minimal environment:
``PATH``, ``HOME``, ``LANG``, ``LC_*`` and ``TMPDIR`` from this process (the
``ENV_ALLOWLIST``), ``OUTPUT``, and what the check's ``env=`` mapping adds;
nothing else (no ``TNSAI_LLM_API_KEY``, no cloud tokens) is inherited. Its
output is masked before it is shown (``tnsai_eval._util.secrets.mask``: the
clients' API keys and the values of variables named like ``*KEY*``,
``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*AUTH*``), and masked before it
is cut to the tail, so a secret at the cut cannot leak a part.

On Linux the command runs under a small helper process (``_reaper.py``) that
is a child subreaper: descendants that left the process group with ``setsid``
are killed and reaped too, so nothing the command started outlives the check.
Elsewhere only the process group is killed.

Write ``$OUTPUT`` unquoted in the command: it is replaced by an already quoted
path (``"$OUTPUT"`` also works when the temp directory's path needs no quoting).
POSIX only (``sh``, process groups).
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tnsai_eval._util.secrets import is_secret_env_name, mask, mask_then_keep_end
from tnsai_eval.errors import ConfigError
from tnsai_eval.records import CheckKind
from tnsai_eval.refinement._checks import Check, Verdict

__all__ = [
    "DEFAULT_COMMAND_TIMEOUT_S",
    "ENV_ALLOWLIST",
    "TAIL_BYTES",
    "CommandRun",
    "check_env",
    "command_check",
    "command_env",
    "run_command",
]

DEFAULT_COMMAND_TIMEOUT_S = 30.0
TAIL_BYTES = 4096
# Variables a command inherits from this process (plus every LC_* one).
ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "TMPDIR")
# The reader keeps this much more than the tail, so that masking runs on text
# that still holds any secret straddling the tail's start.
_MASK_MARGIN = 4096
_REAPER = Path(__file__).with_name("_reaper.py")
# After SIGTERM at the timeout, how long the helper may take to kill its tree.
_TERM_GRACE_S = 2.0
_READ_CHUNK = 65536
# After killing the group, how long to wait for the reader to see EOF. Only a
# process that escaped the group (setsid) can hold the pipe open that long.
_DRAIN_GRACE_S = 2.0
# $OUTPUT or ${OUTPUT}, but not the start of a longer name such as $OUTPUT_DIR.
_PLACEHOLDER = re.compile(r"\$\{OUTPUT\}|\$OUTPUT(?![A-Za-z0-9_])")


@dataclass(frozen=True, slots=True)
class CommandRun:
    """What one command check observed."""

    exit_code: int | None  # None when the command was killed at the timeout
    timed_out: bool
    tail: str  # last TAIL_BYTES of stdout+stderr, decoded leniently, secrets masked


class _TailReader:
    """Drains a pipe in a thread, keeping only its last ``limit`` bytes."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self._buffer = bytearray()
        self._truncated = False
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while chunk := os.read(self._stream.fileno(), _READ_CHUNK):
                self._buffer += chunk
                if len(self._buffer) > self._limit:
                    del self._buffer[: len(self._buffer) - self._limit]
                    self._truncated = True
        except OSError:
            pass  # a broken pipe ends the output; the tail so far stands
        finally:
            # The thread owns the pipe: only it may close it, so that a reader
            # left blocked by an escaped process never reads a reused fd number.
            self._stream.close()

    def finish(self, timeout: float, keep: int, secrets: list[str]) -> str:
        """The masked output, cut to its last ``keep`` characters (mask first, then cut)."""
        self._thread.join(timeout)
        # Bytes were dropped from the front when the output outgrew the buffer:
        # a key straddling that cut lost its start, which the helper handles.
        text = bytes(self._buffer).decode("utf-8", errors="replace")
        return mask_then_keep_end(text, keep, secrets, truncated=self._truncated)


def check_env(source: str, env: Mapping[str, str] | None) -> dict[str, str]:
    """``env`` as a plain dict after checking names and values; ConfigError names a bad one."""
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise ConfigError(f"{source}: env must be a mapping of names to strings, got {env!r}")
    out: dict[str, str] = {}
    for name, value in env.items():
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise ConfigError(f"{source}: env name {name!r} is not a variable name")
        if not isinstance(value, str) or "\0" in value:
            raise ConfigError(f"{source}: env[{name!r}] must be a str without NUL, got {value!r}")
        out[name] = value
    return out


def command_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command check runs with: the allowlist, then ``extra``.

    >>> import os
    >>> os.environ["TNSAI_LLM_API_KEY"] = "sk-not-for-checks"
    >>> "TNSAI_LLM_API_KEY" in command_env()
    False
    >>> command_env({"CC": "clang"})["CC"]
    'clang'
    >>> del os.environ["TNSAI_LLM_API_KEY"]
    """
    env = {
        name: value
        for name, value in os.environ.items()
        if name in ENV_ALLOWLIST or name.startswith("LC_")
    }
    env.update(extra or {})
    return env


def _argv(script: str) -> list[str]:
    if platform.system() == "Linux":
        # -I: ignore PYTHON* variables and the user site; -S: no site import (fast start).
        return [sys.executable, "-I", "-S", str(_REAPER), "sh", "-c", script]
    return ["sh", "-c", script]


def run_command(
    command: str,
    output: str,
    *,
    timeout_s: float,
    suffix: str = ".txt",
    env: Mapping[str, str] | None = None,
) -> CommandRun:
    """Run ``command`` with ``$OUTPUT`` naming a temp file that holds ``output``.

    The command sees ``command_env(env)`` plus ``OUTPUT``; see the module doc.
    """
    # A private directory (mode 0700) rather than a bare temp file: whatever the
    # command leaves beside the file (py_compile's __pycache__, a compiler's
    # a.out) is removed with it.
    workdir = tempfile.mkdtemp(prefix="tnsai-check-")
    try:
        path = os.path.join(workdir, "output" + suffix)
        # surrogatepass: any Python str (even lone surrogates) can be written;
        # newline="": the bytes on disk are exactly the output's characters.
        with open(path, "x", encoding="utf-8", errors="surrogatepass", newline="") as handle:
            handle.write(output)
        quoted = shlex.quote(path)
        script = _PLACEHOLDER.sub(lambda _: quoted, command)
        process = subprocess.Popen(
            _argv(script),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**command_env(env), "OUTPUT": path},
            start_new_session=True,  # own process group, so the timeout kills it whole
        )
        assert process.stdout is not None
        reader = _TailReader(process.stdout, TAIL_BYTES + _MASK_MARGIN)
        try:
            exit_code: int | None = process.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            exit_code, timed_out = None, True
            # The helper kills its whole tree (setsid escapees included) on SIGTERM.
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=_TERM_GRACE_S)
        # Kill the group in both cases: after a normal exit, background children
        # may still run (and hold the pipe open); they belong to the check and
        # must not outlive it. Data already in the pipe stays readable.
        _kill_group(process.pid)
        process.wait()
        # Values the caller passed under secret-looking names are secrets too.
        given = [value for name, value in (env or {}).items() if is_secret_env_name(name)]
        tail = reader.finish(_DRAIN_GRACE_S, TAIL_BYTES, given)
        return CommandRun(exit_code, timed_out, tail)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, signal.SIGKILL)


def command_check(
    source: str,
    command: str,
    name: str | None,
    timeout_s: float,
    suffix: str,
    env: Mapping[str, str] | None,
) -> Check:
    """A ``Check`` running ``command``; ``source`` is the builder method's name."""
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{source} needs a non-empty shell command, got {command!r}")
    if (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, int | float)
        or not 0 < timeout_s < float("inf")
    ):
        raise ConfigError(f"{source}: timeout_s must be a finite number > 0, got {timeout_s!r}")
    if not isinstance(suffix, str) or "/" in suffix or "\0" in suffix or len(suffix) > 64:
        raise ConfigError(f"{source}: suffix must be a file-name suffix like '.py', got {suffix!r}")
    extra_env = check_env(source, env)
    label = {"compiler_check": "compiler", "test_command": "tests", "lint_check": "linter"}[source]

    def run(output: str) -> Verdict:
        try:
            result = run_command(
                command, output, timeout_s=float(timeout_s), suffix=suffix, env=extra_env
            )
        except OSError as exc:
            return Verdict(False, mask(f"the {label} command could not be started: {exc}"))
        return _verdict(label, result, float(timeout_s))

    return Check(name or f"{source}({command})", CheckKind.COMMAND, source, run)


def _verdict(label: str, result: CommandRun, timeout_s: float) -> Verdict:
    tail = result.tail.strip()
    said = f"; it printed:\n{tail}" if tail else " (it printed nothing)"
    if result.timed_out:
        return Verdict(
            False, f"the {label} did not finish within {timeout_s:g} s and was killed{said}"
        )
    if result.exit_code == 0:
        return Verdict(True, f"the {label} exited with status 0")
    return Verdict(False, f"the {label} failed with exit status {result.exit_code}{said}")
