"""Held-out figures of the optimizer's searches on the shipped datasets.

    .venv/bin/python bench/optimizer.py                    # embedded SmolLM2 model
    .venv/bin/python bench/optimizer.py --datasets sentiment_large --methods exhaustive,racing
    .venv-bench/bin/python bench/optimizer.py --dspy   # also DSPy MIPROv2: bench/_dspy.py
    .venv/bin/python bench/optimizer.py --store bench/stores/optimizer --replay ...  # no model

``--store DIR`` records every reply (and replays what is there); with
``--replay`` only the store answers, the model is never loaded and a request
it lacks fails the run (bench/_replay.py). ``--dspy-store DIR`` does the same
for MIPROv2's requests. The stores behind bench/README.md's tables are
committed under bench/stores/.

For each dataset, every method starts from the CLI's default prompt on the
same seeded split (30% held out, stratified by label) and the same model:

- ``exhaustive``: the CLI's strategies (FEW_SHOT, ANSWER_ONLY, CONCISE) and
  the model's rewrite, every variant scored on every selection case;
- ``racing``: the same variants, raced with the starting prompt (which is
  scored on the first rung only, then further only while it survives; the
  default test: the exact sign test on flipped cases for 0/1 scores, else
  Student's t; ``racing-t`` always t, ``racing-hoeffding`` the
  distribution-free Hoeffding bound);
- ``halving``: the same variants, by successive halving (the better half
  at each doubling of the cases, no test; the survivor scored on every
  selection case);
- ``demos``: demo search only (``demo_sets``: bootstrapped and labelled demo
  sets, as chat turns and inline); ``demos-racing`` the same candidates,
  raced, ``demos-halving`` halved.

Printed per method: the held-out score of the initial and the best prompt,
the gain's 95% interval (Newcombe's for paired 0/1 scores, a seeded paired
bootstrap for partial credit), what a constant answer scores on a label
dataset (the label chosen on the selection cases; ``-`` otherwise), the
paired flips and exact sign-test p-value, the verdict (``improved`` only for
a significant gain that also beats the constant answer), the training
score, the requests the method made (``calls + cache_hits``: HTTP
attempts plus replies a ``--store`` replayed, so a rerun from the store
reports what a live run costs), tokens and seconds; then each racing or
halving method's requests over exhaustive search's, with and without the held-out
scoring (which both spend alike). Targets (issue
14): on at least two datasets the best method beats the initial prompt on
held-out cases with p < 0.05; on datasets of 100 cases or more, racing reaches
the exhaustive winner's held-out score with at most 0.6 of its calls.

All methods of a run share one reply memo below the optimizers (``--store
DIR`` keeps it on disk): with a deterministic model it changes no reply, and
each optimizer still counts every call it sends, so ``calls`` and ``tokens``
are what each method costs alone. ``model s`` adds up the replies' own
latencies (memo hits at their first latency), which is the time a method
would take alone at concurrency 1; ``wall s`` is what it took in this run.
"""

from __future__ import annotations

import argparse
import math
import threading
import time
from typing import Any

from _replay import open_store  # bench/_replay.py, beside this script

from tnsai_eval import datasets
from tnsai_eval._util.stats import sign_test
from tnsai_eval.cli._optimize import DEFAULT_PROMPTS
from tnsai_eval.llm import (
    Completion,
    LLMClient,
    MessagesInput,
    normalize_messages,
)
from tnsai_eval.optimizer import SMALL_MODEL_STRATEGIES, OptimizationResult, PromptOptimizer
from tnsai_eval.scoring import DefaultPromptEvaluator, PromptEvaluator, TestCase, split_cases

DATASETS = "sentiment_large,arithmetic_large,sentiment,arithmetic"
METHODS = "exhaustive,racing,racing-t,racing-hoeffding,halving,demos,demos-racing,demos-halving"
# The paired test each racing method drops a challenger on.
_RACING_BOUNDS = {"racing": "auto", "racing-t": "t", "racing-hoeffding": "hoeffding"}
# Each raced method and the exhaustive search it is compared with.
_RACED_PAIRS = (
    *((m, "exhaustive") for m in (*_RACING_BOUNDS, "halving")),
    ("demos-racing", "demos"),
    ("demos-halving", "demos"),
)
_PROMPTS = {
    **DEFAULT_PROMPTS,
    "arithmetic_large": DEFAULT_PROMPTS["arithmetic"],
    "sentiment_large": DEFAULT_PROMPTS["sentiment"],
}


class Memo:
    """Answers a repeated request from memory; counts what reached the model."""

    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner
        self.model_calls = 0
        self._memo: dict[str, Completion] = {}
        self._lock = threading.Lock()

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        key = repr(([m.to_dict() for m in normalize_messages(messages)], sorted(params.items())))
        with self._lock:
            hit = self._memo.get(key)
        if hit is not None:
            return hit
        completion = self.inner.chat(messages, **params)
        with self._lock:
            self._memo[key] = completion
            self.model_calls += 1
        return completion


def evaluator_for(name: str) -> PromptEvaluator:
    """The dataset's declared evaluator when its meta.json loader exists, else the default."""
    load_meta = getattr(datasets, "load_meta", None)
    if load_meta is None:
        return DefaultPromptEvaluator()
    evaluator: PromptEvaluator = load_meta(name).make_evaluator()
    return evaluator


def run(
    llm: LLMClient,
    name: str,
    cases: list[TestCase],
    method: str,
    args: argparse.Namespace,
    held_out: list[TestCase] | None = None,
) -> OptimizationResult:
    options: dict[str, Any] = {
        "max_iterations": args.rounds,
        "candidate_strategies": args.strategies.split(","),
        "search": next((s for s in ("racing", "halving") if s in method), "exhaustive"),
        "racing_bound": _RACING_BOUNDS.get(method, "auto"),
        "concurrency": 1,  # the embedded model serves one call at a time anyway
        "seed": args.seed,
        "split": args.split,
        "evaluator": evaluator_for(name),
        "target_score": 1.0,
        "call_params": {"temperature": 0.0, "max_tokens": args.reply_tokens},
    }
    if method.startswith("demos"):
        options.update(candidate_strategies=[], rewrite=False, demo_sets=args.demo_sets)
    return PromptOptimizer(llm, **options).optimize(
        args.prompt or _PROMPTS[name], cases, validation_cases=held_out
    )


def _requests(result: OptimizationResult) -> int:
    """What the method cost: live attempts plus replies replayed from ``--store``."""
    return result.calls + result.cache_hits


def _held_out_requests(result: OptimizationResult) -> int:
    """The requests that scored held-out cases (the initial and the best prompt on each)."""
    return sum(1 for r in result.case_results if r.split == "validation")


def _train(result: OptimizationResult) -> str:
    """Training initial -> best; ``~`` marks a starting prompt racing scored on fewer cases."""
    partial = "~" if result.initial_cases < result.selection_cases else ""
    return f"{result.initial_score:5.3f}{partial}->{result.score:5.3f}"


def _against_dspy(results: dict[str, OptimizationResult], dspy_result: Any) -> None:
    """Each method beside DSPy's optimizer (MIPROv2 or GEPA): held-out score, requests, paired test.

    The target (issue 38): at most half its requests, and not worse by the
    paired sign test on the same held-out cases (worse on significantly more
    cases than better, at 0.05, is worse).
    """
    rows = [row for row in dspy_result.rows if row.method != "dspy-base"]
    if not rows:
        return
    row = rows[0]
    for method, result in results.items():
        ours = result.validation_score
        if ours is None or row.score is None:
            continue
        mine = {r.index: r.score for r in result.best_validation_rows}
        pairs = [
            (mine[i], theirs)
            for i, theirs in enumerate(row.scores)
            if theirs is not None and mine.get(i) is not None
        ]
        better = sum(1 for a, b in pairs if a is not None and a > b)
        worse = sum(1 for a, b in pairs if a is not None and a < b)
        p = sign_test(better, worse)
        not_worse = not (worse > better and p <= 0.05)
        share = _requests(result) / max(1, row.counts.requests)
        verdict = "met" if not_worse and share <= 0.5 else "not met"
        print(
            f"{'':<17} {method} vs {row.method}: held-out {ours:.3f} vs {row.score:.3f}, "
            f"+{better}/-{worse} cases, p={p:.3g} ({'not worse' if not_worse else 'worse'}); "
            f"requests {_requests(result)}/{row.counts.requests} = {share:.2f} "
            f"(target: not worse with <= 0.5 of its requests: {verdict})"
        )


def _saving(
    method: str, result: OptimizationResult, results: dict[str, OptimizationResult]
) -> str | None:
    """What racing or halving saved, against the same exhaustive figure the table shows.

    The run's own ``racing_report`` counts what exhaustive search would have
    sent for the variants this run made; when this table has the exhaustive
    search's row (whose variants may differ: a rewrite one search rejects and
    the other scores), the saving is counted against that row's requests.
    """
    against = dict(_RACED_PAIRS).get(method)
    exhaustive = results.get(against) if against is not None else None
    if exhaustive is None or result.racing_report is None:
        return result.racing_report
    mine, theirs = _requests(result), _requests(exhaustive)
    if mine >= theirs:
        return f"{method} saved nothing: {mine} requests, {against} {theirs}"
    return (
        f"{method} saved {theirs - mine} of the {theirs} requests {against} made "
        f"({(theirs - mine) / theirs:.0%})"
    )


def _fmt(value: float | None) -> str:
    return "   -  " if value is None else f"{value:6.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=DATASETS)
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--strategies", default=",".join(s.value for s in SMALL_MODEL_STRATEGIES))
    parser.add_argument("--reply-tokens", type=int, default=16)
    parser.add_argument("--demo-sets", type=int, default=4)
    parser.add_argument("--split", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, help="use only the first N cases of each dataset")
    parser.add_argument(
        "--prompt", help="start from this prompt instead of the CLI's default for each dataset"
    )
    parser.add_argument(
        "--held-out",
        help="score the chosen prompts on this dataset's cases instead of the split's "
        "(selection stays on the split's selection cases, so it is the same search); "
        "one dataset for every --datasets entry",
    )
    parser.add_argument("--store", help="keep replies in this directory across runs")
    parser.add_argument(
        "--replay",
        action="store_true",
        help="answer only from --store, with no model loaded: a request it lacks is a miss "
        "and fails the run (bench/_replay.py)",
    )
    parser.add_argument("--verbose", action="store_true", help="print every variant")
    parser.add_argument(
        "--dspy",
        action="store_true",
        help="also run DSPy MIPROv2 (light) per dataset (needs the bench extra; bench/_dspy.py)",
    )
    parser.add_argument(
        "--gepa",
        action="store_true",
        help="with --dspy: run DSPy GEPA (light) instead of MIPROv2 (its reflection model "
        "is the task model: bench/_dspy.py, REFLECTION)",
    )
    parser.add_argument("--dspy-tokens", type=int, default=32, help="DSPy's task reply cap")
    parser.add_argument("--dspy-proposer-tokens", type=int, default=256)
    parser.add_argument("--dspy-threads", type=int, default=1)
    parser.add_argument("--dspy-ctx", type=int, default=8192, help="the DSPy server's n_ctx")
    parser.add_argument(
        "--dspy-store",
        help="keep DSPy's replies (and the initial prompt's, through its server) in this "
        "directory; with --replay, answer only from it and never start the server",
    )
    args = parser.parse_args()
    dspy: Any = None
    if args.dspy:
        import _dspy  # bench/_dspy.py, beside this script; imports dspy only when run

        if not _dspy.available():
            parser.error("--dspy needs dspy: install the bench extra (bench/README.md, 'DSPy')")
        dspy = _dspy
        if args.replay and not args.dspy_store:
            parser.error("--replay with --dspy needs --dspy-store DIR: MIPROv2's replies")

    with open_store(args.store, replay=args.replay) as store:
        memo = Memo(store.llm)
        report(memo, args, dspy)
    print(store.summary())
    if store.failed:
        raise SystemExit("--replay: the store lacks replies, so the figures above are not its own")


def report(memo: Memo, args: argparse.Namespace, dspy: Any) -> None:
    """Run every dataset and method and print the table."""
    header = (
        f"{'dataset':<17} {'sel/out':>7} {'method':<16} {'held-out initial -> best':<24} "
        f"{'gain [95% CI]':<22} {'const':>5} {'flips':>7} {'p':>7} {'verdict':<12} "
        f"{'train':>13} {'reqs':>5} {'tokens':>7} {'model s':>7} {'wall s':>6}"
    )
    print(header)
    print("-" * len(header))
    started = time.perf_counter()
    for name in [n for n in args.datasets.split(",") if n]:
        cases = datasets.load(name)[: args.limit] if args.limit else datasets.load(name)
        every = cases  # DSPy splits them itself, the same way
        held_out = None
        if args.held_out:
            # The same selection cases as the split's, and held-out cases nothing chose on.
            cases = split_cases(cases, args.split, args.seed)[0]
            held_out = datasets.load(args.held_out)
        results: dict[str, OptimizationResult] = {}
        for method in [m for m in args.methods.split(",") if m]:
            began = time.perf_counter()
            result = run(memo, name, cases, method, args, held_out)
            wall = time.perf_counter() - began
            results[method] = result
            low, high = result.gain_interval or (math.nan, math.nan)
            held = f"{_fmt(result.initial_validation_score)} -> {_fmt(result.validation_score)}"
            gain = (
                "-"
                if result.validation_score is None or result.initial_validation_score is None
                else f"{result.validation_score - result.initial_validation_score:+.3f} "
                f"[{low:+.2f}, {high:+.2f}]"
            )
            baseline = result.constant_baseline
            const = "-" if baseline is None else f"{baseline.score:.3f}"
            p = "-" if result.validation_p_value is None else f"{result.validation_p_value:.3g}"
            model_s = sum(r.latency_s for r in result.case_results)
            print(
                f"{name:<17} {result.selection_cases:>3}/{result.validation_cases:<3} "
                f"{method:<16} {held:<24} {gain:<22} {const:>5} "
                f"{f'+{result.validation_better}/-{result.validation_worse}':>7} {p:>7} "
                f"{result.verdict:<12} {_train(result):>13} {_requests(result):>5} "
                f"{result.tokens:>7} {model_s:>7.1f} {wall:>6.1f}",
                flush=True,
            )
            for line in (result.chance_flag, _saving(method, result, results)):
                if line:
                    print(f"{'':<17} {method}: {line}", flush=True)
            if args.verbose:
                for note in (r.racing_note for r in result.history if r.racing_note):
                    print(f"    {note}")
                for reason in result.rejected_rewrites:
                    print(f"    the model's rewrite was rejected, not scored: {reason}")
                for v in result.variants:
                    score = v.score if v.score is not None else v.partial_score
                    shown = "-" if score is None else f"{score:.3f}"
                    extra = v.spec.describe()
                    print(
                        f"    v{v.id} r{v.round} {v.strategy:<12} {v.status.value:<10} "
                        f"cases={v.cases_scored:<3} train={shown} {extra}"
                    )
        if dspy is not None:
            meta = getattr(datasets, "load_meta", None)
            threshold = meta(name).threshold if meta is not None else None
            mipro = dspy.run_mipro(
                name,
                every,
                args.prompt or _PROMPTS[name],
                evaluator_for(name),
                threshold=0.8 if threshold is None else threshold,
                split=args.split,
                seed=args.seed,
                reply_tokens=args.reply_tokens,
                dspy_tokens=args.dspy_tokens,
                proposer_tokens=args.dspy_proposer_tokens,
                threads=args.dspy_threads,
                n_ctx=args.dspy_ctx,
                store=args.dspy_store,
                replay=args.replay,
                method="gepa" if args.gepa else "mipro",
                held_out=held_out,
                held_out_name=args.held_out,
            )
            print("\n".join(dspy.format_lines(name, mipro)), flush=True)
            if args.dspy_store:
                line = f"store {args.dspy_store}: {mipro.replayed} replies replayed"
                if args.replay:
                    line += f", {mipro.missed} misses"
                print(f"{'':<17} {line}", flush=True)
                if mipro.missed:
                    raise SystemExit("--replay: the DSPy store lacks replies")
            _against_dspy(results, mipro)
        for method, against in _RACED_PAIRS:
            raced, exhaustive = results.get(method), results.get(against)
            if exhaustive is None or raced is None:
                continue
            same = raced.best_spec == exhaustive.best_spec
            selection = _requests(raced) - _held_out_requests(raced)
            selection_exhaustive = _requests(exhaustive) - _held_out_requests(exhaustive)
            print(
                f"{'':<17} {method}/{against} requests = "
                f"{_requests(raced) / max(1, _requests(exhaustive)):.2f} with held-out scoring "
                f"({_requests(raced)}/{_requests(exhaustive)}), "
                f"{selection / max(1, selection_exhaustive):.2f} selection only "
                f"({selection}/{selection_exhaustive}); same winner: {same}"
            )
    print("-" * len(header))
    print("train ~: the starting prompt's mean over only the cases racing scored it on")
    print(f"{memo.model_calls} calls past the memo, {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
