"""PromptOptimizer: the original module's search, made concurrent, bounded and reproducible."""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LLMClient
from tnsai_eval.optimizer._cases import TestCase
from tnsai_eval.optimizer._engine import Budget, Clock, Engine, Variant
from tnsai_eval.optimizer._evaluators import DefaultPromptEvaluator, PromptEvaluator
from tnsai_eval.optimizer._racing import race
from tnsai_eval.optimizer._records import (
    CaseResult,
    EventKind,
    ProgressEvent,
    RoundRecord,
    StopReason,
    VariantRecord,
    VariantStatus,
)
from tnsai_eval.optimizer._result import OptimizationResult
from tnsai_eval.optimizer._rewrite import clean_rewrite, rewrite_request
from tnsai_eval.optimizer._strategies import DEFAULT_STRATEGIES, PromptStrategy, suggest_strategies

__all__ = ["DEFAULT_CALL_PARAMS", "DEFAULT_TEMPLATE", "PromptOptimizer", "SearchMode"]

SearchMode = Literal["exhaustive", "racing"]
#: How a case call's single user message is made from the prompt and the case's input.
DEFAULT_TEMPLATE = "{prompt}\n\n{input}"
#: Parameters of every case call (and of rewrite requests), unless ``call_params`` is given.
DEFAULT_CALL_PARAMS: Mapping[str, Any] = {"temperature": 0.0, "max_tokens": 128}
# "The last three round-best scores are within 0.01": their spread is below this.
_CONVERGENCE_ROUNDS = 3
_CONVERGENCE_SPREAD = 0.01


class PromptOptimizer:
    """Searches for a better prompt by trying strategies and model rewrites.

    The original module's algorithm, kept exactly:

    * a prompt's score is the mean evaluator score over the cases, one call per
      case with the prompt and the input (``template``, by default the prompt,
      a blank line, then the input, as one user message); a case whose call
      raises ``LLMError`` is left out of the mean and counted;
    * each round applies every candidate strategy to the current best prompt,
      then asks the model to rewrite the best prompt from its results on the
      first three cases (``rewrite=False`` skips this); any variant scoring
      higher than the best becomes the best (the first, on ties);
    * the run stops when the best score reaches ``target_score``, after
      ``max_iterations`` rounds, or when the best scores after the last three
      rounds are within 0.01 of each other.

    Beyond the original: cases are scored concurrently (at most
    ``concurrency`` calls in flight) through the client's async path; within a
    run the same request is never sent twice, and a variant whose text equals
    an earlier one is not scored again. ``search="racing"`` scores challengers
    on growing slices of the cases and drops those that fall behind (the rule
    is in ``tnsai_eval.optimizer._racing``). ``max_calls``, ``max_tokens`` and
    ``max_seconds`` bound the run (``result.stop_reason`` says which ended it);
    the budget covers the optimizer's own calls, not those an evaluator makes.
    ``seed`` fixes the racing order of the cases and which cases ``FEW_SHOT``
    shows; with a deterministic client the same inputs give the same result,
    call for call. ``progress`` receives a ``ProgressEvent`` after every scored
    case and every round.

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
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency!r}")
        for name, limit in (("max_calls", max_calls), ("max_tokens", max_tokens)):
            if limit is not None and limit < 0:
                raise ConfigError(f"{name} must be >= 0 or None, got {limit!r}")
        if max_seconds is not None and not max_seconds > 0:
            raise ConfigError(f"max_seconds must be > 0 or None, got {max_seconds!r}")
        if "{prompt}" not in template or "{input}" not in template:
            raise ConfigError(f"template must contain {{prompt}} and {{input}}, got {template!r}")
        self.llm = llm
        self.max_iterations = max_iterations
        self.target_score = target_score
        self.candidate_strategies = tuple(PromptStrategy.parse(s) for s in candidate_strategies)
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
    ) -> OptimizationResult:
        """Run the search from ``prompt``; see the class docstring.

        With ``validation_cases`` the best prompt is still chosen on ``cases``
        only, and then scored on the validation cases too (as is the initial
        prompt), giving ``validation_score`` and ``initial_validation_score``.
        Works inside a running event loop (a notebook) by running in a thread.
        """
        coroutine = self.aoptimize(prompt, cases, validation_cases=validation_cases)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coroutine)
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, coroutine).result()

    async def aoptimize(
        self,
        prompt: str,
        cases: Sequence[TestCase],
        *,
        validation_cases: Sequence[TestCase] | None = None,
    ) -> OptimizationResult:
        """``optimize`` for async callers."""
        checked = _check_cases(cases, "cases")
        validation = _check_cases(validation_cases, "validation_cases", allow_empty=True)
        if not isinstance(prompt, str):
            raise ConfigError(f"prompt must be a str, got {type(prompt).__name__}")
        return await _Run(self, prompt, checked, validation).execute()

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
        checked = _check_cases(cases, "cases")
        validation = _check_cases(validation_cases, "validation_cases", allow_empty=True)
        n = len({case.input for case in checked})
        examples = [checked[i] for i in self._example_order(len(checked))]
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

    def _example_order(self, n: int) -> list[int]:
        order = list(range(n))
        random.Random(self.seed).shuffle(order)
        return order


def _check_cases(
    cases: Sequence[TestCase] | None, name: str, *, allow_empty: bool = False
) -> list[TestCase]:
    items = list(cases or ())
    if not items and not allow_empty:
        raise ConfigError(f"{name} must hold at least one TestCase, got none")
    for index, case in enumerate(items):
        if not isinstance(case, TestCase):
            raise ConfigError(
                f"{name}[{index}] must be a TestCase, got {type(case).__name__}: {case!r}"
            )
    return items


class _Run:
    """The state of one ``aoptimize`` call."""

    def __init__(
        self,
        options: PromptOptimizer,
        prompt: str,
        cases: list[TestCase],
        validation: list[TestCase],
    ) -> None:
        self.o = options
        self.prompt = prompt
        self.cases = cases
        self.validation = validation
        self.order = options._example_order(len(cases))
        self.examples = [cases[i] for i in self.order]
        self.budget = Budget(
            max_calls=options.max_calls,
            max_tokens=options.max_tokens,
            max_seconds=options.max_seconds,
            clock=options.clock,
        )
        self.engine = Engine(
            options.llm,
            evaluator=options.evaluator,
            budget=self.budget,
            concurrency=options.concurrency,
            params=options.call_params,
            template=options.template,
            on_case=self._on_case,
        )
        self.variants: list[Variant] = []
        self.by_prompt: dict[str, int] = {}
        self.history: list[RoundRecord] = []
        self.validation_rows: list[CaseResult] = []
        self.best: Variant | None = None

    @property
    def best_score(self) -> float:
        return (self.best.mean() or 0.0) if self.best is not None else 0.0

    def _on_case(self, row: CaseResult) -> None:
        if self.o.progress is not None:
            best = self.best_score if self.best is not None else None
            self.o.progress(
                ProgressEvent(EventKind.CASE, row.round, self.budget.calls, best, case=row)
            )

    def _new_variant(
        self, round_no: int, strategy: str, prompt: str, parent: int | None
    ) -> Variant:
        variant = Variant(len(self.variants), round_no, strategy, prompt, parent)
        self.variants.append(variant)
        earlier = self.by_prompt.get(prompt)
        if earlier is not None:
            variant.status = VariantStatus.DUPLICATE
            variant.duplicate_of = earlier
        else:
            self.by_prompt[prompt] = variant.id
        return variant

    async def execute(self) -> OptimizationResult:
        n = len(self.cases)
        initial = self._new_variant(0, "initial", self.prompt, None)
        self.best = initial
        initial.became_best = True
        await self.engine.score(initial, range(n), self.cases)
        self._finish_statuses([initial])
        self._record_round(0, improved=False, variants=1, spent=(0, 0, 0))
        stop = self.budget.stop_reason
        round_no = 0
        while stop is None:
            stop = self._stop_before(round_no)
            if stop is not None:
                break
            round_no += 1
            before = (self.budget.calls, self.budget.tokens, self.budget.failed_calls)
            fresh = await self._make_variants(round_no)
            scored = [v for v in fresh if v.status is not VariantStatus.DUPLICATE]
            if self.o.search == "racing":
                await race(self.engine, scored, self.best, self.order, self.cases)
            else:
                await asyncio.gather(*(self.engine.score(v, range(n), self.cases) for v in scored))
            self._finish_statuses(scored)
            improved = self._select(scored)
            self._record_round(round_no, improved=improved, variants=len(fresh), spent=before)
            stop = self.budget.stop_reason
        validation_score, initial_validation = await self._validate(initial)
        return self._result(stop, round_no, validation_score, initial_validation)

    def _stop_before(self, rounds_done: int) -> StopReason | None:
        if self.best_score >= self.o.target_score:
            return StopReason.TARGET_REACHED
        if rounds_done >= self.o.max_iterations:
            return StopReason.MAX_ITERATIONS
        recent = [r.best_score for r in self.history[1:]][-_CONVERGENCE_ROUNDS:]
        if len(recent) == _CONVERGENCE_ROUNDS and max(recent) - min(recent) < _CONVERGENCE_SPREAD:
            return StopReason.CONVERGED
        return None

    async def _make_variants(self, round_no: int) -> list[Variant]:
        assert self.best is not None
        parent = self.best
        fresh = [
            self._new_variant(
                round_no,
                strategy.value,
                strategy.apply(parent.prompt, self.examples, examples=self.o.few_shot_examples),
                parent.id,
            )
            for strategy in self.o.candidate_strategies
        ]
        if self.o.rewrite:
            sent = await self.engine.send(rewrite_request(parent, self.cases), self.o.call_params)
            text = getattr(sent.reply, "text", None)
            if isinstance(text, str) and clean_rewrite(text):
                fresh.append(self._new_variant(round_no, "rewrite", clean_rewrite(text), parent.id))
        return fresh

    def _finish_statuses(self, variants: Sequence[Variant]) -> None:
        for variant in variants:
            if variant.status is VariantStatus.SCORED and variant.attempted < len(self.cases):
                variant.status = VariantStatus.INCOMPLETE

    def _select(self, scored: Sequence[Variant]) -> bool:
        improved = False
        for variant in scored:
            score = variant.mean()
            complete = variant.status is VariantStatus.SCORED
            if complete and score is not None and score > self.best_score:
                self.best = variant
                variant.became_best = True
                improved = True
        return improved

    def _record_round(
        self, round_no: int, *, improved: bool, variants: int, spent: tuple[int, int, int]
    ) -> None:
        assert self.best is not None
        record = RoundRecord(
            round=round_no,
            best_score=self.best_score,
            best_variant=self.best.id,
            improved=improved,
            variants=variants,
            calls=self.budget.calls - spent[0],
            tokens=self.budget.tokens - spent[1],
            failed_calls=self.budget.failed_calls - spent[2],
            elapsed_s=self.budget.elapsed(),
        )
        self.history.append(record)
        if self.o.progress is not None:
            self.o.progress(
                ProgressEvent(
                    EventKind.ROUND,
                    round_no,
                    self.budget.calls,
                    record.best_score,
                    round_record=record,
                )
            )

    async def _validate(self, initial: Variant) -> tuple[float | None, float | None]:
        if not self.validation or self.best is None:
            return None, None
        scores: dict[int, float | None] = {}
        sources = [initial] if self.best is initial else [initial, self.best]
        for source in sources:
            shadow = Variant(source.id, source.round, source.strategy, source.prompt, source.parent)
            await self.engine.score(
                shadow, range(len(self.validation)), self.validation, split="validation"
            )
            self.validation_rows.extend(shadow.rows)
            complete = len(shadow.rows) == len(self.validation)
            values = [r.score for r in shadow.rows if r.score is not None]
            mean = math.fsum(values) / len(values) if values else 0.0
            scores[source.id] = mean if complete else None
        return scores[self.best.id], scores[initial.id]

    def _result(
        self,
        stop: StopReason,
        rounds: int,
        validation_score: float | None,
        initial_validation: float | None,
    ) -> OptimizationResult:
        assert self.best is not None
        initial = self.variants[0]
        train_rows = sorted(
            (row for v in self.variants for row in v.rows),
            key=lambda r: (r.round, r.variant, r.case),
        )
        validation_rows = sorted(self.validation_rows, key=lambda r: (r.variant, r.case))
        return OptimizationResult(
            best_prompt=self.best.prompt,
            score=self.best_score,
            initial_prompt=initial.prompt,
            initial_score=initial.mean() or 0.0,
            rounds=rounds,
            calls=self.budget.calls,
            tokens=self.budget.tokens,
            failed_calls=self.budget.failed_calls,
            stop_reason=stop,
            search=self.o.search,
            elapsed_s=self.budget.elapsed(),
            best_variant=self.best.id,
            validation_score=validation_score,
            initial_validation_score=initial_validation,
            variants=tuple(_freeze(v) for v in self.variants),
            history=tuple(self.history),
            case_results=tuple(train_rows) + tuple(validation_rows),
        )


def _freeze(variant: Variant) -> VariantRecord:
    complete = variant.status is VariantStatus.SCORED
    return VariantRecord(
        id=variant.id,
        round=variant.round,
        strategy=variant.strategy,
        prompt=variant.prompt,
        parent=variant.parent,
        status=variant.status,
        score=variant.mean() if complete else None,
        partial_score=variant.mean(),
        cases_scored=variant.attempted - variant.failed,
        cases_failed=variant.failed,
        calls=variant.calls,
        tokens=variant.tokens,
        became_best=variant.became_best,
        duplicate_of=variant.duplicate_of,
    )
