"""The search modes: one object each, and the one registry that names them.

A round of the optimizer makes its challengers, then hands them and the
incumbent (the best prompt so far) to the run's search mode, which scores
them by its own rule and says what it decided; the run then picks the best.
The run never asks which mode it holds (as pytest-xdist's session asks its
scheduler what to send next, never its name). A mode answers two questions:

- ``first_cases(n, demo_sets=...)``: on how many of the ``n`` selection
  cases the starting prompt is scored before round 1 (every one, unless the
  mode races the starting prompt with round 1's challengers);
- ``score_round(...)``: score one round's racers; returns a ``RaceSummary``
  whose ``note`` goes into the round's record, or ``None`` when the mode
  decides nothing worth a note.

``SEARCHES`` is the registry: ``OptimizerConfig(search=...)`` accepts its
names, ``tnsai-eval optimize --search`` offers them with their summaries,
the dashboard shows one button each, and ``docs/architecture.md`` lists them
(a test holds the list to the registry). The modes shipped:

>>> for mode in SEARCHES:
...     print(f"{mode.name}: {mode.summary}")
exhaustive: score every variant on every case
racing: race them and drop those a paired test shows worse
halving: keep the better half at each doubling of the cases, no test
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import ClassVar

from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import Engine, Variant
from tnsai_eval.optimizer._racing import RaceSummary, RacingBound, halve, race, rung_sizes
from tnsai_eval.scoring import TestCase

__all__ = ["SEARCHES", "Exhaustive", "Halving", "Racing", "Search", "SearchRegistry"]


class Search(ABC):
    """One search mode: a name, a one-line summary, and its rule for a round."""

    #: The name users pass (``search="racing"``, ``--search racing``).
    name: ClassVar[str]
    #: What the mode does, in one line (CLI help, dashboard tooltip, docs).
    summary: ClassVar[str]

    def first_cases(self, n: int, *, demo_sets: int) -> int:
        """Cases the starting prompt is scored on before round 1: all ``n`` by default."""
        return n

    @abstractmethod
    async def score_round(
        self,
        engine: Engine,
        challengers: Sequence[Variant],
        incumbent: Variant,
        order: Sequence[int],
        cases: Sequence[TestCase],
        *,
        bound: RacingBound,
        incumbent_name: str,
    ) -> RaceSummary | None:
        """Score one round's ``challengers`` (and ``incumbent``, when the mode races it)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Exhaustive(Search):
    """Every challenger on every case; the incumbent is already scored on every case."""

    name = "exhaustive"
    summary = "score every variant on every case"

    async def score_round(
        self,
        engine: Engine,
        challengers: Sequence[Variant],
        incumbent: Variant,
        order: Sequence[int],
        cases: Sequence[TestCase],
        *,
        bound: RacingBound,
        incumbent_name: str,
    ) -> RaceSummary | None:
        every = range(len(cases))
        await asyncio.gather(*(engine.score(v, every, cases) for v in challengers))
        return None


class _Racer(Search):
    """A mode that races the starting prompt with round 1's challengers.

    The starting prompt is scored on the first rung only, and further only
    while it survives round 1's race. Not with a demo search: its correct
    replies are the bootstrapped demos' pool, and a pool from the first rung
    alone forces the draw (make demo: held-out 0.670, p = 0.021, fell to
    0.510, p = 1).
    """

    #: Drop by rank at doubling rungs (``_racing.halve``) rather than by test (``race``).
    halving: ClassVar[bool] = False

    def first_cases(self, n: int, *, demo_sets: int) -> int:
        return rung_sizes(n)[0] if n and not demo_sets else n

    async def score_round(
        self,
        engine: Engine,
        challengers: Sequence[Variant],
        incumbent: Variant,
        order: Sequence[int],
        cases: Sequence[TestCase],
        *,
        bound: RacingBound,
        incumbent_name: str,
    ) -> RaceSummary | None:
        racers = (engine, challengers, incumbent, order, cases)
        if self.halving:
            return await halve(*racers, incumbent_name=incumbent_name)
        return await race(*racers, bound=bound, incumbent_name=incumbent_name)


class Racing(_Racer):
    """Growing rungs; a paired test drops only the surely worse (``_racing.race``)."""

    name = "racing"
    summary = "race them and drop those a paired test shows worse"


class Halving(_Racer):
    """Doubling rungs; the upper half goes on, no test (``_racing.halve``)."""

    name = "halving"
    summary = "keep the better half at each doubling of the cases, no test"
    halving = True


class SearchRegistry:
    """The search modes by name, in the order registered (the order shown to users)."""

    def __init__(self, *modes: Search) -> None:
        self._modes: dict[str, Search] = {}
        for mode in modes:
            self.register(mode)

    def register(self, mode: Search) -> Search:
        """Add ``mode``; a name already taken is a ``ConfigError``. Returns ``mode``."""
        if not isinstance(mode, Search):
            raise ConfigError(f"a search mode must be a Search, got {type(mode).__name__}")
        name = getattr(mode, "name", None)
        if not isinstance(name, str) or not name.isidentifier():
            # It becomes a CLI choice and a button: a word, as the shipped ones.
            raise ConfigError(f"a search mode's name must be a word, got {name!r}")
        if not isinstance(getattr(mode, "summary", None), str):
            raise ConfigError(f"search mode {name!r} needs a one-line summary (a str)")
        if mode.name in self._modes:
            raise ConfigError(f"search mode {mode.name!r} is already registered")
        self._modes[mode.name] = mode
        return mode

    def unregister(self, name: str) -> None:
        """Remove the mode called ``name`` (a ``KeyError`` when there is none)."""
        del self._modes[name]

    def names(self) -> tuple[str, ...]:
        return tuple(self._modes)

    def get(self, name: str) -> Search:
        """The mode called ``name``; a ``ConfigError`` naming the choices otherwise."""
        if name not in self:
            raise ConfigError(f"search must be one of {', '.join(self._modes)}, got {name!r}")
        return self._modes[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._modes

    def __iter__(self) -> Iterator[Search]:
        return iter(tuple(self._modes.values()))


#: The one registry of search modes (module docstring).
SEARCHES = SearchRegistry(Exhaustive(), Racing(), Halving())
