"""The machinery under the optimizer: budget, in-run cache, bounded concurrent calls.

Everything here runs on one event loop, so plain attributes need no locks.
What is cached is decided synchronously when a task starts, and tasks start
(and pass the concurrency bound) in the order they were created. Which calls
the call budget admits is decided when each is sent, after the concurrency
wait: at ``concurrency=1`` that order is the creation order; with more calls
in flight, which of the last few calls a nearly spent budget admits depends on
which replies come back first (the number of calls does not)."""

from __future__ import annotations

import asyncio
import inspect
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias, cast

from tnsai_eval._util.secrets import mask
from tnsai_eval.errors import CallBudgetExceeded, ConfigError, ReplayMissError
from tnsai_eval.evaluation._runner import TargetRunner, all_active
from tnsai_eval.evaluation._stop import StopReason, VariantStatus
from tnsai_eval.evaluation._variant import DEFAULT_TEMPLATE, PromptVariant
from tnsai_eval.llm import (
    CallBudget,
    CallEvent,
    Completion,
    LLMClient,
    Message,
    ametered_call,
    call_usage,
    only_budgets,
    running_case,
)
from tnsai_eval.records import CaseRecord, CaseState, case_ids
from tnsai_eval.scoring import (
    DEFAULT_CALL_PARAMS,
    PromptEvaluator,
    TestCase,
    TrajectoryEvaluator,
    metrics_of,
)

__all__ = [
    "DEFAULT_CALL_PARAMS",
    "DEFAULT_TEMPLATE",
    "Budget",
    "Engine",
    "Variant",
    "check_concurrency",
    "check_max_calls",
    "check_template",
]


Clock: TypeAlias = Callable[[], float]
CacheKey: TypeAlias = tuple[str, ...]


def check_template(template: str) -> None:
    """Raise ``ConfigError`` unless ``template`` uses exactly ``{prompt}`` and ``{input}``.

    >>> check_template("{prompt}: {input}")
    >>> check_template("{input}")
    Traceback (most recent call last):
    tnsai_eval.errors.ConfigError: template must contain {prompt} and {input}, got '{input}'
    """
    if not isinstance(template, str) or "{prompt}" not in template or "{input}" not in template:
        raise ConfigError(f"template must contain {{prompt}} and {{input}}, got {template!r}")
    try:
        template.format(prompt="", input="")
    except (KeyError, IndexError, ValueError) as exc:
        # Caught here rather than as a crash on the first case call.
        raise ConfigError(
            f"template may use only {{prompt}} and {{input}} (double other braces), "
            f"got {template!r}: {type(exc).__name__}: {exc}"
        ) from None


def check_concurrency(concurrency: int) -> None:
    """Raise ``ConfigError`` unless ``concurrency`` is an int >= 1."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency must be an int >= 1, got {concurrency!r}")


def check_max_calls(max_calls: int | None) -> None:
    """Raise ``ConfigError`` unless ``max_calls`` is ``None`` or an int >= 0."""
    if max_calls is not None and (
        isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 0
    ):
        raise ConfigError(f"max_calls must be an int >= 0 or None, got {max_calls!r}")


class _Skipped:
    """The budget refused the call: the case was not run."""


SKIPPED = _Skipped()
# A failed call is kept as its exception: any Exception (an LLMError, a
# client's RuntimeError, a ConfigError for a request that cannot be encoded)
# fails only its case.
Reply: TypeAlias = Completion | Exception | _Skipped


@dataclass(slots=True)
class Budget:
    """Counts what a run spent and says when a limit is reached.

    ``calls`` counts HTTP attempts: a call the client retried counts every
    request it sent (``Completion.attempts`` / ``LLMError.attempts``), and a
    reply the client served from a response store (``attempts == 0``) counts
    in ``cache_hits`` instead. ``max_calls`` is an ``llm.CallBudget`` of the
    run's own (``calls_budget``); ``shared`` is a budget the run shares with
    others (the pytest plugin's session). Both are active during every call,
    and an attempt is taken from them when it is about to be sent: after the
    engine's concurrency wait, and for ``OpenAIClient`` after its own
    connection-slot wait, retries included (a retry with no attempt left is
    not made: the call fails). A call the budgets refuse is not run. Tokens
    and time are checked just before each call is sent, so calls already in
    flight finish and may overshoot ``max_tokens`` by at most
    ``concurrency - 1`` replies. ``stop_event`` (set from any thread) is
    checked at the same point: once set, no further call starts, and the
    calls already in flight finish and keep their scores. An evaluator's
    calls (a judge's) draw on the same budgets, or on ``judge`` alone when
    given (``judge_budget=``).
    """

    max_calls: int | None = None
    max_tokens: int | None = None
    max_seconds: float | None = None
    clock: Clock = time.monotonic
    stop_event: threading.Event | None = None
    shared: CallBudget | None = None
    started: float = 0.0
    calls: int = 0
    tokens: int = 0
    failed_calls: int = 0
    retries: int = 0
    cache_hits: int = 0
    stop_reason: StopReason | None = None
    calls_budget: CallBudget | None = None
    judge: CallBudget | None = None

    def __post_init__(self) -> None:
        self.started = self.clock()
        if self.max_calls is not None:
            self.calls_budget = CallBudget(self.max_calls)

    @property
    def call_budgets(self) -> tuple[CallBudget, ...]:
        """The budgets every call of this run draws on (its own, then the shared one)."""
        return tuple(b for b in (self.calls_budget, self.shared) if b is not None)

    def active(self) -> AbstractContextManager[None]:
        """Make the call budgets bound the calls made inside the block."""
        return all_active(self.call_budgets)

    def judging(self) -> AbstractContextManager[None]:
        """The budgets an evaluator's calls draw on: ``judge`` alone when given, else the run's."""
        return self.active() if self.judge is None else only_budgets(self.judge)

    def hold(self, count: int) -> None:
        """Hold ``count`` attempts back in every call budget for a later phase."""
        for budget in self.call_budgets:
            budget.hold(min(count, budget.left))

    def release(self) -> None:
        """Release what ``hold`` kept back."""
        for budget in self.call_budgets:
            budget.release()

    def settle(self, attempts: int) -> None:
        """Count a finished call's ``attempts`` (0: a store answered it)."""
        self.calls += attempts
        self.retries += max(0, attempts - 1)
        if attempts == 0:
            self.cache_hits += 1

    def elapsed(self) -> float:
        return self.clock() - self.started

    def stopped(self) -> bool:
        """Whether the run must end (a limit reached or ``stop_event`` set)."""
        if self.stop_reason is None and self.stop_event is not None and self.stop_event.is_set():
            self.stop_reason = StopReason.STOPPED
        return self.stop_reason is not None

    def halted(self) -> bool:
        """Whether no call may start at all: ``stop_event`` set, or tokens or time spent.

        A spent call budget ends the search (``stop_reason`` ``MAX_CALLS``) but
        halts nothing here: each call asks the call budgets when it is sent,
        and the held-out check spends what was set aside for it.
        """
        return self.stopped() and self.stop_reason is not StopReason.MAX_CALLS

    def may_send(self) -> bool:
        """Whether a call may start now: not halted, and tokens and time left."""
        if not self.stopped():
            if self.max_tokens is not None and self.tokens >= self.max_tokens:
                self.stop_reason = StopReason.MAX_TOKENS
            elif self.max_seconds is not None and self.elapsed() >= self.max_seconds:
                self.stop_reason = StopReason.MAX_SECONDS
        return not self.halted()


@dataclass(slots=True)
class Variant:
    """A prompt being scored (mutable while the run goes; frozen into a VariantRecord).

    ``prompt`` is the instruction text as shown (inline demos included);
    ``spec`` the full variant that is sent.
    """

    id: int
    round: int
    strategy: str
    spec: PromptVariant
    parent: int | None
    status: VariantStatus = VariantStatus.SCORED
    duplicate_of: int | None = None
    became_best: bool = False
    scores: dict[int, float | None] = field(default_factory=dict)
    outputs: dict[int, str | None] = field(default_factory=dict)
    rows: list[CaseRecord] = field(default_factory=list)
    calls: int = 0
    tokens: int = 0

    @property
    def prompt(self) -> str:
        return self.spec.prompt_text()

    @property
    def attempted(self) -> int:
        return len(self.scores)

    @property
    def failed(self) -> int:
        return sum(1 for s in self.scores.values() if s is None)

    def mean(self) -> float | None:
        """Mean score over the attempted cases, failed ones left out.

        ``None`` when none was attempted; 0.0 when every attempted one failed,
        since nothing shows that the prompt works.
        """
        if not self.scores:
            return None
        values = [s for s in self.scores.values() if s is not None]
        return math.fsum(values) / len(values) if values else 0.0


@dataclass(frozen=True, slots=True)
class _Sent:
    reply: Reply
    cached: bool
    latency_s: float
    tokens: int
    attempts: int = 0


class Engine:
    """Sends calls through one cache, one budget and one concurrency bound."""

    def __init__(
        self,
        llm: LLMClient,
        *,
        evaluator: PromptEvaluator | TrajectoryEvaluator,
        budget: Budget,
        concurrency: int,
        params: Mapping[str, Any],
        template: str,
        on_case: Callable[[CaseRecord], None] | None = None,
        target: Callable[[str], Any] | None = None,
    ) -> None:
        self.llm = llm
        self.evaluator = evaluator
        #: ``factory(prompt) -> target``: a variant is scored by running the target its
        #: prompt makes (``score_target``'s runner) rather than by one call per case.
        self.target = target
        self._runners: dict[str, TargetRunner | Exception] = {}
        self.budget = budget
        self.params = dict(params)
        self.template = template
        self._on_case = on_case
        self._semaphore = asyncio.Semaphore(concurrency)
        grow = getattr(llm, "ensure_concurrency", None)
        if callable(grow):
            # The calls this engine lets through must all find a connection.
            grow(concurrency)
        self._cache: dict[CacheKey, asyncio.Future[Reply]] = {}
        # Keyed by the list's id; the list itself is kept so that the id cannot be reused.
        self._ids: dict[int, tuple[Sequence[TestCase], list[str]]] = {}

    def case_messages(self, variant: Variant, case_input: str) -> str | list[Message]:
        """What scoring ``case_input`` sends: one user message goes as a plain str."""
        messages = variant.spec.messages(case_input, template=self.template)
        if len(messages) == 1 and messages[0].role == "user":
            return messages[0].content
        return messages

    def case_params(self, variant: Variant) -> dict[str, Any]:
        if variant.spec.response_format is None:
            return self.params
        return {**self.params, "response_format": dict(variant.spec.response_format)}

    async def send(
        self,
        message: str | list[Message],
        params: Mapping[str, Any],
        *,
        llm: LLMClient | None = None,
    ) -> _Sent:
        """One call, unless the same request was made before in this run.

        ``llm`` replaces the task model for this call (the rewrite model); its
        calls count against the same budget.
        """
        shown = (
            [message] if isinstance(message, str) else [f"{m.role}:{m.content}" for m in message]
        )
        key: CacheKey = (
            "rewrite-llm" if llm is not None else "",
            *shown,
            *sorted(f"{k}={v!r}" for k, v in params.items()),
        )
        earlier = self._cache.get(key)
        if earlier is not None:
            return _Sent(await asyncio.shield(earlier), cached=True, latency_s=0.0, tokens=0)
        if self.budget.halted():
            return _Sent(SKIPPED, cached=False, latency_s=0.0, tokens=0)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._cache[key] = future
        # Nothing is reserved before this wait: a call takes its attempt from
        # the budget when it is sent (ametered_call / OpenAIClient), so tasks
        # queued here never hold budget that a call ready to go could spend.
        async with self._semaphore:
            if not self.budget.may_send():
                del self._cache[key]
                future.set_result(SKIPPED)
                return _Sent(SKIPPED, cached=False, latency_s=0.0, tokens=0)
            started = time.perf_counter()
            reply: Reply
            try:
                with self.budget.active():
                    reply = await ametered_call(llm or self.llm, message, **params)
            except CallBudgetExceeded:
                # Nothing was sent; the case is not run, and the next one asks again
                # (an attempt may free up: a store hit refunds its reservation).
                if self.budget.stop_reason is None:
                    self.budget.stop_reason = StopReason.MAX_CALLS
                del self._cache[key]
                future.set_result(SKIPPED)
                return _Sent(SKIPPED, cached=False, latency_s=0.0, tokens=0)
            except asyncio.CancelledError:
                self.budget.settle(1)
                future.cancel()
                raise
            except Exception as exc:
                # "A case whose call fails is left out": whatever the client
                # raised (never a BaseException such as KeyboardInterrupt) is
                # recorded on this case, and the run goes on. Its attempts
                # (an LLMError's retries included) are counted.
                self.budget.failed_calls += 1
                self.budget.settle(_attempts(getattr(exc, "attempts", 1)))
                reply = exc
            else:
                self.budget.settle(_attempts(reply.attempts))
            latency = time.perf_counter() - started
            tokens = 0
            if isinstance(reply, Completion):
                tokens = call_usage(reply, message).total_tokens
                self.budget.tokens += tokens
                latency = reply.latency_s or latency
            future.set_result(reply)
            attempts = _attempts(getattr(reply, "attempts", 1))
            return _Sent(reply, cached=False, latency_s=latency, tokens=tokens, attempts=attempts)

    async def score_case(
        self, variant: Variant, index: int, cases: Sequence[TestCase], *, split: str = "train"
    ) -> CaseRecord | None:
        """Score ``cases[index]`` with ``variant``; ``None`` when the budget refused it.

        The case runs in ``llm.running_case(its id)``: every call made for it,
        its evaluator's included, is attributed to it.
        """
        case_id = self.case_ids(cases)[index]
        score = self._score_prompt_case if self.target is None else self._score_target_case
        with running_case(case_id):
            return await score(variant, index, cases, case_id, split)

    async def _score_prompt_case(
        self, variant: Variant, index: int, cases: Sequence[TestCase], case_id: str, split: str
    ) -> CaseRecord | None:
        case = cases[index]
        sent = await self.send(self.case_messages(variant, case.input), self.case_params(variant))
        if isinstance(sent.reply, _Skipped):
            return None
        output: str | None = None
        score: float | None = None
        error: str | None = None
        error_type: str | None = None
        reason: str | None = None
        cached = sent.cached
        state = CaseState.SCORED
        if isinstance(sent.reply, Exception):
            error_type = type(sent.reply).__name__
            error = f"{error_type}: {mask(str(sent.reply))}"
            # A replay miss was never asked: no score, rather than a failing 0.
            missed = isinstance(sent.reply, ReplayMissError)
            state = CaseState.UNRECORDED if missed else CaseState.ERROR
        else:
            output = sent.reply.text
            cached = cached or sent.reply.cached
            try:
                with self.budget.judging():
                    score = await self._evaluate(output.strip(), case.expected)
                    reason = self._reason(output.strip(), case.expected)
            except Exception as exc:
                # A judge model that failed, or an evaluator that raised or
                # broke its contract on this output: the case is left out and
                # counted like a failed call, and the other cases keep theirs.
                error_type = type(exc).__name__
                error = f"evaluator {error_type}: {mask(str(exc))}"
                score, reason, state = None, None, CaseState.ERROR
        row = CaseRecord(
            id=case_id,
            input=case.input,
            expected=case.expected,
            output=output,
            score=score,
            state=state,
            cached=cached,
            tokens=sent.tokens,
            latency_s=sent.latency_s,
            error=error,
            reason=reason,
            error_type=error_type,
            index=index,
            round=variant.round,
            variant=variant.id,
            strategy=variant.strategy,
            split=split,
        )
        return self._keep(variant, index, row, sent.attempts, sent.tokens)

    def _keep(
        self, variant: Variant, index: int, row: CaseRecord, attempts: int, tokens: int
    ) -> CaseRecord:
        if row.split == "train":
            variant.scores[index] = row.score
            variant.outputs[index] = row.output
        variant.rows.append(row)
        variant.calls += attempts
        variant.tokens += tokens
        if self._on_case is not None:
            self._on_case(row)
        return row

    def _runner(self, variant: Variant) -> TargetRunner | Exception:
        """The target ``variant``'s prompt makes (once per prompt), or what making it raised."""
        key = variant.spec.key()
        known = self._runners.get(key)
        if known is None:
            assert self.target is not None
            try:
                made = self.target(variant.prompt)
            except Exception as exc:  # the factory's failure is each case's error
                known = exc
            else:
                metrics = metrics_of(self.evaluator)
                known = TargetRunner(made, metrics, self.budget.call_budgets, 0.5)
            self._runners[key] = known
        return known

    async def _score_target_case(
        self, variant: Variant, index: int, cases: Sequence[TestCase], case_id: str, split: str
    ) -> CaseRecord | None:
        """Run the target ``variant``'s prompt makes on one case (its calls bounded by the
        run's budgets as they are sent); ``None`` when the budget refused it."""
        case = cases[index]
        if self.budget.halted():
            return None
        async with self._semaphore:
            if not self.budget.may_send():
                return None
            runner = self._runner(variant)
            if isinstance(runner, Exception):
                kind = type(runner).__name__
                record = CaseRecord(
                    case_id, case.input, case.expected, state=CaseState.ERROR,
                    error=f"target factory {kind}: {mask(str(runner))}", error_type=kind,
                    index=index,
                )  # fmt: skip
                done_events: tuple[CallEvent, ...] = ()
            else:
                with self.budget.active():  # an evaluator's calls too, as for a prompt
                    done = await runner.case(case, case_id, index)
                record, done_events = done.record, done.events
        attempts = 0
        for event in done_events:
            if event.error is not None and event.attempts > 0:
                self.budget.failed_calls += 1
            if event.error is None or event.attempts > 0:
                self.budget.settle(event.attempts)  # 0: a store answered it
            attempts += event.attempts
        self.budget.tokens += record.tokens
        if record.state is CaseState.NOT_RUN:
            if self.budget.stop_reason is None:
                self.budget.stop_reason = StopReason.MAX_CALLS
            variant.calls += attempts
            return None
        row = replace(
            record, round=variant.round, variant=variant.id, strategy=variant.strategy,
            split=split,
        )  # fmt: skip
        return self._keep(variant, index, row, attempts, record.tokens)

    async def score(
        self,
        variant: Variant,
        indices: Sequence[int],
        cases: Sequence[TestCase],
        *,
        split: str = "train",
    ) -> None:
        """Score ``variant`` on ``cases[i]`` for each ``i`` in ``indices``, concurrently."""
        await asyncio.gather(*(self.score_case(variant, i, cases, split=split) for i in indices))

    def case_ids(self, cases: Sequence[TestCase]) -> list[str]:
        """The stable ids of ``cases`` (``records.case_ids``), worked out once per case list."""
        key = id(cases)
        known = self._ids.get(key)
        if known is None or known[0] is not cases:
            known = self._ids[key] = (cases, case_ids((c.input, c.expected, c.id) for c in cases))
        return known[1]

    def _reason(self, actual: str, expected: str) -> str | None:
        """The evaluator's explanation of its last score for this pair, when it offers one.

        An evaluator may define ``explain(actual, expected)`` returning a text
        or a record with a ``reason`` (``LLMJudgeEvaluator`` returns its
        ``JudgeResult``); the case record keeps a non-blank reason, masked.
        """
        explain = getattr(self.evaluator, "explain", None)
        if not callable(explain):
            return None
        note = explain(actual, expected)
        reason = getattr(note, "reason", note)
        return mask(reason.strip()) if isinstance(reason, str) and reason.strip() else None

    async def _evaluate(self, actual: str, expected: str) -> float:
        aevaluate = getattr(self.evaluator, "aevaluate", None)
        if aevaluate is not None and inspect.iscoroutinefunction(aevaluate):
            value = await aevaluate(actual, expected)
        else:
            # A prompt's replies: the optimizer refuses a trajectory-only evaluator for them.
            value = cast(PromptEvaluator, self.evaluator).evaluate(actual, expected)
        if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise ConfigError(
                f"evaluator {self.evaluator!r} returned {value!r} for {actual[:40]!r}; "
                "expected a float in [0, 1]"
            )
        return float(value)


def _attempts(value: object) -> int:
    """A reply's attempt count; a client that reports nonsense counts as one request."""
    return value if isinstance(value, int) and value >= 0 else 1
