"""The plugin loads from ``tnsai_eval.pytest``, so a user's own ``pytest_plugin.py`` cannot hide it.

A project with a root conftest has its root first on ``sys.path`` (and
``python -m pytest`` puts the working directory there too), so a file of its
own named ``pytest_plugin.py`` wins over our top-level package of that name.
The ``pytest11`` entry point names ``tnsai_eval.pytest`` and never imports
``pytest_plugin``; this runs a real pytest in a subprocess (a fresh
``sys.modules``) to show every fixture and marker still works there.
"""

from __future__ import annotations

import importlib.metadata

import pytest

from tests.plugin.conftest import SCRIPTED_CONFTEST

USERS_MODULE = 'MINE = "the project\'s own module"\n'

SUITE = """
import pytest_plugin
from tnsai_eval.norms import NormEntry, NormType
from tnsai_eval.pytest import norm_check, refine_until


def test_the_projects_module_is_its_own():
    assert pytest_plugin.MINE == "the project's own module"


def test_evaluate_prompt(evaluate_prompt):
    result = evaluate_prompt("Answer in one word.", [("What is the capital of France?", "Paris")])
    assert result.scores == (1.0,)


@refine_until(task="Return the record as JSON", valid_json=True, must_contain='"id"')
def test_refine_until(refine):
    refine("id: 7")


@norm_check(NormEntry(type=NormType.PROHIBITION, action="delete_user", description="No deletes"))
def test_norm_check_fails_on_a_violation(norm_actions):
    norm_actions.record("delete_user")
"""


def test_the_entry_point_names_tnsai_eval_pytest() -> None:
    (entry,) = [e for e in importlib.metadata.entry_points(group="pytest11") if e.name == "tnsai"]
    assert entry.value == "tnsai_eval.pytest"


def test_a_projects_own_pytest_plugin_module_leaves_the_plugin_working(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(SCRIPTED_CONFTEST)
    pytester.makepyfile(pytest_plugin=USERS_MODULE, test_suite=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*@norm_check: norms broken on delete_user*", "*No deletes*"])
    # The plugin's summary is there too: its hooks ran.
    result.stdout.fnmatch_lines(["*tnsai-eval*"])
