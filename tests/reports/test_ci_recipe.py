"""The pull-request workflow of docs/ci.md, run end to end in a local git repository.

A small app (a prompt file, a 12-case labelling suite, recorded replies, a
committed baseline, its gate settings in ``pytest.ini``) lives on a base
branch; each test makes a pull-request branch from it and runs the `run:`
steps of ``docs/workflows/prompts.yml`` itself (the file, not a copy) in
order, as GitHub Actions would (``bash -eo pipefail``, ``CI=true``, the event
payload, ``if: always()``), with the real ``tnsai-eval`` and ``pytest``
commands of a *core install* (``tests.core_install``: no ``[local]``, the
embedded model not importable), as the workflow's ``Install`` step makes
it. Only the `uses:` steps (checkout, setup-python, upload, the comment
action) and ``Install`` itself (pip, no network here) are not run.

The model is a fake OpenAI-compatible server on 127.0.0.1 whose replies
depend on the prompt's version tag: ``[v1]`` labels 10 of the 12 tickets
right, ``[worse]`` 4 (6 broken: the paired sign test is significant),
``[better]`` all 12. Developers record replies locally (``--llm-record
record``, with the development install); CI only replays them. One test
records with the embedded model itself and replays in the core install.

Every branch checks that the comment's first line, the job summary,
pytest's last line, the exit statuses and JUnit tell the same verdict.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.core_install import make_core_install
from tests.git_repo import git as _git
from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step, completion_body

# PyYAML comes with the dev tools (jupyter, llama.cpp's server); no stubs needed here.
yaml: Any = importlib.import_module("yaml")

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "docs" / "workflows" / "prompts.yml"
DEV_BIN = Path(sys.executable).parent
LABELS = ("billing", "shipping", "repair")
TICKETS = [(f"ticket {i}: about my order", LABELS[i % 3]) for i in range(12)]
RIGHT = {"v1": 10, "worse": 4, "better": 12, "all": 10**9, "broken": 0}
EVALUATOR = f"evaluator=LabelEvaluator({list(LABELS)!r})"
GATE_STEP = "Replay the prompt suite and gate it"
COMMENT_STEP = "Write the report and the comment"
GATE_INI = "tnsai_gate = paired\ntnsai_alpha = 0.05\ntnsai_tolerance = 0.05\n"

TEST_FILE = f"""
from pathlib import Path

from tnsai_eval.scoring import LabelEvaluator

# Built from __file__, as users do: the report still names it relative to the rootdir.
PROMPT = Path(__file__).resolve().parents[2] / "prompts" / "support.txt"
CASES = {TICKETS!r}


def test_support(evaluate_prompt):
    evaluate_prompt(PROMPT, CASES, evaluator=LabelEvaluator({list(LABELS)!r}))
"""


def _reply(request: Recorded) -> bytes:
    """The label a prompt version gets right for the first RIGHT[version] tickets."""
    text = json.dumps(request.json.get("messages", []))
    version = next((v for v in RIGHT if f"[{v}]" in text), "v1")
    number = int(re.search(r"ticket (\d+)", text).group(1))  # type: ignore[union-attr]
    label = LABELS[number % 3]
    if number >= RIGHT[version]:
        label = LABELS[(number + 1) % 3]
    return completion_body(request, label)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=Step(body=_reply)) as running:
        yield running


@pytest.fixture(scope="module")
def core_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documented CI install: tnsai-eval without [local] (see tests.core_install)."""
    return make_core_install(tmp_path_factory.mktemp("core"))


def _env(bin_dir: Path = DEV_BIN, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TNSAI_", "GITHUB_"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    env.pop("CI", None)
    # The app's environment holds tnsai-eval alone, as the workflow's `pip install`
    # makes it: none of this checkout's dev plugins (nbval, hypothesis...) load.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["PYTEST_PLUGINS"] = "tnsai_eval.pytest"
    env.update(extra)
    return env


def _pytest(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A developer's run on their machine (the development install, with [local])."""
    return subprocess.run(
        [str(DEV_BIN / "pytest"), "tests/prompts", "-p", "no:randomly", *args],
        cwd=repo,
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )


def _record(repo: Path, *args: str) -> None:
    done = _pytest(repo, "--llm-record", "record", *args)
    assert done.returncode == 0, done.stdout + done.stderr


def _app(repo: Path, ini: str, test_file: str = TEST_FILE) -> None:
    (repo / "prompts").mkdir()
    (repo / "prompts" / "support.txt").write_text(
        "Label the support ticket: billing, shipping or repair. [v1]\n", encoding="utf-8"
    )
    (repo / "tests" / "prompts").mkdir(parents=True)
    (repo / "tests" / "prompts" / "test_support.py").write_text(test_file, encoding="utf-8")
    (repo / "pytest.ini").write_text(ini, encoding="utf-8")
    _git(repo, "init", "-q", "-b", "main")


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory: pytest.TempPathFactory, server: FakeOpenAIServer) -> Path:
    """The app on its base branch: prompt v1, its recorded replies, its accepted baseline."""
    repo = tmp_path_factory.mktemp("app")
    _app(
        repo,
        "[pytest]\naddopts = -p no:cacheprovider\n"
        f"tnsai_llm_base_url = {server.base_url}\ntnsai_llm_model = fake-support\n{GATE_INI}",
    )
    # Record the replies and write the accepted run's report in one go.
    _record(repo, "--tnsai-report", "tests/prompts/baseline.json")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base: prompt v1 and its baseline")
    return repo


@dataclass
class Outcome:
    failed: list[str]
    comment: str
    log: str
    repo: Path
    steps: dict[str, str]

    @property
    def verdict(self) -> str:
        """The comment's first line, the verdict, after checking every output agrees with it."""
        return _agreed(self)


def _plain(markdown: str) -> str:
    """``markdown`` as it reads once rendered: without the escaper's backslashes."""
    return re.sub(r"\\([\\`*_{}\[\]<>#|~!&$.+=-])", r"\1", markdown)


def _agreed(outcome: Outcome) -> str:
    first = _plain(outcome.comment.splitlines()[0])
    assert first.startswith("### tnsai-eval "), outcome.comment[:500]
    verdict = first.removeprefix("### tnsai-eval ")
    passed = not verdict.startswith("FAIL")
    # Exit statuses: the gate step (pytest) and the comment step (ci comment).
    assert (GATE_STEP in outcome.failed) is (not passed), outcome.log
    assert (COMMENT_STEP in outcome.failed) is (not passed), outcome.log
    assert f": {verdict}" in outcome.steps[COMMENT_STEP]  # what ci comment printed
    # pytest's last line.
    last = [line for line in outcome.steps[GATE_STEP].splitlines() if line.startswith("=")][-1]
    failing = re.search(r"failed|error|\(tnsai gate\)|no tests ran", last)
    assert (failing is None) is passed, outcome.steps[GATE_STEP][-3000:]
    # The terminal summary says the same verdict in the same words.
    if (
        "tnsai-eval FAIL" in outcome.steps[GATE_STEP]
        or "tnsai-eval PASS" in (outcome.steps[GATE_STEP])
    ):
        assert ("tnsai-eval FAIL" in outcome.steps[GATE_STEP]) is (not passed)
    # JUnit: a failure exactly when the gate fails, in its own testcases.
    root = ET.parse(outcome.repo / "junit.xml").getroot()
    assert (root.attrib["failures"] == "0") is passed
    gate = root.find("./testsuite[@name='tnsai gate']")
    assert gate is not None
    for case in root.iter("testcase"):
        if case.find("failure") is not None:
            assert case.attrib["name"].startswith("tnsai gate: ")
    return verdict


def _steps() -> list[dict[str, Any]]:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps: list[dict[str, Any]] = workflow["jobs"]["prompts"]["steps"]
    return steps


def _expand(text: str, context: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        assert expression in context, f"the test does not know ${{{{ {expression} }}}}"
        return context[expression]

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def _run_workflow(repo: Path, base_sha: str, labels: list[str], core_bin: Path) -> Outcome:
    event = repo.parent / f"{repo.name}-event.json"
    event.write_text(
        json.dumps({"pull_request": {"labels": [{"name": n} for n in labels]}}), encoding="utf-8"
    )
    summary = repo.parent / f"{repo.name}-summary.md"
    context = {
        "github.event.pull_request.base.sha": base_sha,
        "github.server_url": "https://github.com",
        "github.repository": "octo/app",
        "github.run_id": "42",
    }
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    env = _env(core_bin, CI="true", GITHUB_EVENT_PATH=str(event), GITHUB_STEP_SUMMARY=str(summary))
    env.update({k: _expand(str(v), context) for k, v in workflow["jobs"]["prompts"]["env"].items()})
    failed: list[str] = []
    log: list[str] = []
    outputs: dict[str, str] = {}
    for step in _steps():
        if "run" not in step or step.get("name") == "Install":
            continue
        condition = str(step.get("if", "success()"))
        if failed and "always()" not in condition:
            continue
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        outputs[step["name"]] = done.stdout + done.stderr
        log.append(f"--- {step['name']} (exit {done.returncode})\n{done.stdout}{done.stderr}")
        if done.returncode != 0:
            failed.append(step["name"])
    comment = (repo / "comment.md").read_text(encoding="utf-8")
    assert summary.read_text(encoding="utf-8") == comment  # the fork fallback has it all
    return Outcome(failed, comment, "\n".join(log), repo, outputs)


def _prompt(version: str) -> Callable[[Path], None]:
    def change(repo: Path) -> None:
        (repo / "prompts" / "support.txt").write_text(
            f"Read the ticket and answer with its label: billing, shipping or repair. "
            f"[{version}]\n",
            encoding="utf-8",
        )

    return change


def _pull_request(
    base_repo: Path,
    tmp_path: Path,
    core_bin: Path,
    change: Callable[[Path], None],
    *,
    record: bool = True,
    rewrite_baseline: bool = False,
    labels: tuple[str, ...] = (),
    base: Callable[[Path], None] | None = None,
) -> Outcome:
    """A pull-request branch made by ``change`` (its replies recorded), run through the workflow.

    ``base`` first makes a new base commit (the one the PR is gated against).
    """
    repo = tmp_path / "pr"
    subprocess.run(["git", "clone", "-q", str(base_repo), str(repo)], check=True)
    if base is not None:
        base(repo)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "base: another state")
    base_sha = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "pr")
    change(repo)
    if record:
        rewrite = ("--tnsai-report", "tests/prompts/baseline.json") if rewrite_baseline else ()
        _record(repo, *rewrite)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "PR")
    return _run_workflow(repo, base_sha, list(labels), core_bin)


# -- the prompt changed -----------------------------------------------------------------


def test_a_worse_prompt_fails_and_the_comment_names_it(
    base_repo: Path, tmp_path: Path, core_bin: Path
) -> None:
    outcome = _pull_request(base_repo, tmp_path, core_bin, _prompt("worse"))
    assert outcome.verdict == "FAIL: 1 regression(s)"
    comment = outcome.comment
    assert "fell -0.500, 6 broken, 0 fixed, significant, p = 0.0156 over 12 common case(s)" in (
        comment
    )
    # The changed prompt is shown, and named as the report stores it: relative to the rootdir.
    assert "prompt `prompts/support.txt` changed" in comment
    assert "-Label the support ticket: billing, shipping or repair. [v1]" in comment
    assert "<details><summary>prompt diff</summary>" in comment
    assert "https://github.com/octo/app/actions/runs/42" in comment
    assert comment.rstrip().endswith("<!-- tnsai-eval prompt report -->")
    assert (outcome.repo / "report.html").is_file()
    report = json.loads((outcome.repo / "report.json").read_text(encoding="utf-8"))
    assert report["tests"][0]["prompts"][0]["file"] == "prompts/support.txt"


def test_a_better_prompt_passes_and_its_rise_is_called_one(
    base_repo: Path, tmp_path: Path, core_bin: Path
) -> None:
    outcome = _pull_request(base_repo, tmp_path, core_bin, _prompt("better"))
    assert outcome.verdict == "PASS: no regressions"
    assert "rose +0.167, 2 fixed, 0 broken, not significant, p = 0.25" in outcome.comment
    assert "Gated against `tests/prompts/baseline.json` as committed on the base branch" in (
        outcome.comment
    )


def test_an_unrecorded_prompt_is_not_a_pass(
    base_repo: Path, tmp_path: Path, core_bin: Path
) -> None:
    outcome = _pull_request(base_repo, tmp_path, core_bin, _prompt("better"), record=False)
    assert outcome.verdict.startswith("FAIL: missing evidence: 12 case(s) not run")
    comment = outcome.comment
    assert "PASS" not in comment
    assert "12 of 12 case(s) not run" in comment
    assert "vanished" not in comment  # an unrecorded test is not a vanished one
    assert "inconclusive" in comment


def test_a_rewritten_baseline_without_the_label_is_gated_against_the_base(
    base_repo: Path, tmp_path: Path, core_bin: Path
) -> None:
    outcome = _pull_request(base_repo, tmp_path, core_bin, _prompt("worse"), rewrite_baseline=True)
    assert outcome.verdict == "FAIL: 1 regression(s)"
    assert "does not carry the label `tnsai-accept-baseline`" in outcome.comment


def test_a_rewritten_baseline_with_the_label_leads_with_what_it_gives_up(
    base_repo: Path, tmp_path: Path, core_bin: Path
) -> None:
    outcome = _pull_request(
        base_repo,
        tmp_path,
        core_bin,
        _prompt("worse"),
        rewrite_baseline=True,
        labels=("tnsai-accept-baseline",),
    )
    assert outcome.verdict == (
        "ACCEPTS A NEW BASELINE: 6 case(s) given up, 0 gained (0.833 -> 0.333)"
    )
    comment = outcome.comment
    assert "This pull request accepts a new baseline (label `tnsai-accept-baseline`)" in comment
    old_new = comment.split("#### What the new baseline gives up against the old one", 1)[1]
    assert "1 regression(s)" in old_new
    assert "fell -0.500, 6 broken, 0 fixed" in old_new


def test_an_accepted_baseline_whose_test_fails_is_not_a_pass(
    base_repo: Path, tmp_path: Path, core_bin: Path
) -> None:
    def worse_and_strict(repo: Path) -> None:
        _prompt("worse")(repo)
        test = repo / "tests" / "prompts" / "test_support.py"
        text = test.read_text(encoding="utf-8")
        test.write_text(text.replace(EVALUATOR, f"{EVALUATOR}, min_score=0.9"), "utf-8")

    repo = tmp_path / "pr"
    subprocess.run(["git", "clone", "-q", str(base_repo), str(repo)], check=True)
    base_sha = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "pr")
    worse_and_strict(repo)
    # The developer records and rewrites the baseline (the test fails at min_score).
    done = _pytest(repo, "--llm-record", "record", "--tnsai-report", "tests/prompts/baseline.json")
    assert done.returncode == 1, done.stdout
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "PR")
    outcome = _run_workflow(repo, base_sha, ["tnsai-accept-baseline"], core_bin)
    assert outcome.verdict == "FAIL: 1 failed test(s)"


# -- the gated test did not run ------------------------------------------------------------


def _edit_test(edit: Callable[[str], str]) -> Callable[[Path], None]:
    def change(repo: Path) -> None:
        test = repo / "tests" / "prompts" / "test_support.py"
        test.write_text(edit(test.read_text(encoding="utf-8")), encoding="utf-8")

    return change


@pytest.mark.parametrize(
    ("name", "change", "extra"),
    [
        (
            "skipped",
            _edit_test(lambda t: "import pytest\n" + t.replace(
                "def test_support", "@pytest.mark.skip(reason='flaky')\ndef test_support")),
            "",
        ),
        ("deleted", lambda repo: (repo / "tests/prompts/test_support.py").unlink(),
         "; pytest exited 5 (no tests collected)"),
        ("syntax-broken", _edit_test(lambda t: t + "\ndef broken(:\n"),
         "; pytest exited 2 (interrupted: a collection error, or stopped)"),
    ],
)  # fmt: skip
def test_a_gated_test_that_did_not_run_is_missing_evidence(
    base_repo: Path,
    tmp_path: Path,
    core_bin: Path,
    name: str,
    change: Callable[[Path], None],
    extra: str,
) -> None:
    outcome = _pull_request(base_repo, tmp_path, core_bin, change, record=False)
    assert outcome.verdict == f"FAIL: missing evidence: 1 gated score(s) did not run{extra}", name
    assert "tests/prompts/test\\_support.py::test\\_support (score): did not run" in (
        outcome.comment
    )
    assert "PASS" not in outcome.comment


def test_a_renamed_test_is_missing_evidence_for_its_old_name(
    base_repo: Path, tmp_path: Path, core_bin: Path
) -> None:
    rename = _edit_test(lambda t: t.replace("def test_support(", "def test_support_v2("))
    outcome = _pull_request(base_repo, tmp_path, core_bin, rename)
    assert outcome.verdict == "FAIL: missing evidence: 1 gated score(s) did not run"
    assert "new (not in baseline): 1" in outcome.comment


def test_loosened_gate_settings_in_the_pr_do_not_apply(
    base_repo: Path, tmp_path: Path, core_bin: Path
) -> None:
    def loosen(repo: Path) -> None:
        _prompt("worse")(repo)
        ini = repo / "pytest.ini"
        text = ini.read_text(encoding="utf-8").replace(GATE_INI, "tnsai_tolerance = 0.9\n")
        ini.write_text(text, encoding="utf-8")

    outcome = _pull_request(base_repo, tmp_path, core_bin, loosen)
    # Judged by the base's settings (paired, 0.05): the regression stands, and the change shows.
    assert outcome.verdict == "FAIL: 1 regression(s); gate settings changed"
    comment = outcome.comment
    assert "tolerance 0.05 (pytest.ini at the base commit) -> 0.9 (ini tnsai_tolerance)" in (
        _plain(comment)
    )
    assert "gate paired (pytest.ini at the base commit) -> tolerance (default)" in _plain(comment)
    assert "settings changed (tnsai gate)" in outcome.steps[GATE_STEP]


def test_an_errored_run_is_missing_evidence_not_a_regression(
    base_repo: Path, tmp_path: Path, core_bin: Path
) -> None:
    # The evaluator raises on the four billing replies: they have no score, not 0.
    buggy = _edit_test(
        lambda t: t.replace(EVALUATOR, EVALUATOR.replace("LabelEvaluator", "Picky")).replace(
            "def test_support(",
            "class Picky(LabelEvaluator):\n"
            "    def evaluate(self, actual, expected):\n"
            "        if expected == actual == 'billing':\n"
            "            raise ValueError('cannot parse')\n"
            "        return super().evaluate(actual, expected)\n\n\n"
            "def test_support(",
        )
    )
    # The replies are recorded already (same prompt); the developer's run fails on the errors.
    outcome = _pull_request(base_repo, tmp_path, core_bin, buggy, record=False)
    assert outcome.verdict.startswith("FAIL: missing evidence: 4 errored (evaluator ValueError)")
    assert "regression" not in outcome.verdict
    assert "errored (the call failed or the evaluator raised" in outcome.comment
    assert "ValueError: cannot parse" in outcome.comment  # the error, in its case's row


def test_replies_recorded_for_another_model_say_which_to_select(
    base_repo: Path, tmp_path: Path, core_bin: Path
) -> None:
    def default_model(repo: Path) -> None:
        ini = repo / "pytest.ini"
        text = "".join(
            line
            for line in ini.read_text(encoding="utf-8").splitlines(keepends=True)
            if not line.startswith(("tnsai_llm_base_url", "tnsai_llm_model"))
        )
        ini.write_text(text, encoding="utf-8")

    outcome = _pull_request(base_repo, tmp_path, core_bin, default_model, record=False)
    assert outcome.verdict.startswith("FAIL: missing evidence: 12 case(s) not run")
    gate_log = outcome.steps[GATE_STEP]
    assert "recorded for model 'fake-support'" in gate_log
    assert "tnsai_llm_model" in gate_log
    assert "--llm-record record" not in gate_log  # the replies are there: no re-recording
    junit = (outcome.repo / "junit.xml").read_text(encoding="utf-8")
    assert "recorded for model &apos;fake-support&apos;" in junit or (
        "recorded for model 'fake-support'" in junit
    )


# -- the first pull request, and a change that breaks everything ---------------------------


def test_the_first_pull_request_has_nothing_to_gate_and_passes(
    base_repo: Path, tmp_path: Path, core_bin: Path
) -> None:
    def no_baseline(repo: Path) -> None:
        (repo / "tests" / "prompts" / "baseline.json").unlink()

    # The base has no baseline yet; the PR adds the first one.
    outcome = _pull_request(
        base_repo,
        tmp_path,
        core_bin,
        _prompt("v1"),
        rewrite_baseline=True,
        base=no_baseline,
    )
    assert outcome.verdict == "PASS: nothing to gate (the base branch has no baseline yet)"
    assert "there is no accepted run to gate against yet" in outcome.comment


BULK = 1500


def test_a_change_breaking_1500_cases_writes_a_comment_that_fits(
    tmp_path_factory: pytest.TempPathFactory, server: FakeOpenAIServer, core_bin: Path
) -> None:
    repo = tmp_path_factory.mktemp("bulk")
    cases = [(f"ticket {i}: about my order", LABELS[i % 3]) for i in range(BULK)]
    _app(
        repo,
        "[pytest]\naddopts = -p no:cacheprovider\n"
        f"tnsai_llm_base_url = {server.base_url}\ntnsai_llm_model = fake-support\n"
        "tnsai_llm_concurrency = 16\n",
        TEST_FILE.replace(repr(TICKETS), repr(cases)),
    )
    (repo / "prompts" / "support.txt").write_text("Label it. [all]\n", encoding="utf-8")
    _record(repo, "--tnsai-report", "tests/prompts/baseline.json")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base_sha = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "pr")
    (repo / "prompts" / "support.txt").write_text("Label it. [broken]\n", encoding="utf-8")
    _record(repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "PR: breaks every case")
    outcome = _run_workflow(repo, base_sha, [], core_bin)
    assert outcome.verdict == "FAIL: 1 regression(s)"
    assert len(outcome.comment) < 60_000
    assert re.search(r"and \d+ more in report\.html", outcome.comment)
    # Worst first: the first flipped row is a broken case.
    assert "| broken | " in outcome.comment


# -- the embedded model's recordings replay in the core install ---------------------------


def test_the_embedded_models_recordings_replay_in_a_core_install(
    tmp_path_factory: pytest.TempPathFactory, core_bin: Path
) -> None:
    repo = tmp_path_factory.mktemp("embedded")
    few = TICKETS[:3]
    _app(
        repo,
        f"[pytest]\naddopts = -p no:cacheprovider\n{GATE_INI}",
        TEST_FILE.replace(repr(TICKETS), repr(few)).replace(
            EVALUATOR, f"{EVALUATOR}, params={{'max_tokens': 4, 'temperature': 0}}"
        ),
    )
    # Recorded with the embedded model (this development install has [local]).
    _record(repo, "--tnsai-report", "tests/prompts/baseline.json")
    report = json.loads((repo / "tests/prompts/baseline.json").read_text(encoding="utf-8"))
    assert report["config"]["model"] is None or "SmolLM2" in json.dumps(report["config"])
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base_sha = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "pr")
    (repo / "README.md").write_text("A change that leaves the prompts alone.\n", "utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "PR: docs")
    outcome = _run_workflow(repo, base_sha, [], core_bin)
    assert outcome.verdict == "PASS: no regressions", outcome.log
    assert "SmolLM2-135M-Instruct" in (repo / "report.json").read_text(encoding="utf-8")


# -- the recipe itself ---------------------------------------------------------------------


def test_the_recipe_in_docs_is_the_tested_file_and_is_pinned() -> None:
    docs = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(# The prompt gate for pull requests.*?)```", docs, re.S)
    assert block is not None, "docs/ci.md must show docs/workflows/prompts.yml"
    assert block.group(1) == WORKFLOW.read_text(encoding="utf-8")
    workflow = yaml.safe_load(block.group(1))
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write"}
    steps = workflow["jobs"]["prompts"]["steps"]
    for step in steps:
        if "uses" in step:
            # Pinned by a full commit SHA, never a tag someone can move.
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
        assert "continue-on-error" not in step  # an old verdict must not stand
    checkout = next(s for s in steps if "actions/checkout" in s.get("uses", ""))
    assert checkout["with"]["persist-credentials"] is False
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"
    ]
    install = next(s for s in steps if s.get("name") == "Install")
    assert f'pip install "tnsai-eval=={version}"' in install["run"]
    assert "[local]" not in install["run"]


def _one_commit(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A repository of one commit without a baseline, as the working directory."""
    (repo / "a.txt").write_text("a", encoding="utf-8")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    monkeypatch.chdir(repo)


def test_bad_ci_input_is_exit_2_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tnsai_eval.cli import main

    _one_commit(tmp_path, monkeypatch)
    assert main(["ci", "baseline", "--base=--upload-pack=x"]) == 2
    assert "--base '--upload-pack=x' is not a commit" in capsys.readouterr().err
    assert main(["ci", "baseline", "--base", "0" * 40]) == 2
    assert "needs fetch-depth: 0" in capsys.readouterr().err
    (tmp_path / "event.json").write_text("{not json", encoding="utf-8")
    assert main(["ci", "baseline", "--base", "HEAD", "--event", "event.json"]) == 2
    assert "--event 'event.json' cannot be read as JSON" in capsys.readouterr().err
    # No baseline on the base commit: nothing to gate, and the gate baseline says so.
    assert main(["ci", "baseline", "--base", "HEAD"]) == 0
    state = json.loads((tmp_path / ".tnsai" / "ci.json").read_text(encoding="utf-8"))
    assert (state["mode"], state["gate_baseline"]) == ("first", None)
    gate = json.loads((tmp_path / ".tnsai" / "gate-baseline.json").read_text(encoding="utf-8"))
    assert (gate["tests"], gate["config"]["pr_gate"]["mode"]) == ([], "first")
    assert main(["ci", "comment", "report.json", "--state", "elsewhere"]) == 2
    assert "no readable ci.json" in capsys.readouterr().err
    report = tmp_path / "report.json"
    report.write_text('{"schema_version": 2, "tests": []}', encoding="utf-8")
    assert main(["ci", "comment", str(report), "--link", "javascript:alert(1)"]) == 2
    assert "is not a plain http(s) URL" in capsys.readouterr().err
    assert main(["ci", "comment", str(report), "--pytest-exit", "two"]) == 2
    assert "--pytest-exit 'two' is not an exit status" in capsys.readouterr().err


def test_ci_comment_never_writes_pass_after_a_failed_pytest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tnsai_eval.cli import main

    _one_commit(tmp_path, monkeypatch)
    assert main(["ci", "baseline", "--base", "HEAD"]) == 0
    capsys.readouterr()
    report = tmp_path / "report.json"
    report.write_text('{"schema_version": 2, "tests": []}', encoding="utf-8")
    for status in ("2", "3", "4", "5", ""):
        assert main(["ci", "comment", str(report), "--pytest-exit", status]) == 1, status
        first = (tmp_path / "comment.md").read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("### tnsai-eval FAIL: "), (status, first)
    # pytest stopped before writing a report (a usage error): a comment, not a crash.
    report.unlink()
    assert main(["ci", "comment", str(report), "--pytest-exit", "4"]) == 1
    first = (tmp_path / "comment.md").read_text(encoding="utf-8").splitlines()[0]
    assert first == (
        "### tnsai-eval FAIL: pytest wrote no report (report.json); pytest exited 4 (a usage error)"
    )
    assert main(["ci", "comment", str(report.with_name("r.json")), "--pytest-exit", "0"]) == 2
