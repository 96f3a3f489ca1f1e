"""Which recorded replies a run used: the record ``tnsai-eval store prune`` works from.

Cassettes only grow when nothing says which replies are still asked for: a
prompt that changed leaves its old replies behind. So a store notes, per
cassette, the keys a run *used* (a reply found there, or recorded there) in a
small file beside the cassettes::

    <root>/.tnsai-used/<cassette file name, ".used" for ".json">
    {"run": "<run id>", "cassette": "<name, masked>", "keys": ["<key>", ...]}

A run is one pytest session (its xdist workers share the controller's id) or
one process elsewhere; run ids sort by the time the run started, so the *last
run* is the largest id found. A run that uses a cassette again adds its keys
to the record; a later run replaces it. A cassette counts as opened by a run
when the run used a reply in it, recorded into it, or held it (pytest holds a
test's cassette while the test runs, so a test that no longer calls the model
leaves a record with no keys). A cassette looked up only as a fallback,
without a hit, is not opened.

The folder holds a ``.gitignore`` of ``*``: the record describes one
checkout's last run and is never committed. It is written on a best effort
basis: a store that cannot be written (a read-only checkout in CI) still
replays, and ``prune`` then finds no record and says so.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from tnsai_eval._util.files import atomic_write_text, read_regular_file
from tnsai_eval._util.runs import new_run_id

__all__ = ["USAGE_DIR", "PruneReport", "PrunedCassette", "new_run_id", "read_usage", "write_usage"]

#: The folder of a store that holds the usage records (ignored by git).
USAGE_DIR = ".tnsai-used"
# A usage record lists keys only: a few KB for hundreds of replies.
_MAX_USAGE_BYTES = 64 * 1024 * 1024


def _record_path(root: str, file_name: str) -> str:
    # Not ``.json``: nothing that looks for cassettes (or a reviewer's glob) takes it for one.
    return os.path.join(root, USAGE_DIR, file_name.removesuffix(".json") + ".used")


def read_usage(root: str, file_name: str) -> tuple[str, set[str]] | None:
    """(run id, keys) of the usage record of cassette file ``file_name``; None without one
    (or with one that cannot be read: the record is an aid, never a reason to fail)."""
    try:
        data = read_regular_file(_record_path(root, file_name), limit=_MAX_USAGE_BYTES)
        record = json.loads(data or b"null")
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    run, keys = record.get("run"), record.get("keys")
    if not isinstance(run, str) or not isinstance(keys, list):
        return None
    return run, {k for k in keys if isinstance(k, str)}


def write_usage(root: str, file_name: str, shown_name: str, run: str, keys: set[str]) -> None:
    """Note that ``run`` used ``keys`` of cassette ``file_name`` (the caller holds the store's
    lock): added to the record when it is the same run's, replacing it otherwise.

    An ``OSError`` is ignored: a store that cannot be written still replays.
    """
    before = read_usage(root, file_name)
    if before is not None and before[0] == run:
        keys = keys | before[1]
    folder = os.path.join(root, USAGE_DIR)
    try:
        if not os.path.isdir(folder):
            atomic_write_text(os.path.join(folder, ".gitignore"), "*\n")
        record = {"run": run, "cassette": shown_name, "keys": sorted(keys)}
        atomic_write_text(_record_path(root, file_name), json.dumps(record, indent=0) + "\n")
    except OSError:
        return


@dataclass(frozen=True, slots=True)
class PrunedCassette:
    """One cassette ``prune`` rewrote: its file, its name, replies before and kept."""

    file: Path
    name: str
    before: int
    kept: int

    @property
    def removed(self) -> int:
        return self.before - self.kept


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What ``ResponseStore.prune`` did (or, with ``dry_run``, would do).

    ``run`` is the last run's id (None: no run left a usage record);
    ``pruned`` the cassettes that run opened, ``untouched`` the cassette files
    it did not open, left as they are.
    """

    run: str | None
    pruned: tuple[PrunedCassette, ...] = ()
    untouched: tuple[Path, ...] = ()

    @property
    def removed(self) -> int:
        return sum(c.removed for c in self.pruned)
