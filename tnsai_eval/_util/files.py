"""Writing a file so that a reader never sees half of it, and no temp file outlives a failure;
reading one that may be anything but the file it should be; naming a file the same
way on every machine."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["NotARegularFile", "atomic_write_text", "read_regular_file", "shown_path"]

# Opened without blocking: a FIFO put where a file should be would otherwise
# hang the open (no writer) or the read (a writer that never writes).
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class NotARegularFile(OSError):
    """What should be a file is a FIFO, a device, a socket or a directory, or is too large."""


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


def read_regular_file(path: str | os.PathLike[str], *, limit: int) -> bytes | None:
    """The bytes of ``path``, or ``None`` when it does not exist.

    Only a regular file of at most ``limit`` bytes is read (a symbolic link is
    followed to what it names): a directory, a FIFO, a device such as
    ``/dev/zero`` or a socket raises ``NotARegularFile`` without a byte read,
    and so does a file larger than ``limit`` (checked before reading, and
    again while reading in case it grows), so a hostile path can neither hang
    the reader nor fill its memory. Other failures (no permission...) raise
    their ``OSError``.

    >>> read_regular_file("/dev/zero", limit=10)
    Traceback (most recent call last):
    ...
    tnsai_eval._util.files.NotARegularFile: '/dev/zero' is a character device, not a regular file
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    shown = os.fspath(path)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(f"{shown!r} is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise NotARegularFile(
                f"{shown!r} holds {info.st_size} bytes, more than the {limit} allowed"
            )
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise NotARegularFile(f"{shown!r} holds more than the {limit} bytes allowed")
    return data


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "of an unknown kind"


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
