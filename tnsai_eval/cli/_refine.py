"""``tnsai-eval refine``: revise a draft until it passes the given checks.

Prints one row per checked iteration as it completes (score, tokens, the
revision call's latency, the failed checks), then the status and the final
output. Exit code 0 when every check passed, 1 otherwise.

Example::

    tnsai-eval refine --task "Describe Alice (30) as JSON" --draft-file draft.txt \\
        --valid-json --must-contain '"name"' --first-code-block
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from tnsai_eval.cli._common import (
    add_model_options,
    check_output_file,
    client_from_args,
    positive_float,
    positive_int,
)
from tnsai_eval.cli._main import subcommand
from tnsai_eval.errors import ConfigError
from tnsai_eval.refinement import (
    CompletionCriteria,
    CriteriaSpec,
    IterationRecord,
    RefinementLoop,
    RefinementResult,
    first_code_block,
    strip_code_fence,
)

__all__ = ["add_parser", "format_row"]

_HEADER = f"{'iter':>4}  {'score':>5}  {'tokens':>6}  {'call_s':>6}  failed checks"


def add_parser(subparsers: Any) -> None:
    parser = subcommand(subparsers, "refine", __doc__)
    parser.add_argument("--task", required=True, help="what the output must do")
    parser.add_argument(
        "--draft-file", required=True, help="file holding the first draft ('-' for stdin)"
    )
    checks = parser.add_argument_group("checks (at least one)")
    checks.add_argument("--must-contain", action="append", default=[], metavar="TEXT")
    checks.add_argument("--must-not-contain", action="append", default=[], metavar="TEXT")
    checks.add_argument("--matches", action="append", default=[], metavar="REGEX")
    checks.add_argument("--valid-json", action="store_true")
    checks.add_argument("--min-lines", type=int, metavar="N")
    checks.add_argument("--min-words", type=int, metavar="N")
    checks.add_argument("--max-words", type=int, metavar="N")
    checks.add_argument(
        "--compiler",
        action="append",
        default=[],
        metavar="CMD",
        help="shell command that must exit 0; $OUTPUT is the output's temp file",
    )
    checks.add_argument("--test-command", action="append", default=[], metavar="CMD")
    checks.add_argument("--lint", action="append", default=[], metavar="CMD")
    checks.add_argument(
        "--command-timeout",
        type=positive_float,
        default=30.0,
        metavar="S",
        help="seconds before a command's process group is killed (default: 30)",
    )
    checks.add_argument(
        "--suffix", default=".txt", help="file name suffix of $OUTPUT (default: .txt)"
    )
    checks.add_argument(
        "--check-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        type=_env_pair,
        help="a variable for the command checks, which otherwise see only PATH, HOME, "
        "LANG, LC_* and TMPDIR (repeatable)",
    )
    loop = parser.add_argument_group("loop")
    loop.add_argument("--max-iterations", type=int, default=5, metavar="N")
    loop.add_argument("--timeout", type=positive_float, default=600.0, metavar="S", help="seconds")
    loop.add_argument("--max-tokens", type=positive_int, default=256, help="per revision reply")
    loop.add_argument(
        "--first-code-block",
        action="store_true",
        help="keep only the first fenced code block of each reply (for chatty models)",
    )
    loop.add_argument("--output-file", help="also write the final output here")
    add_model_options(parser)
    parser.set_defaults(func=_run)


def _criteria(args: argparse.Namespace) -> CompletionCriteria:
    words = None
    if args.min_words is not None or args.max_words is not None:
        words = (args.min_words or 0, args.max_words)
    spec = CriteriaSpec.from_options(
        compiler_check=args.compiler or None,
        test_command=args.test_command or None,
        lint_check=args.lint or None,
        must_contain=args.must_contain or None,
        must_not_contain=args.must_not_contain or None,
        matches_pattern=args.matches or None,
        valid_json=args.valid_json,
        min_lines=args.min_lines,
        word_count=words,
        command_timeout_s=args.command_timeout,
        suffix=args.suffix,
        check_env=dict(args.check_env) or None,
    )
    if not spec.has_checks:
        raise ConfigError(
            "CompletionCriteria needs at least one check; none was added "
            "(give --must-contain, --valid-json, --compiler, ...)"
        )
    return spec.build()


def _env_pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def format_row(record: IterationRecord) -> str:
    """One line of the iteration table."""
    failed = ", ".join(check.name for check in record.failed_checks) or "-"
    return (
        f"{record.iteration:>4}  {record.score:>5.2f}  {record.tokens:>6}  "
        f"{record.latency_s:>6.2f}  {failed}"
    )


def _read_draft(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    try:
        return Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--draft-file {name!r} cannot be read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--draft-file {name!r} is not UTF-8 text (byte {exc.start})") from exc


def _run(args: argparse.Namespace) -> int:
    criteria = _criteria(args)
    if args.output_file:
        check_output_file(Path(args.output_file), "--output-file")
    draft = _read_draft(args.draft_file)
    client = client_from_args(args)
    print(_HEADER, flush=True)
    loop = RefinementLoop(
        args.task,
        criteria,
        max_iterations=args.max_iterations,
        timeout=timedelta(seconds=args.timeout),
        progress=lambda record: print(format_row(record), flush=True),
        chat_params={"max_tokens": args.max_tokens},
        reply_parser=first_code_block if args.first_code_block else strip_code_fence,
    )
    result = loop.execute(client, draft)
    _print_summary(result)
    if args.output_file:
        Path(args.output_file).write_text(result.final_output, encoding="utf-8")
    return 0 if result.is_success else 1


def _print_summary(result: RefinementResult) -> None:
    metrics = result.metrics
    estimated = " (estimated)" if metrics.tokens_estimated else ""
    print(
        f"\nstatus {result.status.name}: {result.reason}\n"
        f"{metrics.total_iterations} iteration(s), final score {metrics.final_score:.2f}, "
        f"{metrics.total_tokens} tokens{estimated}, {metrics.total_duration_ms / 1000:.1f} s\n"
        "--- final output ---"
    )
    print(result.final_output)
