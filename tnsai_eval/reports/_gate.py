"""The gate's settings, each with where it came from: one frozen record, defaults here only.

``GateSettings`` is what every judge of a run uses: the pytest plugin
(``--tnsai-baseline``), ``tnsai-eval report``, ``tnsai-eval ci comment``
and the model comparison. A report records the settings of the pytest run
that wrote it (``config``); whoever judges it later uses those unless told
otherwise, so that the same run gets the same verdict everywhere, and says
which it used and where each came from (``describe``).

In a pull-request gate the settings come from the *base* commit's
configuration, like the baseline: a pull request that loosens
``tnsai_tolerance`` in its own ``pyproject.toml`` is still judged by the
base's, and the change is shown (``changes``) and fails the gate unless the
pull request carries the accept label.

>>> recorded = GateSettings.resolve([({"tolerance": 0.1}, "given"),
...                                  ({"gate": "paired", "alpha": 2}, "recorded in the report")])
>>> recorded.gate.value, recorded.tolerance, recorded.alpha
('paired', 0.1, 0.05)
>>> recorded.source("gate"), recorded.source("alpha"), recorded.source("tolerance")
('recorded in the report', 'default', 'given')
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tnsai_eval.errors import ConfigError
from tnsai_eval.reports._cases import GateMode
from tnsai_eval.settings import (
    DEFAULT_ALPHA,
    DEFAULT_GATE,
    DEFAULT_MIN_COMMON,
    DEFAULT_TOLERANCE,
)

__all__ = ["GATE_SETTING_NAMES", "GateSettings", "SettingChange"]

#: The settings a gate has, in the order they are shown; each is also the
#: report's ``config`` key and, with a ``tnsai_`` prefix, the pytest ini key.
GATE_SETTING_NAMES = (
    "gate",
    "tolerance",
    "alpha",
    "min_common",
    "allow_unrecorded",
    "gate_costs",
    "gate_latency",
)
_DEFAULT = "default"
_DEFAULT_MODE = GateMode(DEFAULT_GATE)


@dataclass(frozen=True, slots=True)
class SettingChange:
    """A gate setting whose value differs between the base and this run."""

    name: str
    base: object
    current: object
    base_source: str
    current_source: str

    def __str__(self) -> str:
        return (
            f"{self.name} {_shown(self.name, self.base)} ({self.base_source}) -> "
            f"{_shown(self.name, self.current)} ({self.current_source})"
        )


@dataclass(frozen=True, slots=True)
class GateSettings:
    """How a run is judged against its baseline (see ``compare``), and where each value came from.

    ``gate``: ``tolerance`` or ``paired``; ``tolerance``: the absolute drop a
    score may take (a metric may declare its own); ``alpha``: the paired
    gate's significance level; ``min_common``: the least share of the
    baseline's cases a score needs in common; ``allow_unrecorded``: whether
    cases that were not run are accepted; ``gate_costs``/``gate_latency``:
    relative limits on tokens, calls, cost and median latency (``None``: shown,
    not gated). ``sources`` maps a name to where its value came from
    (``"default"`` when absent). A bad value raises ``ConfigError`` naming it.

    >>> GateSettings(alpha=1.5)
    Traceback (most recent call last):
    ...
    tnsai_eval.errors.ConfigError: alpha must be a number in (0, 1), got 1.5
    """

    gate: GateMode = _DEFAULT_MODE
    tolerance: float = DEFAULT_TOLERANCE
    alpha: float = DEFAULT_ALPHA
    min_common: float = DEFAULT_MIN_COMMON
    allow_unrecorded: bool = False
    gate_costs: float | None = None
    gate_latency: float | None = None
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        try:
            mode = GateMode(self.gate)
        except ValueError:
            raise ConfigError(
                f"gate must be one of {', '.join(m.value for m in GateMode)}, got {self.gate!r}"
            ) from None
        object.__setattr__(self, "gate", mode)
        for name in GATE_SETTING_NAMES[1:]:
            problem = _problem(name, getattr(self, name))
            if problem is not None:
                raise ConfigError(f"{name} must be {problem}, got {getattr(self, name)!r}")
        object.__setattr__(self, "sources", dict(self.sources))

    @classmethod
    def given(cls, values: Mapping[str, Any], source: str = "given") -> GateSettings:
        """Settings from ``values`` (checked: a bad one raises ``ConfigError`` naming it),
        each said to come from ``source``; the rest are the defaults."""
        unknown = set(values) - set(GATE_SETTING_NAMES)
        if unknown:
            raise ConfigError(f"unknown gate setting(s): {', '.join(sorted(unknown))}")
        made: GateSettings = cls(**values, sources=dict.fromkeys(values, source))
        return made

    @classmethod
    def resolve(
        cls, layers: Sequence[tuple[Mapping[str, Any], str]], *, ini: bool = False
    ) -> GateSettings:
        """The settings from ``layers`` (``(values, source)``, first wins), else the defaults.

        A value that is ``None``, of the wrong type or out of range is skipped
        rather than trusted (the next layer, or the default, applies): a
        report or a configuration file is input. With ``ini=True`` the values
        are read as pytest reads ini values: ``"0.1"``, ``"true"``.
        """
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for name in GATE_SETTING_NAMES:
            for given, source in layers:
                value = _parsed(name, given.get(name), ini=ini)
                if value is not None:
                    values[name], sources[name] = value, source
                    break
        return cls(**values, sources=sources)

    def source(self, name: str) -> str:
        """Where the value of setting ``name`` came from."""
        return self.sources.get(name, _DEFAULT)

    def values(self) -> dict[str, Any]:
        """The settings as plain JSON values (what a report's ``config`` records)."""
        return {name: _plain(getattr(self, name)) for name in GATE_SETTING_NAMES}

    def to_dict(self) -> dict[str, Any]:
        """The settings and their sources, as JSON."""
        return {"values": self.values(), "sources": {n: self.source(n) for n in GATE_SETTING_NAMES}}

    @classmethod
    def from_dict(cls, data: object) -> GateSettings | None:
        """What ``to_dict`` wrote (``None`` when ``data`` is not such a mapping)."""
        if not isinstance(data, Mapping):
            return None
        values, sources = data.get("values"), data.get("sources")
        if not isinstance(values, Mapping) or not isinstance(sources, Mapping):
            return None
        kept = {n: str(sources[n]) for n in GATE_SETTING_NAMES if n in sources}
        return replace(cls.resolve([(values, _DEFAULT)]), sources=kept)

    def changes(self, current: GateSettings) -> tuple[SettingChange, ...]:
        """The settings whose value differs in ``current`` (this one is the base's)."""
        return tuple(
            SettingChange(name, before, after, self.source(name), current.source(name))
            for name in GATE_SETTING_NAMES
            if (before := getattr(self, name)) != (after := getattr(current, name))
        )

    def describe(self) -> str:
        """One line naming each setting used and where it came from.

        >>> print(GateSettings(tolerance=0.1, sources={"tolerance": "given"}).describe())
        gate settings: gate tolerance (default), tolerance 0.1 (given), alpha 0.05 (default), \
min common 80% (default), unrecorded cases refused (default)
        """
        shown = [
            f"{_label(name)} {_shown(name, getattr(self, name))} ({self.source(name)})"
            for name in GATE_SETTING_NAMES
            # Cost and latency gates are named only when on (or set somewhere).
            if getattr(self, name) is not None or self.source(name) != _DEFAULT
        ]
        return "gate settings: " + ", ".join(shown)


def _label(name: str) -> str:
    return {"min_common": "min common", "allow_unrecorded": "unrecorded cases"}.get(
        name, name.replace("_", " ")
    )


def _shown(name: str, value: object) -> str:
    if isinstance(value, GateMode):
        return value.value
    if name == "allow_unrecorded":
        return "allowed" if value else "refused"
    if value is None:
        return "off"
    if name == "min_common" and isinstance(value, float | int):
        return f"{value:.0%}"
    return f"{value:g}" if isinstance(value, float | int) else str(value)


def _plain(value: object) -> object:
    return value.value if isinstance(value, GateMode) else value


def _problem(name: str, value: object) -> str | None:
    """What is wrong with ``value`` for setting ``name`` (``None``: nothing)."""
    if name == "allow_unrecorded":
        return None if isinstance(value, bool) else "true or false"
    if value is None and name in ("gate_costs", "gate_latency"):
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)  # NaN would pass every comparison
    ):
        return "a finite number >= 0" if name != "alpha" else "a number in (0, 1)"
    if name == "alpha":
        return None if 0 < value < 1 else "a number in (0, 1)"
    if name == "min_common":
        return None if 0 <= value <= 1 else "a share in [0, 1]"
    return None if value >= 0 else "a finite number >= 0"


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _parsed(name: str, value: object, *, ini: bool) -> Any:
    """``value`` for setting ``name`` when it is a valid one, else ``None``
    (``ini``: a string is read as pytest reads an ini value)."""
    if value is None:
        return None
    if name == "gate":
        word = value.strip().lower() if isinstance(value, str) else None
        return word if word in {m.value for m in GateMode} else None
    if name == "allow_unrecorded":
        if isinstance(value, bool):
            return value
        if not ini or not isinstance(value, str):
            return None
        word = value.strip().lower()
        return True if word in _TRUE else False if word in _FALSE else None
    if isinstance(value, str):
        if not ini:
            return None
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if _problem(name, value) is not None:
        return None
    return float(value)  # type: ignore[arg-type]
