"""Stop hooks: end a refinement loop early (status ``STOPPED``).

A hook sees a ``LoopState`` after each checked output that did not pass every
check (a passing one ends the run with ``SUCCESS`` first).
``on_score_above(t)`` is inclusive (``score >= t``): with the exclusive
reading ``on_score_above(1.0)`` could never fire.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tnsai_eval._util.checks import whole
from tnsai_eval._util.scores import is_share
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import estimate_tokens
from tnsai_eval.records import CheckOutcome

__all__ = ["LoopState", "StopHook"]


@dataclass(frozen=True, slots=True)
class LoopState:
    """What a stop hook sees after each checked iteration that did not succeed.

    Attributes:
        iteration: how many outputs have been checked so far (1 after the draft).
        scores: the score of each checked output, oldest first.
        outputs: each checked output, oldest first (``outputs[0]`` is the draft).
        improved: per checked output, whether it beat every earlier score and
            was not a repeat of an earlier output (the draft counts as not
            improved: there is nothing before it to beat).
        checks: the outcomes of the latest output's checks.
        tokens: tokens spent so far (reported by the client, else estimated).
    """

    iteration: int
    scores: tuple[float, ...]
    outputs: tuple[str, ...]
    improved: tuple[bool, ...]
    checks: tuple[CheckOutcome, ...]
    tokens: int

    @property
    def score(self) -> float:
        """The latest score."""
        return self.scores[-1]

    @property
    def estimated_output_tokens(self) -> int:
        """Estimated tokens of every output so far (what ``on_cost_exceeds`` bounds)."""
        return sum(estimate_tokens(output) for output in self.outputs)


class StopHook:
    """A named predicate on ``LoopState``: when it returns True the loop stops.

    Combine the factories, or wrap any function::

        hook = StopHook.any(StopHook.on_score_above(0.8), StopHook.on_no_improvement(2))
        custom = StopHook(lambda state: state.iteration >= 3, name="three rounds")
    """

    __slots__ = ("_predicate", "name")

    def __init__(self, predicate: Callable[[LoopState], bool], *, name: str = "") -> None:
        if not callable(predicate):
            raise ConfigError(f"StopHook expects a callable on LoopState, got {predicate!r}")
        self._predicate = predicate
        self.name = name or getattr(predicate, "__name__", "custom")

    def __repr__(self) -> str:
        return f"StopHook({self.name})"

    def should_stop(self, state: LoopState) -> bool:
        """Whether the loop should stop now, given ``state``."""
        return bool(self._predicate(state))

    __call__ = should_stop

    @staticmethod
    def on_score_above(threshold: float) -> StopHook:
        """Stop once the latest score reaches ``threshold`` (>=)."""
        if not is_share(threshold):
            raise ConfigError(
                f"on_score_above threshold must be a number in [0, 1], got {threshold!r}"
            )
        return StopHook(lambda s: s.score >= threshold, name=f"on_score_above({threshold:g})")

    @staticmethod
    def on_no_improvement(iterations: int) -> StopHook:
        """Stop after ``iterations`` checked outputs in a row that did not improve.

        An output improves when its score beats every earlier score and it is
        not identical to an earlier output: a model that oscillates between two
        answers (or a judge that rescores a repeat higher) does not count as
        progress.
        """
        whole("on_no_improvement's iterations", iterations, 1)

        def stalled(state: LoopState) -> bool:
            recent = state.improved[1:][-iterations:]
            return len(recent) == iterations and not any(recent)

        return StopHook(stalled, name=f"on_no_improvement({iterations})")

    @staticmethod
    def on_cost_exceeds(max_tokens: int) -> StopHook:
        """Stop once the estimated tokens of all outputs so far exceed ``max_tokens``.

        As in the original, this bounds the *outputs'* estimated size (about 4
        characters a token), which works with clients that report no usage;
        ``LoopState.tokens`` has the tokens actually spent, for custom hooks.
        """
        whole("on_cost_exceeds' max_tokens", max_tokens, 0)
        return StopHook(
            lambda s: s.estimated_output_tokens > max_tokens,
            name=f"on_cost_exceeds({max_tokens})",
        )

    @staticmethod
    def on_compile_success() -> StopHook:
        """Stop once every ``compiler_check`` passes (never, without one)."""

        def compiled(state: LoopState) -> bool:
            compilers = [c for c in state.checks if c.source == "compiler_check"]
            return bool(compilers) and all(c.passed for c in compilers)

        return StopHook(compiled, name="on_compile_success()")

    @staticmethod
    def any(*hooks: StopHook) -> StopHook:
        """Stop when at least one of ``hooks`` says so."""
        _require_hooks("any", hooks)
        names = ", ".join(h.name for h in hooks)
        return StopHook(lambda s: any(h.should_stop(s) for h in hooks), name=f"any({names})")

    @staticmethod
    def all(*hooks: StopHook) -> StopHook:
        """Stop when every one of ``hooks`` says so."""
        _require_hooks("all", hooks)
        names = ", ".join(h.name for h in hooks)
        return StopHook(lambda s: all(h.should_stop(s) for h in hooks), name=f"all({names})")


def _require_hooks(combinator: str, hooks: tuple[StopHook, ...]) -> None:
    if not hooks:
        raise ConfigError(f"StopHook.{combinator}() needs at least one hook")
    for hook in hooks:
        if not isinstance(hook, StopHook):
            raise ConfigError(f"StopHook.{combinator}() expects StopHooks, got {hook!r}")
