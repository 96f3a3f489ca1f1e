"""``tnsai-eval report NEW [--baseline OLD]``: summarize a run, gate it, export it for CI.

Prints one row per tracked test (the mean with its 95% interval) and, with
``--baseline``, the same comparison the pytest plugin's ``--tnsai-baseline``
gate prints: regressed metrics, then the cases that flipped (broken ones
first, worst first) and the prompts that changed.

The gate, tolerance, alpha and minimum common share are the ones recorded in
the report (the settings of the pytest run that wrote it) unless given here;
the output says which it used and where each came from.

No pass without evidence: a test with cases that were not run (unrecorded,
or refused by the call budget; --allow-unrecorded accepts them) or that
errored, or with fewer cases in common with the baseline than --min-common
of the baseline's, is never reported as a pass.

Exit codes: 0 no regression, 1 a regression or missing evidence, 2 bad
arguments or a report that cannot be read (the message names the file and
the JSON path of the field).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from tnsai_eval._util.secrets import frozen_secrets
from tnsai_eval._util.text import escape_markdown, shown_label
from tnsai_eval.cli._main import subcommand
from tnsai_eval.errors import ConfigError
from tnsai_eval.reports import (
    GATE_SETTING_NAMES,
    Comparison,
    GateMode,
    GateSettings,
    GateVerdict,
    Report,
    compare,
    format_comparison,
    format_model_changes,
    format_model_comparison,
    format_summary,
    gate_verdict,
    model_changes,
    read_report,
    summary_rows,
)

__all__ = ["add_parser", "render_markdown"]


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def _alpha(text: str) -> float:
    value = _fraction(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


def _share(text: str) -> float:
    value = _fraction(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text!r}")
    return value


def add_parser(subparsers: Any) -> None:
    parser = subcommand(subparsers, "report", __doc__)
    parser.add_argument("report", help="a report written by pytest --tnsai-report")
    parser.add_argument("--baseline", help="an earlier report to compare against")
    parser.add_argument(
        "--tolerance",
        type=_fraction,
        default=None,
        help="largest allowed absolute drop of a gated metric (default: the report's, else 0.05)",
    )
    parser.add_argument(
        "--gate",
        choices=[m.value for m in GateMode],
        default=None,
        help="tolerance: a drop beyond the tolerance regresses; paired: only when "
        "the exact sign test on the flipped cases also has p < --alpha "
        "(default: the report's, else tolerance)",
    )
    parser.add_argument(
        "--alpha",
        type=_alpha,
        default=None,
        help="significance level of the paired gate (default: the report's, else 0.05)",
    )
    parser.add_argument(
        "--min-common",
        type=_share,
        default=None,
        help="least share of the baseline's cases this run must have in common with it "
        "for a score to be judged (default: the report's, else 0.8)",
    )
    parser.add_argument(
        "--allow-unrecorded",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="accept cases that were not run (unrecorded, or refused by the call budget) "
        "instead of refusing to pass (default: the report's, else refused)",
    )
    parser.add_argument(
        "--compare-models",
        nargs=2,
        metavar=("A", "B"),
        help="the gate's paired verdict of model B against model A, on a report of a run "
        "with both (pytest --tnsai-model A --tnsai-model B): flipped cases, sign test, "
        "tokens and cost; exit 1 when B regressed",
    )
    parser.add_argument(
        "--gate-costs",
        type=_fraction,
        metavar="FRACTION",
        help="also gate tokens, calls and estimated cost with this relative tolerance "
        "(0.2: 20%% more regresses); by default they are only shown",
    )
    parser.add_argument(
        "--gate-latency",
        type=_fraction,
        metavar="RATIO",
        help="also gate each test's median latency of live calls with this ratio (0.5: half "
        "as slow again regresses); a test either run replayed is skipped with a note",
    )
    parser.add_argument(
        "--format",
        choices=("text", "markdown"),
        default="text",
        help="markdown: for a pull-request comment or $GITHUB_STEP_SUMMARY",
    )
    parser.add_argument(
        "--junit", metavar="PATH", help="also write JUnit XML with one testcase per case"
    )
    parser.add_argument(
        "--html",
        metavar="OUT.html",
        help="also write a self-contained HTML page with the tables, case tables and plots",
    )
    parser.set_defaults(func=_run)


def _check_output(path: str | None, option: str) -> None:
    # Checked before any work: a bad output path must not cost the reading first.
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{option} {path!r} is a directory; expected a file path")
    if target.parent.exists() and not target.parent.is_dir():
        raise ConfigError(f"{option} {path!r}: {str(target.parent)!r} is not a directory")


@frozen_secrets()  # every output masks every id and text: the secrets are read once for all
def _run(args: argparse.Namespace) -> int:
    _check_output(args.junit, "--junit")
    _check_output(args.html, "--html")
    if args.baseline is not None and not args.baseline.strip():
        # `--baseline "$UNSET"` must not quietly turn the gate off.
        raise ConfigError("--baseline: expected a report path, got an empty value")
    report = read_report(args.report)
    baseline = None if not args.baseline else read_report(args.baseline)
    comparison = None
    models = None
    # Each setting's option has its name (--min-common: args.min_common).
    given = {name: getattr(args, name) for name in GATE_SETTING_NAMES}
    settings = GateSettings.resolve([(given, "given"), (report.config, "recorded in the report")])
    if baseline is not None:
        comparison = compare(report, baseline, settings=settings)
    if args.compare_models:
        from tnsai_eval.reports import compare_report_models

        models = compare_report_models(report, *args.compare_models, settings=settings)
    verdict = gate_verdict(report, comparison)
    shown_settings = settings.describe() if comparison is not None or models is not None else ""
    markdown = args.format == "markdown"
    if markdown:
        print(
            render_markdown(
                report,
                comparison,
                verdict,
                name=args.report,
                baseline_name=args.baseline,
                settings=shown_settings,
            )
        )
    else:
        print(
            f"report {args.report} (schema {report.schema_version}, "
            f"{_models_shown(report)}, "
            f"record mode {shown_label(str(report.config.get('record_mode') or '-'))})"
        )
        print(format_summary(report))
        if comparison is not None:
            print()
            print(f"against baseline {args.baseline}:")
            print(shown_settings)
            print(format_comparison(comparison))
    if baseline is not None:
        changed = format_model_changes(model_changes(report, baseline), markdown=markdown)
        if changed:
            print(changed)
    if models is not None:
        print()
        print(format_model_comparison(models, markdown=markdown))
    if not markdown:
        print(f"tnsai-eval {shown_label(verdict.headline)}")
    if args.junit:
        from tnsai_eval.reports import write_junit

        write_junit(args.junit, report, comparison=comparison, verdict=verdict)
        if args.format == "text":
            print(f"wrote {args.junit}")
    if args.html:
        # Imported here: matplotlib is only paid for when a page is asked for.
        from tnsai_eval.plots import write_html

        write_html(args.html, report, comparison=comparison, settings=shown_settings, models=models)
        if args.format == "text":
            print(f"wrote {args.html}")
    failed = not verdict.passed or (models is not None and not models.passed)
    return 1 if failed else 0


def render_markdown(
    report: Report,
    comparison: Comparison | None,
    verdict: GateVerdict | None = None,
    *,
    name: str = "report",
    baseline_name: str | None = None,
    settings: str = "",
    limit: int | None = None,
) -> str:
    """The run (and its comparison) as Markdown, for a PR comment or a job summary.

    The first line is the gate's verdict (``gate_verdict`` unless given);
    ``limit`` bounds every list and table (see ``format_comparison``).
    """
    from tnsai_eval.reports import markdown_table

    if verdict is None:
        verdict = gate_verdict(report, comparison)
    lines = [f"### tnsai-eval {escape_markdown(verdict.headline)}", ""]
    config = report.config

    def shown(value: object) -> str:
        # Values from the report file are data: masked, flat, escaped (no code
        # spans, since a backtick in a value would close one).
        return escape_markdown(str(value or "-"), inline=True)

    for problem in verdict.problems:
        lines += [f"**{escape_markdown(problem)}**", ""]
    for accepted in verdict.accepted:
        lines += [f"- accepted by the label: {escape_markdown(accepted, inline=True)}"]
    if verdict.accepted:
        lines.append("")
    lines.append(
        f"{shown(name)}: {_models_shown(report, markdown=True)}, record mode "
        f"{shown(config.get('record_mode'))}, schema {report.schema_version}"
    )
    lines.append("")
    headers, rows = summary_rows(report)
    kept = rows if limit is None or len(rows) <= limit + 1 else [*rows[:limit], rows[-1]]
    lines.append(markdown_table(headers, kept))
    if len(kept) < len(rows):
        lines += ["", f"... and {len(rows) - len(kept)} more test(s) in report.html"]
    if comparison is not None:
        lines += ["", f"Against baseline {shown(baseline_name)}:", ""]
        if settings:
            lines += [escape_markdown(settings), ""]
        lines.append(format_comparison(comparison, markdown=True, limit=limit))
    return "\n".join(lines)


def _models_shown(report: Report, *, markdown: bool = False) -> str:
    # A run against named models (--tnsai-model) names them; others name the one model.
    # Names come from the report file: masked, flat, and escaped in Markdown.
    def shown(value: object) -> str:
        label = shown_label(str(value or "-"))
        return escape_markdown(label, inline=True) if markdown else label

    if report.models:
        return "models " + ", ".join(shown(m) for m in report.models)
    return f"model {shown(report.config.get('model'))}"
