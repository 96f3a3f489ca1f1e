"""``tnsai-eval refine`` with a scripted model in place of the configured one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.refinement.conftest import PY_COMPILE
from tnsai_eval.cli import main
from tnsai_eval.testing import ScriptedLLM


@pytest.fixture
def scripted() -> ScriptedLLM:
    return ScriptedLLM()


def test_refine_prints_the_iteration_table_and_the_final_output(
    scripted: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = tmp_path / "draft.txt"
    draft.write_text("name: Ada")
    saved = tmp_path / "final.json"
    scripted.add_replies('{"user": "Ada"}', 'Sure!\n```json\n{"name": "Ada"}\n```\nDone.')
    code = main(
        [
            "refine", "--task", "Ada as JSON", "--draft-file", str(draft),
            "--valid-json", "--must-contain", '"name"', "--first-code-block",
            "--max-tokens", "32", "--output-file", str(saved),
        ],
        llm=scripted,
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["iter", "score", "tokens", "call_s", "failed", "checks"]
    assert lines[1].split()[:2] == ["1", "0.00"]
    assert lines[1].endswith("must_contain('\"name\"'), valid_json")
    assert lines[2].split()[:2] == ["2", "0.50"]
    assert lines[3].split()[:2] == ["3", "1.00"]
    assert lines[3].endswith("-")
    assert "status SUCCESS: all 2 checks passed" in out
    assert out.rstrip().endswith('--- final output ---\n{"name": "Ada"}')
    assert saved.read_text() == '{"name": "Ada"}'
    assert [call.params for call in scripted.calls] == [{"max_tokens": 32}] * 2


def test_refine_exits_1_when_the_checks_never_pass(
    scripted: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = tmp_path / "draft.py"
    draft.write_text("def f(:\n")
    scripted.add_replies("still (", "still (")
    code = main(
        [
            "refine", "--task", "fix it", "--draft-file", str(draft),
            "--compiler", PY_COMPILE, "--max-iterations", "2",
        ],
        llm=scripted,
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    assert "status MAX_ITERATIONS" in out
    assert "SyntaxError" in scripted.calls[0].prompt


def test_refine_without_checks_is_a_usage_error(
    scripted: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = tmp_path / "draft.txt"
    draft.write_text("x")
    code = main(["refine", "--task", "t", "--draft-file", str(draft)], llm=scripted)
    assert code == 2
    assert "at least one check" in capsys.readouterr().err
    assert scripted.calls == []


def test_refine_names_an_unreadable_draft(
    scripted: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.txt"
    code = main(
        ["refine", "--task", "t", "--draft-file", str(missing), "--valid-json"], llm=scripted
    )
    assert code == 2
    assert f"--draft-file {str(missing)!r} cannot be read" in capsys.readouterr().err
