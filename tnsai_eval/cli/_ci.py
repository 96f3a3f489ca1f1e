"""``tnsai-eval ci``: the steps of the pull-request workflow that are not GitHub's own.

A pull request is gated against the run accepted on its base branch, never
against a baseline it could rewrite itself:

``tnsai-eval ci baseline --base SHA``
    reads the baseline report as committed on the base commit (``git show
    SHA:PATH``) and decides what the run is gated against: the base's
    baseline, unless the pull request changes the baseline file *and* carries
    the label ``tnsai-accept-baseline`` (read from the event payload,
    ``$GITHUB_EVENT_PATH``); then its own new baseline, and the comment leads
    with what it gives up. Since the baseline lives on the base branch,
    merging such a pull request is the refresh. With no baseline on the base
    commit (the first pull request) there is nothing to gate, and it says so.
    The gate settings (``tnsai_gate``, ``tnsai_tolerance``...) are read from
    the base commit's pytest configuration too: a pull request that changes
    them is shown the change and fails unless it carries the label. Writes
    ``gate-baseline.json`` (the chosen baseline, carrying that decision for
    the pytest step), ``base-baseline.json`` and ``ci.json`` into ``--out``.

``tnsai-eval ci comment REPORT --state DIR --pytest-exit CODE``
    compares the run with the chosen baseline under the base's settings and
    writes the pull-request comment (Markdown, its first line the verdict,
    under 60,000 characters: lists are cut worst first, "and N more in
    report.html"), the HTML page and JUnit XML. ``--pytest-exit`` is the
    pytest step's exit status: after 2, 3, 4 or 5 (interrupted, internal
    error, usage error, no tests) the verdict is never PASS, and a report
    pytest did not write is a failure, not a crash. Exit 0 when the run
    passes, 1 when it does not, 2 on bad input: the same verdict as the
    pytest step.

No step needs a token: posting the comment is the workflow's job (and on a
pull request from a fork, whose token cannot comment, the same file goes to
the job summary).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tnsai_eval._util.files import atomic_write_text
from tnsai_eval._util.secrets import frozen_secrets
from tnsai_eval.cli._main import subcommand
from tnsai_eval.errors import ConfigError
from tnsai_eval.settings import ACCEPT_LABEL

if TYPE_CHECKING:
    from tnsai_eval.reports import GateSettings

__all__ = ["ACCEPT_LABEL", "COMMENT_LIMIT", "COMMENT_MARKER", "CiState", "add_parser"]

#: The comment's last line: a marker a tool can find the comment by (its first
#: line is the verdict).
COMMENT_MARKER = "<!-- tnsai-eval prompt report -->"
#: The longest comment written: GitHub refuses bodies over 65,536 characters.
COMMENT_LIMIT = 60_000

_STATE = "ci.json"
_GATE = "gate-baseline.json"
_BASE = "base-baseline.json"
_PR = "pr-baseline.json"


@dataclass(frozen=True, slots=True)
class CiState:
    """What ``ci baseline`` decided: which baseline gates the run, and why.

    ``mode``: ``unchanged`` (the PR leaves the baseline alone), ``rewritten``
    (it changes it without the label: gated against the base's anyway),
    ``accepted`` (it changes it and carries the label: gated against its own),
    ``first`` (the base has no baseline yet: nothing to gate). ``settings``
    are the base commit's gate settings (``GateSettings.to_dict``).
    """

    mode: str
    base: str
    path: str
    label: str
    labelled: bool
    message: str
    gate_baseline: str | None
    settings: dict[str, Any]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"


def add_parser(subparsers: Any) -> None:
    parser = subcommand(subparsers, "ci", __doc__)
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
    comment.add_argument(
        "--pytest-exit",
        metavar="CODE",
        help="the pytest step's exit status; after 2-5 the verdict is never PASS, and an "
        "empty value (the step never ran) is a failure too",
    )
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


def _base_settings(base: str) -> GateSettings:
    """The gate settings of the base commit's pytest configuration (the first file
    pytest would read in the current directory), each said to come from there."""
    from tnsai_eval.reports import GateSettings
    from tnsai_eval.settings import PYTEST_CONFIG_FILES, pytest_ini_options

    for name in PYTEST_CONFIG_FILES:
        text = _git_show(base, name)
        if text is None:
            continue
        options = pytest_ini_options(name, text.decode("utf-8", "replace"))
        if options is None:
            continue
        values = {k.removeprefix("tnsai_"): v for k, v in options.items()}
        return GateSettings.resolve([(values, f"{name} at the base commit")], ini=True)
    return GateSettings()


def decide(base: str, path: str, *, labels: list[str], label: str) -> tuple[CiState, bytes | None]:
    """The decision of ``ci baseline``, and the base's baseline (``None``: it has none)."""
    old = _git_show(base, path)
    here = Path(path)
    new = here.read_bytes() if here.is_file() else None
    labelled = label in labels
    shown = f"`{path}`" if "`" not in path else repr(path)
    if old is None:
        mode = "first"
        message = (
            f"The base commit has no {shown}: there is no accepted run to gate against yet, "
            "so nothing is gated. Merging a pull request that adds it makes it the first one."
        )
    elif new == old:
        mode = "unchanged"
        message = f"Gated against {shown} as committed on the base branch ({base[:12]})."
    elif labelled:
        mode = "accepted"
        message = (
            f"This pull request accepts a new baseline (label `{label}`): the run is gated "
            f"against its own {shown}; merging it makes that the accepted run. What it gives "
            "up against the old one is below."
        )
    else:
        mode = "rewritten"
        message = (
            f"This pull request changes {shown} but does not carry the label `{label}`: "
            f"the run is gated against the base branch's baseline ({base[:12]}), not its own. "
            f"Add the label to accept the new baseline."
        )
    state = CiState(
        mode=mode,
        base=base,
        path=here.as_posix(),
        label=label,
        labelled=labelled,
        message=message,
        gate_baseline={"unchanged": _BASE, "rewritten": _BASE, "accepted": _PR}.get(mode),
        settings=_base_settings(base).to_dict(),
    )
    return state, old


def _gate_baseline(state: CiState, chosen: bytes | None, where: str) -> str:
    """The gate baseline's JSON: the chosen report (an empty one when there is
    nothing to gate), its ``config`` carrying the decision for the pytest step."""
    from tnsai_eval.reports import PR_GATE_KEY, GateSettings, PullRequestGate

    data: Any = {"schema_version": 2, "tests": [], "config": {}}
    if chosen is not None:
        try:
            data = json.loads(chosen.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"{where} is not a JSON report: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("config", {}), dict):
            raise ConfigError(f"{where} is not a JSON report object")
    settings = GateSettings.from_dict(state.settings) or GateSettings()
    pr = PullRequestGate(state.mode, state.base, state.label, state.labelled, settings)
    data.setdefault("config", {})[PR_GATE_KEY] = pr.to_dict()
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _baseline(args: argparse.Namespace) -> int:
    state, old = decide(args.base, args.path, labels=_labels(args.event), label=args.label)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if old is not None:
        (out / _BASE).write_bytes(old)
    here = Path(args.path)
    if here.is_file():
        (out / _PR).write_bytes(here.read_bytes())
    chosen = None if state.gate_baseline is None else (out / state.gate_baseline).read_bytes()
    where = f"{state.path} ({'this pull request' if state.mode == 'accepted' else state.base[:12]})"
    atomic_write_text(out / _GATE, _gate_baseline(state, chosen, where))
    atomic_write_text(out / _STATE, state.to_json())
    print(state.message)
    print(f"gate baseline: {(out / _GATE).as_posix()}" + ("" if chosen else " (nothing to gate)"))
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


def _exit_status(given: str | None) -> tuple[int | None, list[str]]:
    """pytest's exit status as ``--pytest-exit`` gave it, and a problem when it is unknown."""
    if given is None:
        return None, []
    if not given.strip():
        return None, ["the pytest step reported no exit status (it did not run)"]
    try:
        return int(given), []
    except ValueError:
        raise ConfigError(f"--pytest-exit {given!r} is not an exit status") from None


@frozen_secrets()  # every line is masked: the secrets are read once
def _comment(args: argparse.Namespace) -> int:
    from tnsai_eval.cli._report import render_markdown
    from tnsai_eval.reports import (
        GateSettings,
        PullRequestGate,
        Report,
        compare,
        format_comparison,
        gate_verdict,
        read_report,
    )

    folder = Path(args.state)
    state = _read_state(folder)
    exit_status, problems = _exit_status(args.pytest_exit)
    if Path(args.report).is_file() or exit_status in (None, 0):
        report = read_report(args.report)
    else:
        # pytest stopped before it wrote a report (a usage error, a crash):
        # the comment says so rather than the step crashing with no comment.
        report = Report(tests=())
        problems.append(f"pytest wrote no report ({Path(args.report).name})")
    gate_baseline = read_report(folder / _GATE)
    pr = PullRequestGate.from_config(gate_baseline.config) or PullRequestGate(
        state.mode, state.base, state.label, state.labelled
    )
    run_settings = GateSettings.resolve([(report.config, "this run's configuration")])
    sources = report.config.get("gate_sources")
    if isinstance(sources, dict):
        # The run recorded where each of its settings came from (a flag, an ini key).
        named = {str(k): str(v) for k, v in sources.items()}
        run_settings = replace(run_settings, sources={**run_settings.sources, **named})
    settings, changes = pr.judge_with(run_settings)
    comparison = compare(report, gate_baseline, settings=settings)
    old_new = None
    if state.mode == "accepted" and (folder / _BASE).is_file():
        old_new = compare(gate_baseline, read_report(folder / _BASE), settings=settings)
    verdict = gate_verdict(
        report,
        comparison,
        exit_status=exit_status,
        pr=pr,
        settings_changes=changes,
        old_new=old_new,
        problems=problems,
    )
    baseline_name = {
        _BASE: f"{state.path} @ {state.base[:12]}",
        _PR: f"{state.path} (this pull request)",
    }.get(state.gate_baseline or "", "none: the base branch has no baseline yet")

    def body(limit: int | None) -> str:
        markdown = render_markdown(
            report,
            comparison,
            verdict,
            name=Path(args.report).name,
            baseline_name=baseline_name,
            settings=settings.describe(),
            limit=limit,
        )
        # The verdict stays the first line; what `ci baseline` decided follows it.
        head, _, rest = markdown.partition("\n")
        out = [head, "", state.message, rest]
        if old_new is not None:
            out += [
                "",
                f"#### What the new baseline gives up against the old one ({state.base[:12]})",
                "",
                format_comparison(old_new, markdown=True, limit=limit),
            ]
        if args.link:
            out += ["", f"The HTML report (`report.html`, with every case) is in the run's "
                    f"artifacts: {_safe_link(args.link)}"]  # fmt: skip
        return "\n".join([*out, "", COMMENT_MARKER]) + "\n"

    text = _fitted(body)
    atomic_write_text(args.out, text)
    if args.junit:
        from tnsai_eval.reports import write_junit

        write_junit(args.junit, report, comparison=comparison, verdict=verdict)
    if args.html:
        from tnsai_eval.plots import write_html

        write_html(args.html, report, comparison=comparison, settings=settings.describe())
    print(f"wrote {args.out}: {verdict.headline}")
    return 0 if verdict.passed else 1


def _fitted(body: Callable[[int | None], str]) -> str:
    """The longest rendering of ``body`` that fits ``COMMENT_LIMIT``: every list in
    full, else cut to fewer and fewer items (worst first), else cut as text."""
    for limit in (None, 200, 50, 20, 5, 0):
        text = body(limit)
        if len(text) <= COMMENT_LIMIT:
            return text
    # Even the shortest rendering is too long (huge ids): the verdict is the
    # first line, so cutting the end keeps it; the marker stays last.
    note = "\n\n... cut to fit a comment: the full report is in report.html\n"
    return (
        text[: COMMENT_LIMIT - len(note) - len(COMMENT_MARKER) - 1] + note + COMMENT_MARKER + "\n"
    )


def _safe_link(url: str) -> str:
    # Only a plain http(s) address goes into the comment: no Markdown or HTML rides in.
    if not re.fullmatch(r"https?://[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+", url):
        raise ConfigError(f"--link {url!r} is not a plain http(s) URL")
    return f"<{url}>"
