"""Writing a file so that a reader never sees half of it, and no temp file outlives a failure;
naming a file the same way on every machine."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_text", "shown_path"]


def atomic_write_text(path: str | os.PathLike[str], text: str, *, mode: int = 0o644) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path.

    The text goes to a temporary file in the same directory (``os.replace`` is
    atomic only within one filesystem), which then replaces ``path``. Any
    failure, including an interrupt, removes the temporary file and re-raises.
    ``mode`` is the file's permission bits (``mkstemp`` would leave 0600,
    wrong for shared project files such as reports and recordings). Missing
    parent directories are created.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> atomic_write_text(folder / "a" / "r.json", "{}").read_text()
    '{}'
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        # BaseException too: an interrupt mid-write must not leave the temp file.
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target


def shown_path(path: Path, rootdir: Path | None) -> str:
    """``path`` as a report keeps it: relative to ``rootdir`` (POSIX separators).

    >>> shown_path(Path("/repo/prompts/a.txt"), Path("/repo"))
    'prompts/a.txt'
    >>> shown_path(Path("/elsewhere/a.txt"), Path("/repo"))
    '../elsewhere/a.txt'
    """
    if rootdir is None:
        return path.as_posix()
    absolute = Path(os.path.abspath(path))
    try:
        return Path(os.path.relpath(absolute, os.path.abspath(rootdir))).as_posix()
    except ValueError:  # another drive on Windows: no relative form exists
        return absolute.as_posix()
