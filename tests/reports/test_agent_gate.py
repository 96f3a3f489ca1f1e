"""An agent suite gated in a pull request: a system prompt that skips a required tool.

A support-desk agent (a scripted model behind a response store: its replies
depend on the system prompt) refunds six orders; the base branch's prompt
makes it look each order up first, and its run is the committed baseline. A
pull request changes the system prompt so that the agent refunds "small"
orders without the lookup. The pytest run against the gate baseline (its
terminal), then ``tnsai-eval ci comment`` (the comment, JUnit, the HTML
page) must each name exactly the three cases whose lookup was skipped, with
both tool sequences and the first divergence, the norm violation the head
gained, and the system-prompt diff.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

# Imported before the in-process pytester runs: the CEL engine (a PyO3 module)
# and numpy cannot be imported twice in one process (see tests/plugin/conftest.py).
import cel  # noqa: F401
import pandas  # noqa: F401
import pytest

from tests.git_repo import git
from tnsai_eval.cli import main

CONFTEST = """
from pathlib import Path

# Imported before the in-process pytester runs: the CEL engine (a PyO3 module)
# and numpy cannot be imported twice in one process (see tests/plugin/conftest.py).
import cel  # noqa: F401
import pandas  # noqa: F401
import pytest
from tnsai_eval.llm import Completion, FrontClient, ToolCall
from tnsai_eval.testing import ScriptedLLM


def reply(messages, params):
    system = messages[0].content if messages[0].role == "system" else ""
    user = next(m.content for m in messages if m.role == "user")
    order = user.split()[-1]
    plan = ["lookup_order", "issue_refund"]
    if "no lookup for small orders" in system and "small" in user:
        plan = ["issue_refund"]
    done = sum(m.role == "tool" for m in messages)
    if done < len(plan):
        call = ToolCall(f"c{done}", plan[done], {"order_id": order})
        return Completion("", tool_calls=(call,))
    return f"Refunded {order}."


@pytest.fixture(scope="session")
def llm():
    return FrontClient(ScriptedLLM(fn=reply), Path(__file__).parent / "store", mode="record")
"""

TEST_FILE = """
from tnsai_eval.agents import Agent
from tnsai_eval.norms import NormEntry, NormType
from tnsai_eval.scoring import NormCompliance, TestCase, ToolCallMatch

SYSTEM = "{system}"
ORDERS = {{"A1": "large", "A2": "small", "A3": "large", "A4": "small", "A5": "large",
           "A6": "small"}}
CASES = [
    TestCase(f"Please refund my {{size}} order {{order}}", "",
             [{{"name": "lookup_order"}}, {{"name": "issue_refund"}}], id=order)
    for order, size in ORDERS.items()
]
NORMS = [NormEntry(NormType.PROHIBITION, '!("lookup_order" in performed)', "issue_refund",
                   "look the order up before refunding it")]


def lookup_order(order_id: str) -> str:
    "Look an order up."
    return f"{{order_id}}: paid"


def issue_refund(order_id: str) -> str:
    "Refund an order."
    return "refunded"


def test_desk(llm, evaluate_target):
    evaluate_target(lambda: Agent(llm, SYSTEM, tools=[lookup_order, issue_refund]), CASES,
                    evaluator=[ToolCallMatch("in_order", arguments="ignore"),
                               NormCompliance(NORMS)])
"""

BASE_PROMPT = "You refund orders. Always look the order up first."
HEAD_PROMPT = "You refund orders. There is no lookup for small orders."
SKIPPED = ("A2", "A4", "A6")
KEPT = ("A1", "A3", "A5")
SENTENCE = "head skipped `lookup_order`, then called `issue_refund`"
SEQUENCES = "tool calls: base `lookup_order`, `issue_refund`; head `issue_refund`"
VIOLATION = "norm violations gained: call 1: action 'issue_refund' is prohibited"


def _block(text: str, start: str) -> str:
    """The text from ``start`` to the next case's block (or the end)."""
    at = text.index(start)
    following = [text.find(m, at + len(start)) for m in ("case `", "\ncase ", "  case ")]
    ends = [i for i in following if i != -1]
    return text[at : min(ends)] if ends else text[at:]


def test_a_prompt_that_skips_a_required_tool_is_named_everywhere_the_gate_speaks(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_desk=TEST_FILE.format(system=BASE_PROMPT))
    pytester.runpytest_inprocess("--tnsai-report", "baseline.json").assert_outcomes(passed=1)
    git(pytester.path, "init", "-q", "-b", "main")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "base: the desk and its baseline")
    base = git(pytester.path, "rev-parse", "HEAD")

    # The pull request: a new system prompt, its replies recorded anew.
    git(pytester.path, "checkout", "-q", "-b", "pr")
    pytester.makepyfile(test_desk=TEST_FILE.format(system=HEAD_PROMPT))
    assert main(["ci", "baseline", "--base", base, "--path", "baseline.json"]) == 0
    run = pytester.runpytest_inprocess(
        "--tnsai-baseline", ".tnsai/gate-baseline.json", "--tnsai-report", "head.json"
    )
    terminal = run.stdout.str()
    assert run.ret == 1  # the score regressed: the gate fails the run
    status = main(
        ["ci", "comment", "head.json", "--pytest-exit", str(int(run.ret)), "--junit", "j.xml",
         "--html", "report.html", "--out", "comment.md"]
    )  # fmt: skip
    capsys.readouterr()
    assert status == 1
    comment = (pytester.path / "comment.md").read_text(encoding="utf-8")
    gate = next(
        case
        for case in ET.parse(pytester.path / "j.xml").getroot().iter("testcase")
        if case.get("name") == "tnsai gate: test_desk.py::test_desk (score)"
    )
    failure = gate.find("failure")
    assert failure is not None
    junit = failure.text or ""
    page = (pytester.path / "report.html").read_text(encoding="utf-8")
    shown_page = html.unescape(re.sub(r"<[^>]+>", "", page))

    for name, text, start in (
        ("terminal", terminal, "case {} broken (1.00 -> 0.00): "),
        ("comment", comment, "case `{}` broken (1.00 -> 0.00): "),
        ("junit", junit, "case {} broken (1.00 -> 0.00): "),
    ):
        for order in SKIPPED:
            block = _block(text, start.format(order))
            assert SENTENCE in block, (name, order, block)
            assert SEQUENCES in block, (name, order, block)
            assert "first divergence" in block, (name, order, block)
            assert VIOLATION in block.replace("\\", ""), (name, order, block)
        for order in KEPT:
            assert start.format(order) not in text, (name, order)
    # The side-by-side rows: the base's lookup faces a gap in the head.
    assert re.search(r'1\s+lookup_order\(\{"order_id": "A2"\}\)\s+-\s+<- first divergence',
                     terminal)  # fmt: skip
    assert '| 1 | lookup\\_order(\\{"order\\_id": "A2"\\}) | - | \\<- first divergence |' in comment
    # The system prompt the target's calls sent, as a diff.
    for text in (terminal, comment):
        assert f"-{BASE_PROMPT}" in text
        assert f"+{HEAD_PROMPT}" in text
    # The page: each skipped case's two runs, its row filterable as flipped and violating.
    for order in SKIPPED:
        block = _block(shown_page, f"broken {order}: ")
        assert "head skipped lookup_order, then called issue_refund" in block
        assert "tool calls: base lookup_order, issue_refund; head issue_refund" in block
        assert re.search(
            rf'<tr class="broken" data-kinds="all flipped broken failing violating">'
            rf"<td>{order}</td><td>score</td>",
            page,
        )
    assert 'value="violating"' in page
    for order in KEPT:
        assert f"broken {order}: " not in shown_page
