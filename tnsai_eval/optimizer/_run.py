"""One optimizer run: the rounds, the choice of the best, validation, the result."""

from __future__ import annotations

import dataclasses
import math
import random
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tnsai_eval._util.stats import (
    mean_interval,
    paired_bootstrap_interval,
    paired_proportions_interval,
    sign_test,
)
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import Budget, Demo, Engine, PromptVariant, Variant
from tnsai_eval.llm import LLMClient
from tnsai_eval.optimizer._chance import constant_baseline
from tnsai_eval.optimizer._config import OptimizerConfig
from tnsai_eval.optimizer._demos import bootstrap_pool, demo_candidates
from tnsai_eval.optimizer._racing import RaceSummary, savings_report
from tnsai_eval.optimizer._records import (
    EventKind,
    ProgressEvent,
    RoundRecord,
    StopReason,
    VariantRecord,
    VariantStatus,
)
from tnsai_eval.optimizer._reserve import CheckCost, Observed, estimate, shortfall
from tnsai_eval.optimizer._result import OptimizationResult
from tnsai_eval.optimizer._rewrite import check_rewrite, clean_rewrite, rewrite_request
from tnsai_eval.optimizer._search import SEARCHES
from tnsai_eval.optimizer._strategies import PromptStrategy
from tnsai_eval.records import CaseRecord
from tnsai_eval.scoring import TestCase, score_metric

__all__ = ["HeldOut", "Run", "example_order", "held_out_stats"]

# The limits whose share the search spends; the held-out check has the rest.
_LIMITS = (StopReason.MAX_CALLS, StopReason.MAX_TOKENS, StopReason.MAX_SECONDS)
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
        prompt: PromptVariant,
        cases: list[TestCase],
        validation: list[TestCase],
        *,
        stop_event: threading.Event | None = None,
        target: Callable[[str], Any] | None = None,
    ) -> None:
        self.options = options
        #: ``factory(prompt) -> target``: each variant is scored by the target it makes.
        self.target = target
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
            shared=options.budget,
        )
        self.engine = Engine(
            llm,
            evaluator=options.evaluator,
            budget=self.budget,
            concurrency=options.concurrency,
            params=options.call_params,
            template=options.template,
            on_case=self._on_case,
            target=target,
        )
        self.variants: list[Variant] = []
        self.by_key: dict[str, int] = {}
        self.history: list[RoundRecord] = []
        self.validation_rows: list[CaseRecord] = []
        self.best: Variant | None = None
        # Rewrite replies that were not prompts for the task (check_rewrite), with why.
        self.rejected_rewrites: list[str] = []
        # What the search mode's races decided (the rounds it returned a summary for).
        self.races: list[RaceSummary] = []
        # The limits as given: during the search, Budget's own are lowered by
        # what the held-out check is estimated to need (_reserve).
        self.max_tokens = options.max_tokens
        self.max_seconds = options.max_seconds
        # Per variant: tokens over the case calls that reached the model
        # (train split), for the check's token estimate.
        self.case_tokens: dict[int, list[int]] = {}
        # Why the held-out check was not run (it could not finish), if so.
        self.check_skipped: str | None = None
        # What the run did with the reserve it did not need, for the result.
        self.budget_notes: list[str] = []
        # Set once the search is over: the best prompt is then known.
        self.best_known = False

    @property
    def best_score(self) -> float:
        return (self.best.mean() or 0.0) if self.best is not None else 0.0

    def _on_case(self, row: CaseRecord) -> None:
        if row.split == "train" and row.tokens > 0:
            spent = self.case_tokens.setdefault(row.variant, [0, 0])
            spent[0] += row.tokens
            spent[1] += 1
        if self.validation and row.split == "train":
            self._reserve(self._check_cost(final=self.best_known))
        if self.options.progress is not None:
            best = self.best_score if self.best is not None else None
            self.options.progress(
                ProgressEvent(EventKind.CASE, row.round, self.budget.calls, best, case=row)
            )

    def _new_variant(
        self, round_no: int, strategy: str, spec: PromptVariant, parent: int | None
    ) -> Variant:
        variant = Variant(len(self.variants), round_no, strategy, spec, parent)
        self.variants.append(variant)
        earlier = self.by_key.setdefault(spec.key(), variant.id)
        if earlier != variant.id:
            variant.status = VariantStatus.DUPLICATE
            variant.duplicate_of = earlier
        return variant

    def _set_aside_held_out(self) -> None:
        """Hold back the held-out check's calls before the search may spend them.

        The check scores the initial and the best prompt on every held-out
        case: two calls each before any retry is seen (``_reserve``; the
        reserve grows with the retry rate the run observes). A budget without
        that much left refuses the run now, rather than ending it with no
        held-out check.
        """
        need = 2 * len(self.validation)
        if not need:
            return
        for budget in self.budget.call_budgets:
            if budget.left < need:
                raise ConfigError(
                    f"max_calls: the call budget has {budget.left} of {budget.limit} attempt(s) "
                    f"left, but the held-out check needs {need} (the initial and the best "
                    f"prompt on {len(self.validation)} held-out case(s)); raise max_calls to "
                    f"at least {budget.limit - budget.left + need} plus what the search may "
                    "spend, or hold out fewer cases (split=)"
                )
        self._reserve(self._check_cost(final=False))

    def _calls_per_case(self) -> float:
        """Model calls per case: 1 for a prompt; for a target (an agent takes several), as
        observed so far (replies from a store included), and at least 1."""
        if self.target is None:
            return 1.0
        cases = sum(len(v.rows) for v in self.variants)
        calls = self.budget.calls - self.budget.retries + self.budget.cache_hits
        return max(1.0, calls / cases) if cases else 1.0

    def _tokens_per_call(self, variant: Variant) -> float | None:
        spent = self.case_tokens.get(variant.id)
        return spent[0] / spent[1] if spent and spent[1] else None

    def _check_cost(self, *, final: bool) -> CheckCost:
        """The held-out check's estimated cost; ``final``: the best prompt is now known."""
        initial = self.variants[0] if self.variants else None
        if final:
            best_tokens = None if self.best is None else self._tokens_per_call(self.best)
        else:
            # Any scored variant may still become the best: the dearest one's figure.
            figures = [self._tokens_per_call(v) for v in self.variants]
            best_tokens = max((f for f in figures if f is not None), default=None)
        seen = Observed(
            attempts=self.budget.calls,
            retries=self.budget.retries,
            elapsed_s=self.budget.elapsed(),
            initial_tokens=None if initial is None else self._tokens_per_call(initial),
            best_tokens=best_tokens,
            calls_per_case=self._calls_per_case(),
        )
        return estimate(
            len(self.validation),
            best_is_initial=final and self.best is not None and self.best is initial,
            seen=seen,
        )

    def _reserve(self, need: CheckCost) -> None:
        """Keep ``need`` out of the search's reach: held attempts, lowered token and time limits.

        Each call budget holds the estimated attempts (``hold`` again with
        the new figure after ``release``, so that it is the reserve, not a sum
        of reserves); ``Budget``'s token and time limits, which it checks
        before each call, are the given ones less the estimate.
        """
        self.budget.release()
        self.budget.hold(need.calls)
        if self.max_tokens is not None:
            self.budget.max_tokens = max(0, self.max_tokens - need.tokens)
        if self.max_seconds is not None:
            self.budget.max_seconds = max(0.0, self.max_seconds - need.seconds)

    def _unreserve(self) -> None:
        """The whole budget again, for the held-out check (or what the search may resume)."""
        self.budget.release()
        self.budget.max_tokens = self.max_tokens
        self.budget.max_seconds = self.max_seconds
        if self.budget.stop_reason in _LIMITS:
            # The search stopped at its share of a limit; the check has the rest.
            self.budget.stop_reason = None

    def _check_problem(self, need: CheckCost) -> str | None:
        """Why the held-out check cannot finish now, or ``None``."""
        if self.budget.stopped():
            return "the run was stopped (stop_event) before the held-out check"
        lefts = [b.left for b in self.budget.call_budgets]
        return shortfall(
            need,
            calls_left=min(lefts) if lefts else None,
            tokens_left=None if self.max_tokens is None else self.max_tokens - self.budget.tokens,
            seconds_left=(
                None if self.max_seconds is None else self.max_seconds - self.budget.elapsed()
            ),
            held_out=len(self.validation),
        )

    async def execute(self) -> OptimizationResult:
        n = len(self.cases)
        self._set_aside_held_out()
        initial = self._new_variant(0, "initial", self.prompt, None)
        self.best = initial
        initial.became_best = True
        # The run's search mode owns its rule; the run never asks its name.
        search = SEARCHES.get(self.options.search)
        # A mode that races the starting prompt scores it on fewer cases here.
        first = search.first_cases(n, demo_sets=self.options.demo_sets)
        planned = self.order[:first] if first < n else range(n)
        await self.engine.score(initial, planned, self.cases)
        mean = initial.mean()
        if len(planned) < n and mean is not None and mean >= self.options.target_score:
            # At the target on the first rung: the likeliest winner, and whether
            # the run is already done needs its complete score (exhaustive
            # search stops here without a round; so does racing).
            planned = range(n)
            await self.engine.score(initial, self.order[first:], self.cases)
        note = None
        if len(planned) < n:
            note = (
                f"{self.options.search} scored the starting prompt on the first "
                f"{len(planned)} of {n} selection cases; it races with the challengers of round 1"
            )
        else:
            self._finish_statuses([initial])
        self._record_round(0, improved=False, variants=1, spent=(0, 0, 0), note=note)
        stop = self.budget.stop_reason
        if stop is None and initial.attempted == len(planned) and initial.failed == len(planned):
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
            incumbent = self.best
            fresh = await self._make_variants(round_no)
            scored = [v for v in fresh if v.status is not VariantStatus.DUPLICATE]
            summary = await search.score_round(
                self.engine,
                scored,
                incumbent,
                self.order,
                self.cases,
                bound=self.options.racing_bound,
                incumbent_name=(
                    "the starting prompt"
                    if incumbent is initial
                    else f"the best prompt so far (variant {incumbent.id})"
                ),
            )
            note = None
            if summary is not None:
                note = summary.note
                self.races.append(summary)
            self._finish_statuses([incumbent, *scored])
            improved = self._select(scored, incumbent)
            self._record_round(
                round_no, improved=improved, variants=len(fresh), spent=before, note=note
            )
            stop = self.budget.stop_reason
        if initial.status is VariantStatus.SCORED:
            # Scored on the first rung only, when the run stopped before round 1's race.
            self._finish_statuses([initial])
        if self.validation and self.best is initial and stop in _LIMITS:
            await self._resume(initial)
        held_out = HeldOut()
        if self.validation:
            # The search is over: what it left, and what was set aside, is the check's,
            # if the check can finish on it.
            self._unreserve()
            self.check_skipped = self._check_problem(self._check_cost(final=True))
            if self.check_skipped is None:
                held_out = await self._validate(initial)
        return self._result(stop, round_no, held_out)

    async def _resume(self, initial: Variant) -> None:
        """Spend the reserve the held-out check no longer needs on the round the budget cut.

        With the starting prompt still the best, the check scores it alone:
        the share set aside for a better prompt's check is returned to the
        search, which scores the cut round's incomplete variants further, in
        order. A variant this completes with a higher score becomes the best
        only while both prompts' check still fits what is left; otherwise the
        starting prompt stays the best, and ``budget_notes`` says so.
        """
        self.best_known = True
        self._unreserve()
        self._reserve(self._check_cost(final=True))
        before = (self.budget.calls, self.budget.tokens, self.budget.failed_calls)
        cut = [
            v for v in self.variants if v.status is VariantStatus.INCOMPLETE and v is not initial
        ]
        for variant in cut:
            if self.budget.stopped():
                break
            missing = [i for i in self.order if i not in variant.scores]
            await self.engine.score(variant, missing, self.cases)
            if variant.attempted < len(self.cases):
                continue
            variant.status = VariantStatus.SCORED
            score = variant.mean() or 0.0
            if score <= self.best_score:
                continue
            self.best = variant
            need = self._check_cost(final=True)
            self._unreserve()
            problem = self._check_problem(need)
            self._reserve(need)
            if problem is None:
                variant.became_best = True
                self.budget_notes.append(
                    f"variant {variant.id} was completed on the reserve the held-out check "
                    f"no longer needed, and scored {score:.3f}: the new best"
                )
                break
            self.best = initial
            self.budget_notes.append(
                f"variant {variant.id} was completed on the reserve the held-out check no "
                f"longer needed and scored {score:.3f}, above the starting prompt, but its "
                f"held-out check no longer fits ({problem}): the starting prompt stays the best"
            )
            break
        self._finish_statuses(cut)
        if self.history and self.best is not None:
            # The resumed scoring belongs to the round the budget cut.
            last = self.history[-1]
            self.history[-1] = dataclasses.replace(
                last,
                best_score=self.best_score,
                best_variant=self.best.id,
                improved=last.improved or self.best is not initial,
                calls=last.calls + self.budget.calls - before[0],
                tokens=last.tokens + self.budget.tokens - before[1],
                failed_calls=last.failed_calls + self.budget.failed_calls - before[2],
                elapsed_s=self.budget.elapsed(),
            )

    def _stop_before(self, rounds_done: int) -> StopReason | None:
        if self.budget.stopped():  # a stop_event set between two rounds
            return self.budget.stop_reason
        # A starting prompt scored on the first rung only (racing) has not
        # reached the target: its mean over a few cases is no final score.
        complete = self.best is not None and self.best.attempted == len(self.cases)
        if complete and self.best_score >= self.options.target_score:
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
        base = parent.spec
        shots = self.options.few_shot_examples
        fresh = []
        for strategy in self.options.strategies:
            if strategy is PromptStrategy.FEW_SHOT:
                # Worked examples as demos, so that a case shown as an example
                # is never scored with itself in the prompt.
                demos = tuple(Demo(c.input, c.expected) for c in self.examples[:shots])
                spec = dataclasses.replace(base, demos=demos, demo_style="inline")
            else:
                instruction = strategy.apply(
                    base.instruction, self.cases, labels=self.options.labels
                )
                spec = dataclasses.replace(base, instruction=instruction)
            fresh.append(self._new_variant(round_no, strategy.value, spec, parent.id))
        if self.options.demo_sets:
            pool = bootstrap_pool(self.cases, parent.scores, parent.outputs)
            for name, spec in demo_candidates(
                base,
                self.cases,
                pool,
                sets=self.options.demo_sets,
                size=shots,
                seed=self.options.seed * 1000 + round_no,
            ):
                fresh.append(self._new_variant(round_no, name, spec, parent.id))
        if self.options.rewrite:
            rewritten = await self._rewrite(parent)
            if rewritten:
                spec = dataclasses.replace(base, instruction=rewritten)
                fresh.append(self._new_variant(round_no, "rewrite", spec, parent.id))
        return fresh

    async def _rewrite(self, parent: Variant) -> str:
        """A model-written instruction from the best prompt's failures, or '' when none."""
        tried = [
            (v.spec.instruction, score)
            for v in self.variants
            if v.status is VariantStatus.SCORED and (score := v.mean()) is not None
        ]
        request = rewrite_request(parent, self.cases, tried=tried)
        params = {**self.options.call_params, "max_tokens": self.options.rewrite_max_tokens}
        sent = await self.engine.send(request, params, llm=self.options.rewrite_llm)
        text = getattr(sent.reply, "text", None)
        rewritten = clean_rewrite(text) if isinstance(text, str) else ""
        if not rewritten:
            # A failed call (no text) is counted as a failed call, not as a rejection.
            return ""
        # The one validation of model-written prompts: a rejected proposal is
        # recorded with why, and not scored.
        replies = {
            output.strip()
            for variant in self.variants
            for output in variant.outputs.values()
            if output is not None and output.strip()
        }
        problem = check_rewrite(
            rewritten, self.prompt.instruction, self.cases, replies=sorted(replies)
        )
        if problem is not None:
            self.rejected_rewrites.append(problem)
            return ""
        return rewritten

    def _finish_statuses(self, variants: Sequence[Variant]) -> None:
        # A dropped variant stays DROPPED, whatever it was scored on.
        for variant in variants:
            if variant.status is VariantStatus.SCORED and variant.attempted < len(self.cases):
                variant.status = VariantStatus.INCOMPLETE

    def _select(self, scored: Sequence[Variant], incumbent: Variant) -> bool:
        """Make the round's winner the best; whether it changed.

        A challenger replaces the incumbent only with a strictly higher
        complete score; when racing dropped the incumbent (shown worse than a
        survivor), the complete survivor with the highest mean replaces it
        (ties: the earlier variant). With none (the budget ran out), the
        incumbent stays the best.
        """
        complete = [v for v in scored if v.status is VariantStatus.SCORED and v.mean() is not None]
        if incumbent.status is VariantStatus.DROPPED:
            if not complete:
                return False
            winner = max(complete, key=lambda v: (v.mean() or 0.0, -v.id))
            self.best = winner
            winner.became_best = True
            return True
        improved = False
        for variant in complete:
            if (variant.mean() or 0.0) > self.best_score:
                self.best = variant
                variant.became_best = True
                improved = True
        return improved

    def _record_round(
        self,
        round_no: int,
        *,
        improved: bool,
        variants: int,
        spent: tuple[int, int, int],
        note: str | None = None,
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
            racing_note=note,
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

    async def _validate(self, initial: Variant) -> HeldOut:
        """Score the initial and the best prompt on the held-out cases, paired."""
        if not self.validation or self.best is None:
            return HeldOut()
        per_case: dict[int, dict[int, float | None]] = {}
        sources = [initial] if self.best is initial else [initial, self.best]
        for source in sources:
            shadow = Variant(source.id, source.round, source.strategy, source.spec, source.parent)
            await self.engine.score(
                shadow, range(len(self.validation)), self.validation, split="validation"
            )
            self.validation_rows.extend(shadow.rows)
            per_case[source.id] = {row.index: row.score for row in shadow.rows}
        return held_out_stats(
            per_case[initial.id],
            per_case[self.best.id],
            len(self.validation),
            alpha=self.options.alpha,
            seed=self.options.seed,
        )

    def _racing_report(self, stop: StopReason) -> str | None:
        if not self.races or len(self.history) < 2:
            return None
        cut = stop in (*_LIMITS, StopReason.STOPPED)
        return savings_report(
            self.options.search,
            sum(race.saved for race in self.races),
            # Requests: live calls and replies a response store served alike.
            self.budget.calls + self.budget.cache_hits,
            dropped=sum(race.dropped for race in self.races),
            dropped_last=sum(race.dropped_last for race in self.races),
            complete=not cut,
        )

    def _result(self, stop: StopReason, rounds: int, held: HeldOut) -> OptimizationResult:
        assert self.best is not None
        initial = self.variants[0]
        train_rows = sorted(
            (row for v in self.variants for row in v.rows),
            key=lambda r: (r.round, r.variant, r.index),
        )
        validation_rows = sorted(self.validation_rows, key=lambda r: (r.variant, r.index))
        return OptimizationResult(
            best_prompt=self.best.prompt,
            best_spec=self.best.spec,
            template=self.options.template,
            score=self.best_score,
            initial_prompt=initial.prompt,
            initial_score=initial.mean() or 0.0,
            rounds=rounds,
            calls=self.budget.calls,
            tokens=self.budget.tokens,
            failed_calls=self.budget.failed_calls,
            retries=self.budget.retries,
            cache_hits=self.budget.cache_hits,
            stop_reason=stop,
            search=self.options.search,
            elapsed_s=self.budget.elapsed(),
            best_variant=self.best.id,
            validation_score=held.score,
            initial_validation_score=held.initial_score,
            validation_p_value=held.p_value,
            validation_interval=held.interval,
            validation_better=held.better,
            validation_worse=held.worse,
            gain_interval=held.gain_interval,
            validation_scored=held.cases,
            validation_skipped=self.check_skipped,
            budget_notes=tuple(self.budget_notes),
            alpha=self.options.alpha,
            labels=None if self.options.labels is None else tuple(self.options.labels),
            constant_baseline=(
                None
                if self.options.labels is None
                else constant_baseline(self.options.labels, self.cases, self.validation)
            ),
            selection_cases=len(self.cases),
            validation_cases=len(self.validation),
            variants=tuple(_freeze(v, len(self.cases)) for v in self.variants),
            history=tuple(self.history),
            case_results=tuple(train_rows) + tuple(validation_rows),
            rejected_rewrites=tuple(self.rejected_rewrites),
            racing_report=self._racing_report(stop),
            metric=score_metric(self.options.evaluator),
        )


@dataclass(frozen=True, slots=True)
class HeldOut:
    """The held-out comparison of the best prompt with the initial one.

    ``cases`` counts the held-out cases both prompts were scored on: the
    means, the flips and the gain's interval are all over those (a case
    whose call failed for either prompt is left out of every figure).
    """

    score: float | None = None
    initial_score: float | None = None
    p_value: float | None = None
    interval: tuple[float, float] | None = None
    better: int = 0
    worse: int = 0
    gain_interval: tuple[float, float] | None = None
    cases: int = 0


def held_out_stats(
    initial: dict[int, float | None],
    best: dict[int, float | None],
    total: int,
    *,
    alpha: float = 0.05,
    seed: int = 0,
) -> HeldOut:
    """Means, the best's 95% interval, the gain's interval and the paired sign test.

    The figures are ``None`` unless every held-out case was attempted with
    both prompts (the budget may end first). They are over the cases both
    prompts scored (``HeldOut.cases``): a case whose call failed for either
    is left out of both means, so that the means, the gain and the flips
    describe the same cases. The sign test counts the cases where the best
    prompt scored higher (``better``) or lower (``worse``) than the initial
    one. ``gain_interval`` is the ``1 - alpha`` interval of the gain (best
    minus initial) over those paired cases: Newcombe's interval for paired
    proportions when every score is 0 or 1, else a paired bootstrap seeded
    by ``seed`` (``_util.stats``).

    >>> h = held_out_stats({0: 0.0, 1: 0.0, 2: 1.0, 3: 0.0}, {0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0}, 4)
    >>> h.initial_score, h.score, h.better, h.worse, h.p_value, h.cases
    (0.25, 1.0, 3, 0, 0.25, 4)
    >>> [round(x, 3) for x in h.gain_interval]
    [0.085, 0.954]
    >>> h = held_out_stats({0: 0.0, 1: 1.0, 2: None}, {0: 1.0, 1: 1.0, 2: 1.0}, 3)
    >>> h.initial_score, h.score, h.cases  # case 2 failed for the initial prompt
    (0.5, 1.0, 2)
    """
    pairs = [
        (after, before)
        for case, before in sorted(initial.items())
        if before is not None and (after := best.get(case)) is not None
    ]
    if len(initial) < total or len(best) < total or not pairs:
        # Incomplete (the budget), or nothing both prompts scored.
        return HeldOut(cases=len(pairs))
    better = sum(1 for after, before in pairs if after > before)
    worse = sum(1 for after, before in pairs if after < before)
    best_values = [after for after, _ in pairs]
    _, low, high = mean_interval(best_values)
    return HeldOut(
        score=math.fsum(best_values) / len(pairs),
        initial_score=math.fsum(before for _, before in pairs) / len(pairs),
        p_value=sign_test(better, worse),
        interval=(max(0.0, low), min(1.0, high)),
        better=better,
        worse=worse,
        gain_interval=gain_interval(pairs, alpha=alpha, seed=seed),
        cases=len(pairs),
    )


def gain_interval(
    pairs: Sequence[tuple[float, float]], *, alpha: float = 0.05, seed: int = 0
) -> tuple[float, float]:
    """The ``1 - alpha`` interval of the mean of ``after - before`` over paired cases.

    0/1 scores (accuracies) get Newcombe's interval for paired proportions,
    anything else a paired bootstrap of the differences, seeded by ``seed``.

    >>> gain_interval([(1.0, 0.0), (1.0, 1.0), (0.0, 0.0)])[0] < 1 / 3
    True
    >>> gain_interval([(0.5, 0.25), (0.75, 0.25)])
    (0.25, 0.5)
    """
    if all(v in (0.0, 1.0) for pair in pairs for v in pair):
        # (after, before): both right, only after, only before, neither.
        n = Counter(pairs)
        return paired_proportions_interval(n[1, 1], n[1, 0], n[0, 1], n[0, 0], alpha=alpha)
    return paired_bootstrap_interval([a - b for a, b in pairs], alpha=alpha, seed=seed)


def _freeze(variant: Variant, total: int) -> VariantRecord:
    # A score is a mean over every case: a scored variant's, or one that racing
    # dropped after scoring it on every case (an incumbent that lost the lead).
    complete = variant.status is VariantStatus.SCORED or (
        variant.status is VariantStatus.DROPPED and variant.attempted == total
    )
    return VariantRecord(
        id=variant.id,
        round=variant.round,
        strategy=variant.strategy,
        prompt=variant.prompt,
        parent=variant.parent,
        system=variant.spec.system,
        demos=variant.spec.demos,
        demo_style=variant.spec.demo_style if variant.spec.demos else None,
        response_format=variant.spec.response_format,
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
