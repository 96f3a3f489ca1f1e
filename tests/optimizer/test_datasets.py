from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tnsai_eval import datasets
from tnsai_eval.errors import DatasetError
from tnsai_eval.scoring import TestCase

REPO = Path(__file__).resolve().parents[2]
SHIPPED = ("arithmetic", "capitals", "formal_tone", "json_extraction", "sentiment")


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_datasets_load_and_are_small(name: str) -> None:
    cases = datasets.load(name)
    assert 15 <= len(cases) <= 30
    assert all(isinstance(case, TestCase) and case.input.strip() for case in cases)
    assert len({case.input for case in cases}) == len(cases)
    assert name in datasets.names()


def test_json_extraction_expects_json() -> None:
    for case in datasets.load("json_extraction"):
        assert set(json.loads(case.expected)) == {"name", "age", "city"}


def test_arithmetic_is_regenerated_identically(tmp_path: Path) -> None:
    script = REPO / "datasets" / "make_arithmetic.py"
    sys.path.insert(0, str(script.parent))
    try:
        import make_arithmetic
    finally:
        sys.path.remove(str(script.parent))
    expected = [TestCase(c["input"], c["expected"]) for c in make_arithmetic.make_cases()]
    assert datasets.load("arithmetic") == expected
    for case in expected:
        a, op, b = case.input.removeprefix("What is ").removesuffix("?").split()
        assert int(case.expected) == (int(a) + int(b) if op == "+" else int(a) - int(b))


def test_a_path_loads_too(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text('{"input": "2 + 2", "expected": "4", "note": "extra keys are fine"}\n')
    assert datasets.load(path) == [TestCase("2 + 2", "4")]
    assert datasets.load(str(path)) == [TestCase("2 + 2", "4")]


def test_every_bad_line_is_reported_by_number(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        "\n".join(
            [
                '{"input": "ok", "expected": "fine"}',
                '{"input": "no closing brace"',
                "",
                '["a", "list"]',
                '{"expected": "only expected"}',
                '{"input": 3, "expected": "x"}',
                '{"input": "  ", "expected": "x"}',
                '{"input": "ok too", "expected": ""}',
            ]
        )
        + "\n"
    )
    with pytest.raises(DatasetError) as caught:
        datasets.load(path)
    problems = caught.value.problems
    assert [p.split(":")[0] for p in problems] == [
        "line 2",
        "line 3",
        "line 4",
        "line 5",
        "line 6",
        "line 7",
    ]
    assert "not valid JSON" in problems[0]
    assert "blank line" in problems[1]
    assert "JSON object, got list" in problems[2]
    assert "missing key 'input'" in problems[3]
    assert "'input' must be a string, got int" in problems[4]
    assert "'input' is empty" in problems[5]
    assert "6 bad line(s)" in str(caught.value)
    assert str(path) in str(caught.value)


def test_unknown_names_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"unknown dataset 'capitols'.*capitals"):
        datasets.load("capitols")
    with pytest.raises(DatasetError, match="does not exist"):
        datasets.load(tmp_path / "nope.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(DatasetError, match="no test cases"):
        datasets.load(empty)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"input": "caf\xe9", "expected": "x"}\n')
    with pytest.raises(DatasetError, match="not UTF-8"):
        datasets.load(latin)


def test_dataset_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown dataset"):
        datasets.load("nope")


def test_a_byte_order_mark_is_not_part_of_the_first_line(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"input": "2 + 2", "expected": "4"}\n')
    assert datasets.load(path) == [TestCase("2 + 2", "4")]


# -- NAME.meta.json ------------------------------------------------------------------


def test_sentiment_declares_a_label_evaluator() -> None:
    meta = datasets.load_meta("sentiment")
    assert (meta.evaluator, meta.labels, meta.constrain) == (
        "label",
        ("positive", "negative"),
        False,
    )
    assert meta.path == datasets.dataset_dir() / "sentiment.meta.json"
    assert meta.metric == "accuracy"
    evaluator = meta.make_evaluator()
    assert evaluator.evaluate("The sentiment is positive.", "positive") == 1.0
    assert evaluator.evaluate("negative", "positive") == 0.0


def test_a_dataset_without_sidecar_gets_the_default(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text('{"input": "a", "expected": "b"}\n')
    meta = datasets.load_meta(path)
    assert meta == datasets.DatasetMeta()
    assert meta.path is None
    assert meta.metric == "score"
    assert type(meta.make_evaluator()).__name__ == "DefaultPromptEvaluator"
    assert meta.response_format() is None


def test_constrain_gives_a_schema_of_the_labels(tmp_path: Path) -> None:
    (tmp_path / "yn.jsonl").write_text('{"input": "a", "expected": "yes"}\n')
    (tmp_path / "yn.meta.json").write_text(
        json.dumps({"evaluator": "label", "labels": ["yes", "no"], "constrain": True})
    )
    meta = datasets.load_meta(tmp_path / "yn.jsonl")
    schema = meta.response_format()
    assert schema is not None
    assert schema["type"] == "json_schema"
    assert schema["json_schema"]["schema"]["properties"]["label"]["enum"] == ["yes", "no"]


def test_every_sidecar_problem_is_listed(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"input": "a", "expected": "b"}\n')
    (tmp_path / "bad.meta.json").write_text(
        json.dumps(
            {
                "evaluator": "vibes",
                "labels": ["x", "x"],
                "threshold": 1.5,
                "constrain": "yes",
                "colour": "red",
            }
        )
    )
    with pytest.raises(DatasetError) as info:
        datasets.load_meta(tmp_path / "bad.jsonl")
    assert len(info.value.problems) == 5
    text = str(info.value)
    for fragment in ("'colour'", "'vibes'", "must not repeat", "1.5", "'yes'"):
        assert fragment in text


@pytest.mark.parametrize(
    ("meta", "fragment"),
    [
        ("[1, 2]", "must hold a JSON object"),
        ("{not json", "not valid JSON"),
        ('{"evaluator": "label", "labels": ["only"]}', "at least two labels"),
        ('{"constrain": true}', "no labels"),
        ('{"threshold": true}', "threshold"),
        ('{"labels": ["a", ""]}', "non-empty strings"),
    ],
)
def test_bad_sidecars_name_the_problem(tmp_path: Path, meta: str, fragment: str) -> None:
    (tmp_path / "d.jsonl").write_text('{"input": "a", "expected": "b"}\n')
    (tmp_path / "d.meta.json").write_text(meta)
    with pytest.raises(DatasetError, match=r"d\.meta\.json") as info:
        datasets.load_meta(tmp_path / "d.jsonl")
    assert fragment in str(info.value)


def test_a_case_outside_the_labels_is_a_bad_line(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text(
        '{"input": "a", "expected": "positive"}\n{"input": "b", "expected": "neutral"}\n'
    )
    (tmp_path / "s.meta.json").write_text(
        '{"evaluator": "label", "labels": ["positive", "negative"]}'
    )
    with pytest.raises(DatasetError) as info:
        datasets.load(tmp_path / "s.jsonl")
    assert info.value.problems == (
        "line 2: expected 'neutral' is not one of the labels ['negative', 'positive']",
    )


@pytest.mark.parametrize("name", ["sentiment", "feedback_examples"])
def test_shipped_sidecars_match_their_cases(name: str) -> None:
    meta = datasets.load_meta(name)
    assert {case.expected for case in datasets.load(name)} == set(meta.labels)


def test_load_cases_takes_cases_given_in_code() -> None:
    cases = datasets.load_cases(
        [TestCase("1 + 1", "2"), ("2 + 2", "4"), {"input": "3 + 3", "expected": "6", "note": 9}]
    )
    assert cases == [TestCase("1 + 1", "2"), TestCase("2 + 2", "4"), TestCase("3 + 3", "6")]


def test_a_case_id_names_the_case_in_reports() -> None:
    (case,) = datasets.load_cases([{"input": "3 + 3", "expected": "6", "id": "sum-3"}])
    assert case.id == "sum-3"
    with pytest.raises(DatasetError, match="'id' must be a non-blank string, got 9"):
        datasets.load_cases([{"input": "3 + 3", "expected": "6", "id": 9}])


def test_load_cases_reads_names_and_paths_with_load(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"input": "2 + 2", "expected": "4"}\n', encoding="utf-8")
    assert datasets.load_cases(path) == [TestCase("2 + 2", "4")]
    assert datasets.load_cases("capitals") == datasets.load("capitals")


@pytest.mark.parametrize(
    ("cases", "message"),
    [
        ([], "no test cases given"),
        (["2 + 2"], "case 0 must be a TestCase, an (input, expected) pair or a mapping"),
        ([("a", "b"), {"expected": "x"}], "case 1: missing key 'input'"),
        ([("2 + 2", 4)], "case 0: 'expected' must be a string, got int"),
        ([{"input": " ", "expected": "4"}], "case 0: 'input' is empty"),
    ],
)
def test_load_cases_names_the_bad_case(cases: list[object], message: str) -> None:
    with pytest.raises(DatasetError) as info:
        datasets.load_cases(cases)  # type: ignore[arg-type]
    assert message in str(info.value)


def test_scoring_plan_follows_the_sidecar_unless_told_otherwise(tmp_path: Path) -> None:
    from tnsai_eval.errors import ConfigError
    from tnsai_eval.scoring import ExactMatchEvaluator, LabelEvaluator

    plan = datasets.scoring_plan("sentiment")
    assert isinstance(plan.evaluator, LabelEvaluator)
    assert (plan.threshold, plan.params, len(plan.cases)) == (1.0, None, 20)
    assert plan.notes == (datasets.load_meta("sentiment").describe(),)
    # Explicit arguments win over the sidecar, and nothing is noted for them.
    given = ExactMatchEvaluator()
    plan = datasets.scoring_plan(
        "sentiment", evaluator=given, threshold=0.25, params={"max_tokens": 3}
    )
    assert (plan.evaluator, plan.threshold, plan.params, plan.notes) == (
        given,
        0.25,
        {"max_tokens": 3},
        (),
    )
    constrained = datasets.scoring_plan("sentiment", constrain=True, params={"max_tokens": 3})
    assert constrained.params is not None
    assert constrained.params["max_tokens"] == 3
    enum = constrained.params["response_format"]["json_schema"]["schema"]["properties"]
    assert enum["label"]["enum"] == ["positive", "negative"]
    # Cases given in code: no sidecar, the engine's defaults, threshold 0.5.
    plan = datasets.scoring_plan([("2+2", "4")])
    assert (plan.evaluator, plan.threshold, plan.params, plan.notes) == (None, 0.5, None, ())
    for bad in (float("nan"), 1.5, True, "0.5"):
        with pytest.raises(ConfigError, match="case threshold must be a number in"):
            datasets.scoring_plan("capitals", threshold=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"constrain needs labels.*'capitals' declares none"):
        datasets.scoring_plan("capitals", constrain=True)


def test_headlines_are_balanced_distinct_and_labelled() -> None:
    cases = datasets.load("headlines")
    meta = datasets.load_meta("headlines")
    assert meta.labels == ("sports", "politics", "technology")
    assert len(cases) == 66
    assert {label: sum(c.expected == label for c in cases) for label in meta.labels} == {
        "sports": 22,
        "politics": 22,
        "technology": 22,
    }
    assert len({case.input for case in cases}) == 66
