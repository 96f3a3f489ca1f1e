"""The optimizer's settings as one frozen, validated record (``OptimizerConfig``).

``PromptOptimizer(llm, **options)`` builds one from its keyword options; a run
(``_run.Run``) reads only this record, never the optimizer, so nothing can
change a setting while a run goes. A variant of an optimizer is made with
``optimizer.with_options(search="racing")`` (a new optimizer, same client),
which is how the dashboard applies its controls. A new setting is one field
here and, when it has a rule, one row of ``_RULES``, the table every config
is checked against (each row names the field and what it accepts, so the
error names the bad value and what was expected). ``DEFAULT_CONFIG`` is the one set
of defaults: ``tnsai-eval optimize`` shows and uses these.

>>> config = OptimizerConfig(candidate_strategies=["concise"], max_calls=20)
>>> config.candidate_strategies, config.call_params["max_tokens"]
((<PromptStrategy.CONCISE: 'concise'>,), 128)
>>> config.replace(search="racing").search
'racing'
>>> OptimizerConfig(max_iterations=0)
Traceback (most recent call last):
tnsai_eval.errors.ConfigError: max_iterations must be at least 1, got 0
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from types import MappingProxyType
from typing import Any, cast

from tnsai_eval._util.scores import is_share
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import (
    DEFAULT_CALL_PARAMS,
    DEFAULT_TEMPLATE,
    Clock,
    check_template,
)
from tnsai_eval.llm import CallBudget, LLMClient
from tnsai_eval.optimizer._racing import RACING_BOUNDS, RacingBound
from tnsai_eval.optimizer._records import ProgressEvent
from tnsai_eval.optimizer._search import SEARCHES
from tnsai_eval.optimizer._strategies import DEFAULT_STRATEGIES, PromptStrategy
from tnsai_eval.scoring import DefaultPromptEvaluator, PromptEvaluator, TrajectoryEvaluator

__all__ = ["DEFAULT_CONFIG", "OptimizerConfig", "SearchMode"]

#: The name of a search mode in ``optimizer.SEARCHES`` ("exhaustive", "racing",
#: "halving", or one registered there).
SearchMode = str


@dataclass(frozen=True, slots=True)
class OptimizerConfig:
    """Every setting of a ``PromptOptimizer`` (see its docstring for what each does).

    Strategies given as names are parsed into ``PromptStrategy`` members and
    ``call_params`` is copied into a read-only mapping, so a config never
    changes after it is made; ``replace(**changes)`` makes a new, checked one.
    """

    max_iterations: int = 5
    target_score: float = 0.9
    candidate_strategies: Sequence[PromptStrategy | str] = DEFAULT_STRATEGIES
    evaluator: PromptEvaluator | TrajectoryEvaluator = field(default_factory=DefaultPromptEvaluator)
    search: SearchMode = "exhaustive"
    max_calls: int | None = None
    max_tokens: int | None = None
    max_seconds: float | None = None
    concurrency: int = 4
    seed: int = 0
    progress: Callable[[ProgressEvent], None] | None = None
    rewrite: bool = True
    few_shot_examples: int = 3
    template: str = DEFAULT_TEMPLATE
    call_params: Mapping[str, Any] = field(default_factory=lambda: DEFAULT_CALL_PARAMS)
    clock: Clock = time.monotonic
    split: float | None = 0.3
    rewrite_llm: LLMClient | None = None
    racing_bound: RacingBound = "auto"
    demo_sets: int = 0
    rewrite_max_tokens: int = 256
    labels: Sequence[str] | None = None
    alpha: float = 0.05
    budget: CallBudget | None = None

    def __post_init__(self) -> None:
        for rule in _RULES:
            value = getattr(self, rule.field)
            if not rule.accepts(value):
                shown = type(value).__name__ if rule.show_type else repr(value)
                expected = rule.expected() if callable(rule.expected) else rule.expected
                raise ConfigError(f"{rule.field} must be {expected}, got {shown}")
        # None (as callers of the optimizer have always been able to pass) means the default.
        if cast(object, self.evaluator) is None:
            object.__setattr__(self, "evaluator", DefaultPromptEvaluator())
        strategies = tuple(PromptStrategy.parse(s) for s in self.candidate_strategies)
        if not strategies and not self.rewrite and not self.demo_sets:
            raise ConfigError(
                "nothing to try: candidate_strategies is empty, rewrite=False and "
                "demo_sets=0; give at least one strategy, demo sets or allow the model's rewrite"
            )
        labels = self.labels
        if labels is None:
            # A label evaluator's labels are the task's declared labels.
            found = getattr(self.evaluator, "labels", None)
            labels = tuple(found) if isinstance(found, tuple | list) else None
        # Frozen: normalized values are set once, here.
        object.__setattr__(self, "labels", None if labels is None else tuple(labels))
        object.__setattr__(self, "candidate_strategies", strategies)
        object.__setattr__(self, "split", None if self.split is None else float(self.split))
        object.__setattr__(self, "call_params", MappingProxyType(dict(self.call_params)))

    @property
    def strategies(self) -> tuple[PromptStrategy, ...]:
        """``candidate_strategies`` as parsed members (always a tuple of them)."""
        return tuple(PromptStrategy.parse(s) for s in self.candidate_strategies)

    def replace(self, **changes: Any) -> OptimizerConfig:
        """A copy with ``changes`` applied, checked like a new config."""
        return dataclasses.replace(self, **changes)


def _number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


def _int(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int)


def _at_least(least: float) -> Callable[[object], bool]:
    return lambda v: _number(v) and cast(float, v) >= least


def _int_at_least(least: int) -> Callable[[object], bool]:
    return lambda v: _int(v) and cast(int, v) >= least


def _or_none(accepts: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda v: v is None or accepts(v)


def _template(value: object) -> bool:
    # check_template raises its own, more precise error (a stray {field}).
    check_template(cast(str, value))
    return True


def _labels(value: object) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and all(isinstance(x, str) and x.strip() for x in value)
    )


def _has_method(name: str) -> Callable[[object], bool]:
    return lambda v: callable(getattr(v, name, None))


@dataclass(frozen=True, slots=True)
class _Rule:
    """One row of the table: ``field`` must be ``expected`` (or what it returns, when read
    at check time); ``accepts`` says whether it is."""

    field: str
    accepts: Callable[[object], bool]
    expected: str | Callable[[], str]
    #: Show the bad value's type rather than its repr (an object's repr says little).
    show_type: bool = False


#: What each setting accepts, checked in this order (``OptimizerConfig.__post_init__``).
_RULES: tuple[_Rule, ...] = (
    _Rule("max_iterations", _at_least(1), "at least 1"),
    _Rule("target_score", is_share, "a number in [0, 1]"),
    # Read from the registry when checked, so a mode registered later is accepted.
    _Rule("search", lambda v: v in SEARCHES, lambda: f"one of {', '.join(SEARCHES.names())}"),
    _Rule("concurrency", _int_at_least(1), "an int >= 1"),
    _Rule("max_calls", _or_none(_at_least(0)), ">= 0 or None"),
    _Rule("max_tokens", _or_none(_at_least(0)), ">= 0 or None"),
    _Rule(
        "budget",
        lambda v: v is None or isinstance(v, CallBudget),
        "an llm.CallBudget or None",
        show_type=True,
    ),
    _Rule("max_seconds", _or_none(lambda v: _number(v) and cast(float, v) > 0), "> 0 or None"),
    _Rule("template", _template, "a str with {prompt} and {input}"),
    _Rule("alpha", lambda v: _number(v) and 0 < cast(float, v) < 1, "a level in (0, 1)"),
    _Rule(
        "split",
        _or_none(lambda v: _number(v) and 0.0 < cast(float, v) < 1.0),
        "the held-out share, a number in (0, 1), or None",
    ),
    _Rule("racing_bound", lambda v: v in RACING_BOUNDS, f"one of {', '.join(RACING_BOUNDS)}"),
    _Rule("demo_sets", _int_at_least(0), "an int >= 0"),
    _Rule("rewrite_max_tokens", _int_at_least(1), "an int >= 1"),
    _Rule("few_shot_examples", _at_least(0), ">= 0"),
    _Rule("call_params", lambda v: isinstance(v, Mapping), "a mapping of call parameters"),
    _Rule("labels", _or_none(_labels), "a sequence of non-empty strings"),
    # numbers.Integral: numpy's ints seed random.Random as well.
    _Rule("seed", lambda v: isinstance(v, Integral) and not isinstance(v, bool), "an int"),
    _Rule("rewrite", lambda v: isinstance(v, bool), "True or False"),
    _Rule(
        "evaluator",
        _or_none(lambda v: _has_method("evaluate")(v) or _has_method("evaluate_trajectory")(v)),
        "a PromptEvaluator (with evaluate(actual, expected)), a trajectory evaluator (with "
        "evaluate_trajectory(trajectory, case), for optimize(target=...)) or None",
        show_type=True,
    ),
    _Rule(
        "rewrite_llm",
        _or_none(_has_method("chat")),
        "an LLM client (with chat(messages)) or None",
        show_type=True,
    ),
    _Rule("progress", _or_none(callable), "a callable or None", show_type=True),
    _Rule("clock", callable, "a callable returning seconds", show_type=True),
    _Rule(
        "candidate_strategies",
        lambda v: isinstance(v, Iterable) and not isinstance(v, str),
        "a sequence of strategies (PromptStrategy members or names)",
    ),
)

#: The one set of defaults, shared by the API and ``tnsai-eval optimize``.
DEFAULT_CONFIG = OptimizerConfig()
