"""The ``tnsai-eval`` command.

Each subcommand lives in its own private module (``tnsai_eval/cli/_<name>.py``)
exposing ``add_parser(subparsers)``, which registers the subcommand and sets
``func`` (``args -> exit code``) as its default. This module only wires them,
from the ``SUBCOMMANDS`` table: a new subcommand is one line there.

A run imports the module of the subcommand it runs and no other: ``tnsai-eval
--help`` lists the subcommands from the table alone, so it loads neither the
HTTP client, nor the optimizer, nor the reports (``tests/cli/test_startup.py``
counts the modules; ``bench/README.md`` has the times).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from tnsai_eval import __version__
from tnsai_eval.errors import TnsaiError

if TYPE_CHECKING:
    from tnsai_eval.llm import LLMClient

__all__ = ["SUBCOMMANDS", "build_parser", "main", "subcommand"]

#: Subcommand -> (the module that registers it, the line ``--help`` shows for it).
#: The module is imported only when its subcommand runs (or a full parser is built).
SUBCOMMANDS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "chat": ("tnsai_eval.cli._chat", "print one reply from the model"),
        "report": (
            "tnsai_eval.cli._report",
            "summarize a --tnsai-report JSON file, optionally against a baseline",
        ),
        "ci": (
            "tnsai_eval.cli._ci",
            "pull-request steps: choose the base branch's baseline, write the PR comment",
        ),
        "refine": (
            "tnsai_eval.cli._refine",
            "revise a draft with the model until it passes the given checks",
        ),
        "optimize": ("tnsai_eval.cli._optimize", "search for a better prompt on a dataset"),
        "eval": (
            "tnsai_eval.cli._eval",
            "score a prompt on a dataset, once per model: leaderboard, CSV, report, PNG",
        ),
        "doctor": (
            "tnsai_eval.cli._doctor",
            "check that the model tnsai-eval would use works here",
        ),
        "store": (
            "tnsai_eval.cli._store",
            "maintain a response store (prune unused replies, migrate an older layout)",
        ),
    }
)


def subcommand(subparsers: Any, name: str, description: str) -> argparse.ArgumentParser:
    """Register subcommand ``name`` with its help line from ``SUBCOMMANDS`` (what
    ``--help`` lists without importing it) and ``description`` (its module's
    docstring) shown as written."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=SUBCOMMANDS[name][1],
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The ``tnsai-eval`` argument parser.

    With ``commands`` (names from ``SUBCOMMANDS``), only those subcommands'
    modules are imported and their options registered; the others are listed
    with their help line and parse nothing. Without, every subcommand is registered.
    """
    wanted = set(SUBCOMMANDS if commands is None else commands)
    parser = argparse.ArgumentParser(
        prog="tnsai-eval",
        description="Evaluate, refine and optimize LLM prompts.",
    )
    parser.add_argument("--version", action="version", version=f"tnsai-eval {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_line) in SUBCOMMANDS.items():
        if name in wanted:
            importlib.import_module(module).add_parser(subparsers)
        else:
            subparsers.add_parser(name, help=help_line, add_help=False)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (the
    top-level parser's only options, ``-h`` and ``--version``, take no value)."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word if word in SUBCOMMANDS else None
    return None


def main(argv: Sequence[str] | None = None, *, llm: LLMClient | None = None) -> int:
    """Run ``tnsai-eval`` with ``argv`` (default: the command line); returns the exit code.

    0 success, 1 a failed check or gate, 2 bad arguments or input, 130 interrupted.
    ``llm`` replaces the model the options would name (for tests and embedding:
    ``main(["refine", ...], llm=ScriptedLLM(...))``).
    """
    words = list(sys.argv[1:] if argv is None else argv)
    command = _command(words)
    parser = build_parser(() if command is None else (command,))
    args = parser.parse_args(words)
    args.llm = llm
    try:
        code: int = args.func(args)
    except TnsaiError as exc:
        # Our errors already name the bad value; a traceback would only bury it.
        return _fail(args.command, exc)
    except OSError as exc:
        # A file named on the command line that cannot be read or written.
        return _fail(args.command, exc)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return code


def _fail(command: str, exc: Exception) -> int:
    """Print ``exc`` as one line, secrets masked; exit status 2."""
    # Imported here: the masking rules (regexes, URL parsing) are paid for only on an error.
    from tnsai_eval._util.secrets import mask

    print(f"tnsai-eval {command}: error: {mask(str(exc))}", file=sys.stderr)
    return 2
