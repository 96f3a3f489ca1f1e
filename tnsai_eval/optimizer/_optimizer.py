"""PromptOptimizer: the original module's search, made concurrent, bounded and reproducible."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from tnsai_eval._util.aio import run_sync
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LLMClient
from tnsai_eval.optimizer._cases import TestCase, check_cases, split_cases
from tnsai_eval.optimizer._engine import (
    DEFAULT_CALL_PARAMS,
    DEFAULT_TEMPLATE,
    Clock,
    check_concurrency,
    check_template,
)
from tnsai_eval.optimizer._evaluators import DefaultPromptEvaluator, PromptEvaluator
from tnsai_eval.optimizer._racing import RacingBound
from tnsai_eval.optimizer._records import ProgressEvent
from tnsai_eval.optimizer._result import OptimizationResult
from tnsai_eval.optimizer._run import Run, example_order
from tnsai_eval.optimizer._strategies import DEFAULT_STRATEGIES, PromptStrategy, suggest_strategies
from tnsai_eval.optimizer._variant import PromptVariant

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
      raises ``LLMError`` is left out of the mean and counted, and so is one
      whose evaluator raises or returns a value outside [0, 1] (the error is
      in the ``error`` column of ``to_dataframe()``);
    * each round applies every candidate strategy to the current best prompt,
      then asks the model to rewrite the best prompt from its results (beyond
      the original, from its failures; ``rewrite=False`` skips this; a failed
      or empty rewrite adds no variant); any variant scoring higher than the
      best becomes the best (the first, on ties);
    * the run stops when the best score reaches ``target_score``, after
      ``max_iterations`` rounds, or when the best scores after the last three
      rounds are within 0.01 of each other. Beyond the original, it also
      stops after the initial prompt when every one of its cases failed
      (``StopReason.ALL_CASES_FAILED``: a server that is down), and at the
      ``max_calls`` / ``max_tokens`` / ``max_seconds`` budgets.

    Held out by default: ``optimize`` splits the cases (``split=0.3`` of
    them, seeded by ``seed``, stratified by label, see ``split_cases``) into
    selection cases, on which every variant is scored and the best chosen,
    and held-out cases, on which only the initial and the best prompt are
    scored at the end: ``result.validation_score``, its interval and
    ``validation_p_value`` (exact paired sign test) say whether the gain is
    real; ``result.score`` is the training (selection) score. Explicit
    ``validation_cases`` replace the split; ``split=None`` holds nothing out.

    Beyond the original: cases are scored concurrently (at most
    ``concurrency`` calls in flight) through the client's async path; within a
    run the same request is never sent twice, and a variant equal to an
    earlier one is not scored again. A variant is a ``PromptVariant``: the
    instruction plus an optional system message, demos and
    ``response_format`` (``optimize`` also takes one as its starting prompt);
    ``FEW_SHOT`` adds the last ``few_shot_examples`` cases of the racing order
    as inline demos, and ``demo_sets=N`` tries N demo sets per round, drawn
    from the selection cases and the model's own replies that scored 1.0,
    as chat turns and inline (a case is never scored with itself as a demo).
    The rewrite request shows the best instruction, its score, the other
    instructions tried and the cases it fails; ``rewrite_llm`` sends it to
    another (stronger) model, with ``rewrite_max_tokens`` reply tokens.
    ``search="racing"`` scores challengers on growing slices of the cases and
    drops only those a paired bound says are worse (``racing_bound``, rule in
    ``tnsai_eval.optimizer._racing``). ``max_calls``, ``max_tokens`` and
    ``max_seconds`` bound the run (``result.stop_reason`` says which ended
    it); ``max_calls`` bounds HTTP attempts, retries included (a retry the
    budget has no room for is refused: the call fails instead), replies from
    a client's response store are counted apart, and the budget covers the
    optimizer's own calls (the rewrite model's too), not those an evaluator
    makes. ``seed`` also fixes the racing order; with a deterministic client
    the same inputs give the same result, call for call. ``progress``
    receives a ``ProgressEvent`` after every scored case and every round.

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
        split: float | None = 0.3,
        rewrite_llm: LLMClient | None = None,
        racing_bound: RacingBound = "hoeffding",
        demo_sets: int = 0,
        rewrite_max_tokens: int = 256,
    ) -> None:
        if max_iterations < 1:
            raise ConfigError(f"max_iterations must be at least 1, got {max_iterations!r}")
        if not 0.0 <= target_score <= 1.0:
            raise ConfigError(f"target_score must be in [0, 1], got {target_score!r}")
        if search not in ("exhaustive", "racing"):
            raise ConfigError(f"search must be 'exhaustive' or 'racing', got {search!r}")
        if racing_bound not in ("hoeffding", "t"):
            raise ConfigError(f"racing_bound must be 'hoeffding' or 't', got {racing_bound!r}")
        check_concurrency(concurrency)
        for name, limit in (("max_calls", max_calls), ("max_tokens", max_tokens)):
            if limit is not None and limit < 0:
                raise ConfigError(f"{name} must be >= 0 or None, got {limit!r}")
        if max_seconds is not None and not max_seconds > 0:
            raise ConfigError(f"max_seconds must be > 0 or None, got {max_seconds!r}")
        check_template(template)
        if split is not None and (
            isinstance(split, bool) or not isinstance(split, int | float) or not 0.0 < split < 1.0
        ):
            raise ConfigError(
                f"split must be the held-out share, a number in (0, 1), or None, got {split!r}"
            )
        if isinstance(demo_sets, bool) or not isinstance(demo_sets, int) or demo_sets < 0:
            raise ConfigError(f"demo_sets must be an int >= 0, got {demo_sets!r}")
        if (
            isinstance(rewrite_max_tokens, bool)
            or not isinstance(rewrite_max_tokens, int)
            or rewrite_max_tokens < 1
        ):
            raise ConfigError(f"rewrite_max_tokens must be an int >= 1, got {rewrite_max_tokens!r}")
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
        if not self.candidate_strategies and not rewrite and not demo_sets:
            raise ConfigError(
                "nothing to try: candidate_strategies is empty, rewrite=False and "
                "demo_sets=0; give at least one strategy, demo sets or allow the model's rewrite"
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
        self.split = None if split is None else float(split)
        self.rewrite_llm = rewrite_llm
        self.racing_bound: RacingBound = racing_bound
        self.demo_sets = demo_sets
        self.rewrite_max_tokens = rewrite_max_tokens

    def __repr__(self) -> str:
        strategies = ", ".join(s.value for s in self.candidate_strategies)
        return (
            f"PromptOptimizer(search={self.search!r}, max_iterations={self.max_iterations}, "
            f"target_score={self.target_score}, strategies=[{strategies}])"
        )

    suggest_strategies = staticmethod(suggest_strategies)

    def optimize(
        self,
        prompt: str | PromptVariant,
        cases: Sequence[TestCase],
        *,
        validation_cases: Sequence[TestCase] | None = None,
        stop_event: threading.Event | None = None,
    ) -> OptimizationResult:
        """Run the search from ``prompt``; see the class docstring.

        The best prompt is chosen on selection cases only and then scored,
        with the initial prompt, on held-out cases, giving ``validation_score``,
        ``initial_validation_score`` and the paired test between them. The
        held-out cases are ``validation_cases`` when given (selection then uses
        all of ``cases``), else a seeded ``split`` share of ``cases``
        (``split_cases``: stratified by label, same inputs on one side); with
        ``split=None`` and no ``validation_cases`` nothing is held out.
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
        prompt: str | PromptVariant,
        cases: Sequence[TestCase],
        *,
        validation_cases: Sequence[TestCase] | None = None,
        stop_event: threading.Event | None = None,
    ) -> OptimizationResult:
        """``optimize`` for async callers (``stop_event`` as there)."""
        if isinstance(prompt, str):
            prompt = PromptVariant(prompt)
        elif not isinstance(prompt, PromptVariant):
            raise ConfigError(
                f"prompt must be a str or a PromptVariant, got {type(prompt).__name__}"
            )
        if stop_event is not None and not isinstance(stop_event, threading.Event):
            raise ConfigError(
                f"stop_event must be a threading.Event or None, got {type(stop_event).__name__}"
            )
        selection, validation = self.split_cases(cases, validation_cases)
        return await Run(self, prompt, selection, validation, stop_event=stop_event).execute()

    def split_cases(
        self, cases: Sequence[TestCase], validation_cases: Sequence[TestCase] | None = None
    ) -> tuple[list[TestCase], list[TestCase]]:
        """``(selection, held_out)`` as ``optimize`` would use them.

        >>> from tnsai_eval.testing import ScriptedLLM
        >>> cases = [TestCase(f"{i} + 1", str(i + 1)) for i in range(10)]
        >>> selection, held_out = PromptOptimizer(ScriptedLLM()).split_cases(cases)
        >>> len(selection), len(held_out)
        (7, 3)
        """
        checked = check_cases(cases, "cases")
        validation = check_cases(validation_cases, "validation_cases", allow_empty=True)
        if validation_cases is not None or self.split is None:
            return checked, validation
        return split_cases(checked, self.split, self.seed)

    def estimate_calls(
        self,
        prompt: str | PromptVariant,
        cases: Sequence[TestCase],
        *,
        validation_cases: Sequence[TestCase] | None = None,
    ) -> int:
        """The most calls ``optimize`` can make with these arguments, retries aside.

        Every round is counted in full (racing and an early stop only lower it),
        a case input repeated in ``cases`` once, and round 1's strategies that
        would leave ``prompt`` unchanged not at all. Retries are not foreseen,
        but they too count against ``max_calls``, which caps the estimate.
        """
        text = prompt.instruction if isinstance(prompt, PromptVariant) else prompt
        checked, validation = self.split_cases(cases, validation_cases)
        n = len({case.input for case in checked})
        examples = [checked[i] for i in reversed(example_order(len(checked), self.seed))]
        first = sum(
            1
            for strategy in self.candidate_strategies
            if strategy.apply(text, examples, examples=self.few_shot_examples) != text
        )
        per_round = (1 + n if self.rewrite else 0) + self.demo_sets * n
        total = n + first * n + per_round
        total += (self.max_iterations - 1) * (len(self.candidate_strategies) * n + per_round)
        total += 2 * len({case.input for case in validation})
        return total if self.max_calls is None else min(total, self.max_calls)
