"""The plugin's state for one pytest run, kept in ``config.stash``.

Hooks and fixtures are thin: they tell this object what happened (a test
started, a metric was recorded, a model call returned, a report came in) and
it turns that into a ``tnsai_eval.reports.Report`` at the end. Under
pytest-xdist every worker has one; workers ship their finished records to the
controller, whose object merges them (see ``_xdist``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from tnsai_eval.pytest._options import PluginOptions

# tnsai_eval is imported only once a test touches the plugin: importing it pulls
# in the HTTP client, and a suite that never uses the plugin must not pay for it.
if TYPE_CHECKING:
    from tnsai_eval.llm import (
        CallBudget,
        CallEvent,
        FrontClient,
        LLMClient,
        NamedModel,
        ResponseStore,
    )
    from tnsai_eval.reports import (
        CaseRecord,
        IterationRecord,
        MetricStats,
        PromptRecord,
        Report,
        TrackedTest,
    )

__all__ = ["SAMPLES_PROPERTY", "SESSION_KEY", "PluginSession", "get_session"]

#: user_properties key carrying (passed, total) samples on a --tnsai-repeat call report.
SAMPLES_PROPERTY = "tnsai_samples"
#: evaluate_prompt's concurrency without --llm-concurrency or concurrency= (score_prompt's).
DEFAULT_CONCURRENCY = 4
# A failed test's message in the report: its first line, at most this long.
_MESSAGE_CHARS = 200


class _Run:
    """What one test has done so far, as parts of its ``reports.TrackedTest`` record.

    Each thing the test does (its cases, refinements, each phase pytest
    reports) is a partial record, folded in by the merge rule each field of
    ``TrackedTest`` declares: the same rules that merge the records of one
    test run on several xdist workers. Two things are kept raw until the end:
    a metric's value per sample (recording a name again replaces it) and the
    calls (the cheapest thing to keep per call; their latency percentiles
    need them all).
    """

    __slots__ = ("content", "events", "metrics", "named", "nodeid", "phases")

    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid
        # Each metric as first recorded (its gate rules), and its value per sample.
        self.metrics: dict[str, tuple[MetricStats, dict[int, float]]] = {}
        self.events: list[CallEvent] = []  # completed calls (replayed ones too)
        self.named: NamedModel | None = None  # --tnsai-model: the model it runs against
        # What the test did, then what pytest said of each phase: folded in
        # that order, so a case recorded after the call phase is still its sample's.
        self.content = self.part()
        self.phases: list[TrackedTest] = []

    def part(self, status: str = "passed", **values: Any) -> TrackedTest:
        """A partial record of this test: ``values``, and nothing else counted."""
        from tnsai_eval.reports import TestStatus, TrackedTest

        return TrackedTest(self.nodeid, TestStatus(status), **{"samples": 0, **values})

    def finish(self) -> TrackedTest:
        from tnsai_eval.reports import latency_figures

        events = self.events
        tokens_in = sum(e.prompt_tokens for e in events)
        tokens_out = sum(e.completion_tokens for e in events)
        live_calls, p50, p95 = latency_figures(e.latency_s for e in events if e.live)
        record = self.content.merge(
            self.part(
                metrics={
                    name: replace(first, samples=tuple(values[i] for i in sorted(values)))
                    for name, (first, values) in self.metrics.items()
                },
                calls=len(events),
                tokens=tokens_in + tokens_out,
                cache_hits=sum(e.cached for e in events),
                model=None if self.named is None else self.named.name,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost=None if self.named is None else self.named.cost(tokens_in, tokens_out),
                live_calls=live_calls,
                latency_p50_s=p50,
                latency_p95_s=p95,
            )
        )
        for phase in self.phases:
            record = record.merge(phase)
        # A test that never reached its call phase (an error in setup) is one sample.
        return replace(record, samples=max(record.samples, 1))


class PluginSession:
    """Collects what tracked tests measured during one run.

    A test becomes *tracked* (gets a row) when it carries one of the plugin's
    markers, or the first time it records a metric or makes a model call
    through the plugin's fixtures. Untracked tests cost a dictionary lookup
    per report and never appear.
    """

    def __init__(self, options: PluginOptions, run: str | None = None) -> None:
        from tnsai_eval._util.runs import new_run_id

        self.options = options
        #: This run's id in the response store's usage records (an xdist
        #: worker gets its controller's, so the whole run is one).
        self.run = run or new_run_id()
        self._store: ResponseStore | None = None
        self.runs: dict[str, _Run] = {}
        # Records that arrived finished from xdist workers, one per node id.
        self.merged: dict[str, TrackedTest] = {}
        self._current: str | None = None
        # The running test's record, looked up once rather than on every call.
        self._run: _Run | None = None
        self.sample = 0
        self._lock = threading.Lock()
        self.started = time.time()
        self.llm_description: dict[str, object] = {}
        #: The --llm-max-calls bound (None: unbounded): an ``llm.CallBudget``.
        self.budget: CallBudget | None = None
        #: The front clients whose calls count towards the running test (each
        #: subscribed): the ``llm`` fixture's, each named model's, and a client
        #: a conftest gave as ``llm``. Those with a store record per test.
        self.clients: list[FrontClient] = []
        #: The cassette a test's replies are also looked up in: its id without
        #: the model parameter (replies recorded before it had one).
        self.fallback: str | None = None
        self._said_capped = False
        # One client per named model (--tnsai-model), made when a test first uses it.
        self._named_clients: dict[str, FrontClient] = {}
        # Clients a conftest gave, by id, each with the front client made for it.
        self._fronts: dict[int, tuple[object, FrontClient]] = {}
        self._concurrency_seen = 0

    @property
    def current(self) -> str | None:
        """The node id of the running test (None between tests)."""
        return self._current

    @current.setter
    def current(self, nodeid: str | None) -> None:
        if self._current is not None:
            for client in self.clients:
                self._close_cassette(client, self._current)
        self._current = nodeid
        self._run = None
        if nodeid is not None:
            for client in self.clients:
                self._open_cassette(client, nodeid)

    # -- the front clients: counted per test, one cassette per test -------
    def store(self) -> ResponseStore | None:
        """The run's response store, shared by its clients (None with --llm-record off)."""
        if self.options.record_mode == "off":
            return None
        if self._store is None:
            from tnsai_eval.llm import ResponseStore

            self._store = ResponseStore(self.options.store, run=self.run)
        return self._store

    def adopt(self, client: FrontClient) -> FrontClient:
        """Count ``client``'s calls towards the running test, and record its replies per
        test, in a cassette named by the test's node id (once per client)."""
        with self._lock:
            if any(c is client for c in self.clients):
                return client
            self.clients.append(client)
        client.subscribe(self.on_call)
        client.ensure_concurrency(self._concurrency_seen or 1)
        if self._current is not None:
            # A client made during the first test that uses it: that test's cassette.
            self._open_cassette(client, self._current)
        return client

    def front(self, client: LLMClient) -> FrontClient:
        """The front client the plugin's fixtures call: ``client`` itself when it is one
        (subscribed), else one made for it (a conftest's own ``llm``), no store added."""
        from tnsai_eval.llm import FrontClient

        if "model" not in self.llm_description:
            # A conftest may override `llm`; the report still says what answered.
            self.llm_description["model"] = str(
                getattr(client, "model", "") or type(client).__name__
            )
        if isinstance(client, FrontClient):
            return self.adopt(client)
        with self._lock:
            known = self._fronts.get(id(client))
        if known is not None and known[0] is client:
            return known[1]
        made = FrontClient(client)
        with self._lock:
            self._fronts[id(client)] = (client, made)
        return self.adopt(made)

    def _open_cassette(self, client: FrontClient, nodeid: str) -> None:
        if client.store is not None:
            # Held while the test runs: its replies are written once, when it ends.
            client.store.hold(nodeid)
            client.cassette = nodeid
            client.fallback = self.fallback

    @staticmethod
    def _close_cassette(client: FrontClient, nodeid: str) -> None:
        from tnsai_eval.llm import DEFAULT_CASSETTE

        if client.store is not None:
            client.cassette = DEFAULT_CASSETTE
            client.fallback = None
            client.store.release(nodeid)

    def on_call(self, event: CallEvent) -> None:
        """Count one call (tokens in and out, cache hit, a live call's latency) towards the
        running test; a failed call's error gets the plugin's hint."""
        run = self._current_run()  # a row even for a call that failed
        if event.error is not None:
            from tnsai_eval.pytest._client import add_hint

            add_hint(event.error, self.options)
            return
        if run is None:
            return
        run.events.append(event)  # atomic: no lock needed

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
        from tnsai_eval.reports import MetricStats

        # The report's own rules for a sample and a tolerance, checked now
        # rather than when the report is built after every test has run.
        stats = MetricStats(name, (value,), gate, higher_is_better, tolerance, relative)
        run = self._current_run()
        if run is None:
            raise ConfigError(f"metric {name!r} recorded outside a running test")
        with self._lock:
            run.metrics.setdefault(name, (stats, {}))[1][self.sample] = float(value)

    def has_metric(self, name: str) -> bool:
        """Whether the running test already recorded ``name`` in this sample."""
        run = self._current_run()
        return run is not None and self.sample in run.metrics.get(name, (None, {}))[1]

    def record_iterations(self, count: int) -> None:
        """Add ``count`` refinement iterations to the running test."""
        self._add(iterations=count)

    def _add(self, **values: Any) -> None:
        """Fold a part of the running test's record in (see ``_Run``)."""
        run = self._current_run()
        if run is not None:
            with self._lock:
                run.content = run.content.merge(run.part(**values))

    def record_cases(
        self,
        metric: str,
        cases: Iterable[CaseRecord],
        prompt: PromptRecord | None,
        *,
        threshold: float,
    ) -> None:
        """Keep the case records of one ``evaluate_prompt`` call (this repeat sample).

        The records are the engine's own, with the report's context added: the
        metric, the sample and, for a case that was asked, pass or fail at ``threshold``.
        """
        sample = self.sample
        self._add(
            cases=tuple(
                replace(c, metric=metric, sample=sample, passed=c.verdict(threshold)) for c in cases
            ),
            prompts=() if prompt is None else (replace(prompt, metric=metric),),
        )

    def record_refinement(self, iterations: Iterable[IterationRecord]) -> None:
        """Keep the iterations of one ``refine()`` run (each naming its run's metric)."""
        self._add(refinements=tuple(iterations))

    def touch(self) -> None:
        """Make the running test tracked (a call is starting; it may fail)."""
        self._current_run()

    def named_client(self, named: NamedModel) -> FrontClient:
        """The running test runs against ``named`` (its record says so): that model's client.

        Made on first use and shared by every test on that model: the store in
        the --llm-record mode, then the model.
        """
        run = self._current_run()
        with self._lock:
            if run is not None:
                run.named = named
            client = self._named_clients.get(named.name)
        if client is None:
            from tnsai_eval.pytest._client import build_named_client

            made = build_named_client(self.options, named, self.store())
            with self._lock:
                client = self._named_clients.setdefault(named.name, made)
        return self.adopt(client)

    def concurrency_for(self, asked: object) -> int:
        """The concurrency an ``evaluate_prompt`` call gets, the client's pool grown to fit.

        ``asked`` (the call's ``concurrency=``) is honoured, up to
        ``--llm-concurrency`` when that is given (a cap said once per session,
        as a warning); without it the call gets ``--llm-concurrency``, else 4.
        """
        import warnings

        ceiling = self.options.concurrency
        if asked is None:
            chosen = ceiling if ceiling is not None else DEFAULT_CONCURRENCY
        elif isinstance(asked, bool) or not isinstance(asked, int) or asked < 1:
            from tnsai_eval.errors import ConfigError

            raise ConfigError(f"concurrency must be an int >= 1, got {asked!r}")
        elif ceiling is not None and asked > ceiling:
            chosen = ceiling
            if not self._said_capped:
                self._said_capped = True
                warnings.warn(
                    f"evaluate_prompt(concurrency={asked}) is capped at --llm-concurrency "
                    f"{ceiling} (tnsai_llm_concurrency); later calls above it are capped "
                    "too, without another warning",
                    UserWarning,
                    stacklevel=3,
                )
        else:
            chosen = asked
        with self._lock:
            self._concurrency_seen = max(self._concurrency_seen, chosen)
            clients = list(self.clients)
        for client in clients:
            client.ensure_concurrency(chosen)
        return chosen

    # -- what pytest reports --------------------------------------------
    def on_report(self, report: pytest.TestReport) -> None:
        """Fold one phase's report into its test's record (tracked tests only)."""

        run = self.runs.get(report.nodeid)
        if run is None:
            return
        passed, samples = 0, 0
        if report.when == "call":
            # (passed, total) of --tnsai-repeat's samples; a list once xdist has carried it.
            given: Any = dict(report.user_properties).get(SAMPLES_PROPERTY)
            passed, samples = (int(given[0]), int(given[1])) if given else (int(report.passed), 1)
        status = "passed"
        if report.failed:
            status = "failed" if report.when == "call" else "error"
        elif report.skipped:
            status = "skipped"
        phase = run.part(
            status=status,
            samples=samples,
            passed_samples=passed,
            duration_s=report.duration,
            message=_first_line(report) if report.failed else "",
        )
        with self._lock:
            run.phases.append(phase)

    # -- the end ---------------------------------------------------------
    def merge(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Add finished records shipped by an xdist worker.

        A node id that arrives again (``--dist each`` runs every test on every
        worker) is merged into one record, each worker's run a sample of it,
        by the rule each field of ``reports.TrackedTest`` declares: metric
        samples and case records follow one another, counts, tokens and cost
        add up, and the worst status and latency stand.
        """
        from tnsai_eval.reports import SCHEMA_VERSION, decode_test

        for record in records:
            self._keep(decode_test(record, SCHEMA_VERSION, "$"))

    def _keep(self, test: TrackedTest) -> None:
        """Add a finished record, merged into an earlier one of its node id."""
        with self._lock:
            earlier = self.merged.get(test.nodeid)
            self.merged[test.nodeid] = test if earlier is None else earlier.merge(test)

    def record_crash(self, nodeid: str, detail: str) -> None:
        """An xdist worker crashed running ``nodeid``: an error record, never a vanished test."""
        from tnsai_eval._util.secrets import mask_then_cut
        from tnsai_eval.reports import TestStatus, TrackedTest

        message = mask_then_cut(" ".join(detail.split()) or "worker crashed", _MESSAGE_CHARS)
        self._keep(TrackedTest(nodeid=nodeid, status=TestStatus.ERROR, message=message))

    def take_finished(self, nodeid: str) -> TrackedTest | None:
        """The finished record of ``nodeid``, removed from this process (None: untracked)."""
        with self._lock:
            run = self.runs.pop(nodeid, None)
        if run is None:
            return None
        if self._run is run:
            self._run = None
        return run.finish()

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

        tests = sorted([*self.merged.values(), *self.finished()], key=lambda t: t.nodeid)
        config = self.options.describe()
        config.update(self.llm_description)
        return Report(tests=tuple(tests), config=config)


def _first_line(report: pytest.TestReport) -> str:
    """The failure's message line, masked, then cut (never cut first: that would
    leave the start of a key straddling the cut where no mask could find it)."""
    from tnsai_eval._util.secrets import mask_then_cut

    text = report.longreprtext.strip()
    for line in reversed(text.splitlines()):
        # pytest's short form puts "E   <message>" lines last-but-location.
        if line.startswith("E "):
            return mask_then_cut(line[1:].strip(), _MESSAGE_CHARS)
    return mask_then_cut(text.splitlines()[-1], _MESSAGE_CHARS) if text else ""


SESSION_KEY = pytest.StashKey[PluginSession]()


def get_session(config: pytest.Config) -> PluginSession:
    """The run's ``PluginSession``; a usage error when the plugin is disabled."""
    try:
        return config.stash[SESSION_KEY]
    except KeyError:
        raise pytest.UsageError(
            "the tnsai plugin is not configured in this run (was it disabled with -p no:tnsai?)"
        ) from None
