"""The helper process every command check runs under (Linux): nothing it starts survives.

A check kills its process group when the command ends, but a child that calls
``setsid`` leaves the group and would outlive the check. So on Linux each
command runs as::

    python -I -S _reaper.py sh -c <script>

This helper makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``):
orphaned descendants are re-parented to it instead of to init, whatever
session or group they moved to. It starts the command, waits for it, then
SIGKILLs its remaining children until none is left, reaping each, so every
descendant is gone when it exits. It exits with the command's status (128 + n
for a command killed by signal n). On SIGTERM (the check's timeout) it does the
same clean-up at once and exits 124.

The subreaper flag is set only here, in this short-lived helper, never in the
host process: there it would make the host reap, and so steal the exit status
of, children it did not start. The file imports nothing from tnsai_eval and
runs with ``-S`` (no site packages), so it starts in a few tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

__all__ = ["PR_SET_CHILD_SUBREAPER", "main"]

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
_TIMEOUT_STATUS = 124


def _children() -> list[int]:
    pid = os.getpid()
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(field) for field in handle.read().split()]
    except OSError:
        pass
    # Kernels without CONFIG_PROC_CHILDREN: scan every process's parent.
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and ')': the ppid is
        # the second field after the last ')'.
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1] == str(pid):
            found.append(int(name))
    return found


def _kill_all() -> None:
    """SIGKILL and reap every descendant; returns when none is left."""
    while True:
        for child in _children():
            with contextlib.suppress(ProcessLookupError):  # already gone
                os.kill(child, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _on_term(signum: int, frame: object) -> None:
    _kill_all()
    os._exit(_TIMEOUT_STATUS)


def main(argv: list[str]) -> int:
    """Run ``argv`` as a subreaper; the command's exit status."""
    # A kernel or sandbox that refuses the flag (it needs Linux 3.4) still runs
    # the check: only the process-group kill then protects against escapees.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.signal(signal.SIGTERM, _on_term)
    try:
        pid = os.posix_spawnp(argv[0], argv, os.environ)
    except OSError as exc:
        sys.stderr.write(f"tnsai-eval: cannot start {argv[0]!r}: {exc.strerror}\n")
        return 127
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    _kill_all()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
