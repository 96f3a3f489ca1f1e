"""The hooks of one configured run, as methods over its ``PluginSession``."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tnsai_eval.pytest import _xdist
from tnsai_eval.pytest._keys import ACTIONS_KEY, NORM_KEY, REFINE_KEY, REFINE_RUN_KEY
from tnsai_eval.pytest._markers import MarkerError, norm_spec, refine_spec
from tnsai_eval.pytest._repeat import run_samples
from tnsai_eval.pytest._report import write_summary
from tnsai_eval.pytest._session import PluginSession

if TYPE_CHECKING:
    from tnsai_eval.pytest._keys import NormActions
    from tnsai_eval.reports import (
        Comparison,
        GateSettings,
        GateVerdict,
        ModelComparison,
        Report,
        SettingChange,
    )

__all__ = [
    "EVIDENCE_STAT",
    "GATE_STAT",
    "SETTINGS_STAT",
    "TRACKING_FIXTURES",
    "RepeatHooks",
    "TnsaiHooks",
    "is_tracked",
]

#: The category under which gate regressions are counted in pytest's final summary line.
GATE_STAT = "regressed (tnsai gate)"
#: The category for tests the gate could not judge (cases not run or errored, too few in common).
EVIDENCE_STAT = "missing evidence (tnsai gate)"
#: The category for a pull request whose gate settings differ from its base's.
SETTINGS_STAT = "settings changed (tnsai gate)"

#: With --tnsai-repeat, tests requesting any of these (or marked) are repeated.
TRACKING_FIXTURES = frozenset(
    {
        "llm",
        "tnsai_record",
        "evaluate_prompt",
        "evaluate_target",
        "refine",
        "prompt_optimizer",
        "agent",
        "norm_actions",
        "norm_engine",
        "feedback_store",
    }
)


def is_tracked(item: pytest.Item) -> bool:
    """Whether ``item`` uses the plugin (decided before it runs, for --tnsai-repeat)."""
    names = getattr(item, "fixturenames", ())
    if not TRACKING_FIXTURES.isdisjoint(names):
        return True
    return _plugin_marks(item) != (None, None)


class TnsaiHooks:
    """The per-test and end-of-run hooks, over the run's ``PluginSession``."""

    def __init__(self, config: pytest.Config, session: PluginSession, baseline: Report | None):
        self.config = config
        self.session = session
        self.baseline = baseline
        self.comparison: Comparison | None = None
        #: The gate's verdict on the run (None without a baseline).
        self.verdict: GateVerdict | None = None
        #: The settings the baseline gate judged by (the base's in a PR gate).
        self.settings: GateSettings | None = None
        self.model_comparison: ModelComparison | None = None
        self.report_path_written: str | None = None
        self._store = _skippable_store(config, session.options.store)

    # -- collection ----------------------------------------------------------
    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        # The store lives under the tests (tests/llm-responses by default) and
        # holds a JSON file per test (older stores: one per reply): walking
        # thousands of them at every collection cost more than replaying did.
        return True if collection_path == self._store else None

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        # Two or more --tnsai-model names: one test per model, the name in its id.
        names = self.session.options.named.names
        if len(names) > 1 and "tnsai_model" in metafunc.fixturenames:
            metafunc.parametrize("tnsai_model", names, indirect=True, ids=names)

    # -- per test ----------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        # A marked test always gets a row; any other test gets one when it first
        # records a metric or makes a call through the plugin's fixtures (so a
        # project whose own fixture happens to be called `llm` sees no rows).
        if _plugin_marks(item) != (None, None):
            self.session.track(item.nodeid)
        self.session.fallback = _unparametrized(item, self.session.options.named.names)
        self.session.current = item.nodeid
        budget = self.session.budget
        try:
            # Every call the test makes, through any client, draws on --llm-max-calls.
            with nullcontext() if budget is None else budget.active():
                return (yield)
        finally:
            self.session.current = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        problem = self._validate_marks(item)
        if problem is not None:
            # Failed outside the except block, so pytest shows the message alone.
            pytest.fail(f"{item.nodeid}: {problem}", pytrace=False)

    @staticmethod
    def _validate_marks(item: pytest.Item) -> str | None:
        norm, refine = _plugin_marks(item)
        try:
            if norm is not None:
                item.stash[NORM_KEY] = norm_spec(norm)
            if refine is not None:
                item.stash[REFINE_KEY] = refine_spec(refine)
                if "refine" not in getattr(item, "fixturenames", ()):
                    raise MarkerError(
                        "@refine_until: the test must take the `refine` fixture and call "
                        "refine(draft)"
                    )
        except MarkerError as exc:
            return str(exc)
        return None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        result = yield
        # Reached only when the test body passed: its verdict stands otherwise.
        if NORM_KEY in item.stash:
            self._check_norms(item)
        if REFINE_KEY in item.stash:
            run = item.stash.get(REFINE_RUN_KEY, None)
            if run is None or not run.results:
                pytest.fail(
                    "@refine_until: the test never called refine(draft), so nothing was "
                    "refined or checked",
                    pytrace=False,
                )
        return result

    def _check_norms(self, item: pytest.Item) -> None:
        spec = item.stash[NORM_KEY]
        actions: NormActions | None = item.stash.get(ACTIONS_KEY, None)
        if actions is None or not actions.used:
            pytest.fail(
                "@norm_check: the test made no agent with the `agent` fixture and recorded "
                "no actions with `norm_actions`, so there was nothing to check",
                pytrace=False,
            )
        from tnsai_eval.errors import ConditionError

        performed = actions.actions
        try:
            result = spec.engine.check_agent(_Performed(performed), state=actions.state)
        except ConditionError as exc:
            # A name the state lacks (no state= given) is the test's problem,
            # reported as its failure with the norm's description.
            pytest.fail(f"@norm_check: {exc}", pytrace=False)
        if result.is_violation:
            # The first line is all that pytest's short summary shows: name the
            # broken norms' actions there, the full reasons follow.
            broken = ", ".join(dict.fromkeys(v.action for v in result.violations))
            pytest.fail(
                f"@norm_check: norms broken on {broken}\n{result}\n"
                f"actions performed: {performed}\nstate: {actions.state}",
                pytrace=False,
            )

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.session.on_report(report)
        # On an xdist worker the record travels with its teardown report, before
        # xdist's own hook serializes the report (tryfirst).
        if report.when == "teardown" and _xdist.is_worker(self.config):
            _xdist.attach(report, self.session)

    # -- the end -------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # The store notes which replies this run used (for `tnsai-eval store prune`).
        for client in self.session.clients:
            client.flush()
        if _xdist.is_worker(self.config):
            _xdist.ship(self.config, self.session)
            return
        options = self.session.options
        if not self.session.has_results and options.report is None and self.baseline is None:
            return  # the plugin was not used: do not even import the report code
        from tnsai_eval.reports import PullRequestGate, compare, gate_verdict

        report = self.session.report()
        if options.report is not None:
            report.save(options.report)
            self.report_path_written = str(options.report)
        settings = options.gate_settings
        if self.baseline is not None:
            # A pull request's gate baseline (tnsai-eval ci baseline) carries the
            # base commit's gate settings: they apply, not this run's own.
            pr = PullRequestGate.from_config(self.baseline.config)
            changes: tuple[SettingChange, ...] = ()
            if pr is not None:
                settings, changes = pr.judge_with(settings)
            self.comparison = compare(report, self.baseline, settings=settings)
            self.verdict = gate_verdict(
                report,
                self.comparison,
                exit_status=int(session.exitstatus),
                pr=pr,
                settings_changes=changes,
            )
            self.settings = settings
            if not self.verdict.passed:
                self._fail_gate(session, self.comparison, self.verdict)
        if options.named.compare is not None:
            from tnsai_eval.reports import compare_report_models

            baseline_model, candidate_model = options.named.compare
            self.model_comparison = compare_report_models(
                report, baseline_model, candidate_model, settings=settings
            )
            if not self.model_comparison.passed:
                self._fail_gate(
                    session, self.model_comparison.comparison, suffix=f" [{candidate_model}]"
                )

    def _fail_gate(
        self,
        session: pytest.Session,
        comparison: Comparison,
        verdict: GateVerdict | None = None,
        suffix: str = "",
    ) -> None:
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        # pytest's last line ("=== 3 passed in 0.1s ===") counts what is in
        # the terminal reporter's stats, any category included: listing the
        # regressions there makes it read "3 passed, 1 regressed (tnsai gate)",
        # so a run failed only by the gate never ends on a plain passed line.
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is None:
            return
        terminal.stats.setdefault(GATE_STAT, []).extend(
            _GateEntry(f"{c.nodeid}{suffix} :: {c.metric}") for c in comparison.regressions
        )
        # What the accept label let through is not missing.
        accepted = set() if verdict is None else set(verdict.accepted)
        # One entry per score, whatever it lacks (errored and too few in common...).
        missing = dict.fromkeys(
            f"{s.nodeid}{suffix} :: {s.metric}"
            for s in comparison.shortfalls
            if str(s) not in accepted
        )
        if missing:
            terminal.stats.setdefault(EVIDENCE_STAT, []).extend(map(_GateEntry, missing))
        if verdict is not None and any(p.startswith("gate settings") for p in verdict.problems):
            terminal.stats.setdefault(SETTINGS_STAT, []).append(_GateEntry("gate settings"))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if _xdist.is_worker(self.config):
            return
        if not self.session.has_results and self.comparison is None:
            return
        write_summary(
            terminalreporter,
            self.session.report(),
            comparison=self.comparison,
            report_path=self.report_path_written,
            budget=self.session.budget,
            verdict=self.verdict,
            settings=self.settings,
        )
        if self.baseline is not None and self.session.options.named.models:
            from tnsai_eval.reports import format_model_changes, model_changes

            changed = format_model_changes(model_changes(self.session.report(), self.baseline))
            for line in changed.splitlines():
                terminalreporter.write_line(line)
        if self.model_comparison is not None:
            from tnsai_eval.reports import format_model_comparison

            red = not self.model_comparison.passed
            for line in format_model_comparison(self.model_comparison).splitlines():
                terminalreporter.write_line(line, red=red, bold=red)
            if red:
                terminalreporter.write_line(
                    f"tnsai-eval: model {self.model_comparison.candidate} regressed against "
                    f"{self.model_comparison.baseline}; this fails the session",
                    red=True,
                    bold=True,
                )


class _GateEntry:
    """One regression, as an entry of the terminal reporter's stats.

    A plain object with attributes: pytest reads entries of any stats
    category like reports (``getattr``, ``vars``), so a slotted record fails.
    """

    count_towards_summary = True

    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid
        self.when = "gate"


_MARKS_KEY = pytest.StashKey[tuple[pytest.Mark | None, pytest.Mark | None]]()


def _plugin_marks(item: pytest.Item) -> tuple[pytest.Mark | None, pytest.Mark | None]:
    """(``norm_check``, ``refine_until``) of ``item``, looked up once per test.

    Every test pays for these lookups, plugin user or not, so the protocol
    hook's answer is kept for the setup hook.
    """
    marks = item.stash.get(_MARKS_KEY, None)
    if marks is None:
        marks = item.stash[_MARKS_KEY] = (
            item.get_closest_marker("norm_check"),
            item.get_closest_marker("refine_until"),
        )
    return marks


def _unparametrized(item: pytest.Item, models: Sequence[str]) -> str | None:
    """``item``'s node id without its ``tnsai_model`` parameter (None: it has none).

    Replies recorded before a second ``--tnsai-model`` parametrized the test
    are in that cassette; each is keyed by its model, so no model answers
    from another's.
    """
    callspec = getattr(item, "callspec", None)
    if callspec is None or callspec.params.get("tnsai_model") not in models:
        return None
    model = callspec.params["tnsai_model"]
    parts = callspec.id.split("-")
    parts.remove(str(model))
    name = item.nodeid.rsplit("[", 1)[0]
    return f"{name}[{'-'.join(parts)}]" if parts else name


def _skippable_store(config: pytest.Config, store: Path) -> Path | None:
    """The store directory, unless skipping it would skip tests (it holds the rootdir)."""
    here = config.invocation_params.dir
    if config.rootpath.is_relative_to(store) or here.is_relative_to(store):
        return None
    return store


class _Performed:
    """An ``actions`` holder for ``NormEngine.check_agent``."""

    def __init__(self, actions: list[str]) -> None:
        self.actions = actions


class RepeatHooks:
    """Registered only with --tnsai-repeat N > 1."""

    def __init__(self, session: PluginSession) -> None:
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        if not is_tracked(item):
            return None
        run_samples(item, nextitem, self.session, self.session.options.repeat)
        return True
