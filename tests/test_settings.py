"""``tnsai_eval.settings``: the ``TNSAI_LLM_*`` names and the record modes, written once."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tnsai_eval import settings
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import RecordMode as LLMRecordMode

ROOT = Path(__file__).resolve().parents[1]


def _string_literals(path: Path) -> list[str]:
    """Every str constant in ``path`` except docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    ]


def test_the_variable_names_are_written_only_in_settings() -> None:
    found = {
        str(path.relative_to(ROOT))
        for package in ("tnsai_eval", "pytest_plugin")
        for path in (ROOT / package).rglob("*.py")
        if any("TNSAI_LLM_" in text for text in _string_literals(path))
    }
    assert found == {"tnsai_eval/settings.py"}


def test_explicit_values_win_and_empty_variables_are_unset() -> None:
    env = {settings.ENV_BASE_URL: "http://env/v1", settings.ENV_MODEL: "", "TNSAI_LLM_API_KEY": "k"}
    resolved = settings.resolve_model(environ=env)
    assert (resolved.base_url, resolved.model, resolved.api_key) == ("http://env/v1", None, "k")
    assert "k" not in repr(resolved)  # a key never shows in a repr
    assert settings.resolve_model(base_url="http://arg/v1", environ=env).base_url == "http://arg/v1"
    assert settings.resolve_model(environ={}).embedded


def test_one_record_mode_enum() -> None:
    assert LLMRecordMode is settings.RecordMode
    assert [m.value for m in settings.RecordMode] == ["off", "replay", "record", "refresh"]
    with pytest.raises(ConfigError, match="record mode"):
        settings.RecordMode.parse("replya")


def test_the_plugin_imports_no_client_at_start_up() -> None:
    # pytest imports tnsai_eval.pytest in every run; the HTTP client, SQLite,
    # the optimizer and pandas load only when a fixture needs them.
    code = (
        "import sys, tnsai_eval.pytest; "
        "print(','.join(m for m in ('httpx', 'sqlite3', 'pandas', 'tnsai_eval.llm', "
        "'tnsai_eval.optimizer', 'tnsai_eval.feedback') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
