"""How an ``evaluate_prompt`` failure reads; the scoring itself is the core's.

``evaluate_prompt`` loads cases with ``tnsai_eval.datasets.load_cases`` and
scores them with ``tnsai_eval.evaluation.score_prompt`` (the one scoring engine),
so a score here means what it means there. What the plugin adds is the test
verdict, these messages, and the case records of the report: stable case ids,
``passed`` against the case threshold, the prompt's hash and file. A case whose
reply was never recorded in replay mode is *unrecorded*, and one that
``--llm-max-calls`` left unsent is *not run* (budget): neither has a score at
all, rather than a score of 0.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tnsai_eval._util.files import shown_path
from tnsai_eval._util.scores import is_share
from tnsai_eval.errors import ConfigError
from tnsai_eval.reports import PromptRecord, format_table, prompt_hash

if TYPE_CHECKING:
    from tnsai_eval.datasets import ScoringPlan
    from tnsai_eval.evaluation import PromptEvaluation, TargetEvaluation
    from tnsai_eval.pytest._session import PluginSession
    from tnsai_eval.records import CaseRecord

__all__ = [
    "check_min_score",
    "error_message",
    "excerpt",
    "failure_message",
    "load_prompt",
    "not_run_message",
    "other_model_hint",
    "prompt_record",
    "record",
    "shown_path",
    "unrecorded_message",
    "verdict",
]


def excerpt(text: str, limit: int = 50) -> str:
    """``text`` on one line, cut to ``limit`` characters with "..." when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def failure_message(result: PromptEvaluation, min_score: float, *, limit: int = 5) -> str:
    """Why the evaluation scored below ``min_score``, with its worst cases."""
    shown = min(limit, len(result.cases))
    return "\n".join(
        [
            f"prompt scored {result.mean_score:.3f} < min_score {min_score:g} "
            f"over {len(result.cases)} case(s)",
            f"worst {shown}:",
            _table(result.worst(limit)),
        ]
    )


def error_message(result: PromptEvaluation) -> str:
    """Which cases failed to run, and why (each error names its exception type)."""
    errors = result.errors
    lines = [f"{len(errors)} of {len(result.cases)} case(s) failed to run"]
    lines.extend(f"  - {c.input[:60]!r}: {c.error}" for c in errors)
    return "\n".join(lines)


def _table(cases: Sequence[CaseRecord]) -> str:
    rows = [
        (
            excerpt(c.input),
            excerpt(c.expected),
            excerpt(c.output if c.output is not None else f"<error: {c.error}>"),
            "-" if c.score is None else f"{c.score:.3f}",
        )
        for c in cases
    ]
    return format_table(("input", "expected", "output", "score"), rows, indent=2)


def unrecorded_message(result: PromptEvaluation, command: str, reason: str) -> str:
    """One message for every unrecorded case: how many, why, and the command that records."""
    missing = result.unrecorded
    fix = other_model_hint(missing) or f"Record them with:\n    {command}"
    head = f"{len(missing)} of {len(result.cases)} case(s) unrecorded ({reason}); they are not "
    return _listed(head + f"scored. {fix}", missing)


def other_model_hint(cases: Iterable[CaseRecord]) -> str | None:
    """What the store said of unrecorded ``cases`` when it holds their replies for another
    model (which to select: recording again is not the fix); ``None`` otherwise."""
    from tnsai_eval.llm import OTHER_MODEL_HINT

    # Replay is keyed on the model: such a miss names the model that has the replies.
    errors = (c.error for c in cases if c.error and OTHER_MODEL_HINT in c.error)
    return next((e[e.index(OTHER_MODEL_HINT) :] for e in errors), None)


def _listed(head: str, cases: Sequence[CaseRecord]) -> str:
    """``head``, then the inputs of the first 20 ``cases``, one a line."""
    lines = [head, *(f"  - {excerpt(c.input, 60)!r}" for c in cases[:20])]
    if len(cases) > 20:
        lines.append(f"  ... and {len(cases) - 20} more")
    return "\n".join(lines)


def not_run_message(result: PromptEvaluation, limit: int | None) -> str:
    """One message for every case the call budget left unsent."""
    skipped = result.not_run
    head = f"{len(skipped)} of {len(result.cases)} case(s) not run: budget (--llm-max-calls "
    return _listed(head + f"{limit} spent); they are not scored", skipped)


def load_prompt(
    prompt: str | os.PathLike[str], rootdir: Path | None = None
) -> tuple[str, str | None]:
    """``(text, file)``: a ``str`` is the prompt itself; a ``pathlib.Path`` is a prompt file.

    ``file`` is relative to ``rootdir`` (pytest's): a committed report names the
    prompt the same way on every machine, even when the test built the path
    from ``__file__``.
    """
    if isinstance(prompt, os.PathLike):
        path = Path(prompt)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read prompt file {str(path)!r}: {exc}") from exc
        if not text.strip():
            raise ConfigError(f"prompt file {str(path)!r} is empty")
        return text, shown_path(path, rootdir)
    return prompt, None


def check_min_score(value: object) -> None:
    """``min_score`` checked before any call: ``None`` or a number in [0, 1]."""
    if value is not None and not is_share(value):
        raise ConfigError(
            f"evaluate_prompt: min_score must be a number in [0, 1] or None, got {value!r}"
        )


def record(
    session: PluginSession,
    metric: str,
    result: PromptEvaluation,
    plan: ScoringPlan,
    prompt: PromptRecord,
) -> None:
    """Keep the mean (unless no case has a reply) and every case in the report."""
    if any(c.asked for c in result.cases):
        session.record_metric(metric, result.mean_score)
    session.record_cases(metric, result.cases, prompt, threshold=plan.threshold)


def verdict(
    result: PromptEvaluation, min_score: float | None, nodeid: str, session: PluginSession
) -> str | None:
    """Why the test fails (unrecorded cases, failed calls, a low score), or ``None``."""
    problems = []
    # --tnsai-allow-unrecorded accepts them: the gate and the test agree.
    if result.unrecorded and not session.options.gate_settings.allow_unrecorded:
        command = f"pytest --llm-record record {nodeid}"
        options = session.options
        reason = (
            f"no reply in the store {options.describe()['store']}; replay mode "
            f"({options.record_mode_source})"
        )
        problems.append(unrecorded_message(result, command, reason))
    if result.not_run:
        problems.append(not_run_message(result, session.options.max_calls))
    if result.errors:
        problems.append(error_message(result))
    if problems:
        return "\n".join(problems)
    if min_score is not None and result.mean_score < min_score:
        return failure_message(result, min_score)
    return None


def prompt_record(text: str, file: str | None, options: Mapping[str, Any]) -> PromptRecord:
    """The evaluated prompt, with the hash of everything sent except the case input."""
    from tnsai_eval.evaluation import DEFAULT_CALL_PARAMS, DEFAULT_TEMPLATE

    template = options.get("template") or DEFAULT_TEMPLATE
    params = options.get("params")
    # A changed hash means the model saw something different (template, call
    # parameters, response_format...), even when the prompt text reads the same.
    digest = prompt_hash(
        text.rstrip(), template, dict(DEFAULT_CALL_PARAMS if params is None else params)
    )
    return PromptRecord("score", text, digest, file)


def target_record(result: TargetEvaluation) -> PromptRecord:
    """What a target sent, as the test's prompt: its distinct system prompts and call
    parameters, hashed, so that a baseline comparison shows when they changed."""
    systems, params = result.systems, result.call_params
    text = "\n\n".join(systems) if systems else "(no system prompt)"
    if params:
        text += "\n\n" + "\n".join(f"params: {line}" for line in params)
    return PromptRecord("score", text, prompt_hash(list(systems), list(params)))
