"""Options shared by several subcommands."""

from __future__ import annotations

import argparse

from tnsai_eval.llm import LLMClient, default_llm
from tnsai_eval.settings import ENV_BASE_URL, ENV_MODEL

__all__ = ["add_model_options", "client_from_args", "positive_int"]


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """``--base-url`` / ``--model``: an OpenAI-compatible server instead of the default."""
    group = parser.add_argument_group("model")
    group.add_argument(
        "--base-url",
        help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 "
        f"(default: ${ENV_BASE_URL}, else the embedded model)",
    )
    group.add_argument("--model", help=f"model name on that server (default: ${ENV_MODEL})")


def client_from_args(args: argparse.Namespace) -> LLMClient:
    """The client given to ``main(llm=...)``, else the one the options name.

    The API key comes from the environment only.
    """
    given: LLMClient | None = getattr(args, "llm", None)
    if given is not None:
        return given
    return default_llm(base_url=args.base_url, model=args.model)


def positive_int(text: str) -> int:
    """An argparse ``type=``: a whole number >= 1, else an error naming the value.

    >>> positive_int("3")
    3
    >>> positive_int("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a whole number >= 1, got '0'
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value
