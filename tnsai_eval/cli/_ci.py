"""``tnsai-eval ci``: the steps of the pull-request workflow that are not GitHub's own.

A pull request is gated against the run accepted on its base branch, never
against a baseline it could rewrite itself:

``tnsai-eval ci baseline --base SHA``
    reads the baseline report as committed on the base commit (``git show
    SHA:PATH``) and decides what the run is gated against: the base's
    baseline, unless the pull request changes the baseline file *and* carries
    the label ``tnsai-accept-baseline`` (read from the event payload,
    ``$GITHUB_EVENT_PATH``); then its own new baseline, and the comment shows
    the old-versus-new comparison. Since the baseline lives on the base
    branch, merging such a pull request is the refresh. Writes
    ``gate-baseline.json``, ``base-baseline.json`` and ``ci.json`` (what was
    decided, and why) into ``--out``.

``tnsai-eval ci comment REPORT --state DIR``
    compares the run with the chosen baseline, with the gate settings the
    pytest run recorded, and writes the pull-request comment (Markdown; one
    sticky comment per pull request, found again by its first line), the
    HTML page and JUnit XML. Exit 0 when the run passes, 1 when it does not
    (a regression, or missing evidence), 2 on bad input: the same verdict as
    the pytest step.

No step needs a token: posting the comment is the workflow's job (and on a
pull request from a fork, whose token cannot comment, the same file goes to
the job summary).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tnsai_eval._util.files import atomic_write_text
from tnsai_eval.errors import ConfigError

__all__ = ["ACCEPT_LABEL", "COMMENT_MARKER", "CiState", "add_parser"]

#: The pull-request label that lets a PR's own baseline replace the base's.
ACCEPT_LABEL = "tnsai-accept-baseline"
#: The comment's first line: the workflow updates the comment that starts with it.
COMMENT_MARKER = "<!-- tnsai-eval prompt report -->"

_STATE = "ci.json"
_GATE = "gate-baseline.json"
_BASE = "base-baseline.json"


@dataclass(frozen=True, slots=True)
class CiState:
    """What ``ci baseline`` decided: which baseline gates the run, and why.

    ``mode``: ``unchanged`` (the PR leaves the baseline alone), ``rewritten``
    (it changes it without the label: gated against the base's anyway),
    ``accepted`` (it changes it and carries the label: gated against its own),
    ``first`` (the base has no baseline yet: gated against the PR's, if any).
    """

    mode: str
    base: str
    path: str
    label: str
    labelled: bool
    message: str
    gate_baseline: str | None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "ci",
        help="pull-request steps: choose the base branch's baseline, write the PR comment",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")
    base = steps.add_parser(
        "baseline",
        help="gate against the baseline committed on the base commit",
        description="Choose the baseline the pull request is gated against.",
    )
    base.add_argument("--base", required=True, help="the base commit (the PR's base SHA)")
    base.add_argument(
        "--path",
        default="tests/prompts/baseline.json",
        help="the baseline report, relative to the current directory "
        "(default: tests/prompts/baseline.json)",
    )
    base.add_argument(
        "--event",
        help="the event payload (GitHub: $GITHUB_EVENT_PATH); its pull request's labels "
        "are read from it",
    )
    base.add_argument(
        "--label",
        default=ACCEPT_LABEL,
        help=f"the label that accepts a PR's new baseline (default: {ACCEPT_LABEL})",
    )
    base.add_argument("--out", default=".tnsai", help="where to write (default: .tnsai)")
    base.set_defaults(func=_baseline)

    comment = steps.add_parser(
        "comment",
        help="compare the run with the chosen baseline and write the PR comment",
        description="Write the pull-request comment (and HTML, JUnit) for a run.",
    )
    comment.add_argument("report", help="the run's report (pytest --tnsai-report)")
    comment.add_argument("--state", default=".tnsai", help="what `ci baseline` wrote")
    comment.add_argument("--out", default="comment.md", help="the comment body (Markdown)")
    comment.add_argument("--html", metavar="OUT.html", help="also write the HTML page")
    comment.add_argument("--junit", metavar="PATH", help="also write JUnit XML")
    comment.add_argument("--link", help="where the HTML page can be found (the run's page)")
    comment.set_defaults(func=_comment)


# -- ci baseline ---------------------------------------------------------------


def _git_show(base: str, path: str) -> bytes | None:
    """The file at ``path`` (relative to the current directory) in commit ``base``."""
    if base.startswith("-") or not base.strip():
        raise ConfigError(f"--base {base!r} is not a commit")
    verify = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    if verify.returncode != 0:
        raise ConfigError(
            f"--base {base!r} is not a commit of this repository (fetch it: actions/checkout "
            "needs fetch-depth: 0)"
        )
    shown = subprocess.run(
        ["git", "show", f"{base}:./{Path(path).as_posix()}"], capture_output=True, check=False
    )
    return shown.stdout if shown.returncode == 0 else None


def _labels(event: str | None) -> list[str]:
    if not event:
        return []
    try:
        payload = json.loads(Path(event).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--event {event!r} cannot be read as JSON: {exc}") from exc
    pull = payload.get("pull_request") if isinstance(payload, dict) else None
    labels = pull.get("labels") if isinstance(pull, dict) else None
    if not isinstance(labels, list):
        return []
    return [str(label.get("name")) for label in labels if isinstance(label, dict)]


def decide(base: str, path: str, *, labels: list[str], label: str) -> tuple[CiState, bytes | None]:
    """The decision of ``ci baseline``, and the base's baseline (``None``: it has none)."""
    old = _git_show(base, path)
    here = Path(path)
    new = here.read_bytes() if here.is_file() else None
    labelled = label in labels
    if old is None:
        mode = "first"
        message = (
            f"The base commit has no `{path}`: this pull request's baseline, if any, "
            "is the first one."
        )
    elif new == old:
        mode = "unchanged"
        message = f"Gated against `{path}` as committed on the base branch ({base[:12]})."
    elif labelled:
        mode = "accepted"
        message = (
            f"**This pull request accepts a new baseline** (label `{label}`): the run is "
            f"gated against its own `{path}`; merging it makes that the accepted run. "
            "The old-versus-new comparison is below."
        )
    else:
        mode = "rewritten"
        message = (
            f"This pull request changes `{path}` but does not carry the label `{label}`: "
            f"the run is gated against the base branch's baseline ({base[:12]}), not its own. "
            f"Add the label to accept the new baseline."
        )
    gate = None
    if mode in ("unchanged", "rewritten"):
        gate = _BASE
    elif new is not None:
        gate = "pr-baseline.json"
    state = CiState(
        mode=mode,
        base=base,
        path=here.as_posix(),
        label=label,
        labelled=labelled,
        message=message,
        gate_baseline=gate,
    )
    return state, old


def _baseline(args: argparse.Namespace) -> int:
    state, old = decide(args.base, args.path, labels=_labels(args.event), label=args.label)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if old is not None:
        (out / _BASE).write_bytes(old)
    here = Path(args.path)
    if here.is_file():
        (out / "pr-baseline.json").write_bytes(here.read_bytes())
    gate = out / _GATE
    if state.gate_baseline is not None:
        gate.write_bytes((out / state.gate_baseline).read_bytes())
    elif gate.exists():
        gate.unlink()
    atomic_write_text(out / _STATE, state.to_json())
    print(state.message.replace("**", ""))
    print(f"gate baseline: {gate.as_posix() if state.gate_baseline else 'none (nothing to gate)'}")
    return 0


# -- ci comment ----------------------------------------------------------------


def _read_state(folder: Path) -> CiState:
    try:
        data = json.loads((folder / _STATE).read_text(encoding="utf-8"))
        return CiState(**{k: data[k] for k in CiState.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"--state {str(folder)!r}: no readable {_STATE} (run `tnsai-eval ci baseline` "
            f"first): {exc}"
        ) from exc


def _comment(args: argparse.Namespace) -> int:
    from tnsai_eval.cli._report import render_markdown
    from tnsai_eval.reports import (
        compare,
        describe_settings,
        format_comparison,
        gate_settings,
        read_report,
    )

    folder = Path(args.state)
    state = _read_state(folder)
    report = read_report(args.report)
    comparison = None
    settings = ""
    gate_path = folder / _GATE
    if state.gate_baseline is not None:
        values, sources = gate_settings(report.config, {})
        settings = describe_settings(values, sources)
        comparison = compare(report, read_report(gate_path), **values)
    body = [COMMENT_MARKER, state.message, ""]
    body.append(
        render_markdown(
            report,
            comparison,
            name=Path(args.report).name,
            baseline_name=(
                f"{state.path} @ {state.base[:12]}"
                if state.gate_baseline == _BASE
                else f"{state.path} (this pull request)"
            ),
            settings=settings,
        )
    )
    if state.mode == "accepted" and (folder / _BASE).is_file():
        values, _ = gate_settings(report.config, {})
        old_new = compare(read_report(gate_path), read_report(folder / _BASE), **values)
        body += [
            "",
            f"#### The new baseline against the old one ({state.base[:12]})",
            "",
            format_comparison(old_new, markdown=True),
        ]
    if args.link:
        body += ["", f"The HTML report (`report.html`, with every case) is in the run's "
                 f"artifacts: {_safe_link(args.link)}"]  # fmt: skip
    atomic_write_text(args.out, "\n".join(body) + "\n")
    if args.junit:
        from tnsai_eval.reports import write_junit

        write_junit(args.junit, report, comparison=comparison)
    if args.html:
        from tnsai_eval.plots import write_html

        write_html(args.html, report, comparison=comparison, settings=settings)
    passed = comparison is None or comparison.passed
    print(f"wrote {args.out}: {'pass' if passed else 'not a pass'}")
    return 0 if passed else 1


def _safe_link(url: str) -> str:
    # Only a plain http(s) address goes into the comment: no Markdown or HTML rides in.
    if not re.fullmatch(r"https?://[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+", url):
        raise ConfigError(f"--link {url!r} is not a plain http(s) URL")
    return f"<{url}>"
