"""PromptOptimizer: the original module's search, made concurrent, bounded and reproducible."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from tnsai_eval._util.aio import run_sync
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LLMClient
from tnsai_eval.optimizer._cases import TestCase, check_cases
from tnsai_eval.optimizer._engine import (
    DEFAULT_CALL_PARAMS,
    DEFAULT_TEMPLATE,
    Clock,
    check_concurrency,
    check_template,
)
from tnsai_eval.optimizer._evaluators import DefaultPromptEvaluator, PromptEvaluator
from tnsai_eval.optimizer._records import ProgressEvent
from tnsai_eval.optimizer._result import OptimizationResult
from tnsai_eval.optimizer._run import Run, example_order
from tnsai_eval.optimizer._strategies import DEFAULT_STRATEGIES, PromptStrategy, suggest_strategies

__all__ = ["DEFAULT_CALL_PARAMS", "DEFAULT_TEMPLATE", "PromptOptimizer", "SearchMode"]

SearchMode = Literal["exhaustive", "racing"]


class PromptOptimizer:
    """Searches for a better prompt by trying strategies and model rewrites.

    Every option after ``llm`` is keyword-only, as in
    ``PromptOptimizer(llm, max_iterations=5, target_score=0.9)``; defaults:
    ``candidate_strategies=DEFAULT_STRATEGIES`` (the original four) and
    ``evaluator=DefaultPromptEvaluator()``.

    The original module's algorithm, kept exactly:

    * a prompt's score is the mean evaluator score over the cases, one call per
      case with the prompt and the input (``template``, by default the prompt,
      a blank line, then the input, as one user message); a case whose call
      raises any ``Exception`` is left out of the mean and counted, and so is one
      whose evaluator raises or returns a value outside [0, 1] (the error is
      in the ``error`` column of ``to_dataframe()``);
    * each round applies every candidate strategy to the current best prompt,
      then asks the model to rewrite the best prompt from its results on the
      first three cases (``rewrite=False`` skips this; a failed or empty
      rewrite adds no variant); any variant scoring higher than the best
      becomes the best (the first, on ties);
    * the run stops when the best score reaches ``target_score``, after
      ``max_iterations`` rounds, or when the best scores after the last three
      rounds are within 0.01 of each other. Beyond the original, it also
      stops after the initial prompt when every one of its cases failed
      (``StopReason.ALL_CASES_FAILED``: a server that is down), and at the
      ``max_calls`` / ``max_tokens`` / ``max_seconds`` budgets.

    Beyond the original: cases are scored concurrently (at most
    ``concurrency`` calls in flight) through the client's async path; within a
    run the same request is never sent twice, and a variant whose text equals
    an earlier one is not scored again. ``search="racing"`` scores challengers
    on growing slices of the cases and drops those that fall behind (the rule
    is in ``tnsai_eval.optimizer._racing``). ``max_calls``, ``max_tokens`` and
    ``max_seconds`` bound the run (``result.stop_reason`` says which ended it);
    the budget covers the optimizer's own calls, not those an evaluator makes.
    ``seed`` fixes the racing order of the cases and which cases ``FEW_SHOT``
    shows (the last ``few_shot_examples`` of that order, so that racing's
    first rungs do not contain them); with a deterministic client the same
    inputs give the same result, call for call. ``progress`` receives a
    ``ProgressEvent`` after every scored case and every round.

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> llm = ScriptedLLM(rules=[(r"only the answer", "Paris")], default="I think it is Paris.")
    >>> optimizer = PromptOptimizer(llm, candidate_strategies=[PromptStrategy.ANSWER_ONLY])
    >>> result = optimizer.optimize("Capital of France?", [TestCase("France", "Paris")])
    >>> result.was_improved, result.score, result.calls
    (True, 1.0, 4)
    """

    def __init__(
        self,
        llm: LLMClient,
        *,
        max_iterations: int = 5,
        target_score: float = 0.9,
        candidate_strategies: Sequence[PromptStrategy | str] = DEFAULT_STRATEGIES,
        evaluator: PromptEvaluator | None = None,
        search: SearchMode = "exhaustive",
        max_calls: int | None = None,
        max_tokens: int | None = None,
        max_seconds: float | None = None,
        concurrency: int = 4,
        seed: int = 0,
        progress: Callable[[ProgressEvent], None] | None = None,
        rewrite: bool = True,
        few_shot_examples: int = 3,
        template: str = DEFAULT_TEMPLATE,
        call_params: Mapping[str, Any] | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        if max_iterations < 1:
            raise ConfigError(f"max_iterations must be at least 1, got {max_iterations!r}")
        if not 0.0 <= target_score <= 1.0:
            raise ConfigError(f"target_score must be in [0, 1], got {target_score!r}")
        if search not in ("exhaustive", "racing"):
            raise ConfigError(f"search must be 'exhaustive' or 'racing', got {search!r}")
        check_concurrency(concurrency)
        for name, limit in (("max_calls", max_calls), ("max_tokens", max_tokens)):
            if limit is not None and limit < 0:
                raise ConfigError(f"{name} must be >= 0 or None, got {limit!r}")
        if max_seconds is not None and not max_seconds > 0:
            raise ConfigError(f"max_seconds must be > 0 or None, got {max_seconds!r}")
        check_template(template)
        if few_shot_examples < 0:
            raise ConfigError(f"few_shot_examples must be >= 0, got {few_shot_examples!r}")
        if call_params is not None and not isinstance(call_params, Mapping):
            raise ConfigError(
                f"call_params must be a mapping of call parameters, got {call_params!r}"
            )
        self.llm = llm
        self.max_iterations = max_iterations
        self.target_score = target_score
        self.candidate_strategies = tuple(PromptStrategy.parse(s) for s in candidate_strategies)
        if not self.candidate_strategies and not rewrite:
            raise ConfigError(
                "nothing to try: candidate_strategies is empty and rewrite=False; "
                "give at least one strategy or allow the model's rewrite"
            )
        self.evaluator: PromptEvaluator = evaluator or DefaultPromptEvaluator()
        self.search: SearchMode = search
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.max_seconds = max_seconds
        self.concurrency = concurrency
        self.seed = seed
        self.progress = progress
        self.rewrite = rewrite
        self.few_shot_examples = few_shot_examples
        self.template = template
        self.call_params: dict[str, Any] = dict(
            DEFAULT_CALL_PARAMS if call_params is None else call_params
        )
        self.clock = clock

    def __repr__(self) -> str:
        strategies = ", ".join(s.value for s in self.candidate_strategies)
        return (
            f"PromptOptimizer(search={self.search!r}, max_iterations={self.max_iterations}, "
            f"target_score={self.target_score}, strategies=[{strategies}])"
        )

    suggest_strategies = staticmethod(suggest_strategies)

    def optimize(
        self,
        prompt: str,
        cases: Sequence[TestCase],
        *,
        validation_cases: Sequence[TestCase] | None = None,
        stop_event: threading.Event | None = None,
    ) -> OptimizationResult:
        """Run the search from ``prompt``; see the class docstring.

        With ``validation_cases`` the best prompt is still chosen on ``cases``
        only, and then scored on the validation cases too (as is the initial
        prompt), giving ``validation_score`` and ``initial_validation_score``.
        Works inside a running event loop (a notebook) by running in a thread.

        ``stop_event``, a ``threading.Event`` that another thread (a Stop
        button) may set, ends the run at the next call boundary: no call
        starts after it is set, calls in flight finish, and the result keeps
        every score so far, with ``stop_reason`` ``StopReason.STOPPED``
        (validation calls are not made either)::

            stop = threading.Event()
            worker = threading.Thread(target=lambda: optimizer.optimize(p, cases, stop_event=stop))
            worker.start()
            stop.set()  # from any thread
        """
        coroutine = self.aoptimize(
            prompt, cases, validation_cases=validation_cases, stop_event=stop_event
        )
        return run_sync(coroutine)

    async def aoptimize(
        self,
        prompt: str,
        cases: Sequence[TestCase],
        *,
        validation_cases: Sequence[TestCase] | None = None,
        stop_event: threading.Event | None = None,
    ) -> OptimizationResult:
        """``optimize`` for async callers (``stop_event`` as there)."""
        checked = check_cases(cases, "cases")
        validation = check_cases(validation_cases, "validation_cases", allow_empty=True)
        if not isinstance(prompt, str):
            raise ConfigError(f"prompt must be a str, got {type(prompt).__name__}")
        if stop_event is not None and not isinstance(stop_event, threading.Event):
            raise ConfigError(
                f"stop_event must be a threading.Event or None, got {type(stop_event).__name__}"
            )
        return await Run(self, prompt, checked, validation, stop_event=stop_event).execute()

    def estimate_calls(
        self,
        prompt: str,
        cases: Sequence[TestCase],
        *,
        validation_cases: Sequence[TestCase] | None = None,
    ) -> int:
        """The most calls ``optimize`` can make with these arguments.

        Every round is counted in full (racing and an early stop only lower it),
        a case input repeated in ``cases`` once, and round 1's strategies that
        would leave ``prompt`` unchanged not at all. Capped by ``max_calls``.
        """
        checked = check_cases(cases, "cases")
        validation = check_cases(validation_cases, "validation_cases", allow_empty=True)
        n = len({case.input for case in checked})
        examples = [checked[i] for i in reversed(example_order(len(checked), self.seed))]
        first = sum(
            1
            for strategy in self.candidate_strategies
            if strategy.apply(prompt, examples, examples=self.few_shot_examples) != prompt
        )
        per_round_rewrite = (1 + n) if self.rewrite else 0
        total = n + first * n + per_round_rewrite
        total += (self.max_iterations - 1) * (
            len(self.candidate_strategies) * n + per_round_rewrite
        )
        total += 2 * len({case.input for case in validation})
        return total if self.max_calls is None else min(total, self.max_calls)
