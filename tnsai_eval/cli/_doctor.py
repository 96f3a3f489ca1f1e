"""``tnsai-eval doctor [--fresh]``: does the model tnsai-eval would use work on this machine?

Prints what ``diagnose()`` found, one line per item, problems marked; exit 0
when what ``default_llm()`` would use works and every named model's server
answers, 1 when one of them does not, 2 on bad arguments (argparse). Nothing
is imported until the command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "doctor",
        help="check that the model tnsai-eval would use works here",
        description="Check that the model default_llm() would use works on this machine: "
        "versions, the CPU features llama.cpp was built with and those the machine has, "
        "the verdict of llama.cpp's crash probe, the model file, which client is picked "
        "and why, and whether a configured server and each named model's server "
        "([tool.tnsai-eval.models]) answer. Exit 0 when all of it works, 1 when "
        "something does not.",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="run llama.cpp's probe now instead of reading its cached verdict",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    # Imported here: building the parser must not pay for the LLM layer.
    from tnsai_eval._util.secrets import mask
    from tnsai_eval.llm import diagnose

    diagnosis = diagnose(fresh=args.fresh)
    width = max(len(item.name) for item in diagnosis.items)
    for item in diagnosis.items:
        mark = {True: "ok  ", False: "FAIL", None: "    "}[item.ok]
        print(f"{mark} {item.name.ljust(width)}  {mask(item.value)}")
    if diagnosis.ok:
        print(f"\nready: {diagnosis.client} works here")
        return 0
    names = ", ".join(item.name for item in diagnosis.problems)
    named = ("model ", "named models")
    if all(item.name.startswith(named) for item in diagnosis.problems):
        print(f"\n{diagnosis.client} works here, but not every named model does ({names})")
    else:
        print(f"\nnot ready: {diagnosis.client} does not work here ({names})")
    return 1
