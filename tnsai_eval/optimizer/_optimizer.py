"""PromptOptimizer: the original module's search, made concurrent, bounded and reproducible."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from tnsai_eval._util.aio import run_sync
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LLMClient
from tnsai_eval.optimizer._cases import TestCase, check_cases
from tnsai_eval.optimizer._config import OptimizerConfig
from tnsai_eval.optimizer._result import OptimizationResult
from tnsai_eval.optimizer._run import Run, example_order
from tnsai_eval.optimizer._strategies import suggest_strategies

__all__ = ["PromptOptimizer"]


class PromptOptimizer:
    """Searches for a better prompt by trying strategies and model rewrites.

    Every option after ``llm`` is keyword-only, as in
    ``PromptOptimizer(llm, max_iterations=5, target_score=0.9)``: the fields of
    ``OptimizerConfig`` (or ``config=`` one), kept frozen in ``self.config``;
    defaults: ``candidate_strategies=DEFAULT_STRATEGIES`` (the original four)
    and ``evaluator=DefaultPromptEvaluator()``.

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
    >>> optimizer = PromptOptimizer(llm, candidate_strategies=["answer_only"])
    >>> result = optimizer.optimize("Capital of France?", [TestCase("France", "Paris")])
    >>> result.was_improved, result.score, result.calls
    (True, 1.0, 4)
    """

    def __init__(
        self, llm: LLMClient, *, config: OptimizerConfig | None = None, **options: Any
    ) -> None:
        if config is not None and options:
            raise ConfigError(
                f"give either config= or keyword options, not both (got {sorted(options)})"
            )
        self.llm = llm
        #: The settings, frozen: change them with ``with_options``.
        self.config = config if config is not None else OptimizerConfig(**options)

    def __repr__(self) -> str:
        c = self.config
        strategies = ", ".join(s.value for s in c.strategies)
        return (
            f"PromptOptimizer(search={c.search!r}, max_iterations={c.max_iterations}, "
            f"target_score={c.target_score}, strategies=[{strategies}])"
        )

    def with_options(self, **changes: Any) -> PromptOptimizer:
        """A new optimizer on the same client with ``changes`` to its settings.

        >>> from tnsai_eval.testing import ScriptedLLM
        >>> PromptOptimizer(ScriptedLLM()).with_options(search="racing").config.search
        'racing'
        """
        return PromptOptimizer(self.llm, config=self.config.replace(**changes))

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
        run = Run(self.llm, self.config, prompt, checked, validation, stop_event=stop_event)
        return await run.execute()

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
        examples = [checked[i] for i in reversed(example_order(len(checked), self.config.seed))]
        first = sum(
            1
            for strategy in self.config.strategies
            if strategy.apply(prompt, examples, examples=self.config.few_shot_examples) != prompt
        )
        per_round_rewrite = (1 + n) if self.config.rewrite else 0
        total = n + first * n + per_round_rewrite
        total += (self.config.max_iterations - 1) * (
            len(self.config.strategies) * n + per_round_rewrite
        )
        total += 2 * len({case.input for case in validation})
        return total if self.config.max_calls is None else min(total, self.config.max_calls)
