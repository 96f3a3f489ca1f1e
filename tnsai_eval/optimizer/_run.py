"""One optimizer run: the rounds, the choice of the best, validation, the result."""

from __future__ import annotations

import asyncio
import math
import random
import threading
from collections.abc import Sequence

from tnsai_eval.llm import LLMClient
from tnsai_eval.optimizer._cases import TestCase
from tnsai_eval.optimizer._config import OptimizerConfig
from tnsai_eval.optimizer._engine import Budget, Engine, Variant
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
from tnsai_eval.optimizer._rewrite import check_rewrite, clean_rewrite, rewrite_request

__all__ = ["Run", "example_order"]

# "The last three round-best scores are within 0.01": their spread is below this.
_CONVERGENCE_ROUNDS = 3
_CONVERGENCE_SPREAD = 0.01


def example_order(n: int, seed: int) -> list[int]:
    """The seeded order of the cases: racing scores them in it, FEW_SHOT shows its last."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


class Run:
    """The state of one ``aoptimize`` call."""

    def __init__(
        self,
        llm: LLMClient,
        options: OptimizerConfig,
        prompt: str,
        cases: list[TestCase],
        validation: list[TestCase],
        *,
        stop_event: threading.Event | None = None,
    ) -> None:
        self.options = options
        self.prompt = prompt
        self.cases = cases
        self.validation = validation
        self.order = example_order(len(cases), options.seed)
        # FEW_SHOT shows the *last* cases of the racing order: the early rungs,
        # which decide most drops, are then not flattered by its own examples.
        self.examples = [cases[i] for i in reversed(self.order)]
        self.budget = Budget(
            max_calls=options.max_calls,
            max_tokens=options.max_tokens,
            max_seconds=options.max_seconds,
            clock=options.clock,
            stop_event=stop_event,
        )
        self.engine = Engine(
            llm,
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
        # Rewrite replies that were not prompts for the task (check_rewrite), with why.
        self.rejected_rewrites: list[str] = []

    @property
    def best_score(self) -> float:
        return (self.best.mean() or 0.0) if self.best is not None else 0.0

    def _on_case(self, row: CaseResult) -> None:
        if self.options.progress is not None:
            best = self.best_score if self.best is not None else None
            self.options.progress(
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
        if stop is None and initial.attempted == n and initial.failed == n:
            # A server that is down or an evaluator that always raises would
            # otherwise spend every round on calls that cannot score.
            stop = StopReason.ALL_CASES_FAILED
        round_no = 0
        while stop is None:
            stop = self._stop_before(round_no)
            if stop is not None:
                break
            round_no += 1
            before = (self.budget.calls, self.budget.tokens, self.budget.failed_calls)
            fresh = await self._make_variants(round_no)
            scored = [v for v in fresh if v.status is not VariantStatus.DUPLICATE]
            if self.options.search == "racing":
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
        if self.budget.stopped():  # a stop_event set between two rounds
            return self.budget.stop_reason
        if self.best_score >= self.options.target_score:
            return StopReason.TARGET_REACHED
        if rounds_done >= self.options.max_iterations:
            return StopReason.MAX_ITERATIONS
        recent = [r.best_score for r in self.history[1:]][-_CONVERGENCE_ROUNDS:]
        if len(recent) == _CONVERGENCE_ROUNDS and max(recent) - min(recent) < _CONVERGENCE_SPREAD:
            return StopReason.CONVERGED
        return None

    async def _make_variants(self, round_no: int) -> list[Variant]:
        assert self.best is not None
        parent = self.best
        shots = self.options.few_shot_examples
        fresh = [
            self._new_variant(
                round_no,
                strategy.value,
                strategy.apply(parent.prompt, self.examples, examples=shots),
                parent.id,
            )
            for strategy in self.options.strategies
        ]
        if self.options.rewrite:
            request = rewrite_request(parent, self.cases)
            sent = await self.engine.send(request, self.options.call_params)
            text = getattr(sent.reply, "text", None)
            rewritten = clean_rewrite(text) if isinstance(text, str) else ""
            # A failed call (no text) is counted as a failed call, not as a rejection.
            problem = check_rewrite(rewritten, self.prompt, self.cases) if rewritten else None
            if problem is not None:
                self.rejected_rewrites.append(problem)
            elif rewritten:
                fresh.append(self._new_variant(round_no, "rewrite", rewritten, parent.id))
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
        if self.options.progress is not None:
            self.options.progress(
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
            search=self.options.search,
            elapsed_s=self.budget.elapsed(),
            best_variant=self.best.id,
            validation_score=validation_score,
            initial_validation_score=initial_validation,
            variants=tuple(_freeze(v) for v in self.variants),
            history=tuple(self.history),
            case_results=tuple(train_rows) + tuple(validation_rows),
            rejected_rewrites=tuple(self.rejected_rewrites),
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
