"""Options shared by several subcommands, and the checks every subcommand's arguments share.

Bad arguments end in exit status 2 with one line naming them, before any
work starts: numbers are parsed by ``finite_float`` / ``positive_float``
(``nan`` and ``inf`` are refused), and output paths are checked by
``check_output_dir`` / ``check_output_file`` before the first model call, so
a run is never lost at the end because its output cannot be written.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LLMClient, default_llm
from tnsai_eval.settings import ENV_BASE_URL, ENV_MODEL, RecordMode, resolve_model

__all__ = [
    "add_model_options",
    "add_store_options",
    "check_output_dir",
    "check_output_file",
    "client_from_args",
    "finite_float",
    "front_from_args",
    "positive_float",
    "positive_int",
    "record_mode",
]


def finite_float(text: str) -> float:
    """An argparse type: a finite number (``nan`` and ``inf`` are refused).

    >>> finite_float("0.5")
    0.5
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0 (seconds, for instance)."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def check_output_dir(path: Path, option: str) -> None:
    """Make ``path`` a writable directory now, or raise ConfigError naming ``option``."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{option} {str(path)!r} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{option} {str(path)!r} cannot be created: {exc.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {str(path)!r} is not writable")


def check_output_file(path: Path, option: str) -> None:
    """Raise ConfigError naming ``option`` unless a file can be written at ``path``."""
    if path.is_dir():
        raise ConfigError(f"{option} {str(path)!r} is a directory, not a file")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"{option} {str(path)!r}: directory {str(parent)!r} does not exist")
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"{option} {str(path)!r} is not writable")
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {str(path)!r}: directory {str(parent)!r} is not writable")


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


def add_store_options(parser: argparse.ArgumentParser) -> None:
    """``--store DIR``, ``--record MODE``, ``--cassette NAME``: replies recorded and replayed."""
    parser.add_argument(
        "--store",
        metavar="DIR",
        help="response store: replies are replayed from and recorded in it",
    )
    parser.add_argument(
        "--record",
        choices=[m.value for m in RecordMode],
        help="how --store is used (default: record, or replay when CI=true)",
    )
    parser.add_argument(
        "--cassette", default="default",
        help="the store's cassette to record in and read first (a pytest test's node id "
        "replays what that test recorded; default: default)",
    )  # fmt: skip


def record_mode(args: argparse.Namespace) -> RecordMode:
    """``--record``, else the default (``replay`` when CI=true, else ``record``)."""
    return RecordMode.parse(args.record) if args.record else RecordMode.default()[0]


def front_from_args(args: argparse.Namespace) -> LLMClient:
    """``client_from_args``'s model behind ``--store`` in the ``--record`` mode (without
    ``--store``, the client itself). A replay never makes the model client: the embedded
    model is not loaded and no server is asked."""
    from tnsai_eval.llm import EMBEDDED_MODEL, FrontClient, ModelTable

    if getattr(args, "store", None) is None:
        return client_from_args(args)
    mode, cassette = record_mode(args), args.cassette
    given: LLMClient | None = getattr(args, "llm", None)
    if given is not None:
        return FrontClient(given, args.store, mode, cassette=cassette)
    server = resolve_model(base_url=args.base_url, model=args.model)
    if server.base_url is None and server.model is None:
        embedded = ModelTable.load().get(EMBEDDED_MODEL)
        return embedded.front(args.store, mode, cassette=cassette)
    return FrontClient(client_from_args(args), args.store, mode, cassette=cassette)
