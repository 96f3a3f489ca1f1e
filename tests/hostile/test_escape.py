"""A check cannot outlive itself by disabling its helper, nor read the host's environment.

The command runs in a PID namespace whose init is its ``$PPID``: killing or
stopping it from inside does nothing, and whatever is left when the check ends
dies with the namespace. Each escapee is found by a unique command line,
since its pid inside the namespace means nothing out here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.hostile.conftest import API_KEY
from tests.processes import running
from tnsai_eval.refinement import CompletionCriteria

pytestmark = pytest.mark.usefixtures("secret_env")


def _marker(tag: int) -> str:
    return f"sleep 120.{os.getpid()}{tag}"


def _kill_leftovers(marker: str) -> list[int]:
    """The escapees' pids, killed so that a failing test leaves nothing behind."""
    found = running(marker)
    for pid in found:
        os.kill(pid, signal.SIGKILL)
    return found


@pytest.mark.parametrize(("tag", "attack"), [(1, "kill -9 $PPID"), (2, "kill -STOP $PPID")])
def test_killing_or_stopping_the_helper_leaves_nothing_behind(tag: int, attack: str) -> None:
    marker = _marker(tag)
    command = f"setsid sh -c 'exec {marker}' & sleep 0.3; {attack}; sleep 0.3; exit 0"
    criteria = CompletionCriteria.builder().compiler_check(command, timeout_s=20).build()
    (outcome,) = criteria.evaluate("x")
    assert _kill_leftovers(marker) == []
    # The helper was out of reach: the command ran to its end.
    assert outcome.passed, outcome.message


def test_a_check_cannot_read_the_hosts_environment_through_proc() -> None:
    # The key is in the host's environment from its start (as in CI), so that
    # its /proc/<pid>/environ holds it; the command greps every environ it sees.
    command = "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c hostile; exit 1"
    script = (
        "from tnsai_eval.refinement import CompletionCriteria\n"
        f"criteria = CompletionCriteria.builder().compiler_check({command!r}).build()\n"
        "print(criteria.evaluate('x')[0].message)\n"
    )
    env = {**os.environ, "TNSAI_LLM_API_KEY": API_KEY}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert API_KEY not in done.stdout
    assert "printed:\n0" in done.stdout, done.stdout  # no environ held it: never read
