"""A judge's threshold, set from a few known-good and known-bad examples.

A small model's Yes share is not a probability: its values crowd into a narrow
band (see the judge's module doc), so an absolute threshold fails everything.
The threshold is instead put where the model's own scores best separate
labelled examples.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from tnsai_eval.errors import ConfigError

__all__ = ["JudgeCalibration", "fit_threshold"]


@dataclass(frozen=True, slots=True)
class JudgeCalibration:
    """A threshold set from labelled examples, and the scores it was set from.

    >>> JudgeCalibration.fit(good=[0.45, 0.5], bad=[0.2, 0.3]).threshold
    0.375
    """

    threshold: float
    good: tuple[float, ...]
    bad: tuple[float, ...]

    @classmethod
    def fit(cls, good: Sequence[float], bad: Sequence[float]) -> JudgeCalibration:
        """The threshold best separating ``good`` from ``bad`` scores (``fit_threshold``)."""
        return cls(fit_threshold(good, bad), tuple(good), tuple(bad))

    @property
    def separable(self) -> bool:
        """Whether every good example scored above every bad one."""
        return min(self.good) > max(self.bad)


def fit_threshold(good: Sequence[float], bad: Sequence[float]) -> float:
    """The threshold classifying the most examples right (score >= threshold: good).

    Candidates are the midpoints between neighbouring scores; among equally
    accurate ones, the one nearest the midpoint of the two means wins, so
    that a separable pair of groups gets the threshold halfway between them.

    >>> fit_threshold([0.5, 0.45], [0.3, 0.2])
    0.375
    >>> fit_threshold([0.9], [0.1])
    0.5
    """
    if not good or not bad:
        raise ConfigError(
            f"calibration needs at least one good and one bad example, got "
            f"{len(good)} good and {len(bad)} bad"
        )
    values = sorted({*good, *bad})
    candidates = [(a + b) / 2 for a, b in itertools.pairwise(values)] or values
    centre = (sum(good) / len(good) + sum(bad) / len(bad)) / 2

    def right(threshold: float) -> int:
        return sum(s >= threshold for s in good) + sum(s < threshold for s in bad)

    return max(candidates, key=lambda t: (right(t), -abs(t - centre)))
