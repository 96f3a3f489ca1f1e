"""What a test keeps in its stash: the keys the hooks and fixtures share, and the
records they hold (what a ``@norm_check`` test did, the ``refine`` calls it made)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tnsai_eval.pytest._markers import NormSpec, RefineSpec
    from tnsai_eval.refinement import RefinementResult

__all__ = ["ACTIONS_KEY", "NORM_KEY", "REFINE_KEY", "REFINE_RUN_KEY", "NormActions", "RefineRun"]


@dataclass
class NormActions:
    """What a ``@norm_check`` test did: agents it made, actions it recorded, the state.

    ``record(*actions)`` adds actions performed outside an ``Agent``;
    ``watch(obj)`` adds any object with an ``actions`` list; ``state`` starts
    as the mark's ``state=`` and may be updated by the test before it ends.
    """

    state: dict[str, object] = field(default_factory=dict)
    agents: list[Any] = field(default_factory=list)
    recorded: list[str] = field(default_factory=list)
    used: bool = False

    def record(self, *actions: str) -> None:
        """Add actions performed outside an ``Agent`` (non-empty names)."""
        for action in actions:
            if not isinstance(action, str) or not action:
                raise TypeError(f"norm_actions.record() takes action names, got {action!r}")
        self.used = True
        self.recorded.extend(actions)

    def watch(self, agent: Any) -> Any:
        """Check ``agent.actions`` at the end of the test; returns ``agent``."""
        if not hasattr(agent, "actions"):
            raise TypeError(
                f"norm_actions.watch() needs an object with an `actions` list, got {agent!r}"
            )
        self.used = True
        self.agents.append(agent)
        return agent

    @property
    def actions(self) -> list[str]:
        """Every action, agents' first (in creation order), then recorded ones."""
        performed = [str(a) for agent in self.agents for a in agent.actions]
        return performed + self.recorded


@dataclass
class RefineRun:
    """The ``refine`` calls of one test (checked at its end under ``@refine_until``)."""

    results: list[RefinementResult] = field(default_factory=list)


NORM_KEY: pytest.StashKey[NormSpec] = pytest.StashKey()
REFINE_KEY: pytest.StashKey[RefineSpec] = pytest.StashKey()
ACTIONS_KEY: pytest.StashKey[NormActions] = pytest.StashKey()
REFINE_RUN_KEY: pytest.StashKey[RefineRun] = pytest.StashKey()
