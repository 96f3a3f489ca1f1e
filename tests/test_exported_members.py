"""Every public module's ``__all__``, checked both ways (as httpx checks its own).

Each name listed exists and, when it is a class or a function, is documented;
and every public name a module defines (itself or in one of its private
modules) is listed, so nothing public is missing from ``__all__``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import tnsai_eval


def _public_modules() -> list[str]:
    names = ["tnsai_eval", "pytest_plugin"]
    for info in pkgutil.walk_packages(tnsai_eval.__path__, prefix="tnsai_eval."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


MODULES = _public_modules()


def test_the_public_modules_include_the_documented_ones() -> None:
    for name in ("frames", "plots", "reports", "widgets", "testing", "cli", "pytest", "settings"):
        assert f"tnsai_eval.{name}" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_all_lists_what_exists_and_is_documented(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"
    for item in exported:
        assert hasattr(module, item), f"{name}.__all__ lists {item!r}, which does not exist"
        value = getattr(module, item)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name}.{item} has no docstring"


@pytest.mark.parametrize("name", MODULES)
def test_every_public_name_is_in_all(name: str) -> None:
    module = importlib.import_module(name)
    missing = []
    for item, value in vars(module).items():
        if item.startswith("_") or inspect.ismodule(value) or _is_plugin_part(item, value):
            continue
        home = getattr(value, "__module__", None)
        # Defined here or in one of this package's private modules: meant to be public.
        mine = home == name or (isinstance(home, str) and home.startswith(f"{name}._"))
        if mine and item not in module.__all__:
            missing.append(item)
    assert not missing, f"{name} defines public names missing from __all__: {sorted(missing)}"


def _is_plugin_part(name: str, value: object) -> bool:
    """A pytest hook or fixture: found by pytest as a plugin attribute, not imported by users."""
    return name.startswith("pytest_") or type(value).__name__ == "FixtureFunctionDefinition"
