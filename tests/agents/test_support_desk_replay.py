"""bench/README.md's support desk figure replays from the committed store, tools run live."""

from __future__ import annotations

from tests.test_bench_replay import readme_table, replay

HEADING = "## Support desk agent: tool-call accuracy per match mode"


def test_the_published_table_replays_with_no_live_call() -> None:
    published = readme_table(HEADING)
    printed = replay("support_desk.py", "--store", "bench/stores/support_desk")
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in printed.splitlines()
        if line.startswith("|")
    ][2:]
    assert rows == published, printed
    assert "48 requests," in printed
