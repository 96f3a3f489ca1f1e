"""Which gate settings a comparison uses: given, recorded in the report, or the default.

A report records the settings of the pytest run that wrote it (``config``:
gate, tolerance, alpha, min_common, allow_unrecorded). Whoever judges it later
(``tnsai-eval report``, a CI step) uses those unless told otherwise, so that
the same run gets the same verdict everywhere, and says which it used.

>>> values, sources = gate_settings({"gate": "paired", "alpha": 2}, {"tolerance": 0.1})
>>> values["gate"], sources["gate"], values["alpha"], sources["alpha"], sources["tolerance"]
('paired', 'recorded in the report', 0.05, 'default', 'given')
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tnsai_eval.reports._cases import GateMode

__all__ = ["GATE_DEFAULTS", "describe_settings", "gate_settings"]

#: The settings a comparison needs, with their defaults when neither the
#: command line nor the report gives them.
GATE_DEFAULTS: dict[str, Any] = {
    "gate": GateMode.TOLERANCE.value,
    "tolerance": 0.05,
    "alpha": 0.05,
    "min_common": 0.8,
    "allow_unrecorded": False,
}


def gate_settings(
    config: Mapping[str, Any], given: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The comparison's settings and where each came from (``given``, the report, default).

    A recorded value of the wrong type is ignored (the default applies) rather
    than trusted: the report is input.
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, default in GATE_DEFAULTS.items():
        if given.get(key) is not None:
            values[key], sources[key] = given[key], "given"
        elif _valid(key, config.get(key)):
            values[key], sources[key] = config[key], "recorded in the report"
        else:
            values[key], sources[key] = default, "default"
    return values, sources


def _valid(key: str, value: object) -> bool:
    if value is None:
        return False
    if key == "gate":
        return value in {m.value for m in GateMode}
    if key == "allow_unrecorded":
        return isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return False
    if key == "alpha":
        return 0 < value < 1
    if key == "min_common":
        return 0 <= value <= 1
    return value >= 0


def describe_settings(values: Mapping[str, Any], sources: Mapping[str, str]) -> str:
    """One line naming each setting used and where it came from."""
    shown = {
        "gate": f"gate {values['gate']}",
        "tolerance": f"tolerance {values['tolerance']:g}",
        "alpha": f"alpha {values['alpha']:g}",
        "min_common": f"min common {values['min_common']:.0%}",
        "allow_unrecorded": "unrecorded cases "
        + ("allowed" if values["allow_unrecorded"] else "refused"),
    }
    return "gate settings: " + ", ".join(f"{shown[k]} ({sources[k]})" for k in shown)
