"""The committed reply stores replay the figures bench/README.md publishes.

Each check runs a bench script as its README section gives it, with
``--replay`` (no model loaded; a request the store lacks fails the run), and
compares what it prints with the README's table, read from the README itself:
a store or a code change that moves a published figure fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
S = "bench/stores/optimizer"
BENCH_README = ROOT / "bench" / "README.md"

# One row of bench/optimizer.py's table, up to its requests column.
_OPTIMIZER_ROW = re.compile(
    r"^(?P<dataset>\S+)\s+\d+/\d+\s+(?P<method>\S+)\s+(?P<initial>\S+) ->\s+(?P<best>\S+)\s+"
    r"(?P<gain>[+-]\d\.\d+ \[[+-]\d\.\d+, [+-]\d\.\d+\])\s+(?P<const>\S+)\s+"
    r"(?P<flips>\+\d+/-\d+)\s+(?P<p>\S+)\s+(?P<verdict>\S+)\s+(?P<train>\S+)\s+(?P<requests>\d+)\s"
)

# One row of bench/datasets.py's table, up to its requests column.
_DATASETS_ROW = re.compile(
    r"^(?P<dataset>\S+)\s+(?P<mode>free|structured)\s+(?P<split>\d+/\d+)\s+"
    r"(?P<held>\S+ -> \S+ \[\S+, \S+\])\s+(?P<flips>\+\d+/-\d+)\s+(?P<p>\S+)\s+"
    r"(?P<train>\S+->\S+)\s+(?P<best>\S+)\s+(?P<requests>\d+)\s"
)


def _plain(cell: str) -> str:
    """A README cell as the script prints it: no emphasis, no spaces."""
    return cell.replace("*", "").replace(" ", "")


def readme_table(heading: str) -> list[list[str]]:
    """The cells of the first table's body rows in the README section titled ``heading``."""
    text = BENCH_README.read_text("utf-8")
    start = text.index(heading)
    section = text[start : text.find("\n#", start + len(heading))]
    rows: list[list[str]] = []
    for line in section.splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
        elif rows:
            break  # the first table ended
    assert len(rows) > 2, f"no table under {heading!r} in {BENCH_README}"
    return rows[2:]  # past the header and the |---| line


def replay(script: str, *args: str) -> str:
    """What ``bench/SCRIPT ARGS --replay`` prints; it must end with no store miss."""
    done = subprocess.run(
        [sys.executable, f"bench/{script}", *args, "--replay"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"replies replayed, 0 misses$", done.stdout.strip()), done.stdout
    return done.stdout


def test_headlines_store_replays_the_published_table() -> None:
    published = {row[0]: row for row in readme_table("### A held-out benchmark nothing")}
    printed = replay(
        "optimizer.py",
        "--store",
        "bench/stores/headlines",
        "--datasets",
        "headlines",
        "--methods",
        ",".join(published),
    )
    rows = {m["method"]: m for m in map(_OPTIMIZER_ROW.match, printed.splitlines()) if m}
    assert sorted(rows) == sorted(published), printed
    for method, cells in published.items():
        row = rows[method]
        assert cells[1] == f"{row['initial']} -> {row['best']}", (method, printed)
        assert cells[2] == row["gain"], (method, printed)
        assert cells[3].split()[0] == row["const"], (method, printed)
        assert cells[4] == f"{row['flips']}, {row['p']}", (method, printed)
        assert cells[5] == row["verdict"], (method, printed)
        assert cells[6] == row["requests"], (method, printed)


# The Optimizer section's tables: the words just before each, and its command's arguments.
_RACES = "exhaustive,racing,racing-t,racing-hoeffding,halving"
# The 70 selection cases of sentiment_large's split, scored on its 100-case held-out set.
_SENTIMENT_100 = (
    "--datasets",
    "sentiment_large",
    "--held-out",
    "sentiment_heldout",
    "--demo-sets",
    "4",
)
_OPTIMIZER_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "sentiment_large, default prompt": (
        'default prompt "Is the sentiment of this review positive or negative?":',
        ("--datasets", "sentiment_large", "--demo-sets", "4"),
    ),
    "arithmetic_large, first 100": (
        'default prompt "Solve the arithmetic problem.":',
        ("--datasets", "arithmetic_large", "--limit", "100", "--methods", _RACES),
    ),
    "arithmetic_large, all 200": (
        "split is stratified by expected value), the same methods:",
        ("--datasets", "arithmetic_large", "--methods", _RACES),
    ),
    "sentiment_large, weaker prompt": (
        "split, both held out and in training), demo search (4 sets):",
        (
            "--datasets",
            "sentiment_large",
            "--demo-sets",
            "4",
            "--prompt",
            "Classify the sentiment.",
        ),
    ),
    "sentiment_large, 100 held out": ("from the CLI's default prompt:\n\n| method", _SENTIMENT_100),
    "arithmetic_large, 100 held out": (
        '(`arithmetic_heldout`), from "Solve the arithmetic problem.":',
        ("--datasets", "arithmetic_large", "--limit", "100", "--held-out", "arithmetic_heldout"),
    ),
    "sentiment_large, weaker prompt, 100 held out": (
        'from "Classify the sentiment." (100 held out):',
        (*_SENTIMENT_100, "--prompt", "Classify the sentiment."),
    ),
}


@pytest.mark.parametrize("table", sorted(_OPTIMIZER_TABLES))
def test_optimizer_store_replays_the_published_tables(table: str) -> None:
    phrase, arguments = _OPTIMIZER_TABLES[table]
    published = {_plain(row[0]).split("(")[0]: row for row in readme_table(phrase)}
    methods = ",".join(published)  # the table's rows, in its order
    printed = replay("optimizer.py", "--store", S, *arguments, "--methods", methods)
    rows = {m["method"]: m for m in map(_OPTIMIZER_ROW.match, printed.splitlines()) if m}
    assert sorted(rows) == sorted(published), printed
    for method, cells in published.items():
        row = rows[method]
        shown = [f"{row['initial']}->{row['best']}", row["gain"], row["const"], row["flips"]]
        shown += [row["p"], row["verdict"], row["train"]]
        assert [_plain(c) for c in cells[1:8]] == [_plain(v) for v in shown], (method, printed)
        assert _plain(cells[8]).split("(")[0] == row["requests"], (method, printed)


def test_datasets_store_replays_the_published_table() -> None:
    published = {
        (row[0], row[1]): row for row in readme_table("## Shipped datasets: initial and best")
    }
    printed = replay("datasets.py", "--store", "bench/stores/datasets")
    rows = {
        (m["dataset"], m["mode"]): m for m in map(_DATASETS_ROW.match, printed.splitlines()) if m
    }
    assert sorted(rows) == sorted(published), printed
    for key, cells in published.items():
        row = rows[key]
        fields = ("split", "held", "flips", "p", "train", "best", "requests")
        assert [_plain(c) for c in cells[2:]] == [_plain(row[f]) for f in fields], (key, printed)


def test_a_replay_that_misses_fails(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "bench/optimizer.py",
            "--store",
            str(tmp_path),
            "--replay",
            "--datasets",
            "headlines",
            "--methods",
            "exhaustive",
            "--limit",
            "6",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert re.search(r"0 replies replayed, [1-9]\d* misses", done.stdout), done.stdout
    assert "the store lacks replies" in done.stderr
    assert list(tmp_path.iterdir()) == []  # a replay writes nothing


# bench/README.md's section on the optimizer over the desk agent's system prompt: the
# command (there with --record replay) and the lines it prints, read from the README.
_DESK_OPTIMIZER = "## Support desk agent: the optimizer on its system prompt"
_DESK_ARGUMENTS = (
    "optimize", "datasets/support_desk.jsonl",
    "--agent", "datasets/make_support_desk.py:make_agent",
    "--strategies", "chain_of_thought", "--rounds", "1", "--no-rewrite",
    "--store", "bench/stores/support_desk_optimizer", "--no-progress",
)  # fmt: skip


def test_the_desk_agents_optimizer_store_replays_the_published_figure(tmp_path: Path) -> None:
    text = BENCH_README.read_text("utf-8")
    section = text[text.index(_DESK_OPTIMIZER) :]
    start = section.index("```text\n") + len("```text\n")
    published = section[start : section.index("```", start)]
    assert " ".join(_DESK_ARGUMENTS) in " ".join(section.replace("\\\n", " ").split())
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tnsai_eval.cli",
            *_DESK_ARGUMENTS,
            "--record",
            "replay",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for line in published.strip().splitlines():
        assert line in done.stdout, (line, done.stdout)
    # Every reply came from the store: no model was loaded, no call made.
    assert re.search(r"1 round\(s\), 0 calls \(0 retries, \d+ cache hits\)", done.stdout)
