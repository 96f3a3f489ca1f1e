"""The ``norm_check`` and ``refine_until`` markers: decorators, validation, specs.

Markers are validated when their test is set up; a bad argument fails that
test's setup with a message naming the argument and what was expected, rather
than surfacing later as an obscure error inside the loop or the engine.

Use the decorators exported by ``pytest_plugin`` rather than
``pytest.mark.norm_check(SomeAgent)``: given a single class and no keywords,
``pytest.mark.X(...)`` decorates that class instead of recording it as an
argument (a pytest rule). The decorators always record their arguments.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tnsai_eval.norms import NormEngine
    from tnsai_eval.refinement import CompletionCriteria, StopHook

__all__ = [
    "MARKER_LINES",
    "NormSpec",
    "RefineSpec",
    "norm_check",
    "norm_spec",
    "refine_spec",
    "refine_until",
]

MARKER_LINES = (
    "norm_check(*agent_classes_engines_or_entries, state=None): check every action of the "
    "agents the test used (the `agent` fixture, `norm_actions`) against the norms; a "
    "violation fails the test.",
    "refine_until(task, max_iterations=10, timeout=..., must_contain=..., ...): the test's "
    "`refine(draft)` runs a RefinementLoop with these completion criteria on the `llm` "
    "fixture; the test fails unless it succeeds.",
)

# Keyword -> what it must be, for the error message.
_REFINE_ARGS: dict[str, str] = {
    "task": "a non-empty str",
    "max_iterations": "an int >= 1",
    "timeout": "seconds (> 0) or a timedelta",
    "must_contain": "a str or a list of str",
    "must_not_contain": "a str or a list of str",
    "matches_pattern": "a regex str or compiled pattern",
    "valid_json": "a bool",
    "word_count": "an int (minimum) or a (min, max) pair",
    "min_lines": "an int >= 1",
    "compiler_check": "a shell command str",
    "test_command": "a shell command str",
    "lint_check": "a shell command str",
    "check_env": "a mapping of variable names to str values, added to the command checks' "
    "minimal environment",
    "llm_check": "a question str or a (question, threshold) pair",
    "stop": "a StopHook",
    "chat_params": "a mapping of model call parameters (max_tokens, temperature...)",
}


def norm_check(*targets: object, state: Mapping[str, object] | None = None) -> pytest.MarkDecorator:
    """Mark a test whose agents' actions must respect norms.

    ``targets``: agent classes decorated with ``@norm``, ``NormEngine``\\ s,
    ``NormEntry`` records or iterables of them; ``state`` is the mapping CEL
    conditions are evaluated against.

    >>> mark = norm_check(state={"hasConsent": False})
    >>> mark.name, mark.kwargs["state"]
    ('norm_check', {'hasConsent': False})
    """
    kwargs: dict[str, Any] = {} if state is None else {"state": state}
    return pytest.mark.norm_check.with_args(*targets, **kwargs)


def refine_until(
    *,
    task: str,
    max_iterations: int = 10,
    timeout: float | timedelta = 300.0,
    must_contain: str | Sequence[str] = (),
    must_not_contain: str | Sequence[str] = (),
    matches_pattern: str | re.Pattern[str] | None = None,
    valid_json: bool = False,
    word_count: int | tuple[int, int | None] | None = None,
    min_lines: int | None = None,
    compiler_check: str | None = None,
    test_command: str | None = None,
    lint_check: str | None = None,
    check_env: Mapping[str, str] | None = None,
    llm_check: str | tuple[str, float] | None = None,
    stop: StopHook | None = None,
    chat_params: Mapping[str, Any] | None = None,
) -> pytest.MarkDecorator:
    """Mark a test that refines a draft until these completion criteria pass.

    >>> refine_until(task="Write JSON", valid_json=True).kwargs
    {'task': 'Write JSON', 'valid_json': True}
    """
    given = {
        "task": task,
        "max_iterations": max_iterations,
        "timeout": timeout,
        "must_contain": must_contain,
        "must_not_contain": must_not_contain,
        "matches_pattern": matches_pattern,
        "valid_json": valid_json,
        "word_count": word_count,
        "min_lines": min_lines,
        "compiler_check": compiler_check,
        "test_command": test_command,
        "lint_check": lint_check,
        "check_env": check_env,
        "llm_check": llm_check,
        "stop": stop,
        "chat_params": chat_params,
    }
    defaults = {"max_iterations": 10, "timeout": 300.0, "valid_json": False}
    # Only what was given, so the mark reads like the call that made it.
    kwargs = {
        k: v for k, v in given.items() if v not in (None, ()) and defaults.get(k, object()) != v
    }
    return pytest.mark.refine_until.with_args(**kwargs)


class MarkerError(Exception):
    """A marker argument is wrong; the message names it."""


@dataclass(frozen=True, slots=True)
class NormSpec:
    engine: NormEngine
    state: Mapping[str, object]
    agent_class: type | None


@dataclass(frozen=True, slots=True)
class RefineSpec:
    task: str
    max_iterations: int
    timeout: timedelta
    options: Mapping[str, Any] = field(default_factory=dict)

    def criteria(self, judge: Any) -> CompletionCriteria:
        """Build the completion criteria; ``judge`` is the model for ``llm_check``."""
        from tnsai_eval.refinement import CompletionCriteria

        builder = CompletionCriteria.builder()
        o = self.options
        for cmd in ("compiler_check", "test_command", "lint_check"):
            if o.get(cmd):
                getattr(builder, cmd)(o[cmd], env=o.get("check_env"))
        if o.get("must_contain"):
            builder.must_contain(*_strs(o["must_contain"]))
        if o.get("must_not_contain"):
            builder.must_not_contain(*_strs(o["must_not_contain"]))
        if o.get("matches_pattern") is not None:
            builder.matches_pattern(o["matches_pattern"])
        if o.get("valid_json"):
            builder.valid_json()
        if o.get("word_count") is not None:
            bounds = o["word_count"]
            builder.word_count(*((bounds,) if isinstance(bounds, int) else bounds))
        if o.get("min_lines") is not None:
            builder.min_lines(o["min_lines"])
        if o.get("llm_check"):
            question = o["llm_check"]
            builder.with_llm(judge)
            if isinstance(question, str):
                builder.llm_check(question)
            else:
                builder.llm_check(question[0], float(question[1]))
        return builder.build()


def _strs(value: str | Iterable[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def refine_spec(mark: pytest.Mark) -> RefineSpec:
    """Validate a ``refine_until`` mark; raises ``MarkerError`` naming the bad argument."""
    if mark.args:
        raise MarkerError(
            f"@refine_until takes keyword arguments only, got positional {mark.args!r}"
        )
    kw = dict(mark.kwargs)
    unknown = sorted(set(kw) - set(_REFINE_ARGS))
    if unknown:
        raise MarkerError(
            f"@refine_until: unknown argument(s) {_with_hints(unknown, _REFINE_ARGS)}; "
            f"expected some of {', '.join(_REFINE_ARGS)}"
        )

    def bad(name: str) -> MarkerError:
        return MarkerError(
            f"@refine_until: {name}={kw[name]!r} is not valid; expected {_REFINE_ARGS[name]}"
        )

    task = kw.get("task")
    if not isinstance(task, str) or not task.strip():
        raise MarkerError(f"@refine_until needs task=<a non-empty str>, got {task!r}")
    max_iterations = kw.get("max_iterations", 10)
    if not _is_int(max_iterations) or max_iterations < 1:
        raise bad("max_iterations")
    timeout = kw.get("timeout", 300.0)
    if isinstance(timeout, timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, int | float) and not isinstance(timeout, bool):
        seconds = float(timeout)
    else:
        raise bad("timeout")
    if not 0 < seconds < math.inf:  # NaN and inf would never time out
        raise bad("timeout")
    checks = {k: v for k, v in kw.items() if k not in ("task", "max_iterations", "timeout")}
    for name in ("must_contain", "must_not_contain"):
        if name in checks and not _str_or_strs(checks[name]):
            raise bad(name)
    if "matches_pattern" in checks:
        pattern = checks["matches_pattern"]
        if isinstance(pattern, str):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise MarkerError(
                    f"@refine_until: matches_pattern={pattern!r} is not a valid regex: {exc}"
                ) from None
        elif not isinstance(pattern, re.Pattern):
            raise bad("matches_pattern")
    if "valid_json" in checks and not isinstance(checks["valid_json"], bool):
        raise bad("valid_json")
    if "word_count" in checks and not _word_bounds(checks["word_count"]):
        raise bad("word_count")
    if "min_lines" in checks and (not _is_int(checks["min_lines"]) or checks["min_lines"] < 1):
        raise bad("min_lines")
    for name in ("compiler_check", "test_command", "lint_check"):
        if name in checks and (not isinstance(checks[name], str) or not checks[name].strip()):
            raise bad(name)
    if "check_env" in checks and not _env_mapping(checks["check_env"]):
        raise bad("check_env")
    if "llm_check" in checks and not _judge_question(checks["llm_check"]):
        raise bad("llm_check")
    if "stop" in checks:
        from tnsai_eval.refinement import StopHook

        if not isinstance(checks["stop"], StopHook):
            raise bad("stop")
    if "chat_params" in checks and not isinstance(checks["chat_params"], Mapping):
        raise bad("chat_params")
    if not any(k not in ("stop", "chat_params", "check_env") for k in checks):
        raise MarkerError(
            "@refine_until needs at least one completion check (must_contain=, valid_json=, "
            "compiler_check=, ...); with none, every draft would pass unrefined"
        )
    return RefineSpec(task, max_iterations, timedelta(seconds=seconds), checks)


def _with_hints(unknown: Sequence[str], known: Iterable[str]) -> str:
    """``must_contian (did you mean must_contain?), ...``: a typo is the usual cause."""
    import difflib  # only on this error path: not a start-up cost of every run

    names = list(known)
    shown = []
    for name in unknown:
        close = difflib.get_close_matches(name, names, n=1)
        shown.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return ", ".join(shown)


def _str_or_strs(value: object) -> bool:
    if isinstance(value, str):
        return bool(value)
    return (
        isinstance(value, list | tuple)
        and bool(value)
        and all(isinstance(v, str) and v for v in value)
    )


def _env_mapping(value: object) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and k and "=" not in k and isinstance(v, str) for k, v in value.items()
    )


def _word_bounds(value: object) -> bool:
    if _is_int(value):
        return value >= 0  # type: ignore[operator]
    if isinstance(value, list | tuple) and len(value) == 2:
        low, high = value
        return _is_int(low) and low >= 0 and (high is None or (_is_int(high) and high >= low))
    return False


def _judge_question(value: object) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list | tuple) and len(value) == 2:
        question, threshold = value
        return (
            isinstance(question, str)
            and bool(question.strip())
            and isinstance(threshold, int | float)
            and 0.0 <= threshold <= 1.0
        )
    return False


def norm_spec(mark: pytest.Mark) -> NormSpec:
    """Validate a ``norm_check`` mark into one engine; raises ``MarkerError``."""
    from tnsai_eval.errors import ConfigError
    from tnsai_eval.norms import NormEngine, NormEntry

    unknown = sorted(set(mark.kwargs) - {"state"})
    if unknown:
        raise MarkerError(
            f"@norm_check: unknown argument(s) {_with_hints(unknown, ['state'])}; "
            "expected targets and state="
        )
    state = mark.kwargs.get("state") or {}
    if not isinstance(state, Mapping):
        raise MarkerError(
            f"@norm_check: state={state!r} is not valid; expected a mapping of names to values"
        )
    if not mark.args:
        raise MarkerError(
            "@norm_check needs what to check against: an agent class decorated with @norm, "
            "a NormEngine, or NormEntry records"
        )
    engine = NormEngine()
    agent_class: type | None = None
    for target in mark.args:
        if isinstance(target, NormEngine):
            entries = target.get_all_norms()
        elif isinstance(target, NormEntry):
            entries = [target]
        elif isinstance(target, type):
            try:
                entries = NormEngine.from_class(target).get_all_norms()
            except ConfigError as exc:
                raise MarkerError(f"@norm_check: {exc}") from None
            agent_class = agent_class or target
        elif isinstance(target, Iterable) and not isinstance(target, str | bytes | Mapping):
            entries = list(target)
            if not all(isinstance(e, NormEntry) for e in entries):
                raise MarkerError(
                    f"@norm_check: {target!r} holds items that are not NormEntry records"
                )
        else:
            raise MarkerError(
                f"@norm_check: {target!r} is not valid; expected an agent class decorated with "
                "@norm, a NormEngine, a NormEntry or an iterable of NormEntry"
            )
        for entry in entries:
            engine.add_norm(entry)
    try:
        # Checked against state (CEL): a bad condition fails setup, naming its norm.
        engine.check_conditions()
    except ConfigError as exc:
        raise MarkerError(f"@norm_check: {exc}") from None
    return NormSpec(engine, dict(state), agent_class)
