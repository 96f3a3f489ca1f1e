"""The pull-request workflow of docs/ci.md, run end to end in a local git repository.

A small app (a prompt file, a 12-case labelling suite, recorded replies, a
committed baseline) lives on a base branch; each test makes a pull-request
branch from it and runs the `run:` steps of ``docs/workflows/prompts.yml`` in
order, as GitHub Actions would (``bash -eo pipefail``, ``CI=true``, the event
payload, ``if: always()``), with the real ``tnsai-eval`` and ``pytest``
commands. Only the `uses:` steps (checkout, setup-python, upload, the comment
action) and the ``Install`` step (pip, no network here) are not run.

The model is a fake OpenAI-compatible server on 127.0.0.1 whose replies
depend on the prompt's version tag: ``[v1]`` labels 10 of the 12 tickets
right, ``[worse]`` 4 (6 broken: the paired sign test is significant),
``[better]`` all 12. Developers record replies locally (``--llm-record
record``); CI only replays them.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step, completion_body

# PyYAML comes with the dev tools (jupyter, llama.cpp's server); no stubs needed here.
yaml: Any = importlib.import_module("yaml")

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "docs" / "workflows" / "prompts.yml"
BIN = Path(sys.executable).parent
LABELS = ("billing", "shipping", "repair")
TICKETS = [(f"ticket {i}: about my order", LABELS[i % 3]) for i in range(12)]
RIGHT = {"v1": 10, "worse": 4, "better": 12}

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


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TNSAI_", "GITHUB_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    env.pop("CI", None)
    # The app's environment holds tnsai-eval alone, as the workflow's `pip install`
    # makes it: none of this checkout's dev plugins (nbval, hypothesis...) load.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["PYTEST_PLUGINS"] = "tnsai_eval.pytest"
    env.update(extra)
    return env


def _pytest(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "pytest"), "tests/prompts", "-p", "no:randomly", *args],
        cwd=repo,
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory: pytest.TempPathFactory, server: FakeOpenAIServer) -> Path:
    """The app on its base branch: prompt v1, its recorded replies, its accepted baseline."""
    repo = tmp_path_factory.mktemp("app")
    (repo / "prompts").mkdir()
    (repo / "prompts" / "support.txt").write_text(
        "Label the support ticket: billing, shipping or repair. [v1]\n", encoding="utf-8"
    )
    (repo / "tests" / "prompts").mkdir(parents=True)
    (repo / "tests" / "prompts" / "test_support.py").write_text(TEST_FILE, encoding="utf-8")
    (repo / "pytest.ini").write_text(
        "[pytest]\naddopts = -p no:cacheprovider\n"
        f"tnsai_llm_base_url = {server.base_url}\ntnsai_llm_model = fake-support\n",
        encoding="utf-8",
    )
    _git(repo, "init", "-q", "-b", "main")
    # Record the replies and write the accepted run's report in one go.
    accepted = _pytest(
        repo, "--llm-record", "record", "--tnsai-report", "tests/prompts/baseline.json"
    )
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base: prompt v1 and its baseline")
    return repo


@dataclass
class Outcome:
    failed: list[str]
    comment: str
    log: str
    repo: Path


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


def _run_workflow(repo: Path, base_sha: str, labels: list[str]) -> Outcome:
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
    env = _env(CI="true", GITHUB_EVENT_PATH=str(event), GITHUB_STEP_SUMMARY=str(summary))
    env.update({k: _expand(str(v), context) for k, v in workflow["jobs"]["prompts"]["env"].items()})
    failed: list[str] = []
    log: list[str] = []
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
        log.append(f"--- {step['name']} (exit {done.returncode})\n{done.stdout}{done.stderr}")
        if done.returncode != 0:
            failed.append(step["name"])
    comment = (repo / "comment.md").read_text(encoding="utf-8")
    assert summary.read_text(encoding="utf-8") == comment  # the fork fallback has it all
    return Outcome(failed, comment, "\n".join(log), repo)


def _pull_request(
    base_repo: Path,
    tmp_path: Path,
    *,
    version: str,
    record: bool = True,
    rewrite_baseline: bool = False,
    labels: tuple[str, ...] = (),
) -> Outcome:
    repo = tmp_path / "pr"
    subprocess.run(["git", "clone", "-q", str(base_repo), str(repo)], check=True)
    base_sha = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "pr")
    (repo / "prompts" / "support.txt").write_text(
        f"Read the ticket and answer with its label: billing, shipping or repair. [{version}]\n",
        encoding="utf-8",
    )
    if record:
        rewrite = ("--tnsai-report", "tests/prompts/baseline.json") if rewrite_baseline else ()
        done = _pytest(repo, "--llm-record", "record", *rewrite)
        assert done.returncode == 0, done.stdout + done.stderr
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"PR: prompt {version}")
    return _run_workflow(repo, base_sha, list(labels))


def test_a_worse_prompt_fails_and_the_comment_names_it(base_repo: Path, tmp_path: Path) -> None:
    outcome = _pull_request(base_repo, tmp_path, version="worse")
    assert outcome.failed == [
        "Replay the prompt suite and gate it",
        "Write the report and the comment",
    ], outcome.log
    comment = outcome.comment
    assert comment.startswith("<!-- tnsai-eval prompt report -->")
    assert "### tnsai-eval FAIL: 1 regression(s)" in comment
    assert "6 broken, 0 fixed of 12 common case(s)" in comment
    # The changed prompt is shown, and named as the report stores it: relative to the rootdir.
    assert "prompt `prompts/support.txt` changed" in comment
    assert "-Label the support ticket: billing, shipping or repair. [v1]" in comment
    assert "<details><summary>prompt diff</summary>" in comment
    assert "https://github.com/octo/app/actions/runs/42" in comment
    assert (outcome.repo / "report.html").is_file()
    assert (outcome.repo / "junit.xml").is_file()
    report = json.loads((outcome.repo / "report.json").read_text(encoding="utf-8"))
    assert report["tests"][0]["prompts"][0]["file"] == "prompts/support.txt"


def test_a_better_prompt_passes(base_repo: Path, tmp_path: Path) -> None:
    outcome = _pull_request(base_repo, tmp_path, version="better")
    assert outcome.failed == [], outcome.log
    assert "### tnsai-eval PASS" in outcome.comment
    assert "0 broken, 2 fixed" in outcome.comment
    assert "Gated against `tests/prompts/baseline.json` as committed on the base branch" in (
        outcome.comment
    )


def test_an_unrecorded_prompt_is_not_a_pass(base_repo: Path, tmp_path: Path) -> None:
    outcome = _pull_request(base_repo, tmp_path, version="better", record=False)
    assert outcome.failed == [
        "Replay the prompt suite and gate it",
        "Write the report and the comment",
    ], outcome.log
    comment = outcome.comment
    assert "PASS" not in comment
    assert "### tnsai-eval FAIL: missing evidence in 1 test metric(s)" in comment
    assert "12 of 12 case(s) not run" in comment
    assert "vanished" not in comment  # an unrecorded test is not a vanished one
    assert "inconclusive" in comment


def test_a_rewritten_baseline_without_the_label_is_gated_against_the_base(
    base_repo: Path, tmp_path: Path
) -> None:
    outcome = _pull_request(base_repo, tmp_path, version="worse", rewrite_baseline=True)
    assert "Replay the prompt suite and gate it" in outcome.failed, outcome.log
    assert "does not carry the label `tnsai-accept-baseline`" in outcome.comment
    assert "### tnsai-eval FAIL: 1 regression(s)" in outcome.comment


def test_a_rewritten_baseline_with_the_label_is_accepted(base_repo: Path, tmp_path: Path) -> None:
    outcome = _pull_request(
        base_repo,
        tmp_path,
        version="worse",
        rewrite_baseline=True,
        labels=("tnsai-accept-baseline",),
    )
    assert outcome.failed == [], outcome.log
    comment = outcome.comment
    assert "**This pull request accepts a new baseline** (label `tnsai-accept-baseline`)" in comment
    assert "### tnsai-eval PASS" in comment
    # The old-versus-new comparison: what accepting this baseline gives up.
    old_new = comment.split("#### The new baseline against the old one", 1)[1]
    assert "1 regression(s)" in old_new
    assert "6 broken, 0 fixed" in old_new


def test_the_recipe_in_docs_is_the_tested_file() -> None:
    docs = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(# The prompt gate for pull requests.*?)```", docs, re.S)
    assert block is not None, "docs/ci.md must show docs/workflows/prompts.yml"
    assert block.group(1) == WORKFLOW.read_text(encoding="utf-8")
    workflow = yaml.safe_load(block.group(1))
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write"}


def test_bad_ci_input_is_exit_2_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tnsai_eval.cli import main

    (tmp_path / "a.txt").write_text("a", encoding="utf-8")
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "one")
    monkeypatch.chdir(tmp_path)
    assert main(["ci", "baseline", "--base=--upload-pack=x"]) == 2
    assert "--base '--upload-pack=x' is not a commit" in capsys.readouterr().err
    assert main(["ci", "baseline", "--base", "0" * 40]) == 2
    assert "needs fetch-depth: 0" in capsys.readouterr().err
    (tmp_path / "event.json").write_text("{not json", encoding="utf-8")
    assert main(["ci", "baseline", "--base", "HEAD", "--event", "event.json"]) == 2
    assert "--event 'event.json' cannot be read as JSON" in capsys.readouterr().err
    # No baseline on the base commit: the first one is the PR's, and the run is not gated.
    assert main(["ci", "baseline", "--base", "HEAD"]) == 0
    state = json.loads((tmp_path / ".tnsai" / "ci.json").read_text(encoding="utf-8"))
    assert (state["mode"], state["gate_baseline"]) == ("first", None)
    assert main(["ci", "comment", "report.json", "--state", "elsewhere"]) == 2
    assert "no readable ci.json" in capsys.readouterr().err
    report = tmp_path / "report.json"
    report.write_text('{"schema_version": 2, "tests": []}', encoding="utf-8")
    assert main(["ci", "comment", str(report), "--link", "javascript:alert(1)"]) == 2
    assert "is not a plain http(s) URL" in capsys.readouterr().err
