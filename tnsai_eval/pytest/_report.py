"""The terminal summary section: one row per tracked test, totals, the gate's verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tnsai_eval.llm import CallBudget
    from tnsai_eval.reports import Comparison, GateSettings, GateVerdict, Report

__all__ = ["write_summary"]


def write_summary(
    terminal: pytest.TerminalReporter,
    report: Report,
    *,
    comparison: Comparison | None,
    report_path: str | None,
    budget: CallBudget | None = None,
    verdict: GateVerdict | None = None,
    settings: GateSettings | None = None,
) -> None:
    """The ``tnsai-eval`` section: model and mode, one row per test, the gate's table,
    and last the gate's verdict in the words of every other output."""
    if not report.tests and comparison is None and report_path is None:
        return  # a run that never touched the plugin gets no section
    from tnsai_eval._util.secrets import frozen_secrets

    with frozen_secrets():  # every row is masked: the secrets are read once
        _write(terminal, report, comparison, report_path, budget)
        if verdict is not None:
            _write_verdict(terminal, verdict, settings)


def _write_verdict(
    terminal: pytest.TerminalReporter, verdict: GateVerdict, settings: GateSettings | None
) -> None:
    from tnsai_eval._util.text import shown_label

    if settings is not None:
        terminal.write_line(shown_label(settings.describe()))
    red = not verdict.passed
    for problem in verdict.problems:
        terminal.write_line(shown_label(problem), red=True)
    for accepted in verdict.accepted:
        terminal.write_line(f"accepted by the label: {shown_label(accepted)}", yellow=True)
    terminal.write_line(
        f"tnsai-eval {shown_label(verdict.headline)}", red=red, green=not red, bold=True
    )


def _write(
    terminal: pytest.TerminalReporter,
    report: Report,
    comparison: Comparison | None,
    report_path: str | None,
    budget: CallBudget | None,
) -> None:
    from tnsai_eval._util.text import shown_label
    from tnsai_eval.pytest._evaluate import other_model_hint
    from tnsai_eval.reports import format_comparison, format_summary

    def config(key: str) -> str:
        # Config values and test ids are masked like everything else shown.
        return shown_label(str(report.config.get(key) or "-"))

    terminal.write_sep("=", "tnsai-eval")
    models = report.config.get("models")
    shown = (
        f"models: {', '.join(shown_label(str(m)) for m in models)}"
        if models
        else f"model: {config('model')}"
    )
    terminal.write_line(
        f"{shown}   record mode: {config('record_mode')} "
        f"({config('record_mode_source')})   store: {config('store')}"
    )
    if report.tests:
        for line in format_summary(report).splitlines():
            terminal.write_line(line)
    if budget is not None:
        spent = budget.spent
        note = (
            "; the bound is reached: any later call was not sent (its case is not run: budget)"
            if spent >= budget.limit
            else ""
        )
        terminal.write_line(
            f"--llm-max-calls {budget.limit}: {spent} model call(s) made{note}",
            yellow=bool(note),
        )
    unrecorded = [t for t in report.tests if t.unrecorded]
    if unrecorded:
        # Listed once for the whole run, with the one command that fixes it.
        count = sum(len({c.id for c in t.unrecorded}) for t in unrecorded)
        nodeids = " ".join(shown_label(t.nodeid) for t in unrecorded)
        # (llm.ResponseStore.miss_hint says which model holds the replies.)
        other_model = other_model_hint(c for t in unrecorded for c in t.unrecorded)
        if other_model is not None:
            fix = f"recorded for another model: {shown_label(other_model)}"
        else:
            fix = f"record them with:\n    pytest --llm-record record {nodeids}"
        terminal.write_line(
            f"{count} case(s) in {len(unrecorded)} test(s) have no recorded reply and were "
            f"not scored; {fix}",
            yellow=True,
        )
    if report_path is not None:
        terminal.write_line(f"report written to {report_path}")
    if comparison is not None:
        terminal.write_line(f"baseline {config('baseline')}:")
        red = not comparison.passed
        for line in format_comparison(comparison).splitlines():
            terminal.write_line(line, red=red, bold=red)
