"""The optimizer's settings as one frozen, validated record (``OptimizerConfig``).

``PromptOptimizer(llm, **options)`` builds one from its keyword options; a run
(``_run.Run``) reads only this record, never the optimizer, so nothing can
change a setting while a run goes. A variant of an optimizer is made with
``optimizer.with_options(search="racing")`` (a new optimizer, same client),
which is how the dashboard applies its controls. A new setting is one field
here, with its check in ``__post_init__``.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, cast

from tnsai_eval._util.scores import is_share
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import CallBudget, LLMClient
from tnsai_eval.optimizer._engine import (
    DEFAULT_CALL_PARAMS,
    DEFAULT_TEMPLATE,
    Clock,
    check_concurrency,
    check_template,
)
from tnsai_eval.optimizer._racing import RACING_BOUNDS, RacingBound
from tnsai_eval.optimizer._records import ProgressEvent
from tnsai_eval.optimizer._strategies import DEFAULT_STRATEGIES, PromptStrategy
from tnsai_eval.scoring import DefaultPromptEvaluator, PromptEvaluator

__all__ = ["OptimizerConfig", "SearchMode"]

SearchMode = Literal["exhaustive", "racing", "halving"]
SEARCH_MODES: tuple[SearchMode, ...] = ("exhaustive", "racing", "halving")


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
    evaluator: PromptEvaluator = field(default_factory=DefaultPromptEvaluator)
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
        # Whole numbers only: NaN compares False with every bound, so a NaN
        # limit would be accepted and then never stop anything.
        if not _is_count(self.max_iterations) or self.max_iterations < 1:
            raise ConfigError(f"max_iterations must be at least 1, got {self.max_iterations!r}")
        if not is_share(self.target_score):
            raise ConfigError(f"target_score must be a number in [0, 1], got {self.target_score!r}")
        if self.search not in SEARCH_MODES:
            raise ConfigError(
                f"search must be one of {', '.join(SEARCH_MODES)}, got {self.search!r}"
            )
        check_concurrency(self.concurrency)
        for name, limit in (("max_calls", self.max_calls), ("max_tokens", self.max_tokens)):
            if limit is not None and (not _is_count(limit) or limit < 0):
                raise ConfigError(f"{name} must be an int >= 0 or None, got {limit!r}")
        if self.budget is not None and not isinstance(self.budget, CallBudget):
            raise ConfigError(
                f"budget must be an llm.CallBudget or None, got {type(self.budget).__name__}"
            )
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise ConfigError(f"max_seconds must be > 0 or None, got {self.max_seconds!r}")
        check_template(self.template)
        alpha = self.alpha
        if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
            raise ConfigError(f"alpha must be a level in (0, 1), got {alpha!r}")
        split = self.split
        if split is not None and (
            isinstance(split, bool) or not isinstance(split, int | float) or not 0.0 < split < 1.0
        ):
            raise ConfigError(
                f"split must be the held-out share, a number in (0, 1), or None, got {split!r}"
            )
        if self.racing_bound not in RACING_BOUNDS:
            raise ConfigError(
                f"racing_bound must be one of {', '.join(RACING_BOUNDS)}, got {self.racing_bound!r}"
            )
        for name in ("demo_sets", "rewrite_max_tokens"):
            value = getattr(self, name)
            least = 0 if name == "demo_sets" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigError(f"{name} must be an int >= {least}, got {value!r}")
        if self.few_shot_examples < 0:
            raise ConfigError(f"few_shot_examples must be >= 0, got {self.few_shot_examples!r}")
        if not isinstance(self.call_params, Mapping):
            raise ConfigError(
                f"call_params must be a mapping of call parameters, got {self.call_params!r}"
            )
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
        elif isinstance(labels, str) or not all(isinstance(x, str) and x.strip() for x in labels):
            raise ConfigError(f"labels must be a sequence of non-empty strings, got {labels!r}")
        # Frozen: normalized values are set once, here.
        object.__setattr__(self, "labels", None if labels is None else tuple(labels))
        object.__setattr__(self, "candidate_strategies", strategies)
        object.__setattr__(self, "split", None if split is None else float(split))
        object.__setattr__(self, "call_params", MappingProxyType(dict(self.call_params)))

    @property
    def strategies(self) -> tuple[PromptStrategy, ...]:
        """``candidate_strategies`` as parsed members (always a tuple of them)."""
        return tuple(PromptStrategy.parse(s) for s in self.candidate_strategies)

    def replace(self, **changes: Any) -> OptimizerConfig:
        """A copy with ``changes`` applied, checked like a new config."""
        return dataclasses.replace(self, **changes)


def _is_count(value: object) -> bool:
    """Whether ``value`` is a whole number (an int, or a float such as 5.0), never NaN."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
