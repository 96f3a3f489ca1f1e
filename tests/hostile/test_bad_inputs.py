"""Bad files and arguments get clean, typed errors that name them."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tnsai_eval.cli import _common as cli_common
from tnsai_eval.cli import main
from tnsai_eval.errors import ConditionError, StoreError, StoreWarning
from tnsai_eval.feedback import Feedback, FeedbackStore
from tnsai_eval.norms import NormType, norm
from tnsai_eval.testing import ScriptedLLM

# -- feedback store ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("content", b"\xff\xfe not utf-8"),
        ("session_id", b"\x80 not utf-8"),
        ("type", "not-a-type"),
        ("timestamp", "yesterday"),
        ("metadata", "[1, 2]"),
        ("metadata", '{"x": Infinity}'),
    ],
)
def test_one_bad_sqlite_row_does_not_hide_the_others(
    tmp_path: Path, column: str, value: Any
) -> None:
    path = tmp_path / "feedback.db"
    store = FeedbackStore.sqlite(path)
    for text in ("first", "bad", "last"):
        store.save(Feedback.correction(text))
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE feedback SET {column} = ? WHERE content = 'bad'", (value,))
    fresh = FeedbackStore.sqlite(path)
    with pytest.warns(StoreWarning, match=r"row seq=2"):
        kept = fresh.get_all()
    assert [fb.content for fb in kept] == ["first", "last"]
    (skipped,) = fresh.skipped  # type: ignore[attr-defined]
    assert isinstance(skipped, StoreError)
    assert str(path) in str(skipped)
    assert column in str(skipped) or "not" in str(skipped)


def test_a_directory_or_a_non_database_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a usable SQLite feedback store"):
        FeedbackStore.sqlite(tmp_path)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x00\xff" * 600)
    with pytest.raises(StoreError, match=r"junk\.db"):
        FeedbackStore.sqlite(junk)


# -- CLI --------------------------------------------------------------------------------


@pytest.fixture
def never_called(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(**kwargs: Any) -> ScriptedLLM:
        raise AssertionError("no model may be made before the arguments are checked")

    monkeypatch.setattr(cli_common, "default_llm", refuse)


@pytest.mark.usefixtures("never_called")
@pytest.mark.parametrize(
    "argv",
    [
        ["optimize", "capitals", "--out", "{file}"],
        ["optimize", "capitals", "--target", "nan"],
        ["optimize", "capitals", "--max-seconds", "inf"],
        ["optimize", "capitals", "--rounds", "two"],
        ["refine", "--task", "t", "--draft-file", "{file}", "--valid-json", "--timeout", "nan"],
        [
            "refine",
            "--task",
            "t",
            "--draft-file",
            "{file}",
            "--valid-json",
            "--command-timeout",
            "-1",
        ],
        ["refine", "--task", "t", "--draft-file", "{binary}", "--valid-json"],
        ["refine", "--task", "t", "--draft-file", "{dir}", "--valid-json"],
        [
            "refine",
            "--task",
            "t",
            "--draft-file",
            "{file}",
            "--valid-json",
            "--output-file",
            "{dir}",
        ],
        [
            "refine",
            "--task",
            "t",
            "--draft-file",
            "{file}",
            "--valid-json",
            "--output-file",
            "{dir}/no/such/x",
        ],
        [
            "refine",
            "--task",
            "t",
            "--draft-file",
            "{file}",
            "--compiler",
            "true",
            "--check-env",
            "NOEQUALS",
        ],
        ["refine", "--task", "t", "--draft-file", "{file}", "--min-lines", "0"],
    ],
)
def test_bad_invocations_exit_2_with_one_line(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = tmp_path / "existing.txt"
    existing.write_text("draft")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    args = [a.format(file=existing, binary=binary, dir=tmp_path) for a in argv]
    with pytest.raises(SystemExit) as caught:
        raise SystemExit(main(args))
    assert caught.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()[-1]) > 0
    assert "error" in err.splitlines()[-1]
    assert existing.read_text() == "draft"  # nothing overwritten


# -- markers and norms ------------------------------------------------------------------


def test_bad_cel_in_norm_is_reported_when_the_class_is_decorated() -> None:
    with pytest.raises(ConditionError, match=r"No deletes without consent.*not valid CEL"):

        @norm(
            type=NormType.PROHIBITION,
            action="delete",
            condition="hasConsent ==",
            description="No deletes without consent",
        )
        class Agent:
            pass


def test_marker_bad_values_fail_setup(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import pytest\nfrom tnsai_eval.testing import ScriptedLLM\n\n"
        "@pytest.fixture(scope='session')\ndef llm():\n    return ScriptedLLM(default='ok')\n"
    )
    pytester.makepyfile(
        test_marks="""
import pytest
from pytest_plugin import refine_until, norm_check
from tnsai_eval.norms import NormEngine, NormEntry, NormType

@refine_until(task="t", valid_json=True, timeout=float("nan"))
def test_nan_timeout(refine):
    refine("{}")

@refine_until(task="t", valid_json=True, timeout=float("inf"))
def test_inf_timeout(refine):
    refine("{}")

@refine_until(task="t", min_lines=0)
def test_zero_lines(refine):
    refine("x")

BAD = NormEngine.of(NormEntry(NormType.PROHIBITION, "a ==", "x", "Broken rule"))

@norm_check(BAD, state={"a": 1})
def test_bad_cel_engine(norm_actions):
    norm_actions.record("x")

NEEDS_STATE = NormEngine.of(
    NormEntry(NormType.PROHIBITION, "vip == true", "refund", "No VIP refunds")
)

@norm_check(NEEDS_STATE)
def test_missing_state(norm_actions):
    norm_actions.record("refund")
"""
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-rA")
    out = result.stdout.str()
    assert "INTERNALERROR" not in out
    result.assert_outcomes(errors=4, failed=1)
    assert "timeout=nan is not valid" in out
    assert "timeout=inf is not valid" in out
    assert "min_lines expects an int >= 1, got 0" in out
    assert "norm 'Broken rule'" in out
    assert "No VIP refunds" in out
    assert "unknown name 'vip'" in out
