"""The plugin's state for one pytest run, kept in ``config.stash``.

Hooks and fixtures are thin: they tell this object what happened (a test
started, a metric was recorded, a model call returned, a report came in) and
it turns that into a ``tnsai_eval.reports.Report`` at the end. Under
pytest-xdist every worker has one; workers ship their finished records to the
controller, whose object merges them (see ``_xdist``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from tnsai_eval.pytest._budget import CallBudget
from tnsai_eval.pytest._options import PluginOptions

# tnsai_eval is imported only once a test touches the plugin: importing it pulls
# in the HTTP client, and a suite that never uses the plugin must not pay for it.
if TYPE_CHECKING:
    from tnsai_eval.llm import Completion, LLMClient, MessagesInput
    from tnsai_eval.reports import CaseRecord, IterationRecord, PromptRecord, Report, TrackedTest

__all__ = ["SAMPLES_PROPERTY", "SESSION_KEY", "MeteredLLM", "PluginSession", "get_session"]

#: user_properties key carrying (passed, total) samples on a --tnsai-repeat call report.
SAMPLES_PROPERTY = "tnsai_samples"


@dataclass(slots=True)
class _MetricSeries:
    gate: bool
    higher_is_better: bool
    tolerance: float | None = None
    relative: bool = False
    by_sample: dict[int, float] = field(default_factory=dict)


@dataclass(slots=True)
class _Run:
    """What one test has done so far (mutable while it runs)."""

    nodeid: str
    metrics: dict[str, _MetricSeries] = field(default_factory=dict)
    status: str = "passed"  # a tnsai_eval.reports.TestStatus value
    samples: int = 0
    passed_samples: int = 0
    calls: int = 0
    tokens: int = 0
    cache_hits: int = 0
    iterations: int | None = None
    duration_s: float = 0.0
    message: str = ""
    cases: list[CaseRecord] = field(default_factory=list)
    prompts: dict[str, PromptRecord] = field(default_factory=dict)
    refinements: list[IterationRecord] = field(default_factory=list)

    def finish(self) -> TrackedTest:
        from tnsai_eval.reports import MetricStats, TestStatus, TrackedTest

        return TrackedTest(
            nodeid=self.nodeid,
            status=TestStatus(self.status),
            metrics={
                name: MetricStats(
                    name,
                    tuple(series.by_sample[i] for i in sorted(series.by_sample)),
                    gate=series.gate,
                    higher_is_better=series.higher_is_better,
                    tolerance=series.tolerance,
                    relative=series.relative,
                )
                for name, series in self.metrics.items()
                if series.by_sample
            },
            samples=max(self.samples, 1),
            passed_samples=self.passed_samples,
            calls=self.calls,
            tokens=self.tokens,
            cache_hits=self.cache_hits,
            iterations=self.iterations,
            duration_s=self.duration_s,
            message=self.message,
            cases=tuple(self.cases),
            prompts=tuple(self.prompts.values()),
            refinements=tuple(self.refinements),
        )


class PluginSession:
    """Collects what tracked tests measured during one run.

    A test becomes *tracked* (gets a row) when it carries one of the plugin's
    markers, or the first time it records a metric or makes a model call
    through the plugin's fixtures. Untracked tests cost a dictionary lookup
    per report and never appear.
    """

    def __init__(self, options: PluginOptions) -> None:
        self.options = options
        self.runs: dict[str, _Run] = {}
        # Records that arrived finished from xdist workers.
        self.merged: list[TrackedTest] = []
        self._current: str | None = None
        # The running test's record, looked up once rather than on every call.
        self._run: _Run | None = None
        self.sample = 0
        self._lock = threading.Lock()
        self.started = time.time()
        self.llm_description: dict[str, object] = {}
        #: The --llm-max-calls bound (None: unbounded); see ``_budget``.
        self.budget: CallBudget | None = None

    @property
    def current(self) -> str | None:
        """The node id of the running test (None between tests)."""
        return self._current

    @current.setter
    def current(self, nodeid: str | None) -> None:
        self._current = nodeid
        self._run = None

    # -- what the running test does -------------------------------------
    def track(self, nodeid: str) -> _Run:
        with self._lock:
            run = self.runs.get(nodeid)
            if run is None:
                run = self.runs[nodeid] = _Run(nodeid)
            return run

    def _current_run(self) -> _Run | None:
        run = self._run
        if run is None and self._current is not None:
            run = self._run = self.track(self._current)
        return run

    def record_metric(
        self,
        name: str,
        value: float,
        *,
        gate: bool = True,
        higher_is_better: bool = True,
        tolerance: float | None = None,
        relative: bool = False,
    ) -> None:
        """Record ``value`` for the running test; recording a name again replaces it.

        ``tolerance`` (with ``relative``: a share of the baseline) is this
        metric's own allowed move the wrong way; ``None`` uses the run's.
        """
        from tnsai_eval.errors import ConfigError

        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"metric name must be a non-blank str, got {name!r}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(
                f"metric {name!r}: value must be an int or float, got {type(value).__name__} "
                f"{value!r}"
            )
        if not math.isfinite(value):
            raise ConfigError(f"metric {name!r}: value must be a finite number, got {value!r}")
        if tolerance is not None and (
            isinstance(tolerance, bool)
            or not isinstance(tolerance, int | float)
            or not math.isfinite(tolerance)
            or tolerance < 0
        ):
            raise ConfigError(
                f"metric {name!r}: tolerance must be a finite number >= 0, got {tolerance!r}"
            )
        run = self._current_run()
        if run is None:
            raise ConfigError(f"metric {name!r} recorded outside a running test")
        with self._lock:
            series = run.metrics.get(name)
            if series is None:
                series = run.metrics[name] = _MetricSeries(
                    gate, higher_is_better, tolerance, relative
                )
            series.by_sample[self.sample] = float(value)

    def has_metric(self, name: str) -> bool:
        """Whether the running test already recorded ``name`` in this sample."""
        run = self._current_run()
        series = None if run is None else run.metrics.get(name)
        return series is not None and self.sample in series.by_sample

    def record_iterations(self, count: int) -> None:
        """Add ``count`` refinement iterations to the running test."""
        run = self._current_run()
        if run is not None:
            with self._lock:
                run.iterations = (run.iterations or 0) + count

    def record_cases(
        self, metric: str, cases: Iterable[CaseRecord], prompt: PromptRecord | None
    ) -> None:
        """Keep the case records of one ``evaluate_prompt`` call (this repeat sample)."""
        from dataclasses import replace

        run = self._current_run()
        if run is None:
            return
        with self._lock:
            run.cases.extend(replace(c, metric=metric, sample=self.sample) for c in cases)
            if prompt is not None:
                run.prompts[metric] = replace(prompt, metric=metric)

    def record_refinement(self, iterations: Iterable[IterationRecord]) -> None:
        """Keep the iterations of one ``refine()`` run."""
        run = self._current_run()
        if run is not None:
            with self._lock:
                run.refinements.extend(iterations)

    def touch(self) -> None:
        """Make the running test tracked (a call is starting; it may fail)."""
        self._current_run()

    def record_call(self, completion: Completion) -> None:
        """Count one model reply (tokens, cache hit) towards the running test."""
        run = self._current_run()
        if run is None:
            return
        with self._lock:
            run.calls += 1
            run.tokens += completion.usage.total_tokens
            run.cache_hits += int(completion.cached)

    def meter(self, client: LLMClient) -> MeteredLLM:
        """``client`` wrapped so that its calls count towards the running test."""
        if isinstance(client, MeteredLLM) and client.session is self:
            return client
        if "model" not in self.llm_description:
            # A conftest may override `llm`; the report still says what answered.
            self.llm_description["model"] = str(
                getattr(client, "model", "") or type(client).__name__
            )
        return MeteredLLM(client, self)

    # -- what pytest reports --------------------------------------------
    def on_report(self, report: pytest.TestReport) -> None:
        """Fold one phase's report into its test's record (tracked tests only)."""
        run = self.runs.get(report.nodeid)
        if run is None:
            return
        with self._lock:
            run.duration_s += report.duration
            if report.when == "call":
                samples: Any = dict(report.user_properties).get(SAMPLES_PROPERTY)
                if samples is not None:  # (passed, total); a list once xdist has carried it
                    run.passed_samples, run.samples = int(samples[0]), int(samples[1])
                else:
                    run.samples += 1
                    run.passed_samples += int(report.passed)
            if report.failed:
                run.status = "failed" if report.when == "call" else "error"
                if not run.message:
                    run.message = _first_line(report)
            elif report.skipped and run.status == "passed":
                run.status = "skipped"

    # -- the end ---------------------------------------------------------
    def merge(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Add finished records shipped by an xdist worker."""
        from tnsai_eval.reports import SCHEMA_VERSION, decode_test

        self.merged.extend(decode_test(r, SCHEMA_VERSION, "$") for r in records)

    @property
    def has_results(self) -> bool:
        """Whether any test, here or on an xdist worker, was tracked."""
        return bool(self.runs or self.merged)

    def finished(self) -> list[TrackedTest]:
        """This process's tracked tests as report records."""
        return [run.finish() for run in self.runs.values()]

    def report(self) -> Report:
        """The run's report: every record (workers' too), sorted, with the configuration."""
        from tnsai_eval.reports import Report

        tests = sorted([*self.merged, *self.finished()], key=lambda t: t.nodeid)
        config = self.options.describe()
        config.update(self.llm_description)
        return Report(tests=tuple(tests), config=config)


def _first_line(report: pytest.TestReport) -> str:
    text = report.longreprtext.strip()
    for line in reversed(text.splitlines()):
        # pytest's short form puts "E   <message>" lines last-but-location.
        if line.startswith("E "):
            return line[1:].strip()[:200]
    return text.splitlines()[-1][:200] if text else ""


class MeteredLLM:
    """Forwards to ``inner`` and counts every reply towards the running test.

    Also threads the repeat sample index through to a ``CachedLLM`` (its
    ``sample=`` keyword), so that with ``--tnsai-repeat`` each sample is a
    distinct recording rather than N replays of the first.
    """

    def __init__(self, inner: LLMClient, session: PluginSession) -> None:
        self.inner = inner
        self.session = session
        self._takes_sample = _accepts_sample(inner)
        self._replay: Any = None  # a store-only view of `inner`, made on first need

    @property
    def model(self) -> str:
        return str(getattr(self.inner, "model", "") or "")

    def __repr__(self) -> str:
        return f"MeteredLLM({self.inner!r})"

    def __getattr__(self, name: str) -> Any:
        # Transparent: a test that overrides `llm` with a ScriptedLLM still reaches
        # its `calls`, `add_replies`... through the metered wrapper. (`inner` itself
        # is refused so that a half-built copy cannot recurse forever.)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _params(self, params: dict[str, Any]) -> dict[str, Any]:
        if self._takes_sample and "sample" not in params:
            params["sample"] = self.session.sample
        return params

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        """``inner.chat``, counted towards the running test."""
        params, budget = self._begin(params)
        try:
            completion = self._stored_or_reserve(messages, params, budget)
            if completion is None:
                completion = self._spent(budget, self.inner.chat(messages, **params))
        except Exception as exc:
            self._failed(budget, exc)
            raise
        self.session.record_call(completion)
        return completion

    async def achat(self, messages: MessagesInput, **params: Any) -> Completion:
        """``inner.achat`` (or ``chat`` in a thread), counted towards the running test."""
        from tnsai_eval.llm import acall

        params, budget = self._begin(params)
        try:
            completion = self._stored_or_reserve(messages, params, budget)
            if completion is None:
                completion = self._spent(budget, await acall(self.inner, messages, **params))
        except Exception as exc:
            self._failed(budget, exc)
            raise
        self.session.record_call(completion)
        return completion

    def _begin(self, params: dict[str, Any]) -> tuple[dict[str, Any], CallBudget | None]:
        self.session.touch()
        return self._params(params), self.session.budget

    # -- --llm-max-calls ---------------------------------------------------------
    def _stored(
        self, messages: MessagesInput, params: dict[str, Any], budget: CallBudget
    ) -> Completion | None:
        """The recorded reply when the store has one (a hit never counts), else None."""
        from tnsai_eval.errors import ReplayMissError
        from tnsai_eval.llm import CachedLLM, RecordMode

        inner = self.inner
        if not isinstance(inner, CachedLLM) or inner.mode in (RecordMode.OFF, RecordMode.REFRESH):
            return None  # every call reaches the model
        if inner.mode is RecordMode.REPLAY:
            return None  # never calls: nothing to bound (a miss raises in inner.chat)
        if self._replay is None:
            self._replay = CachedLLM(inner.inner, inner.store, mode=RecordMode.REPLAY)
        try:
            completion: Completion = self._replay.chat(messages, **params)
        except ReplayMissError:
            return None
        with inner._lock:  # the hit is the recording client's, for its counters
            inner.hits += 1
        return completion

    def _reserve(self, budget: CallBudget) -> None:
        from tnsai_eval.errors import ReplayMissError
        from tnsai_eval.llm import CachedLLM, RecordMode

        if isinstance(self.inner, CachedLLM) and self.inner.mode is RecordMode.REPLAY:
            return  # replay never calls the model: nothing to take from the budget
        if not budget.reserve():
            raise ReplayMissError(
                f"--llm-max-calls {budget.limit}: the session's model calls are spent, so "
                "this request was not sent",
                model=self.model,
            )

    def _stored_or_reserve(
        self, messages: MessagesInput, params: dict[str, Any], budget: CallBudget | None
    ) -> Completion | None:
        """A stored reply (free), or None once an attempt is reserved for a real call."""
        if budget is None:
            return None
        stored = self._stored(messages, params, budget)
        if stored is None:
            self._reserve(budget)
        return stored

    @staticmethod
    def _spent(budget: CallBudget | None, completion: Completion) -> Completion:
        # One attempt was reserved; retries are counted now. A reply that came
        # from a store after all (another worker recorded it) costs nothing more.
        if budget is not None and not completion.cached:
            budget.add(max(completion.attempts, 1) - 1)
        return completion

    def _failed(self, budget: CallBudget | None, exc: Exception) -> None:
        from tnsai_eval.errors import LLMError, ReplayMissError

        if (
            budget is not None
            and isinstance(exc, LLMError)
            and not isinstance(exc, ReplayMissError)
        ):
            budget.add(max(exc.attempts, 1) - 1)
        self._hint(exc)

    def _hint(self, exc: Exception) -> None:
        # The store's own advice is about CachedLLM's `mode=`; a pytest user
        # needs the option, and why replay was on (CI=true often is the reason).
        from tnsai_eval.errors import ReplayMissError

        if not isinstance(exc, ReplayMissError) or "--llm-max-calls" in str(exc):
            return
        options = self.session.options
        exc.add_note(
            f"tnsai: the `llm` fixture is in replay mode ({options.record_mode_source}); "
            "record the reply with `pytest --llm-record record` against a model and "
            f"commit {options.describe()['store']}"
        )


def _accepts_sample(client: object) -> bool:
    # Only CachedLLM understands `sample`; passed to a plain client it would be
    # sent to the model as a sampling parameter.
    try:
        from tnsai_eval.llm import CachedLLM  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return False
    return isinstance(client, CachedLLM)


SESSION_KEY = pytest.StashKey[PluginSession]()


def get_session(config: pytest.Config) -> PluginSession:
    """The run's ``PluginSession``; a usage error when the plugin is disabled."""
    try:
        return config.stash[SESSION_KEY]
    except KeyError:
        raise pytest.UsageError(
            "the tnsai plugin is not configured in this run (was it disabled with -p no:tnsai?)"
        ) from None
