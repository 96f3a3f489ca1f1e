"""CSV datasets, and cases without an expected answer (issue 34, the user journey).

A CSV file with a header row loads like a JSONL file (every bad row named by
its line); any other format is an error naming the formats read. A case
without ``expected`` loads, and is scored where the evaluator does not read
it; an evaluator that compares with it refuses such cases before any call.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tnsai_eval import datasets
from tnsai_eval.errors import ConfigError, DatasetError
from tnsai_eval.scoring import (
    ExactMatchEvaluator,
    LLMJudgeEvaluator,
    TestCase,
    uses_expected,
)
from tnsai_eval.testing import ScriptedLLM


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_csv_file_loads_its_cases_with_quotes_ids_and_extra_columns(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "caps.csv",
        "input,expected,id,notes\n"
        '"What is the capital of France?",Paris,fr,ignored\n'
        '"Say ""hi"", then a\nnew line",hi,,\n',
    )
    cases = datasets.load(path)
    assert cases == [
        TestCase("What is the capital of France?", "Paris", id="fr"),
        TestCase('Say "hi", then a\nnew line', "hi"),
    ]
    assert [c.id for c in cases] == ["fr", None]  # an empty id cell is no id
    assert datasets.load_cases(str(path)) == cases


def test_a_csv_files_sidecar_is_read_too(tmp_path: Path) -> None:
    _write(tmp_path / "s.meta.json", '{"evaluator": "label", "labels": ["yes", "no"]}')
    path = _write(tmp_path / "s.csv", "input,expected\nok?,yes\nbad?,maybe\n")
    with pytest.raises(DatasetError, match=r"line 3: expected 'maybe' is not one of the labels"):
        datasets.load(path)


def test_every_bad_csv_row_is_named_by_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "bad.csv", 'input,expected\na,b\nonly one cell\n\n" ",x\nc,d\n')
    with pytest.raises(DatasetError) as caught:
        datasets.load(path)
    assert caught.value.problems == (
        "line 3: 1 cell(s), the header names 2",
        "line 4: blank line (every row must hold a case)",
        "line 5: 'input' is empty",
    )


def test_a_csv_without_an_input_column_names_its_header(tmp_path: Path) -> None:
    path = _write(tmp_path / "q.csv", "question,answer\na,b\n")
    with pytest.raises(
        DatasetError, match=r"must name an 'input' column.*\['question', 'answer'\]"
    ):
        datasets.load(path)


@pytest.mark.parametrize("name", ["cases.json", "cases.xlsx", "cases.tsv"])
def test_another_format_is_an_error_naming_the_formats_read(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path / name, '{"input": "a", "expected": "b"}\n')
    suffix = path.suffix
    with pytest.raises(DatasetError, match=f"cannot read the format '\\{suffix}'; expected .jsonl"):
        datasets.load(path)


def test_cases_without_expected_load_from_jsonl_csv_and_code(tmp_path: Path) -> None:
    jsonl = _write(tmp_path / "h.jsonl", '{"input": "write a haiku"}\n')
    csv = _write(tmp_path / "h.csv", "input\nwrite a haiku\n")
    assert datasets.load(jsonl) == datasets.load(csv) == [TestCase("write a haiku", "")]
    assert datasets.load_cases([{"input": "write a haiku"}]) == [TestCase("write a haiku", "")]


class _Short:
    """Scores a reply by its length alone: it never reads the expected answer."""

    def evaluate(self, actual: str, expected: str) -> float:
        return float(len(actual.split()) <= 5)


def test_an_evaluator_that_reads_expected_refuses_cases_without_it(tmp_path: Path) -> None:
    path = _write(tmp_path / "h.jsonl", '{"input": "a", "expected": "b"}\n{"input": "haiku"}\n')
    for evaluator in (None, ExactMatchEvaluator(), LLMJudgeEvaluator(ScriptedLLM())):
        with pytest.raises(ConfigError, match=r"1 case\(s\) have no expected answer.*'haiku'"):
            datasets.scoring_plan(path, evaluator=evaluator)
    rubric = LLMJudgeEvaluator(ScriptedLLM(), template="Is this polite? {actual}")
    for free in (_Short(), rubric):
        assert not uses_expected(free)
        assert len(datasets.scoring_plan(path, evaluator=free).cases) == 2
