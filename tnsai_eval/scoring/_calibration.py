"""A judge's threshold, set from a few known-good and known-bad examples.

A small model's Yes share is not a probability: its values crowd into a narrow
band (see the judge's module doc), so an absolute threshold fails everything.
The threshold is instead put where the model's own scores best separate
labelled examples, and checked: it is kept only when it classifies the
examples, each left out of the fit in turn, better than the uncalibrated
threshold does.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from tnsai_eval.errors import ConfigError

__all__ = [
    "MIN_CALIBRATION_EXAMPLES",
    "JudgeCalibration",
    "fit_threshold",
    "leave_one_out_accuracy",
]


#: Calibration refuses fewer labelled examples than this per class: below it
#: the leave-one-out check has too little to say (at 2 and 2 a single text
#: moves the threshold), and a threshold fitted on so few often does worse
#: on new texts than no calibration at all.
MIN_CALIBRATION_EXAMPLES = 4


@dataclass(frozen=True, slots=True)
class JudgeCalibration:
    """A threshold set from labelled examples, checked, and the scores it was set from.

    ``fitted`` is the threshold ``fit_threshold`` puts between the ``good``
    and ``bad`` example scores; ``cv_accuracy`` is how often that procedure
    classifies an example right when the example was left out of the fit
    (leave-one-out, the honest figure: the fitted threshold always looks
    good on the examples it was fitted to), and ``uncalibrated_accuracy``
    how often ``uncalibrated`` (the threshold used without calibration)
    classifies them right. ``threshold``, the one to use, is ``fitted`` only
    when calibrating helped (``cv_accuracy`` above ``uncalibrated_accuracy``),
    else ``uncalibrated`` (``kept_uncalibrated``); ``fit`` warns when so.

    >>> fit = JudgeCalibration.fit(good=[0.45, 0.5, 0.42, 0.48], bad=[0.2, 0.3, 0.25, 0.33])
    >>> fit.threshold, fit.cv_accuracy, fit.uncalibrated_accuracy
    (0.375, 1.0, 0.625)
    >>> fit.describe()
    'threshold 0.375 (leave-one-out accuracy 8/8; the uncalibrated 0.5: 5/8)'
    """

    threshold: float
    good: tuple[float, ...]
    bad: tuple[float, ...]
    fitted: float = 0.5
    uncalibrated: float = 0.5
    cv_accuracy: float = 0.0
    uncalibrated_accuracy: float = 0.0

    @classmethod
    def fit(
        cls, good: Sequence[float], bad: Sequence[float], *, uncalibrated: float = 0.5
    ) -> JudgeCalibration:
        """Fit a threshold (``fit_threshold``), check it by leave-one-out, keep it if it helps.

        Fewer than ``MIN_CALIBRATION_EXAMPLES`` good or bad examples raise
        ``ConfigError``. When the fitted threshold classifies left-out
        examples no better than ``uncalibrated`` classifies them all, the
        calibration keeps ``uncalibrated`` and warns (``UserWarning``).
        """
        good, bad = tuple(good), tuple(bad)
        if len(good) < MIN_CALIBRATION_EXAMPLES or len(bad) < MIN_CALIBRATION_EXAMPLES:
            raise ConfigError(
                f"calibration needs at least {MIN_CALIBRATION_EXAMPLES} good and "
                f"{MIN_CALIBRATION_EXAMPLES} bad examples, got {len(good)} good and "
                f"{len(bad)} bad: fewer cannot show that a threshold helps"
            )
        fitted = fit_threshold(good, bad)
        cv = leave_one_out_accuracy(good, bad)
        plain = _accuracy(uncalibrated, good, bad)
        calibration = cls(
            fitted if cv > plain else uncalibrated, good, bad, fitted, uncalibrated, cv, plain
        )
        if calibration.kept_uncalibrated:
            warnings.warn(
                f"calibrating the judge did not help: the fitted threshold {fitted:.3g} "
                f"classified {_share_of(cv, good, bad)} examples right when each was left out "
                f"of the fit, the uncalibrated {uncalibrated:.3g} "
                f"{_share_of(plain, good, bad)}; keeping the uncalibrated threshold",
                UserWarning,
                stacklevel=2,
            )
        return calibration

    @property
    def kept_uncalibrated(self) -> bool:
        """Whether calibrating did not help, so ``threshold`` is the uncalibrated one."""
        return not self.cv_accuracy > self.uncalibrated_accuracy

    @property
    def separable(self) -> bool:
        """Whether every good example scored above every bad one."""
        return min(self.good) > max(self.bad)

    @property
    def checked(self) -> str:
        """Both accuracies in a clause: "leave-one-out accuracy 8/8; the uncalibrated 0.5: 5/8"."""
        return (
            f"leave-one-out accuracy {_share_of(self.cv_accuracy, self.good, self.bad)}; "
            f"the uncalibrated {self.uncalibrated:.3g}: "
            f"{_share_of(self.uncalibrated_accuracy, self.good, self.bad)}"
        )

    def describe(self) -> str:
        """The threshold and both accuracies, for check messages and reports."""
        kept = " kept: calibrating did not help" if self.kept_uncalibrated else ""
        return f"threshold {self.threshold:.3g}{kept} ({self.checked})"


def _accuracy(threshold: float, good: Sequence[float], bad: Sequence[float]) -> float:
    right = sum(s >= threshold for s in good) + sum(s < threshold for s in bad)
    return right / (len(good) + len(bad))


def _share_of(accuracy: float, good: Sequence[float], bad: Sequence[float]) -> str:
    n = len(good) + len(bad)
    return f"{round(accuracy * n)}/{n}"


def leave_one_out_accuracy(good: Sequence[float], bad: Sequence[float]) -> float:
    """How often ``fit_threshold`` classifies an example right when it was left out of the fit.

    Each example in turn is held out, the threshold fitted on the others, and
    the held-out example classified (score >= threshold: good).

    >>> leave_one_out_accuracy([0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3, 0.4])
    1.0
    >>> leave_one_out_accuracy([0.9, 0.2, 0.7, 0.6], [0.1, 0.8, 0.3, 0.4])
    0.75
    """
    right = 0
    for index, score in enumerate(good):
        rest = [*good[:index], *good[index + 1 :]]
        right += score >= fit_threshold(rest, bad)
    for index, score in enumerate(bad):
        rest = [*bad[:index], *bad[index + 1 :]]
        right += score < fit_threshold(good, rest)
    return right / (len(good) + len(bad))


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
