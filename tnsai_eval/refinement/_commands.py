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

Write ``$OUTPUT`` unquoted in the command: it is replaced by an already quoted
path (``"$OUTPUT"`` also works when the temp directory's path needs no quoting).
POSIX only (``sh``, process groups).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import IO

from tnsai_eval.errors import ConfigError
from tnsai_eval.refinement._checks import Check, CheckKind, Verdict

__all__ = ["DEFAULT_COMMAND_TIMEOUT_S", "TAIL_BYTES", "CommandRun", "command_check", "run_command"]

DEFAULT_COMMAND_TIMEOUT_S = 30.0
TAIL_BYTES = 4096
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
    tail: str  # last TAIL_BYTES of stdout+stderr, decoded leniently


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

    def finish(self, timeout: float) -> str:
        self._thread.join(timeout)
        text = bytes(self._buffer).decode("utf-8", errors="replace")
        return ("...\n" + text) if self._truncated else text


def run_command(command: str, output: str, *, timeout_s: float, suffix: str = ".txt") -> CommandRun:
    """Run ``command`` with ``$OUTPUT`` naming a temp file that holds ``output``."""
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
        env = {**os.environ, "OUTPUT": path}
        process = subprocess.Popen(
            ["sh", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # own process group, so the timeout kills it whole
        )
        assert process.stdout is not None
        reader = _TailReader(process.stdout, TAIL_BYTES)
        try:
            exit_code: int | None = process.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            exit_code, timed_out = None, True
        # Kill the group in both cases: after a normal exit, background children
        # may still run (and hold the pipe open); they belong to the check and
        # must not outlive it. Data already in the pipe stays readable.
        _kill_group(process.pid)
        process.wait()
        tail = reader.finish(_DRAIN_GRACE_S)
        return CommandRun(exit_code, timed_out, tail)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, signal.SIGKILL)


def command_check(
    source: str,
    command: str,
    *,
    name: str | None,
    timeout_s: float,
    suffix: str,
) -> Check:
    """A ``Check`` running ``command``; ``source`` is the builder method's name."""
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{source} needs a non-empty shell command, got {command!r}")
    if not isinstance(timeout_s, int | float) or not timeout_s > 0:
        raise ConfigError(f"{source}: timeout_s must be a number > 0, got {timeout_s!r}")
    if not isinstance(suffix, str) or "/" in suffix or "\0" in suffix or len(suffix) > 64:
        raise ConfigError(f"{source}: suffix must be a file-name suffix like '.py', got {suffix!r}")
    label = {"compiler_check": "compiler", "test_command": "tests", "lint_check": "linter"}[source]

    def run(output: str) -> Verdict:
        try:
            result = run_command(command, output, timeout_s=float(timeout_s), suffix=suffix)
        except OSError as exc:
            return Verdict(False, f"the {label} command could not be started: {exc}")
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
