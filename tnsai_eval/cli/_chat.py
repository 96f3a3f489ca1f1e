"""``tnsai-eval chat "..."``: one reply from the configured model."""

from __future__ import annotations

import argparse
from typing import Any

from tnsai_eval.cli._common import add_model_options, client_from_args, positive_int
from tnsai_eval.settings import ENV_BASE_URL, ENV_MODEL

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "chat",
        help="print one reply from the model",
        description="Print one reply from the model: the embedded SmolLM2 model unless "
        f"--base-url/--model or ${ENV_BASE_URL}/${ENV_MODEL} name a server.",
    )
    parser.add_argument("message", help="the user message")
    parser.add_argument("--system", default="", help="an optional system prompt")
    parser.add_argument(
        "--max-tokens",
        type=positive_int,
        default=256,
        help="bound on the reply length (default: 256)",
    )
    add_model_options(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    client = client_from_args(args)
    messages: list[dict[str, str]] = []
    if args.system:
        messages.append({"role": "system", "content": args.system})
    messages.append({"role": "user", "content": args.message})
    try:
        completion = client.chat(messages, max_tokens=args.max_tokens)
    finally:
        # An HTTP client holds a connection pool; the embedded model has nothing to close.
        close = getattr(client, "close", None)
        if callable(close):
            close()
    print(completion.text.strip())
    return 0
