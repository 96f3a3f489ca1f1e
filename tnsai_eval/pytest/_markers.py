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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from tnsai_eval._util.hints import unknown_names

if TYPE_CHECKING:
    from tnsai_eval.norms import NormEngine
    from tnsai_eval.refinement import CompletionCriteria, CriteriaSpec, StopHook

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

# The loop's own keywords -> what each must be. Every other keyword is a criteria
# option, read (and checked) by tnsai_eval.refinement.CriteriaSpec: one list of
# them, not a copy here.
_LOOP_ARGS: dict[str, str] = {
    "task": "a non-empty str",
    "max_iterations": "an int >= 1",
    "timeout": "seconds (> 0) or a timedelta",
    "stop": "a StopHook",
    "chat_params": "a mapping of model call parameters (max_tokens, temperature...)",
    "reply_parser": "a function str -> str, None, or one of 'auto', 'first_json_block', "
    "'first_code_block', 'strip_code_fence', 'none'",
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
    stop: StopHook | None = None,
    chat_params: Mapping[str, Any] | None = None,
    reply_parser: Callable[[str], str] | str | None = "auto",
    **criteria: Any,
) -> pytest.MarkDecorator:
    """Mark a test that refines a draft until these completion criteria pass.

    ``reply_parser`` is ``RefinementLoop``'s: by default (``"auto"``) the first
    JSON block of each reply when ``valid_json``/``json_schema`` is asked for,
    else the body of a reply that is one fenced block; a name
    (``"first_code_block"``...), a function or ``None`` (replies verbatim).

    ``criteria`` are the options of ``tnsai_eval.refinement.CriteriaSpec``
    (``must_contain=``, ``valid_json=``, ``matches_pattern=``, ``word_count=``,
    ``min_lines=``, ``compiler_check=``, ``test_command=``, ``lint_check=``,
    ``llm_check=``...), checked when the test is set up.

    >>> refine_until(task="Write JSON", valid_json=True).kwargs
    {'task': 'Write JSON', 'valid_json': True}
    """
    from tnsai_eval.refinement import CRITERIA_OPTIONS

    unknown = unknown_names(criteria, CRITERIA_OPTIONS)
    if unknown:  # a TypeError, as for any unknown keyword of a call
        raise TypeError(f"refine_until() got unknown criteria option(s) {unknown}")
    given = {"task": task, "stop": stop, "chat_params": chat_params, **criteria}
    if reply_parser != "auto":
        # None is a choice here (verbatim replies), so it is kept as the string "none".
        given["reply_parser"] = "none" if reply_parser is None else reply_parser
    if max_iterations != 10:
        given["max_iterations"] = max_iterations
    if timeout != 300.0:
        given["timeout"] = timeout
    # Only what was given, so the mark reads like the call that made it.
    kwargs = {k: v for k, v in given.items() if v is not None and not (k != "task" and v == ())}
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
    criteria_spec: CriteriaSpec
    options: Mapping[str, Any] = field(default_factory=dict)  # stop, chat_params, reply_parser
    given: Mapping[str, Any] = field(default_factory=dict)  # the mark's keywords, as given

    def criteria(self, judge: Any) -> CompletionCriteria:
        """Build the completion criteria; ``judge`` is the model for ``llm_check``."""
        return self.criteria_spec.build(judge)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def refine_spec(mark: pytest.Mark) -> RefineSpec:
    """Validate a ``refine_until`` mark; raises ``MarkerError`` naming the bad argument."""
    from tnsai_eval.errors import ConfigError
    from tnsai_eval.refinement import CRITERIA_OPTIONS, CriteriaSpec, StopHook

    if mark.args:
        raise MarkerError(
            f"@refine_until takes keyword arguments only, got positional {mark.args!r}"
        )
    kw = dict(mark.kwargs)
    known = {**_LOOP_ARGS, **CRITERIA_OPTIONS}
    unknown = unknown_names(kw, known)
    if unknown:
        raise MarkerError(
            f"@refine_until: unknown argument(s) {unknown}; expected some of {', '.join(known)}"
        )

    def bad(name: str) -> MarkerError:
        return MarkerError(
            f"@refine_until: {name}={kw[name]!r} is not valid; expected {_LOOP_ARGS[name]}"
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
    if "stop" in kw and not isinstance(kw["stop"], StopHook):
        raise bad("stop")
    if "chat_params" in kw and not isinstance(kw["chat_params"], Mapping):
        raise bad("chat_params")
    if "reply_parser" in kw:
        from tnsai_eval.refinement import resolve_reply_parser

        try:
            resolve_reply_parser(kw["reply_parser"])
        except ConfigError:
            raise bad("reply_parser") from None
    try:
        spec = CriteriaSpec.from_options(**{k: v for k, v in kw.items() if k in CRITERIA_OPTIONS})
        if not spec.has_checks:
            raise MarkerError(
                "@refine_until needs at least one completion check (must_contain=, "
                "valid_json=, compiler_check=, ...); with none, every draft would pass unrefined"
            )
        spec.validate()  # the builder names a bad value now, before any model call
    except ConfigError as exc:
        raise MarkerError(f"@refine_until: {exc}") from None
    loop_options: dict[str, Any] = {
        k: kw[k] for k in ("stop", "chat_params", "reply_parser") if k in kw
    }
    return RefineSpec(task, max_iterations, timedelta(seconds=seconds), spec, loop_options, kw)


def norm_spec(mark: pytest.Mark) -> NormSpec:
    """Validate a ``norm_check`` mark into one engine; raises ``MarkerError``."""
    from tnsai_eval.errors import ConfigError
    from tnsai_eval.norms import NormEngine, NormEntry

    unknown = unknown_names(mark.kwargs, ["state"])
    if unknown:
        raise MarkerError(
            f"@norm_check: unknown argument(s) {unknown}; expected targets and state="
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
