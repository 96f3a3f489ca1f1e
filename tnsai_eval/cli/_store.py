"""``tnsai-eval store migrate|prune DIR``: maintain a response store.

``prune`` keeps only the replies the last run used. Each run notes, per
cassette, the replies it found or recorded there (``DIR/.tnsai-used/``,
ignored by git); ``prune`` keeps those in every cassette the last run opened,
deletes a cassette left with none, and leaves every cassette the last run did
not open as it is, naming them. It prints what it removed, per cassette;
``--dry-run`` changes nothing. Run it after a full run of the suite (a run of
some tests opens only their cassettes), then commit the store. Exit codes:
0 done, 2 a missing directory, or no run noted what it used.

``migrate`` rewrites a response store of formats 1 and 2 as format 3.
Formats 1 and 2 kept one JSON file per reply (``DIR/<k[:2]>/<k>.json``);
format 3 keeps one file per cassette. ``migrate`` moves every old reply into
one cassette (``default`` unless ``--cassette`` names another), under the key
it was recorded with, then removes the old files. Every test and notebook
still replays them (a lookup falls back to ``default``); one run in record
mode then copies each reply into the cassette of the test or notebook that
uses it.

Its exit codes: 0 done (or nothing to migrate), 2 a missing directory or a file
that cannot be read or moved (nothing is written or removed then): a
two-letter folder that is a symbolic link (its files are outside the store),
a file not in its key's folder, a reply that differs from the one the
cassette already holds under that key. Only the files moved are deleted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tnsai_eval.cli._main import subcommand

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    parser = subcommand(subparsers, "store", __doc__)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, func: Any, what: str) -> argparse.ArgumentParser:
        made = actions.add_parser(
            name,
            help=what,
            description=__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        made.add_argument("directory", type=Path, help="the response store directory")
        made.set_defaults(func=func)
        return made

    action("prune", _prune, "keep only the replies the last run used").add_argument(
        "--dry-run", action="store_true", help="say what would go; change nothing"
    )
    migrate = action(
        "migrate", _migrate, "move the one-file-per-reply layout (formats 1 and 2) into a cassette"
    )
    migrate.add_argument(
        "--cassette",
        default="default",
        help="the cassette that receives the replies (default: default)",
    )


def _store(directory: Path) -> Any:
    from tnsai_eval.errors import ConfigError
    from tnsai_eval.llm import ResponseStore

    if not directory.is_dir():
        raise ConfigError(f"store directory {str(directory)!r} does not exist")
    return ResponseStore(directory)


def _prune(args: argparse.Namespace) -> int:
    directory: Path = args.directory
    report = _store(directory).prune(dry_run=args.dry_run)
    if report.run is None:
        print(
            f"{directory}: no run has noted which replies it used (run the tests against "
            "this store first); nothing pruned",
            file=sys.stderr,
        )
        return 2
    verb = "would remove" if args.dry_run else "removed"
    changed = [c for c in report.pruned if c.removed]
    print(
        f"{directory}: {verb} {report.removed} replies from {len(changed)} of the "
        f"{len(report.pruned)} cassettes the last run opened"
    )
    for cassette in report.pruned:
        gone = " (cassette deleted)" if cassette.removed and not cassette.kept else ""
        print(
            f"  {cassette.file.name}: {verb} {cassette.removed} of {cassette.before}, "
            f"kept {cassette.kept}{gone}"
        )
    if report.untouched:
        print(f"left as they are ({len(report.untouched)}, not opened by the last run):")
        for file in report.untouched:
            print(f"  {file.name}")
    return 0


def _migrate(args: argparse.Namespace) -> int:
    # Imported here: `tnsai-eval --help` and the other subcommands do not pay for it.
    from tqdm.auto import tqdm

    directory: Path = args.directory
    store = _store(directory)
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="file", desc="migrate", file=sys.stderr, disable=None)
        bar.update(1)

    try:
        moved = store.migrate(args.cassette, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    if moved == 0:
        print(f"{directory}: nothing to migrate (no per-reply files of formats 1 and 2)")
    else:
        target = store.cassette_path(args.cassette)
        print(f"{directory}: moved {moved} replies into {target} (format 3)")
    return 0
