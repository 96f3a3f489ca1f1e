"""The ``tnsai-eval`` command.

Each subcommand lives in its own private module (``tnsai_eval/cli/_<name>.py``)
exposing ``add_parser(subparsers)``, which registers the subcommand and sets
``func`` (``args -> exit code``) as its default. This module only wires them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tnsai_eval import __version__
from tnsai_eval._util.secrets import mask
from tnsai_eval.errors import TnsaiError
from tnsai_eval.llm import LLMClient

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``tnsai-eval`` argument parser, with every subcommand registered."""
    # Imported here so that `import tnsai_eval` never pays for the CLI's imports.
    from tnsai_eval.cli import _chat, _optimize, _refine, _report, _store

    parser = argparse.ArgumentParser(
        prog="tnsai-eval",
        description="Evaluate, refine and optimize LLM prompts.",
    )
    parser.add_argument("--version", action="version", version=f"tnsai-eval {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (_chat, _report, _refine, _optimize, _store):
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None, *, llm: LLMClient | None = None) -> int:
    """Run ``tnsai-eval`` with ``argv`` (default: the command line); returns the exit code.

    0 success, 1 a failed check or gate, 2 bad arguments or input, 130 interrupted.
    ``llm`` replaces the model the options would name (for tests and embedding:
    ``main(["refine", ...], llm=ScriptedLLM(...))``).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    args.llm = llm
    try:
        code: int = args.func(args)
    except TnsaiError as exc:
        # Our errors already name the bad value; a traceback would only bury it.
        print(f"tnsai-eval {args.command}: error: {mask(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:
        # A file named on the command line that cannot be read or written.
        print(f"tnsai-eval {args.command}: error: {mask(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return code
