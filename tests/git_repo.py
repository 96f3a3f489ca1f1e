"""Running git in a test's repository (a pull request's base and head, made on the spot)."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["git"]


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo`` as a throwaway author; its stdout, stripped. Fails the test
    (``CalledProcessError``) when git does."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()
