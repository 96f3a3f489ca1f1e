"""``tnsai-eval report new.json [--baseline old.json]``: summarize a run, gate it.

Prints one row per tracked test and, with ``--baseline``, the same comparison
the pytest plugin's ``--tnsai-baseline`` gate prints. The exit code is 1 when a
gated metric regressed beyond the tolerance, so CI can run it on its own.
"""

from __future__ import annotations

import argparse
from typing import Any

from tnsai_eval.reports import compare, format_summary, read_report

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="summarize a --tnsai-report JSON file, optionally against a baseline",
        description=__doc__,
    )
    parser.add_argument("report", help="a report written by pytest --tnsai-report")
    parser.add_argument("--baseline", help="an earlier report to compare against")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.05,
        help="largest allowed absolute drop of a gated metric (default: 0.05)",
    )
    parser.add_argument(
        "--html",
        metavar="OUT.html",
        help="also write a self-contained HTML page with the tables and embedded plots",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    report = read_report(args.report)
    config = report.config
    print(
        f"report {args.report} (schema {report.schema_version}, model "
        f"{config.get('model') or '-'}, record mode {config.get('record_mode') or '-'})"
    )
    print(format_summary(report))
    if args.html:
        # Imported here: matplotlib is only paid for when a page is asked for.
        from tnsai_eval.reports._html import write_html

        write_html(args.html, report, baseline=args.baseline, tolerance=args.tolerance)
        print(f"wrote {args.html}")
    if not args.baseline:
        return 0
    comparison = compare(report, read_report(args.baseline), tolerance=args.tolerance)
    print()
    print(f"against baseline {args.baseline}:")
    print(comparison.format())
    return 0 if comparison.passed else 1
