"""The initial and the best prompt on each shipped dataset, free-form and with structured output.

    .venv/bin/python bench/datasets.py --store /tmp/dsstore          # embedded SmolLM2 model
    .venv/bin/python bench/datasets.py --store bench/stores/datasets --replay  # the README's table
    .venv/bin/python bench/datasets.py --datasets sentiment,capitals --limit 40

For each dataset the optimizer starts from the CLI's default prompt
(``tnsai-eval optimize``'s ``DEFAULT_PROMPTS``), with the CLI's strategies
(FEW_SHOT, ANSWER_ONLY, CONCISE) and the model's rewrite, one racing round,
seed 0, 30% of the cases held out (stratified by label) and the dataset's
declared evaluator (``NAME.meta.json``; else ``DefaultPromptEvaluator``). It
runs twice where structured output applies:

- ``free``: replies as the prompt gets them (what production sees);
- ``structured``: every call carries a ``response_format``: the dataset's
  labels (``scoring_plan(name, constrain=True)``) for label datasets, a JSON
  schema of ``{"name", "age", "city"}`` for ``json_extraction``.

Printed per run: the held-out score of the initial and the best prompt with
the best's 95% interval, the held-out cases it did better / worse on and the
exact sign-test p-value, the training (selection-case) score of both, the
winning strategy, and the requests made (HTTP attempts plus replies a
``--store`` replayed, so a rerun from the store prints the same figures
without calling the model).
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

from _replay import open_store  # bench/_replay.py, beside this script

from tnsai_eval import datasets
from tnsai_eval.cli._optimize import DEFAULT_PROMPTS
from tnsai_eval.llm import LLMClient, json_schema_format
from tnsai_eval.optimizer import SMALL_MODEL_STRATEGIES, OptimizationResult, PromptOptimizer

DATASETS = "sentiment,capitals,arithmetic,formal_tone,json_extraction,feedback_examples"
_PROMPTS = {
    **DEFAULT_PROMPTS,
    "arithmetic_large": DEFAULT_PROMPTS["arithmetic"],
    "sentiment_large": DEFAULT_PROMPTS["sentiment"],
}
#: Replies long enough for each dataset's expected answers (a sentence, a JSON record).
_REPLY_TOKENS = {"formal_tone": 40, "json_extraction": 40}
_PERSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "city": {"type": "string"},
    },
    "required": ["name", "age", "city"],
    "additionalProperties": False,
}


def structured_format(name: str) -> dict[str, Any] | None:
    """The ``response_format`` of the structured run (``None``: structure does not apply)."""
    if name == "json_extraction":
        return json_schema_format(_PERSON_SCHEMA, "person")
    if not datasets.load_meta(name).labels:
        return None
    params = datasets.scoring_plan(name, constrain=True).params or {}
    response_format: dict[str, Any] = dict(params["response_format"])
    return response_format


def run(
    llm: LLMClient,
    name: str,
    cases: list[Any],
    response_format: dict[str, Any] | None,
    args: argparse.Namespace,
) -> OptimizationResult:
    plan = datasets.scoring_plan(name)
    params: dict[str, Any] = {
        "temperature": 0.0,
        "max_tokens": _REPLY_TOKENS.get(name, args.reply_tokens),
    }
    if response_format is not None:
        params["response_format"] = response_format
    optimizer = PromptOptimizer(
        llm,
        max_iterations=1,
        candidate_strategies=SMALL_MODEL_STRATEGIES,
        search="racing",
        concurrency=1,  # the embedded model serves one call at a time anyway
        seed=args.seed,
        split=args.split,
        evaluator=plan.evaluator,
        target_score=1.0,
        call_params=params,
    )
    return optimizer.optimize(_PROMPTS[name], cases)


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:5.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=DATASETS)
    parser.add_argument("--modes", default="free,structured")
    parser.add_argument("--reply-tokens", type=int, default=16)
    parser.add_argument("--split", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, help="use only the first N cases of each dataset")
    parser.add_argument("--store", help="keep replies in this directory across runs")
    parser.add_argument(
        "--replay",
        action="store_true",
        help="answer only from --store, with no model loaded: a request it lacks is a miss "
        "and fails the run (bench/_replay.py)",
    )
    args = parser.parse_args()
    with open_store(args.store, replay=args.replay) as store:
        report(store.llm, args)
    print(store.summary())
    if store.failed:
        raise SystemExit("--replay: the store lacks replies, so the figures above are not its own")


def report(model: LLMClient, args: argparse.Namespace) -> None:
    """Run every dataset and mode and print the table."""
    header = (
        f"{'dataset':<16} {'mode':<10} {'n':>7} {'held-out initial -> best [95% CI]':<30} "
        f"{'flips':>6} {'p':>6} {'train':>12}  {'best':<12} {'reqs':>5} {'s':>6}"
    )
    print(header)
    print("-" * len(header))
    for name in [n for n in args.datasets.split(",") if n]:
        cases = list(datasets.load(name))
        cases = cases[: args.limit] if args.limit else cases
        for mode in [m for m in args.modes.split(",") if m]:
            response_format = structured_format(name) if mode == "structured" else None
            if mode == "structured" and response_format is None:
                continue
            began = time.perf_counter()
            result = run(model, name, cases, response_format, args)
            low, high = result.validation_interval or (math.nan, math.nan)
            held = (
                f"{_fmt(result.initial_validation_score)} -> {_fmt(result.validation_score)} "
                f"[{low:.2f}, {high:.2f}]"
            )
            p = "-" if result.validation_p_value is None else f"{result.validation_p_value:.3g}"
            best = next(v.strategy for v in result.variants if v.id == result.best_variant)
            print(
                f"{name:<16} {mode:<10} {result.selection_cases:>3}/{result.validation_cases:<3} "
                f"{held:<30} {f'+{result.validation_better}/-{result.validation_worse}':>6} "
                f"{p:>6} {result.initial_score:5.3f}->{result.score:5.3f}  {best:<12} "
                f"{result.calls + result.cache_hits:>5} {time.perf_counter() - began:>6.1f}",
                flush=True,
            )
    print("-" * len(header))


if __name__ == "__main__":
    main()
