"""``RefinementLoop``: check an output, revise it, until the checks pass."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tnsai_eval._util.checks import whole
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Completion, call_tokens
from tnsai_eval.records import IterationRecord
from tnsai_eval.refinement._criteria import CompletionCriteria, share_passed
from tnsai_eval.refinement._hooks import LoopState, StopHook
from tnsai_eval.refinement._prompt import (
    first_json_block,
    resolve_reply_parser,
    revision_prompt,
    strip_code_fence,
)
from tnsai_eval.refinement._result import RefinementMetrics, RefinementResult, RefinementStatus

__all__ = ["RefinementLoop"]

ProgressCallback = Callable[[IterationRecord], None]


@dataclass(frozen=True, slots=True)
class _Reply:
    text: str
    raw: str
    tokens: int
    estimated: bool
    latency_s: float


class RefinementLoop:
    """Revise an output until it passes ``completion_criteria``.

    Each iteration, in this order (the original's semantics):

    1. **TIMEOUT** when ``timeout`` has elapsed since ``execute`` began (the
       latest output is returned; a revision call in flight is not interrupted);
    2. run the criteria on the current output;
    3. **SUCCESS** when every check passes;
    4. **STOPPED** when ``stop_hook`` says so;
    5. else one revision call: the task, the current output, the failed checks
       with their messages (a compiler's output included) and the passing ones;
       **ERROR** when that call raises (the last output is kept).

    After ``max_iterations`` checked outputs without success the status is
    **MAX_ITERATIONS** and the last revision is returned unchecked. A revision
    that repeats an output already checked ends the loop at once with
    **STOPPED** (the reason names both iterations): it would fail the same
    checks again, and at temperature 0 every later revision would repeat too.

    ``agent_or_llm`` is an LLM client (``chat`` returns a ``Completion``; token
    usage is taken from it when nonzero, else estimated) or an agent such as
    ``tnsai_eval.agents.Agent`` (``chat(message)`` returns a ``str``; tokens
    estimated); the kind is told by what ``chat`` returns. ``chat_params``
    (``max_tokens``, ``temperature``...) go to every revision call as keyword
    arguments, so leave them empty for an agent (its ``chat`` takes the
    message only; give the agent its own parameters).
    Each reply goes through ``reply_parser`` before it is checked. The default,
    ``"auto"``, is ``first_json_block`` when the criteria ask for JSON
    (``valid_json``, ``json_schema``: the first JSON document in the reply,
    from a fenced block or from prose) and ``strip_code_fence`` otherwise
    (unwraps a reply that is, as a whole, one fenced block; small models wrap
    output in ```json even when told not to); ``first_code_block`` keeps the
    first block and drops chatter around it; ``None`` keeps every reply
    verbatim; any function ``str -> str`` works. A check that asks for a fence
    (``must_contain("```python")``) reads the reply before parsing, so a parser
    never makes the task impossible. When the criteria carry a
    ``response_format`` (``json_schema``), revision calls to an LLM client are
    constrained with it; a client that does not take it is called without.
    ``progress``
    is called with each ``IterationRecord`` as it completes. ``clock``
    (monotonic seconds) exists for tests.

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> criteria = CompletionCriteria.builder().valid_json().must_contain('"id"').build()
    >>> llm = ScriptedLLM(['{"id": 1}'])
    >>> result = RefinementLoop("Emit a JSON record", criteria).execute(llm, "id=1")
    >>> result.status, result.metrics.score_progression
    (<RefinementStatus.SUCCESS: 'success'>, [0.0, 1.0])
    """

    def __init__(
        self,
        task: str,
        completion_criteria: CompletionCriteria,
        max_iterations: int = 10,
        timeout: timedelta | float = timedelta(minutes=30),
        stop_hook: StopHook | None = None,
        *,
        progress: ProgressCallback | None = None,
        chat_params: Mapping[str, Any] | None = None,
        reply_parser: Callable[[str], str] | str | None = "auto",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not isinstance(task, str) or not task.strip():
            raise ConfigError(f"RefinementLoop needs a non-empty task, got {task!r}")
        if not isinstance(completion_criteria, CompletionCriteria):
            raise ConfigError(
                f"completion_criteria must be a CompletionCriteria (use "
                f"CompletionCriteria.builder()...build()), got {completion_criteria!r}"
            )
        whole("max_iterations", max_iterations, 1)
        seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
            raise ConfigError(f"timeout must be a positive timedelta or seconds, got {timeout!r}")
        if stop_hook is not None and not isinstance(stop_hook, StopHook):
            raise ConfigError(f"stop_hook must be a StopHook or None, got {stop_hook!r}")
        self.task = task
        self.completion_criteria = completion_criteria
        self.max_iterations = max_iterations
        self.timeout = timedelta(seconds=seconds)
        self.stop_hook = stop_hook
        self.progress = progress
        self.chat_params = dict(chat_params or {})
        parser = resolve_reply_parser(reply_parser)
        if parser == "auto":
            parser = first_json_block if completion_criteria.wants_json else strip_code_fence
        assert not isinstance(parser, str)
        self.reply_parser: Callable[[str], str] | None = parser
        self._clock = clock

    def __repr__(self) -> str:
        return (
            f"RefinementLoop(task={self.task[:40]!r}, max_iterations={self.max_iterations}, "
            f"timeout={self.timeout}, stop_hook={self.stop_hook!r})"
        )

    def execute(
        self, agent_or_llm: Any, draft: str, *, input: str | None = None
    ) -> RefinementResult:
        """Refine ``draft`` with ``agent_or_llm``; never raises for a failed call.

        ``draft`` is the first output to check, as it stands (a model's first
        attempt, or any text to start from); it is not parsed. ``input`` is what
        the output is made from (the source text, the user's request): each
        revision prompt shows it beside the task.
        """
        if not callable(getattr(agent_or_llm, "chat", None)):
            raise ConfigError(
                f"execute expects an LLM client or an agent with chat(), got {agent_or_llm!r}"
            )
        if not isinstance(draft, str):
            raise ConfigError(f"draft must be a str, got {type(draft).__name__}")
        if input is not None and not isinstance(input, str):
            raise ConfigError(f"input must be a str or None, got {type(input).__name__}")
        run = _Run(self, agent_or_llm, input)
        return run.execute(draft)


class _Run:
    """The mutable state of one ``execute`` call."""

    def __init__(self, loop: RefinementLoop, target: Any, input: str | None) -> None:
        self.loop = loop
        self.target = target
        self.input = input
        # Dropped for good once the target refuses the parameter (an agent, a fake).
        self.response_format = loop.completion_criteria.response_format
        self.started = loop._clock()
        self.records: list[IterationRecord] = []
        self.tokens = 0
        self.estimated = False

    def execute(self, draft: str) -> RefinementResult:
        loop = self.loop
        current = raw = draft
        for iteration in range(1, loop.max_iterations + 1):
            if loop._clock() - self.started >= loop.timeout.total_seconds():
                return self._finish(
                    current, RefinementStatus.TIMEOUT, f"the timeout of {loop.timeout} elapsed"
                )
            earlier = [r.output for r in self.records]
            if current in earlier:
                first = earlier.index(current) + 1
                return self._finish(
                    current,
                    RefinementStatus.STOPPED,
                    f"revision {iteration - 1} repeats the output checked at iteration "
                    f"{first}, which failed; further revisions would repeat it too",
                )
            checks_started = time.perf_counter()
            outcomes = tuple(loop.completion_criteria.evaluate(current, raw=raw))
            checks_duration = time.perf_counter() - checks_started
            score = share_passed(outcomes)
            repeated = False
            improved = bool(self.records) and score > max(r.score for r in self.records)
            check_tokens = sum(o.tokens for o in outcomes)
            record = IterationRecord(
                iteration=iteration,
                output=current,
                checks=outcomes,
                score=score,
                improved=improved,
                repeated=repeated,
                tokens=check_tokens,
                checks_duration_s=checks_duration,
            )
            self.tokens += check_tokens
            if all(o.passed for o in outcomes):
                self._record(record)
                return self._finish(
                    current, RefinementStatus.SUCCESS, f"all {len(outcomes)} checks passed"
                )
            if loop.stop_hook is not None and loop.stop_hook.should_stop(self._state(record)):
                self._record(record)
                return self._finish(
                    current, RefinementStatus.STOPPED, f"stop hook {loop.stop_hook.name} fired"
                )
            prompt = revision_prompt(loop.task, current, outcomes, input=self.input)
            try:
                reply = self._call(prompt)
            except Exception as exc:
                self._record(record)
                return self._finish(
                    current,
                    RefinementStatus.ERROR,
                    f"the revision call failed: {type(exc).__name__}: {exc}",
                    error=exc,
                )
            self.tokens += reply.tokens
            self.estimated = self.estimated or reply.estimated
            self._record(_with_revision(record, reply))
            current, raw = reply.text, reply.raw
        return self._finish(
            current,
            RefinementStatus.MAX_ITERATIONS,
            f"max_iterations={loop.max_iterations} outputs checked without success; "
            "the last revision is returned unchecked",
        )

    def _state(self, record: IterationRecord) -> LoopState:
        records = [*self.records, record]
        return LoopState(
            iteration=record.iteration,
            scores=tuple(r.score for r in records),
            outputs=tuple(r.output for r in records),
            improved=tuple(r.improved for r in records),
            checks=record.checks,
            tokens=self.tokens,
        )

    def _record(self, record: IterationRecord) -> None:
        self.records.append(record)
        if self.loop.progress is not None:
            self.loop.progress(record)

    def _call(self, prompt: str) -> _Reply:
        started = time.perf_counter()
        params = self.loop.chat_params
        answer: Any = None
        if self.response_format is not None:
            try:
                answer = self.target.chat(prompt, **params, response_format=self.response_format)
            except (TypeError, ConfigError) as exc:
                # An agent (chat(message) only) or a client without structured
                # output: revise unconstrained from now on.
                if "response_format" not in str(exc):
                    raise
                self.response_format = None
        if answer is None:
            # An agent's chat takes the message only: pass parameters only when asked.
            answer = self.target.chat(prompt, **params) if params else self.target.chat(prompt)
        latency = time.perf_counter() - started
        if isinstance(answer, str):  # an agent's reply: no usage reported
            answer = Completion(text=answer)
        elif not isinstance(answer, Completion):
            raise TypeError(
                f"chat() returned {type(answer).__name__}; expected a Completion (LLM client) "
                "or a str (agent)"
            )
        text = raw = answer.text
        if self.loop.reply_parser is not None:
            text = self.loop.reply_parser(text)
        estimated = answer.usage.total_tokens <= 0
        return _Reply(text, raw, call_tokens(answer, prompt), estimated, latency)

    def _finish(
        self,
        output: str,
        status: RefinementStatus,
        reason: str,
        *,
        error: BaseException | None = None,
    ) -> RefinementResult:
        elapsed = max(0.0, self.loop._clock() - self.started)
        metrics = RefinementMetrics(
            total_duration_ms=elapsed * 1000.0,
            total_tokens=self.tokens,
            scores=tuple(r.score for r in self.records),
            tokens_estimated=self.estimated,
        )
        return RefinementResult(
            final_output=output,
            iteration_count=len(self.records),
            status=status,
            total_duration=timedelta(seconds=elapsed),
            metrics=metrics,
            iterations=tuple(self.records),
            reason=reason,
            error=error,
        )


def _with_revision(record: IterationRecord, reply: _Reply) -> IterationRecord:
    return dataclasses.replace(
        record,
        tokens=record.tokens + reply.tokens,
        tokens_estimated=reply.estimated,
        latency_s=reply.latency_s,
        revision=reply.text,
    )
