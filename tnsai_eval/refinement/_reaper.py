"""The helper process every command check runs under (Linux): nothing it starts survives.

A check kills its process group when the command ends, but a child that calls
``setsid`` leaves the group and would outlive the check. So on Linux each
command runs as::

    python -I -S _reaper.py sh -c <script>

Where the kernel allows it (root, or unprivileged user namespaces: most
distributions), the helper moves the command into a **PID namespace** of its
own (``unshare(CLONE_NEWPID | CLONE_NEWNS)``, with ``CLONE_NEWUSER`` when not
root, mapping the user to itself). The helper's child is that namespace's
init (PID 1): the command's ``$PPID``. The kernel ignores SIGKILL and SIGSTOP
sent to a namespace's init from inside it, so ``kill -9 $PPID`` and ``kill
-STOP $PPID`` do nothing; when the init exits (the command ended, or the
check's timeout killed it), the kernel kills every process left in the
namespace, whatever session or group it moved to; and the init dies with the
helper (``PR_SET_PDEATHSIG``). The init also mounts a fresh ``/proc`` in its
mount namespace, so the command sees only its own processes there, not the
host's ``/proc/<pid>/environ`` (where that mount is refused, as in some
containers, the host's ``/proc`` stays visible).

Elsewhere (namespaces refused) the helper makes itself a *child subreaper*
(``prctl(PR_SET_CHILD_SUBREAPER)``): orphaned descendants are re-parented to
it instead of to init, and it SIGKILLs and reaps them when the command ends.
That holds against ``setsid``, double forks and fork loops, but a command can
kill or stop its own helper (``kill -9 $PPID``) and leave a ``setsid`` child
behind: only the namespace closes that.

Either way the helper exits with the command's status (128 + n for a command
killed by signal n); on SIGTERM (the check's timeout) it kills everything at
once and exits 124. The subreaper flag and the namespaces are set only here,
in this short-lived helper, never in the host process: a subreaper host would
reap, and so steal the exit status of, children it did not start. The file
imports nothing from tnsai_eval and runs with ``-S`` (no site packages), so it
starts in a few tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

__all__ = ["PR_SET_CHILD_SUBREAPER", "main"]

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
_PR_SET_PDEATHSIG = 1
_CLONE_NEWNS = 0x00020000  # <linux/sched.h>
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 2, 4, 8  # <linux/mount.h>
_MS_REC, _MS_PRIVATE = 0x4000, 0x40000
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
        if os.getpid() == 1:
            # A namespace's init: -1 is every other process in the namespace.
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
        else:
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


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def _run(argv: list[str]) -> int:
    """Start ``argv``, reap everything until it exits, then kill what is left."""
    signal.signal(signal.SIGTERM, _on_term)
    try:
        pid = os.posix_spawnp(argv[0], argv, os.environ)
    except OSError as exc:
        sys.stderr.write(f"tnsai-eval: cannot start {argv[0]!r}: {exc.strerror}\n")
        return 127
    while True:
        # Any child: as a namespace's init or a subreaper, orphans come here
        # too and must be reaped while the command runs.
        done, status = os.waitpid(-1, 0)
        if done == pid:
            break
    _kill_all()
    return _exit_code(status)


def _enter_namespaces(libc: ctypes.CDLL) -> bool:
    """Unshare a PID and a mount namespace (in a user namespace unless root)."""
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWPID | _CLONE_NEWNS) == 0:
        return True
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWNS) != 0:
        return False
    # Map the user to itself, so that files the command writes are still ours.
    try:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    except OSError:
        return True  # the namespaces hold even so; only file ownership looks odd
    return True


def _mount_own_proc(libc: ctypes.CDLL) -> None:
    """Best effort: a /proc that shows only this namespace's processes."""
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return
    libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)


def main(argv: list[str]) -> int:
    """Run ``argv`` in a PID namespace where possible, else as a subreaper; its status."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return _run(argv)
    if not _enter_namespaces(libc):
        # A kernel or sandbox that refuses namespaces: the subreaper, and the
        # process-group kill, are what protects against escapees.
        with contextlib.suppress(AttributeError):
            libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        return _run(argv)
    # The init learns through this pipe whether the helper is still alive
    # (its parent's pid is not visible from inside the namespace).
    alive_read, alive_write = os.pipe()
    init = os.fork()  # the first child in the new PID namespace is its init
    if init == 0:
        code = 1
        try:
            os.close(alive_write)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.set_blocking(alive_read, False)
            try:
                os.read(alive_read, 1)  # b"": the helper died before the line above
            except BlockingIOError:  # nothing to read yet: the helper is alive
                os.close(alive_read)
                _mount_own_proc(libc)
                code = _run(argv)
        finally:
            os._exit(code)
    os.close(alive_read)
    # The check's timeout sends SIGTERM here: the init kills the namespace and exits 124.
    signal.signal(signal.SIGTERM, lambda signum, frame: os.kill(init, signal.SIGTERM))
    _, status = os.waitpid(init, 0)
    return _exit_code(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
