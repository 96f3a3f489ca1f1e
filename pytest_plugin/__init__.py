"""The short, documented import of the plugin's decorators and public names.

The plugin itself lives in ``tnsai_eval.pytest`` (that is what the ``pytest11``
entry point ``tnsai`` loads); this package only re-exports it, so that a test
module can write::

    from pytest_plugin import norm_check, refine_until

A user project with its own ``pytest_plugin.py`` shadows this name; the plugin
keeps working because pytest never imports it from here, and
``from tnsai_eval.pytest import norm_check`` works in every project.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tnsai_eval.pytest import NormActions, PluginSession, norm_check, refine_until

if TYPE_CHECKING:
    from tnsai_eval.pytest import CaseRecord, PromptEvaluation

__all__ = [
    "CaseRecord",
    "NormActions",
    "PluginSession",
    "PromptEvaluation",
    "norm_check",
    "refine_until",
]


def __getattr__(name: str) -> Any:
    if name in ("CaseRecord", "PromptEvaluation"):
        from tnsai_eval import pytest as plugin

        return getattr(plugin, name)
    raise AttributeError(f"module 'pytest_plugin' has no attribute {name!r}")
