"""Stash keys shared by the hooks and the fixtures (kept apart to avoid import cycles)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tnsai_eval.pytest._fixtures import NormActions, RefineRun
    from tnsai_eval.pytest._markers import NormSpec, RefineSpec

__all__ = ["ACTIONS_KEY", "NORM_KEY", "REFINE_KEY", "REFINE_RUN_KEY"]

NORM_KEY: pytest.StashKey[NormSpec] = pytest.StashKey()
REFINE_KEY: pytest.StashKey[RefineSpec] = pytest.StashKey()
ACTIONS_KEY: pytest.StashKey[NormActions] = pytest.StashKey()
REFINE_RUN_KEY: pytest.StashKey[RefineRun] = pytest.StashKey()
