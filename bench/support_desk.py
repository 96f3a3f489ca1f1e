"""The support desk agent on the embedded model: tool-call accuracy per match mode.

    .venv/bin/python bench/support_desk.py --store bench/stores/support_desk --replay  # README
    .venv/bin/python bench/support_desk.py --store /tmp/desk          # record anew (about 3 min)
    .venv/bin/python bench/support_desk.py --limit 8                  # a quick look, no store

Each of the 48 requests of ``datasets/support_desk.jsonl`` is answered by an
``Agent`` with the desk's three tools (``datasets/make_support_desk.py``:
deterministic functions over fixed orders and policies), at most 4 model
calls per request, temperature 0. The embedded model calls tools through
``LocalLLM(tools=...)``: a grammar makes every reply a valid call of a
declared tool or a final answer. Each trajectory is scored by
``ToolCallMatch`` in every match mode (arguments compared as ``subset``), by
``ToolCallF1``, by ``NormCompliance`` (the desk's norms under each case's
state) and by ``FinalAnswer(ContainsEvaluator())``; the table prints each
metric's mean over the cases, and per kind of request. A run from the store
(``--replay``) runs the tools live and replays every model turn; a changed
tool result would change the next request and miss.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from _replay import open_store  # bench/_replay.py, beside this script

from tnsai_eval import datasets
from tnsai_eval.agents import Agent, Trajectory
from tnsai_eval.llm import LLMClient
from tnsai_eval.scoring import (
    ContainsEvaluator,
    FinalAnswer,
    NormCompliance,
    TestCase,
    ToolCallF1,
    ToolCallMatch,
    metrics_of,
)

REPO = Path(__file__).resolve().parents[1]
# bench/ (this script's folder, first on the path) holds cel.py, the CEL
# benchmark, which would shadow the ``cel`` package the norms compile with;
# datasets/ holds the desk's tools and norms.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
sys.path.insert(0, str(REPO / "datasets"))
import make_support_desk as desk  # noqa: E402  (datasets/, put on the path above)

MODES = ("strict", "in_order", "any_order", "superset", "subset")
MAX_STEPS = desk.MAX_STEPS


def evaluators() -> list[object]:
    """The metrics the table prints, in its column order."""
    return [
        *(ToolCallMatch(mode, "subset") for mode in MODES),
        ToolCallF1("subset"),
        NormCompliance(desk.SupportDesk),
        FinalAnswer(ContainsEvaluator()),
    ]


def make_agent(llm: LLMClient) -> Agent:
    """A fresh desk agent on ``llm`` (one per request: no conversation carries over)."""
    return desk.make_agent(llm=llm)


def run_cases(llm: LLMClient, cases: list[TestCase]) -> tuple[list[Trajectory], list[str]]:
    """Each case's trajectory, one fresh agent per case, and the failures (each named).

    A case whose run raises (a replay miss, a failed call) scores as a run that
    did nothing: it counts against every metric rather than leaving the table.
    """
    runs, failures = [], []
    for case in cases:
        try:
            runs.append(make_agent(llm).run(case.input))
        except Exception as exc:
            failures.append(f"{case.id}: {type(exc).__name__}: {str(exc)[:120]}")
            runs.append(Trajectory(case.input))
    return runs, failures


def table(cases: list[TestCase], runs: list[Trajectory]) -> str:
    """Each metric's mean over all cases and per kind of request (the id's prefix)."""
    metrics = metrics_of(evaluators())  # type: ignore[arg-type]
    groups: dict[str, list[int]] = defaultdict(list)
    for index, case in enumerate(cases):
        groups["all"].append(index)
        groups[(case.id or "other").split("-")[0]].append(index)
    scores = [
        [m.score(run, case).score for m in metrics] for case, run in zip(cases, runs, strict=True)
    ]
    names = [m.name.removeprefix("tool_calls_") for m in metrics]
    lines = ["| requests | n | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for group in ["all", *sorted(k for k in groups if k != "all")]:
        members = groups[group]
        means = [sum(scores[i][k] for i in members) / len(members) for k in range(len(metrics))]
        lines.append(
            f"| {group} | {len(members)} | " + " | ".join(f"{v:.3f}" for v in means) + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="record into (or with --replay, replay from) this store")
    parser.add_argument("--replay", action="store_true", help="only the store; never the model")
    parser.add_argument("--limit", type=int, default=None, help="the first N cases only")
    args = parser.parse_args(argv)
    cases = datasets.load(REPO / "datasets" / "support_desk.jsonl")[: args.limit]
    started = time.perf_counter()
    with open_store(args.store, replay=args.replay) as store:
        runs, failures = run_cases(store.llm, cases)
    elapsed = time.perf_counter() - started
    print(table(cases, runs))
    calls = sum(run.calls for run in runs)
    stops = Counter(run.stop_reason.value for run in runs)
    print(
        f"\n{len(cases)} requests, {calls} model calls, {elapsed:.1f} s; runs ended: "
        + ", ".join(f"{reason} {stops[reason]}" for reason in ("answered", "length", "max_steps"))
    )
    for failure in failures:
        print(f"failed: {failure}")
    print(store.summary())
    return 1 if store.failed or failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
