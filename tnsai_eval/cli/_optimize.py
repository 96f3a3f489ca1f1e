"""``tnsai-eval optimize DATASET``: search for a better prompt on a dataset.

Runs ``PromptOptimizer`` with the configured model (the embedded SmolLM2 by
default), shows a progress bar, prints a leaderboard of the variants and
writes ``results.csv`` (one row per round, variant and case), ``rounds.csv``,
``variants.json`` (every variant in full: instruction, system message, demo
turns, response format, status and scores) and ``score_progression.png`` to
``--out``.

The cases are split (seeded, stratified by label) into selection cases, on
which the prompt is chosen, and held-out cases (``--split``, default 0.3, or
the ``--validation`` file); the headline is the held-out score with its 95%
interval on the gain over the starting prompt, the exact paired test, the
verdict (improved only for a gain significant at ``--alpha`` that beats a
constant answer) and, for a label dataset, what answering one label to every
case scores. Scores on the selection cases are labelled "training".
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, get_args
from urllib.parse import urlsplit

from tnsai_eval._util.files import atomic_write_text
from tnsai_eval._util.secrets import frozen_secrets, mask, mask_deep, redact_url
from tnsai_eval._util.text import no_surrogates
from tnsai_eval.cli._common import (
    add_model_options,
    add_store_options,
    check_output_dir,
    client_from_args,
    finite_float,
    front_from_args,
    positive_float,
    positive_int,
)
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LLMClient, default_llm
from tnsai_eval.optimizer import (
    DEFAULT_CONFIG,
    SEARCHES,
    SMALL_MODEL_STRATEGIES,
    ContainsEvaluator,
    DefaultPromptEvaluator,
    EventKind,
    ExactMatchEvaluator,
    LabelEvaluator,
    LLMJudgeEvaluator,
    OptimizationResult,
    ProgressEvent,
    PromptEvaluator,
    PromptOptimizer,
    PromptStrategy,
    RacingBound,
    TokenF1Evaluator,
)
from tnsai_eval.settings import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, resolve_model

if TYPE_CHECKING:
    import pandas as pd

    from tnsai_eval.cli._targets import UserCode

__all__ = ["DEFAULT_PROMPTS", "add_parser"]

_N = TypeVar("_N", int, float)

#: The starting prompt for each shipped dataset when ``--prompt`` is not given.
DEFAULT_PROMPTS = {
    "arithmetic": "Solve the arithmetic problem.",
    "capitals": "Answer the geography question.",
    "feedback_examples": "Is this feedback positive or negative?",
    "formal_tone": "Rewrite this message in a formal tone.",
    "headlines": "Is this headline about sports, politics or technology?",
    "json_extraction": "Extract the name, age and city as JSON.",
    "sentiment": "Is the sentiment of this review positive or negative?",
}
_GENERIC_PROMPT = "Answer the following."
# Every setting of the search defaults to the library's (DEFAULT_CONFIG): the
# shell and the API run the same search unless told otherwise.
_STRATEGIES = ",".join(s.value for s in DEFAULT_CONFIG.strategies)
# Not a setting of the search but of each request (the dataset's scoring plan):
# a short answer from the shell costs a quarter of the library's 128 tokens.
_REPLY_TOKENS = 32
_EVALUATORS = ("default", "exact", "contains", "f1", "label", "judge")


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "optimize",
        help="search for a better prompt on a dataset",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dataset", help="a shipped dataset name (e.g. capitals) or a .jsonl path")
    parser.add_argument(
        "--prompt",
        help="the starting prompt (default: the --target/--agent factory's own default for "
        "its prompt parameter, else one suited to the shipped dataset)",
    )
    parser.add_argument(
        "--strategies",
        default=_STRATEGIES,
        help=f"comma-separated strategies to try each round (default: {_STRATEGIES}; "
        f"choices: {', '.join(s.value for s in PromptStrategy)}; "
        f"{','.join(s.value for s in SMALL_MODEL_STRATEGIES)} help a small model)",
    )
    _option(parser, "--rounds", positive_int, DEFAULT_CONFIG.max_iterations, "at most N rounds")
    _option(
        parser, "--target-score", finite_float, DEFAULT_CONFIG.target_score, "stop at this score"
    )
    code = parser.add_mutually_exclusive_group()
    code.add_argument(
        "--target",
        metavar="MODULE:FACTORY",
        help="optimize the prompt inside your app: FACTORY(prompt) returns the function "
        "fn(input) that uses it (module:name or file.py:name; given the model as llm= when "
        "it takes an llm parameter). A number here is the old spelling of --target-score",
    )
    code.add_argument(
        "--agent",
        metavar="MODULE:FACTORY",
        help="optimize an agent's system prompt: FACTORY(prompt) returns an agent (made "
        "once per case; given the model as llm= when it takes an llm parameter)",
    )
    # Read when the parser is built: a mode registered before is offered too.
    modes = list(SEARCHES)
    parser.add_argument(
        "--search",
        choices=[mode.name for mode in modes],
        default=DEFAULT_CONFIG.search,
        help="; ".join(f"{mode.name}: {mode.summary}" for mode in modes)
        + f" (default: {DEFAULT_CONFIG.search})",
    )
    parser.add_argument(
        "--evaluator",
        choices=_EVALUATORS,
        default=None,
        help="how an answer is scored; judge asks the model itself (default: the "
        "dataset's NAME.meta.json, else default)",
    )
    parser.add_argument(
        "--constrain",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="constrain replies to the dataset's labels with response_format (default: the "
        "dataset's NAME.meta.json, else no): tests the labels, not the prompt's wording",
    )
    parser.add_argument(
        "--no-rewrite", action="store_true", help="do not ask the model to rewrite the prompt"
    )
    parser.add_argument(
        "--rewrite-llm",
        metavar="URL_OR_MODEL",
        help="another (stronger) model writes the rewrite proposals: an OpenAI-compatible "
        f"base URL (its model: --rewrite-model, else the task's --model / ${ENV_MODEL}) "
        f"or a model name on the task model's server (--base-url / ${ENV_BASE_URL}); "
        f"the API key comes from ${ENV_API_KEY} (default: the task model rewrites)",
    )
    parser.add_argument(
        "--rewrite-model", metavar="NAME", help="the model name at the --rewrite-llm URL"
    )
    parser.add_argument(
        "--validation",
        help="a dataset held out to report the best prompt on (instead of --split)",
    )
    split = DEFAULT_CONFIG.split or 0.0
    _option(
        parser, "--split", _share, split, "share of the cases held out to report on, 0 for none"
    )
    demo_sets = (
        "demo sets to try each round, bootstrapped from the model's correct replies and from "
        "expected answers"
    )
    _option(parser, "--demo-sets", _non_negative_int, DEFAULT_CONFIG.demo_sets, demo_sets)
    parser.add_argument(
        "--racing-bound",
        choices=get_args(RacingBound),
        default=DEFAULT_CONFIG.racing_bound,
        help="the paired test racing drops a variant on: the exact sign test on flipped "
        "cases, Student's t, Hoeffding, or auto (sign for 0/1 scores, else t; the default)",
    )
    parser.add_argument(
        "--alpha",
        type=_level,
        default=DEFAULT_CONFIG.alpha,
        help="the level of the held-out paired test and of the gain's interval "
        f"(default: {DEFAULT_CONFIG.alpha}: a {1 - DEFAULT_CONFIG.alpha:.0%}% interval)",
    )
    _option(parser, "--reply-tokens", positive_int, _REPLY_TOKENS, "max reply tokens")
    parser.add_argument("--max-calls", type=positive_int, help="stop after N model calls")
    parser.add_argument("--max-tokens", type=positive_int, help="stop after N tokens")
    parser.add_argument("--max-seconds", type=positive_float, help="stop after S seconds")
    _option(parser, "--concurrency", positive_int, DEFAULT_CONFIG.concurrency, "calls in flight")
    _option(parser, "--seed", int, DEFAULT_CONFIG.seed, "racing order and few-shot examples")
    _option(parser, "--out", Path, Path("optimize-out"), "output directory")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_model_options(parser)
    add_store_options(parser)
    parser.set_defaults(func=_run)


def _option(
    parser: argparse.ArgumentParser,
    flag: str,
    kind: Callable[[str], Any],
    default: object,
    text: str,
) -> None:
    """An option of type ``kind`` whose help ends with its ``default``."""
    parser.add_argument(flag, type=kind, default=default, help=f"{text} (default: {default})")


def _target_option(args: argparse.Namespace) -> tuple[float, UserCode | None]:
    """``(target score, the user's code)`` from ``--target-score``, ``--target``, ``--agent``.

    ``--target`` once meant the score to stop at: a number given there still
    does (with a note), and ``module:factory`` names the app.
    """
    from tnsai_eval.cli._targets import load_user_code

    score, given = args.target_score, args.target
    if given is not None and ":" not in given:
        try:
            score = finite_float(given)
        except argparse.ArgumentTypeError as exc:
            raise ConfigError(f"--target {given!r}: {exc}") from None
        print(
            f"optimize: --target {given} is read as --target-score {given} (its old "
            "meaning); --target now names your app as module:factory",
            file=sys.stderr,
        )
        given = None
    if given is not None:
        return score, load_user_code("--target", given)
    if args.agent is not None:
        return score, load_user_code("--agent", args.agent)
    return score, None


def _argument(
    parse: Callable[[str], _N], accepts: Callable[[_N], bool], expected: str
) -> Callable[[str], _N]:
    """An argparse ``type=``: ``parse(text)`` when ``accepts`` it, else an error naming it."""

    def convert(text: str) -> _N:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return convert


_non_negative_int = _argument(int, lambda value: value >= 0, "an integer >= 0")
_level = _argument(float, lambda value: 0.0 < value < 1.0, "a level in (0, 1)")
_share = _argument(float, lambda value: 0.0 <= value < 1.0, "a share in [0, 1)")


def _rewrite_client(args: argparse.Namespace) -> tuple[LLMClient | None, str]:
    """The client ``--rewrite-llm`` names and how to show it (URLs redacted), or ``(None, "")``.

    Configured like the task model (``default_llm``: an OpenAI-compatible
    server and a model name, the key from the environment only): a URL is
    the rewrite server's base URL, anything else a model name on the task
    model's server.
    """
    value = (args.rewrite_llm or "").strip()
    if not value:
        if args.rewrite_model:
            raise ConfigError("--rewrite-model needs --rewrite-llm URL")
        return None, ""
    if args.no_rewrite:
        raise ConfigError("--rewrite-llm has no use with --no-rewrite")
    task = resolve_model(base_url=args.base_url, model=args.model)
    if "://" in value:
        if urlsplit(value).scheme not in ("http", "https"):
            raise ConfigError(
                f"--rewrite-llm {redact_url(value)!r} is not an http:// or https:// URL"
            )
        model = args.rewrite_model or task.model
        if not model:
            raise ConfigError(
                f"--rewrite-llm {redact_url(value)!r} needs a model name: "
                f"give --rewrite-model NAME (or --model / ${ENV_MODEL})"
            )
        return default_llm(base_url=value, model=model), f"{model!r} at {redact_url(value)}"
    if args.rewrite_model:
        raise ConfigError(
            f"--rewrite-model goes with a --rewrite-llm URL; --rewrite-llm {value!r} is "
            "already a model name"
        )
    if not task.base_url:
        raise ConfigError(
            f"--rewrite-llm {value!r} names a model, but the task model has no server "
            f"(--base-url / ${ENV_BASE_URL}): give the rewrite model's base URL instead"
        )
    return default_llm(base_url=task.base_url, model=value), (
        f"{value!r} at {redact_url(task.base_url)}"
    )


def _evaluator(name: str, args: argparse.Namespace) -> PromptEvaluator:
    if name == "label":
        from tnsai_eval import datasets

        meta = datasets.load_meta(args.dataset)
        if not meta.labels:
            raise ConfigError(
                f"--evaluator label needs labels; {args.dataset!r} declares none "
                "(add them to its NAME.meta.json)"
            )
        return LabelEvaluator(meta.labels)
    if name == "judge":
        return LLMJudgeEvaluator(client_from_args(args), fallback=DefaultPromptEvaluator())
    evaluators: dict[str, PromptEvaluator] = {
        "default": DefaultPromptEvaluator(),
        "exact": ExactMatchEvaluator(),
        "contains": ContainsEvaluator(),
        "f1": TokenF1Evaluator(),
    }
    return evaluators[name]


def _run(args: argparse.Namespace) -> int:
    from tnsai_eval import datasets

    # Before any work: a run must not be lost because its outputs cannot be written.
    check_output_dir(args.out, "--out")
    target_score, code = _target_option(args)
    # One resolution of the dataset's NAME.meta.json, shared with evaluate_prompt.
    plan = datasets.scoring_plan(
        args.dataset,
        evaluator=None if args.evaluator is None else _evaluator(args.evaluator, args),
        constrain=args.constrain,
        params={**DEFAULT_CONFIG.call_params, "max_tokens": args.reply_tokens},
    )
    cases, meta = list(plan.cases), plan.meta
    evaluator: Any = plan.evaluator or meta.make_evaluator()
    how = meta.describe() if args.evaluator is None else f"{args.evaluator} (--evaluator)"
    if code is not None and args.evaluator is None and meta.path is None:
        from tnsai_eval.cli._targets import trajectory_evaluator

        found = trajectory_evaluator(cases)
        if found is not None:
            evaluator, how = found
    call_params = dict(plan.params or {})
    constrain = "response_format" in call_params
    validation = datasets.load(args.validation) if args.validation else None
    strategies = [PromptStrategy.parse(s) for s in args.strategies.split(",") if s.strip()]
    if not strategies:
        raise ConfigError(f"--strategies names no strategy: {args.strategies!r}")
    own = None if code is None else code.default_prompt()  # the app's own prompt
    prompt = args.prompt or own or DEFAULT_PROMPTS.get(Path(args.dataset).stem, _GENERIC_PROMPT)
    rewrite_llm, rewriter = _rewrite_client(args)
    bar = _ProgressBar()
    # One client for the model: the target's calls and the rewrites, behind --store.
    llm = front_from_args(args)
    optimizer = PromptOptimizer(
        llm,
        max_iterations=args.rounds,
        target_score=target_score,
        candidate_strategies=strategies,
        evaluator=evaluator,
        search=args.search,
        max_calls=args.max_calls,
        max_tokens=args.max_tokens,
        max_seconds=args.max_seconds,
        concurrency=args.concurrency,
        seed=args.seed,
        rewrite=not args.no_rewrite,
        rewrite_llm=rewrite_llm,
        call_params=call_params,
        progress=None if args.no_progress else bar.update,
        split=args.split or None,
        demo_sets=args.demo_sets,
        racing_bound=args.racing_bound,
        alpha=args.alpha,
    )
    most_calls = optimizer.estimate_calls(prompt, cases, validation_cases=validation)
    selection, held_out = optimizer.split_cases(cases, validation)
    bound = f"at most {most_calls} calls"
    if code is not None:
        bound = f"at most {most_calls} runs of the {code.option[2:]} (each may make several calls)"
    print(
        f"optimizing {args.dataset!r}: {len(cases)} cases ({len(selection)} to select on, "
        f"{len(held_out)} held out), prompt {prompt!r}, "
        f"strategies {', '.join(s.value for s in strategies)}, {args.search} search, {bound}",
        flush=True,
    )
    print(f"evaluator: {how}", flush=True)
    if code is not None:
        print(f"prompt inside {code.option} {code.spec}", flush=True)
    if rewriter:
        print(f"rewrites by {rewriter}", flush=True)
    if constrain:
        print(f"replies constrained to the labels: {', '.join(meta.labels)}", flush=True)
    if not args.no_progress:
        bar.open(most_calls)
    try:
        result = optimizer.optimize(
            prompt,
            cases,
            validation_cases=validation,
            target=None if code is None else code.factory(llm),
        )
    finally:
        bar.close()
    _print_report(result)
    _write_outputs(result, args.out)
    return 0


class _ProgressBar:
    """A tqdm.auto bar over model calls; its total is the most calls the run can make."""

    def __init__(self) -> None:
        self._bar: Any = None

    def open(self, total: int) -> None:
        from tqdm.auto import tqdm

        self._bar = tqdm(total=total, unit="call", desc="optimize", file=sys.stderr)

    def update(self, event: ProgressEvent) -> None:
        if self._bar is None:
            return
        self._bar.n = event.calls
        if event.kind is EventKind.ROUND:
            # Only a finished round has a best score worth showing; mid-round
            # it would be the partial mean of the prompt being scored.
            self._bar.set_postfix(round=event.round, best=f"{event.best_score:.3f}", refresh=False)
            self._bar.refresh()
        else:
            self._bar.update(0)

    def close(self) -> None:
        if self._bar is not None:
            # The total was an upper bound; an early stop is a finished run too.
            self._bar.total = self._bar.n
            self._bar.refresh()
            self._bar.close()


def _print_report(result: OptimizationResult) -> None:
    print()
    print(f"{'rank':>4}  {'train':>6}  {'calls':>5}  {'round':>5}  {'strategy':<21}  prompt")
    for rank, variant in enumerate(result.leaderboard(), start=1):
        if variant.score is not None:
            score = f"{variant.score:6.3f}"
        else:  # dropped by racing or cut by the budget: a partial mean, marked
            score = f"{variant.partial_score or 0.0:5.3f}~"
        marker = "*" if variant.id == result.best_variant else " "
        head = textwrap.shorten(" ".join(variant.prompt.split()), width=60, placeholder="...")
        extra = variant.spec.describe()
        print(
            f"{rank:>3}{marker}  {score}  {variant.calls:>5}  {variant.round:>5}  "
            f"{variant.strategy:<21}  {head}" + (f" [{extra}]" if extra else "")
        )
    print("(* best; train: score on the selection cases; ~ partial: dropped by racing or cut")
    print(" short by the budget)")
    for record in result.history:
        if record.racing_note:
            print(f"round {record.round}: {record.racing_note}")
    if result.racing_report:
        print(result.racing_report)
    print()
    print(f"best prompt:\n{textwrap.indent(result.best_prompt, '  ')}")
    if result.best_spec is not None and result.best_spec.describe():
        spec = result.best_spec
        print(f"  with {spec.describe()}")
        if spec.system:
            print(f"  system: {spec.system!r}")
        if spec.demo_style == "chat":
            for demo in spec.demos:
                print(f"  demo turn: {demo.input!r} -> {demo.output!r}")
    print()
    print(result.headline)
    change = "training gain" if result.training_improved else "no training gain"
    print(
        f"training {result.metric} {result.training_change} ({change}) on "
        f"{result.selection_cases} selection cases; {result.rounds} round(s), "
        f"{result.calls} calls ({result.retries} retries, {result.cache_hits} cache hits), "
        f"{result.tokens} tokens, {result.failed_calls} failed; "
        f"stopped: {result.stop_reason.value}; {result.elapsed_s:.1f} s"
    )
    if result.rejected_rewrites:
        reasons = sorted(set(result.rejected_rewrites))
        print(
            f"rejected {len(result.rejected_rewrites)} model rewrite(s) that were not prompts "
            f"for the task: {'; '.join(reasons)}"
        )


def _write_outputs(result: OptimizationResult, out: Path) -> None:
    from tnsai_eval.plots import plot_optimizer_rounds

    out.mkdir(parents=True, exist_ok=True)
    with frozen_secrets():  # every cell is masked: the secrets are read once
        # Files meant to be kept and shared: every text in them is masked (a case
        # or a prompt can quote a key) and encodable (a lone surrogate in a case).
        _shareable(result.to_dataframe()).to_csv(out / "results.csv", index=False)
        _shareable(result.rounds_dataframe()).to_csv(out / "rounds.csv", index=False)
        variants = mask_deep(
            {
                "best_variant": result.best_variant,
                "held_out": result.held_out_dict(),
                "variants": [v.to_dict() for v in result.variants],
            }
        )
        atomic_write_text(out / "variants.json", json.dumps(variants, indent=2) + "\n")
        figure = plot_optimizer_rounds(result, title="Score progression")
        figure.savefig(out / "score_progression.png", dpi=100)
    written = ("results.csv", "rounds.csv", "variants.json", "score_progression.png")
    print(f"wrote {', '.join(str(out / name) for name in written)}")


def _shareable(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell and column name masked and made encodable."""

    def clean(value: object) -> object:
        return no_surrogates(mask(value)) if isinstance(value, str) else value

    shown = frame.map(clean)
    shown.columns = [clean(name) for name in frame.columns]
    return shown
