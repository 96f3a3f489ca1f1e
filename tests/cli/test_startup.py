"""`tnsai-eval` starts fast: a subcommand imports what it uses and nothing more.

Each check runs the command in a fresh interpreter (the same one as the tests)
and reads ``sys.modules`` as the process exits, beside a bare interpreter's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tnsai_eval.cli import SUBCOMMANDS, build_parser, main
from tnsai_eval.reports import MetricStats, Report, TestStatus, TrackedTest

# How many modules `tnsai-eval --help` may add to a bare `python -c pass`.
HELP_BUDGET = 60
# What the parser must be built without (the list, plus the heavy libraries).
HEAVY = (
    "httpx",
    "pandas",
    "matplotlib",
    "tnsai_eval.llm",
    "tnsai_eval.optimizer",
    "tnsai_eval.reports",
    "tnsai_eval.scoring",
)

# Prints the loaded modules, one a line, as the process exits, whatever way the code
# before it ends; atexit and sys are built in, so the probe itself loads nothing.
_PROBE = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('\\n'.join(['---', *sys.modules]), file=sys.stderr))\n"
)


def _modules(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE + code], capture_output=True, text=True, timeout=120
    )
    return set(done.stderr.rpartition("---\n")[2].split())


def _command(*argv: str) -> str:
    return f"from tnsai_eval.cli import main\nsys.exit(main({list(argv)!r}))\n"


def test_help_adds_at_most_60_modules_to_a_bare_interpreter() -> None:
    bare = _modules("pass")
    added = _modules(_command("--help")) - bare
    assert len(added) <= HELP_BUDGET, f"{len(added)} modules added: {sorted(added)}"
    assert not [m for m in added if m.startswith(HEAVY)]


@pytest.mark.parametrize("command", ["report", "refine", "chat"])
def test_a_subcommands_help_imports_no_other_subcommand(command: str) -> None:
    loaded = _modules(_command(command, "--help"))
    assert SUBCOMMANDS[command][0] in loaded
    others = [module for name, (module, _) in SUBCOMMANDS.items() if name != command]
    assert not set(others) & loaded
    assert "tnsai_eval.optimizer" not in loaded


def test_report_runs_without_the_client_or_the_optimizer(tmp_path: Path) -> None:
    path = Report(
        tests=(TrackedTest("t.py::test_a", TestStatus.PASSED, {"s": MetricStats("s", (0.5,))}),)
    ).save(tmp_path / "run.json")
    loaded = _modules(_command("report", str(path)))
    assert "tnsai_eval.reports" in loaded
    for module in ("httpx", "tnsai_eval.llm", "tnsai_eval.optimizer", "matplotlib", "pandas"):
        assert module not in loaded, module


def test_the_listing_is_the_same_with_every_subcommand_loaded() -> None:
    # The table's help lines are what each subcommand registers for itself.
    assert build_parser(()).format_help() == build_parser().format_help()


def test_a_subcommand_is_found_after_top_level_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.startswith("tnsai-eval ")
    with pytest.raises(SystemExit) as bad:
        main(["nonesuch"])
    assert bad.value.code == 2
    assert "invalid choice: 'nonesuch'" in capsys.readouterr().err
