"""``--target`` and ``--agent``: the user's own code named on the command line.

``SPEC`` is ``module:name`` (the module imported as Python would, the current
directory first on the path, as ``python -m`` has it) or ``path/to/file.py:name``
(a file loaded by its path); ``name`` may be dotted (``Desk.make``).

What the named callable is:

- ``eval --target module:function``: ``function(input) -> str | Trajectory``;
- ``eval --agent module:factory``: ``factory()`` returns an agent (its
  ``run(input)`` returns a ``Trajectory``), called once per case;
- ``optimize --target module:factory``: ``factory(prompt)`` returns
  ``function(input)``;
- ``optimize --agent module:factory``: ``factory(prompt)`` returns an agent,
  called once per case.

A callable that also takes a parameter named ``llm`` is given the model the
command runs (``--model``: its client, behind ``--store``), so its calls are
the run's: recorded, replayed, counted per case and compared between models.
One without it calls a model of its own choosing, so the command cannot choose
one for it: ``--model`` is then refused, and there is one row, named ``app``.

Every problem (no ``:``, a module that cannot be imported, a missing or
uncallable name) is a ``ConfigError`` that names the option and the value.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tnsai_eval._util.secrets import mask_then_cut
from tnsai_eval._util.text import one_line
from tnsai_eval.errors import ConfigError

if TYPE_CHECKING:
    from tnsai_eval.scoring import TestCase

__all__ = ["UserCode", "load_user_code", "trajectory_evaluator"]


class UserCode:
    """A callable named by ``--target`` or ``--agent``, and how to give it a model."""

    def __init__(self, option: str, spec: str, function: Callable[..., Any]) -> None:
        self.option = option
        self.spec = spec
        self.function = function
        self.takes_llm = any(p.name == "llm" for p in _parameters(function))

    def default_prompt(self) -> str | None:
        """The default of the callable's first parameter when it is a str (``optimize``'s
        starting prompt when ``--prompt`` is not given): the app's own prompt."""
        parameters = _parameters(self.function)
        if parameters and isinstance(parameters[0].default, str) and parameters[0].default.strip():
            return parameters[0].default
        return None

    @property
    def is_agent(self) -> bool:
        return self.option == "--agent"

    def target(self, llm: Any | None) -> Callable[..., Any]:
        """What ``score_target`` runs (``eval``): the function, or a per-case agent factory."""
        bound = self._bound(llm)
        if self.is_agent:
            return lambda: bound()
        return bound

    def factory(self, llm: Any | None) -> Callable[[str], Any]:
        """What ``optimize(target=...)`` takes: ``prompt -> target`` (``optimize``)."""
        bound = self._bound(llm)
        if self.is_agent:
            return lambda prompt: lambda: bound(prompt)
        return lambda prompt: bound(prompt)

    def _bound(self, llm: Any | None) -> Callable[..., Any]:
        # A partial keeps the signature score_target reads (fn(input) or factory()).
        return functools.partial(self.function, llm=llm) if self.takes_llm else self.function


def trajectory_evaluator(cases: Sequence[TestCase]) -> tuple[Any, str] | None:
    """How a target's runs are scored when its cases carry ``expected_tool_calls`` (an agent
    data set with no evaluator of its own), with how to say so; ``None`` otherwise.

    The calls in order, arguments as a subset (``ToolCallMatch()``'s defaults):
    the agent must make the expected calls in that order, with at least the
    expected arguments; extra calls in between do not fail it.
    """
    if not any(case.expected_tool_calls for case in cases):
        return None
    from tnsai_eval.scoring import ToolCallMatch

    return ToolCallMatch(), (
        "ToolCallMatch(mode='in_order', arguments='subset'): the cases carry expected_tool_calls"
    )


def _parameters(function: Callable[..., Any]) -> list[inspect.Parameter]:
    try:
        return list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature
        return []


def load_user_code(option: str, spec: str) -> UserCode:
    """The callable ``spec`` names (``module:name`` or ``file.py:name``), for ``option``."""
    shown = f"{option} {one_line(spec)!r}"
    where, colon, name = spec.rpartition(":")
    if not colon or not where.strip() or not name.strip():
        raise ConfigError(f"{shown}: expected module:function or path/to/file.py:function")
    module = _import(where, shown)
    found: object = module
    for part in name.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ConfigError(
                f"{shown}: {where!r} has no {name!r} (found {_public(module)})"
            ) from None
    if not callable(found):
        raise ConfigError(f"{shown}: {name!r} is a {type(found).__name__}, not a callable")
    return UserCode(option, spec, found)


def _import(where: str, shown: str) -> Any:
    if where.endswith(".py") or "/" in where or os.sep in where:
        path = Path(where)
        if not path.is_file():
            raise ConfigError(f"{shown}: no file {where!r}")
        name = f"tnsai_user_{path.stem}"
        loader = importlib.util.spec_from_file_location(name, path)
        if loader is None or loader.loader is None:
            raise ConfigError(f"{shown}: {where!r} cannot be loaded as Python")
        module = importlib.util.module_from_spec(loader)
        # Registered before it runs: dataclasses and pickling look modules up by name.
        sys.modules[name] = module
        try:
            loader.loader.exec_module(module)
        except Exception as exc:  # the user's module failed to import: say how
            sys.modules.pop(name, None)
            raise ConfigError(f"{shown}: importing {where!r} failed: {_named(exc)}") from None
        return module
    # As `python -m` would: the working directory's modules are importable.
    here = str(Path.cwd())
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(where)
    except Exception as exc:  # ModuleNotFoundError, or an error inside the module
        raise ConfigError(f"{shown}: importing {where!r} failed: {_named(exc)}") from None


def _named(exc: Exception) -> str:
    return f"{type(exc).__name__}: {mask_then_cut(one_line(str(exc)), 300)}"


def _public(module: object) -> str:
    names = [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))]
    return ", ".join(names[:12]) + (" ..." if len(names) > 12 else "") if names else "nothing"
