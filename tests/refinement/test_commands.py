"""Command checks: real processes, hostile outputs, timeouts, cleanup."""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path

import pytest

from tests.processes import running
from tnsai_eval.refinement import CheckKind, CompletionCriteria, RefinementLoop, RefinementStatus
from tnsai_eval.testing import ScriptedLLM

from .conftest import PY_COMPILE


def test_py_compile_passes_valid_python() -> None:
    criteria = CompletionCriteria.builder().compiler_check(PY_COMPILE).build()
    [outcome] = criteria.evaluate("def f(x):\n    return x + 1\n")
    assert outcome.passed, outcome.message
    assert (outcome.kind, outcome.source) == (CheckKind.COMMAND, "compiler_check")
    assert outcome.name == f"compiler_check({PY_COMPILE})"


def test_py_compile_failure_carries_the_compilers_message() -> None:
    criteria = CompletionCriteria.builder().compiler_check(PY_COMPILE, name="compiles").build()
    [outcome] = criteria.evaluate("def f(x:\n    return x\n")
    assert not outcome.passed
    assert outcome.name == "compiles"
    assert "exit status 1" in outcome.message
    assert "SyntaxError" in outcome.message


def test_compiler_message_reaches_the_revision_prompt() -> None:
    criteria = CompletionCriteria.builder().compiler_check(PY_COMPILE, suffix=".py").build()
    fixed = "def add(a, b):\n    return a + b\n"
    llm = ScriptedLLM([fixed])
    result = RefinementLoop("Write add(a, b) in Python.", criteria).execute(
        llm, "def add(a, b)\n    return a + b\n"
    )
    assert result.status is RefinementStatus.SUCCESS
    assert result.final_output == fixed
    [call] = llm.calls
    assert "## Failed checks (1 of 1)" in call.prompt
    assert "SyntaxError" in call.prompt
    assert "def add(a, b)\n    return a + b" in call.prompt
    assert result.metrics.score_progression == [0.0, 1.0]


def test_test_command_and_lint_check_pass_on_exit_zero() -> None:
    criteria = (
        CompletionCriteria.builder()
        .test_command("grep -q assert $OUTPUT")
        .lint_check("! grep -q '  $' $OUTPUT")
        .build()
    )
    assert criteria.score("assert x\n") == 1.0
    tests, lint = criteria.evaluate("x  \n")
    assert (tests.passed, tests.source) == (False, "test_command")
    assert (lint.passed, lint.source) == (False, "lint_check")
    assert "the tests failed with exit status 1" in tests.message
    assert "(it printed nothing)" in tests.message


def test_failure_message_keeps_only_the_tail_of_the_output() -> None:
    command = "i=0; while [ $i -lt 3000 ]; do echo line-$i; i=$((i+1)); done; echo END >&2; exit 3"
    [outcome] = CompletionCriteria.builder().compiler_check(command).build().evaluate("x")
    assert not outcome.passed
    assert "exit status 3" in outcome.message
    assert outcome.message.rstrip().endswith("END")  # stderr is included
    assert "line-2999" in outcome.message
    assert "line-1\n" not in outcome.message
    assert len(outcome.message) < 4096 + 200


HOSTILE = [
    "$(touch {marker})",
    "`touch {marker}`",
    "'; touch {marker}; echo '",
    '"; touch {marker}; echo "',
    "ok\ntouch {marker}\n",
    "nul\0byte; touch {marker}",
    "$OUTPUT; touch {marker} ${{OUTPUT}}",
    "\\'$(touch {marker})\\'",
]


@pytest.mark.parametrize("template", HOSTILE)
def test_hostile_output_reaches_the_command_only_as_a_file(
    template: str, marker: Path, tmp_path: Path
) -> None:
    output = template.format(marker=marker)
    expected = tmp_path / "expected"
    expected.write_bytes(output.encode())
    # Every use of $OUTPUT in one command, quoted and not: cmp proves the file
    # holds exactly the output, byte for byte.
    command = f"cmp $OUTPUT {shlex.quote(str(expected))} && cat ${{OUTPUT}} >/dev/null"
    criteria = CompletionCriteria.builder().compiler_check(command).build()
    [outcome] = criteria.evaluate(output)
    assert outcome.passed, outcome.message
    assert not marker.exists()


def test_ten_megabytes_of_hostile_text(marker: Path) -> None:
    output = ("x" * 1023 + "\n") * 10 * 1024 + f"$(touch {marker})`touch {marker}`"
    criteria = (
        CompletionCriteria.builder()
        .compiler_check(f"test $(wc -c < $OUTPUT) -eq {len(output)}")
        .build()
    )
    [outcome] = criteria.evaluate(output)
    assert outcome.passed, outcome.message
    assert not marker.exists()


def test_temp_files_are_removed_on_pass_fail_and_timeout(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    for command, timeout_s in [
        (f"echo $OUTPUT >> {seen}", 30.0),
        (f"echo $OUTPUT >> {seen}; touch $OUTPUT.pyc; exit 1", 30.0),
        (f"echo $OUTPUT >> {seen}; sleep 30", 0.5),
    ]:
        criteria = CompletionCriteria.builder().compiler_check(command, timeout_s=timeout_s).build()
        criteria.evaluate("content")
    paths = [Path(line) for line in seen.read_text().splitlines()]
    assert len(paths) == 3
    for path in paths:
        assert not path.exists()
        assert not path.parent.exists()  # the private directory, side files and all


def test_temp_dir_with_shell_metacharacters_is_quoted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marker: Path
) -> None:
    weird = tmp_path / f"dir with 'quotes' and $(touch {marker.name})"
    weird.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(weird))
    monkeypatch.chdir(tmp_path)  # an unquoted path would touch ./pwned, the marker
    criteria = CompletionCriteria.builder().compiler_check("grep -q hello $OUTPUT").build()
    [outcome] = criteria.evaluate("hello")
    assert outcome.passed, outcome.message
    assert not marker.exists()


def test_output_path_is_also_in_the_environment() -> None:
    criteria = CompletionCriteria.builder().compiler_check('grep -q hi "$OUTPUT"').build()
    assert criteria.score("hi") == 1.0


def test_timeout_kills_the_whole_process_group(kill_leftovers: list[int]) -> None:
    # Found by its command line: inside the check's PID namespace, $! is not a
    # pid this process could look up.
    marker = f"sleep 600.{os.getpid()}1"
    # The sleeper's parent exits at once, so the sleeper is an orphan that no
    # shell waits for: only killing the whole group ends it.
    command = f"sh -c '{marker} &'; sleep 30"
    criteria = CompletionCriteria.builder().test_command(command, timeout_s=1).build()
    [outcome] = criteria.evaluate("x")
    left = running(marker)
    kill_leftovers.extend(left)
    assert not outcome.passed
    assert "did not finish within 1 s and was killed" in outcome.message
    assert left == []


def test_background_children_do_not_outlive_a_passing_check(kill_leftovers: list[int]) -> None:
    marker = f"sleep 60.{os.getpid()}2"
    criteria = (
        CompletionCriteria.builder()
        .compiler_check(f"{marker} & echo done; exit 0", timeout_s=20)
        .build()
    )
    [outcome] = criteria.evaluate("x")
    left = running(marker)
    kill_leftovers.extend(left)
    assert outcome.passed
    assert left == []


def test_a_command_that_cannot_run_fails_cleanly() -> None:
    [outcome] = (
        CompletionCriteria.builder().compiler_check("/nonexistent/compiler $OUTPUT").build()
    ).evaluate("x")
    assert not outcome.passed
    assert "exit status 127" in outcome.message
    assert "not found" in outcome.message


def test_only_the_exact_placeholder_is_replaced(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    command = f'OUTPUT_DIR=elsewhere; echo "$OUTPUT_DIR" > {seen}; grep -q hi $OUTPUT'
    [outcome] = CompletionCriteria.builder().compiler_check(command).build().evaluate("hi")
    assert outcome.passed, outcome.message
    assert seen.read_text() == "elsewhere\n"
