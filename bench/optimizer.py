"""Exhaustive search against racing, side by side, on the shipped datasets.

    .venv/bin/python bench/optimizer.py                    # embedded SmolLM2 model
    .venv/bin/python bench/optimizer.py --datasets capitals,sentiment --rounds 2

For each dataset both searches start from the CLI's default prompt with the
same strategies, seed and model. Prints, per dataset, the calls each search
sent and the best score each reached, and the ratio racing / exhaustive
(target: racing reaches the same best score with at most 0.6 of the calls).

Both runs go through one memo below the optimizers, so a request the first run
already sent is answered from memory in the second: with a deterministic
model (temperature 0) this changes no reply, and it roughly halves the wall
time. ``--store DIR`` keeps that memo on disk (a ``ResponseStore`` in record
mode), so a second run of the benchmark replays instead of calling the model.
Each optimizer still counts every call it sends, so the call figures are
exactly what each search would cost on its own.
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

from tnsai_eval import datasets
from tnsai_eval.cli._optimize import CLI_STRATEGIES, DEFAULT_PROMPTS
from tnsai_eval.llm import (
    CachedLLM,
    Completion,
    LLMClient,
    MessagesInput,
    ResponseStore,
    default_llm,
    normalize_messages,
)
from tnsai_eval.optimizer import OptimizationResult, PromptOptimizer, TestCase

DATASETS = "capitals,sentiment,arithmetic,formal_tone,json_extraction"


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


def run(
    llm: LLMClient, name: str, cases: list[TestCase], search: str, args: argparse.Namespace
) -> OptimizationResult:
    optimizer = PromptOptimizer(
        llm,
        max_iterations=args.rounds,
        candidate_strategies=args.strategies.split(","),
        search=search,  # type: ignore[arg-type]
        concurrency=1,  # the embedded model serves one call at a time anyway
        seed=args.seed,
        call_params={"temperature": 0.0, "max_tokens": args.reply_tokens},
    )
    return optimizer.optimize(DEFAULT_PROMPTS[name], cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=DATASETS)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--strategies", default=CLI_STRATEGIES)
    parser.add_argument("--reply-tokens", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", help="keep replies in this directory across runs")
    parser.add_argument("--verbose", action="store_true", help="print every variant")
    args = parser.parse_args()

    model = default_llm()
    if args.store:
        model = CachedLLM(model, ResponseStore(args.store), mode="record")
    memo = Memo(model)
    header = (
        f"{'dataset':<16} {'cases':>5} {'search':<10} {'calls':>5} {'initial':>7} "
        f"{'best':>6} {'rounds':>6}  stop"
    )
    print(header)
    print("-" * len(header))
    totals = {"exhaustive": 0, "racing": 0}
    same = 0
    names = [n for n in args.datasets.split(",") if n]
    started = time.perf_counter()
    for name in names:
        results = {}
        cases = datasets.load(name)
        for search in ("exhaustive", "racing"):
            result = run(memo, name, cases, search, args)
            results[search] = result
            totals[search] += result.calls
            print(
                f"{name:<16} {len(cases):>5} {search:<10} {result.calls:>5} "
                f"{result.initial_score:>7.3f} {result.score:>6.3f} {result.rounds:>6}  "
                f"{result.stop_reason.value}",
                flush=True,
            )
            if args.verbose:
                for v in result.variants:
                    score = v.score if v.score is not None else v.partial_score
                    shown = "-" if score is None else f"{score:.3f}"
                    print(
                        f"    v{v.id} r{v.round} {v.strategy:<12} {v.status.value:<10} "
                        f"cases={v.cases_scored:<3} score={shown}"
                    )
        exhaustive, racing = results["exhaustive"], results["racing"]
        same += abs(racing.score - exhaustive.score) < 1e-9
        print(
            f"{'':<16} racing/exhaustive calls = {racing.calls / exhaustive.calls:.2f}, "
            f"same best score: {abs(racing.score - exhaustive.score) < 1e-9}"
        )
    print("-" * len(header))
    print(
        f"total calls: exhaustive {totals['exhaustive']}, racing {totals['racing']} "
        f"(ratio {totals['racing'] / max(1, totals['exhaustive']):.2f}); same best score on "
        f"{same}/{len(names)} datasets; {memo.model_calls} calls past the memo, "
        f"{time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
