"""``tnsai-eval eval DATASET --prompt TEXT|@FILE``: score one prompt on a dataset, per model.

No search, no rewriting: the prompt as given, scored on every case of the
dataset (its ``NAME.meta.json`` chooses the evaluator and the case threshold)
with each ``--model``. A name is looked up in the models table
(``[tool.tnsai-eval.models.NAME]`` of the nearest ``pyproject.toml``, or
``--models-file``; ``embedded`` is built in); a name that is not there is a
model on the configured server (``--base-url`` or $TNSAI_LLM_BASE_URL), as
``chat --model`` reads it. Without ``--model``, the default model.

Each case's message is ``--template`` filled with the prompt and the case's
input, as ``evaluate_prompt(template=...)`` and ``compare_models`` lay it out;
with ``--store DIR`` replies come from (and are recorded in) the response
store in the ``--record`` mode, so a store recorded by pytest or by another
``eval`` replays here with no model call (``--cassette`` names a test's
cassette, ``default`` otherwise): the same prompt, template, cases and model
score the same in all three.

Prints a leaderboard (score with its 95% interval, pass rate, tokens in/out,
estimated cost, p50 latency of live calls), and with two or more models the
paired verdict of each model against the first (flipped cases, sign test),
the one ``--tnsai-compare-models`` prints. Writes to ``--out``:
``cases.csv`` (one row per model and case), ``leaderboard.csv``,
``report.json`` (a run report: ``tnsai-eval report`` reads and gates it) and
``score_vs_cost.png``.

Exit status: 0, or 1 when a model scores below ``--min-score`` or a case
failed to run; 2 on bad arguments (an unknown dataset or model, an unset key
variable, an unreadable prompt file, an unwritable --out), before any call.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tnsai_eval._util.files import atomic_write_text, shown_path
from tnsai_eval._util.text import no_surrogates, one_line, shown_label
from tnsai_eval.cli._common import (
    add_store_options,
    check_output_dir,
    finite_float,
    positive_int,
    record_mode,
)
from tnsai_eval.errors import ConfigError
from tnsai_eval.settings import (
    ENV_API_KEY,
    ENV_BASE_URL,
    RecordMode,
    project_settings,
    resolve_model,
)

if TYPE_CHECKING:
    from tnsai_eval.evaluation import ModelEvaluation
    from tnsai_eval.llm import LLMClient, ModelTable, NamedModel
    from tnsai_eval.reports import Report

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "eval",
        help="score a prompt on a dataset, once per model: leaderboard, CSV, report, PNG",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dataset", help="a shipped dataset name (e.g. capitals) or a .jsonl path")
    what = parser.add_argument_group("what is scored (exactly one)")
    what.add_argument("--prompt", help="the prompt, or @FILE to read it from a file")
    what.add_argument(
        "--target",
        metavar="MODULE:FUNCTION",
        help="your app's own code path: FUNCTION(input) -> str | Trajectory (module:name or "
        "file.py:name; given each --model's client as llm= when it takes an llm parameter)",
    )
    what.add_argument(
        "--agent",
        metavar="MODULE:FACTORY",
        help="an agent: FACTORY() returns one (made once per case; given each --model's "
        "client as llm= when it takes an llm parameter), scored on its trajectory",
    )
    parser.add_argument(
        "--model",
        dest="models",
        action="append",
        metavar="NAME",
        help="a named model ([tool.tnsai-eval.models.NAME]; `embedded` is built in), else a "
        "model on the configured server; repeat it to compare models (default: the "
        "default model)",
    )
    parser.add_argument("--models-file", metavar="PATH", help="a TOML file of [models.NAME] tables")
    parser.add_argument(
        "--base-url",
        help=f"the server of --model names not in the table (default: ${ENV_BASE_URL}); its "
        f"key is read from ${ENV_API_KEY} only",
    )
    parser.add_argument("--out", default="eval-out", help="output folder (default: eval-out)")
    parser.add_argument(
        "--min-score",
        type=finite_float,
        metavar="X",
        help="exit 1 when any model's mean score is below X (a number in [0, 1])",
    )
    parser.add_argument(
        "--max-tokens", type=positive_int, default=None, help="bound on each reply's length"
    )
    parser.add_argument(
        "--concurrency", type=positive_int, default=4, help="calls at a time (default: 4)"
    )
    parser.add_argument(
        "--template",
        help="each case's message, with {prompt} and {input}, or @FILE (default: the prompt, "
        "a blank line, the input)",
    )
    add_store_options(parser)
    parser.set_defaults(func=_run)


def _prompt(given: str, option: str = "--prompt") -> tuple[str, str | None]:
    """``(text, file)`` of ``--prompt`` (or ``--template``): ``@FILE`` reads the file."""
    if not given.startswith("@"):
        if not given.strip():
            raise ConfigError(f"{option} is empty")
        return given, None
    path = Path(given[1:])
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{option} {given!r}: cannot read {str(path)!r}: {exc}") from None
    if not text.strip():
        raise ConfigError(f"{option} {given!r}: {str(path)!r} is empty")
    return text, shown_path(path, _root())


def _root() -> Path:
    """What the report's paths are relative to: the folder of the nearest
    ``pyproject.toml`` (the project), else the working directory; a committed
    report then names its files the same way on every machine, as the plugin's
    do (relative to pytest's rootdir)."""
    found = project_settings().file
    return Path.cwd() if found is None else found.parent


def _dataset_label(given: str) -> str:
    """The dataset as the report's test ids and configuration name it: a shipped
    name as it is, a file relative to ``_root()``."""
    if "/" not in given and os.sep not in given and not given.endswith(".jsonl"):
        return given
    return shown_path(Path(given), _root())


def _models(args: argparse.Namespace, table: ModelTable) -> dict[str, NamedModel | LLMClient]:
    """Each ``--model`` as the table's entry or a client of the configured server."""
    from tnsai_eval.llm import OpenAIClient, default_llm

    given: LLMClient | None = getattr(args, "llm", None)
    if given is not None:  # main(llm=...): tests and embedding
        return {str(getattr(given, "model", "") or "model"): given}
    if not args.models:
        client = default_llm(base_url=args.base_url)
        return {str(getattr(client, "model", "") or "default"): client}
    chosen: dict[str, NamedModel | LLMClient] = {}
    for name in args.models:
        _check_text(name, "--model")
        if name in chosen:
            raise ConfigError(f"--model {name!r} is given twice")
        if name in table.models:
            chosen[name] = table.get(name)
            continue
        server = resolve_model(base_url=args.base_url, model=name)
        if server.base_url is None:
            raise ConfigError(
                f"--model {name!r} is not in the models table ({table.source}: "
                f"{', '.join(table.names)}) and no server is configured for it (--base-url "
                f"or ${ENV_BASE_URL})"
            )
        chosen[name] = OpenAIClient(name, base_url=server.base_url, api_key=server.api_key)
    return chosen


def _check_text(value: str, option: str) -> None:
    """Refuse a name that no output could show as given, before any call is paid for.

    A name is printed, written into CSV files and report ids after the calls:
    bytes that are not UTF-8 on the command line (``\\udcff`` once decoded) or
    a control character would fail or forge those outputs there.
    """
    if no_surrogates(one_line(value)) != value:
        raise ConfigError(
            f"{option} {value!r}: not printable text (a control character, or bytes that "
            "are not UTF-8)"
        )


def _run(args: argparse.Namespace) -> int:
    from tnsai_eval.datasets import scoring_plan
    from tnsai_eval.evaluation import DEFAULT_CALL_PARAMS, DEFAULT_TEMPLATE, evaluate_models
    from tnsai_eval.llm import ModelTable, NamedModel

    # Everything is checked before the first call: a bad argument costs nothing.
    if args.min_score is not None and not 0.0 <= args.min_score <= 1.0:
        raise ConfigError(f"--min-score must be in [0, 1], got {args.min_score:g}")
    given = [f"--{n} {v!r}" for n in ("prompt", "target", "agent") if (v := getattr(args, n))]
    if len(given) != 1:
        raise ConfigError(
            "give exactly one of --prompt TEXT|@FILE, --target MODULE:FUNCTION and --agent "
            f"MODULE:FACTORY (got {', '.join(given) if given else 'none'})"
        )
    if args.prompt is None:
        return _run_code(args)
    text, file = _prompt(args.prompt)
    template = (
        DEFAULT_TEMPLATE if args.template is None else _prompt(args.template, "--template")[0]
    )
    mode = record_mode(args)
    replaying = args.store is not None and mode is RecordMode.REPLAY
    _check_text(args.dataset, "dataset")
    plan = scoring_plan(args.dataset)
    table = ModelTable.load(args.models_file) if args.models_file else ModelTable.load()
    models = _models(args, table)
    for model in models.values():
        if isinstance(model, NamedModel) and not replaying:
            model.api_key()  # an unset key variable is an error now, not after some calls
    out = Path(args.out)
    check_output_dir(out, "--out")
    params = dict(DEFAULT_CALL_PARAMS if plan.params is None else plan.params)
    if args.max_tokens is not None:
        params["max_tokens"] = args.max_tokens
    for note in plan.notes:
        print(f"eval: {note}", file=sys.stderr)
    evaluation = evaluate_models(
        text, plan.cases, models, table=table, evaluator=plan.evaluator, template=template,
        params=params, threshold=plan.threshold, dataset=_dataset_label(args.dataset),
        notes=plan.notes, concurrency=args.concurrency, store=args.store, record_mode=mode,
        cassette=args.cassette,
    )  # fmt: skip
    return _finish(out, evaluation, args.min_score, prompt_file=file)


def _run_code(args: argparse.Namespace) -> int:
    """``--target`` / ``--agent``: the user's code scored per model, as a prompt is."""
    from tnsai_eval.cli._targets import load_user_code, trajectory_evaluator
    from tnsai_eval.datasets import scoring_plan
    from tnsai_eval.evaluation import evaluate_target_models
    from tnsai_eval.llm import EMBEDDED_MODEL, ModelTable, NamedModel

    if args.template is not None:
        raise ConfigError(
            "--template lays out a prompt's message; a --target or --agent sends its own"
        )
    if args.max_tokens is not None:
        raise ConfigError(
            "--max-tokens bounds a prompt's replies; a --target or --agent sets its own"
        )
    option, spec = ("--target", args.target) if args.target else ("--agent", args.agent)
    code = load_user_code(option, spec)
    mode = record_mode(args)
    replaying = args.store is not None and mode is RecordMode.REPLAY
    _check_text(args.dataset, "dataset")
    plan = scoring_plan(args.dataset)
    table = ModelTable.load(args.models_file) if args.models_file else ModelTable.load()
    models: dict[str, NamedModel | LLMClient] | None = None
    if code.takes_llm:
        server = resolve_model(base_url=args.base_url)
        if args.models or server.base_url or getattr(args, "llm", None) is not None:
            models = _models(args, table)
        else:  # the embedded model, made only by a call that reaches it (never in replay)
            models = {EMBEDDED_MODEL: table.get(EMBEDDED_MODEL)}
        for model in models.values():
            if isinstance(model, NamedModel) and not replaying:
                model.api_key()  # an unset key variable is an error now, not after some calls
    elif args.models:
        raise ConfigError(
            f"--model: {option} {spec!r} takes no llm parameter, so it calls a model of its "
            "own choosing and cannot be run on a chosen one; add an llm parameter to it"
        )
    out = Path(args.out)
    check_output_dir(out, "--out")
    evaluator, notes = plan.evaluator, list(plan.notes)
    found = trajectory_evaluator(plan.cases)
    if found is not None and plan.meta.path is None:  # no NAME.meta.json says otherwise
        evaluator, how = found
        notes.append(f"scored by {how}")
    for note in notes:
        print(f"eval: {note}", file=sys.stderr)
    evaluation = evaluate_target_models(
        code.target, plan.cases, models, name=f"{option} {spec}", table=table,
        evaluator=evaluator, threshold=plan.threshold, dataset=_dataset_label(args.dataset),
        notes=notes, concurrency=args.concurrency, store=args.store, record_mode=mode,
        cassette=args.cassette,
    )  # fmt: skip
    return _finish(out, evaluation, args.min_score)


def _finish(
    out: Path, evaluation: ModelEvaluation, min_score: float | None, prompt_file: str | None = None
) -> int:
    """Print the leaderboard and the model verdicts, write the files (the report names
    ``prompt_file``), give the exit status."""
    print(_leaderboard(evaluation))
    verdicts = evaluation.format_verdicts()
    if verdicts:
        print("\n" + verdicts)
    _write(out, evaluation, evaluation.to_report(prompt_file=prompt_file, min_score=min_score))
    return _verdict(evaluation, min_score)


def _verdict(evaluation: ModelEvaluation, min_score: float | None) -> int:
    failed = 0
    for result in evaluation.results:
        errors = result.evaluation.errors
        if errors:
            print(
                f"{result.name}: {len(errors)} case(s) failed to run, e.g. "
                f"{shown_label(str(errors[0].error))}",
                file=sys.stderr,
            )
            failed += 1
        if min_score is not None and result.score < min_score:
            print(f"{result.name}: score {result.score:.3f} < --min-score {min_score:g}")
            failed += 1
    return 1 if failed else 0


def _leaderboard(evaluation: ModelEvaluation) -> str:
    """The models best first: score [95% CI], pass rate, tokens, cost, p50 latency."""
    from tnsai_eval.reports import format_cost, format_table

    rows = []
    ranked = sorted(evaluation.results, key=lambda r: -r.score)
    for rank, result in enumerate(ranked, 1):
        low, high = result.interval
        p50 = result.latency_p50_s
        rows.append(
            (
                str(rank),
                result.name,
                f"{result.score:.3f} [{low:.3f}, {high:.3f}]",
                f"{result.pass_rate:.0%}",
                f"{result.tokens_in}/{result.tokens_out}",
                format_cost(result.cost),
                "-" if p50 is None else f"{p50:.3f}",
            )
        )
    headers = ("#", "model", "score [95% CI]", "pass rate", "tokens in/out", "cost", "p50 s")
    cases = len(evaluation.results[0].evaluation.cases) if evaluation.results else 0
    title = f"{evaluation.dataset}: {cases} case(s), {len(ranked)} model(s)"
    return title + "\n" + format_table(headers, rows)


def _write(out: Path, evaluation: ModelEvaluation, report: Report) -> None:
    from tnsai_eval._util.secrets import mask
    from tnsai_eval.plots import score_vs_cost, to_png

    cases, summary = evaluation.to_dataframe(), evaluation.summary()
    for column in ("input", "expected", "output", "error"):
        # Known secrets never reach a file, whatever a prompt or a reply carried; a
        # lone surrogate (JSON's "\\ud800" in a dataset line) cannot be written as UTF-8.
        cases[column] = [None if v is None else no_surrogates(mask(str(v))) for v in cases[column]]
    atomic_write_text(out / "cases.csv", cases.to_csv(index=False))
    atomic_write_text(out / "leaderboard.csv", summary.to_csv(index=False))
    report.save(out / "report.json")
    figure = score_vs_cost(summary, title=f"{evaluation.dataset}: score against cost")
    (out / "score_vs_cost.png").write_bytes(to_png(figure))
    written = ", ".join(
        str(out / name)
        for name in ("cases.csv", "leaderboard.csv", "report.json", "score_vs_cost.png")
    )
    print(f"wrote {written}")
