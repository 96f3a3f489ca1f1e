"""Helpers for the plugin's pytester tests.

Runs inside pytester use a ``ScriptedLLM`` (through a conftest that overrides
``llm``) or a pre-recorded response store in replay mode, so no model runs.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Imported before any in-process pytester run: pytester restores sys.modules
# after each run, and numpy (under pandas) and the CEL engine (a PyO3 module)
# cannot be imported twice in one process. Loaded here, they survive the restores.
import cel  # noqa: F401
import pandas  # noqa: F401
import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step

# The conftest written into a pytester directory: a scripted model whose
# replies depend on the prompt, so tests can make cases pass or fail at will.
SCRIPTED_CONFTEST = """
import pytest
from tnsai_eval.testing import ScriptedLLM

RULES = [
    (r"capital of France", "Paris"),
    (r"capital of Italy", "Rome"),
    (r"capital of Spain", "Lisbon"),
    (r"id: 7", '{"id": 7}'),
    (r"strict reviewer", "It is a JSON record.\\nSCORE: 90"),
]

@pytest.fixture(scope="session")
def llm():
    return ScriptedLLM(rules=RULES, default="I do not know", usage="estimate")
"""


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """An OpenAI-compatible server on 127.0.0.1 that answers "Paris" to everything."""
    with FakeOpenAIServer(default=Step.ok("Paris")) as running:
        yield running


@pytest.fixture
def scripted(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester directory whose ``llm`` fixture is a ScriptedLLM."""
    pytester.makeconftest(SCRIPTED_CONFTEST)
    return pytester


def read_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def write_report(path: Path, scores: dict[str, float], **config: Any) -> Path:
    """A minimal valid report with one ``score`` metric per test."""
    tests = [
        {
            "nodeid": nodeid,
            "status": "passed",
            "metrics": {"score": {"samples": [score]}},
        }
        for nodeid, score in scores.items()
    ]
    path.write_text(
        json.dumps({"schema_version": 1, "config": config, "tests": tests}), encoding="utf-8"
    )
    return path


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip()
