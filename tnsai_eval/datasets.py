"""The shipped datasets (``datasets/*.jsonl``) and any JSONL or CSV file of test cases.

Each line of a ``.jsonl`` file is one JSON object ``{"input": "...",
"expected": "..."}``, with an optional ``"id"`` (a string that names the case
in reports across runs), and for an agent's task optional
``"expected_tool_calls"`` (a list of ``{"name", "arguments"}``) and ``"state"``
(an object that norms' conditions read); other keys are allowed and ignored. A
``.csv`` file has a header row naming the columns (``input``, and ``expected``
and ``id`` when it has them; other columns are ignored) and one case per row.
``expected`` may be left out where the evaluator does not read it (a
trajectory evaluator, a rubric judge, an evaluator of one's own; see
``scoring.uses_expected``); ``scoring_plan`` refuses such cases for one that
does. ``load`` checks every line and raises one ``DatasetError`` listing each
bad line by number and reason; it never skips a line silently. Any other file
format is a ``DatasetError`` naming the formats read.

A dataset may declare how it is scored in a sidecar ``NAME.meta.json`` next to
``NAME.jsonl`` (``load_meta`` reads it; every key optional)::

    {"evaluator": "label", "labels": ["positive", "negative"],
     "threshold": 0.8, "constrain": false}

``evaluator`` names one of ``EVALUATORS`` (``"label"`` scores 1 for the right
label and 0 otherwise, so a mean is an accuracy); ``labels`` are the answers
allowed (every case's ``expected`` must be one of them); ``threshold`` is the
score a prompt should reach; ``constrain`` asks for replies constrained to the
labels (through ``response_format``) instead of free text.

>>> from tnsai_eval import datasets
>>> "capitals" in datasets.names()
True
>>> datasets.load("capitals")[0]
TestCase(input='What is the capital of France?', expected='Paris')
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from tnsai_eval._util.scores import is_share
from tnsai_eval._util.text import no_surrogates
from tnsai_eval.errors import ConfigError, DatasetError
from tnsai_eval.scoring import (
    DEFAULT_CALL_PARAMS,
    ContainsEvaluator,
    DefaultPromptEvaluator,
    ExactMatchEvaluator,
    LabelEvaluator,
    PromptEvaluator,
    TestCase,
    TokenF1Evaluator,
    labels_response_format,
    score_metric,
    uses_expected,
)

__all__ = [
    "EVALUATORS",
    "FORMATS",
    "CasesInput",
    "DatasetMeta",
    "ScoringPlan",
    "dataset_dir",
    "load",
    "load_cases",
    "load_meta",
    "meta_path",
    "names",
    "scoring_plan",
]

#: What ``load_cases`` accepts: a dataset name or JSONL path, or cases given in code.
CasesInput: TypeAlias = (
    "str | os.PathLike[str] | Iterable[TestCase | tuple[str, str] | Mapping[str, Any]]"
)

_SUFFIX = ".jsonl"
_META_SUFFIX = ".meta.json"
_META_KEYS = frozenset({"evaluator", "labels", "threshold", "constrain", "description"})

#: The evaluator names a ``NAME.meta.json`` (and ``--evaluator``) may give.
EVALUATORS = ("default", "exact", "contains", "token_f1", "label")


@dataclass(frozen=True, slots=True)
class DatasetMeta:
    """How a dataset is scored, from its ``NAME.meta.json`` (defaults when it has none).

    >>> meta = load_meta("sentiment")
    >>> meta.evaluator, meta.labels
    ('label', ('positive', 'negative'))
    >>> meta.make_evaluator()
    LabelEvaluator(labels=('positive', 'negative'))

    Attributes:
        evaluator: one of ``EVALUATORS``; ``"default"`` is ``DefaultPromptEvaluator``.
        labels: the allowed answers (empty: free text).
        threshold: the score a case must reach to count as passed (for a
            label dataset 1.0: the right label), or ``None``.
        constrain: constrain replies to ``labels`` with ``response_format``.
        path: the sidecar file read, or ``None`` when there was none.
    """

    evaluator: str = "default"
    labels: tuple[str, ...] = ()
    threshold: float | None = None
    constrain: bool = False
    path: Path | None = None

    def make_evaluator(self) -> PromptEvaluator:
        """A fresh evaluator of the kind this dataset declares."""
        if self.evaluator == "label":
            return LabelEvaluator(self.labels)
        if self.evaluator == "exact":
            return ExactMatchEvaluator()
        if self.evaluator == "contains":
            return ContainsEvaluator()
        if self.evaluator == "token_f1":
            return TokenF1Evaluator()
        return DefaultPromptEvaluator()

    def response_format(self) -> dict[str, Any] | None:
        """The ``response_format`` that constrains replies to the labels when
        ``constrain`` is set (``None`` otherwise)."""
        if not self.constrain or not self.labels:
            return None
        return labels_response_format(self.labels)

    def describe(self) -> str:
        """One line saying how the dataset is scored and where that was declared.

        >>> print(load_meta("sentiment").describe())  # doctest: +NORMALIZE_WHITESPACE
        label evaluator (scores are accuracy; labels: positive, negative),
        from sentiment.meta.json
        """
        parts = [f"scores are {'accuracy' if self.metric == 'accuracy' else 'in [0, 1]'}"]
        if self.labels:
            parts.append(f"labels: {', '.join(self.labels)}")
        if self.constrain:
            parts.append("replies constrained to the labels")
        source = f"from {self.path.name}" if self.path is not None else "no NAME.meta.json"
        return f"{self.evaluator} evaluator ({'; '.join(parts)}), {source}"

    @property
    def metric(self) -> str:
        """What a mean score of this dataset is: ``"accuracy"`` for labels, else ``"score"``."""
        return score_metric(self.make_evaluator())


@dataclass(frozen=True, slots=True)
class ScoringPlan:
    """How one run scores a prompt on some cases: what ``scoring_plan`` resolved.

    Attributes:
        cases: the loaded cases.
        evaluator: the evaluator to use (``None``: the engine's default).
        threshold: the score a case must reach to count as passed.
        params: the call parameters (``None``: the engine's defaults); with
            ``constrain`` they carry the labels' ``response_format``.
        meta: the dataset's declaration (``DatasetMeta()`` for cases given in code).
        notes: what was chosen from the dataset's sidecar, one line each, to show the user.
    """

    cases: tuple[TestCase, ...]
    evaluator: PromptEvaluator | None
    threshold: float
    params: Mapping[str, Any] | None
    meta: DatasetMeta
    notes: tuple[str, ...]


def scoring_plan(
    source: CasesInput,
    *,
    evaluator: PromptEvaluator | None = None,
    constrain: bool | None = None,
    threshold: float | None = None,
    params: Mapping[str, Any] | None = None,
) -> ScoringPlan:
    """Load ``source`` and resolve how to score it: the one place that reads a
    dataset's ``NAME.meta.json`` for a run (``evaluate_prompt`` and ``tnsai-eval
    optimize`` both start here).

    An explicit argument wins over the sidecar: ``evaluator`` (else the declared
    one), ``constrain`` (else the declared one, else ``False``: the prompt is
    tested as production runs it), ``threshold`` (else the declared one, else
    0.5). Raises ``ConfigError`` for a threshold outside [0, 1] or
    ``constrain=True`` on a dataset without labels.

    >>> plan = scoring_plan("sentiment", constrain=True)
    >>> plan.evaluator, plan.threshold, plan.params["response_format"]["type"]
    (LabelEvaluator(labels=('positive', 'negative')), 1.0, 'json_schema')
    >>> plan.notes[-1]
    'replies constrained to positive, negative'
    """
    meta = load_meta(source) if isinstance(source, str | os.PathLike) else DatasetMeta()
    cases = tuple(load_cases(source))
    notes: list[str] = []
    if evaluator is None and meta.path is not None:
        evaluator = meta.make_evaluator()
        notes.append(meta.describe())
    _check_expected(cases, evaluator)
    if threshold is None:
        threshold = 0.5 if meta.threshold is None else meta.threshold
    if not is_share(threshold):
        raise ConfigError(f"case threshold must be a number in [0, 1], got {threshold!r}")
    if constrain is None:
        constrain = meta.constrain
    if constrain:
        if not meta.labels:
            raise ConfigError(
                f"constrain needs labels to constrain replies to: {source!r} declares none "
                "in a NAME.meta.json"
            )
        params = {
            **(DEFAULT_CALL_PARAMS if params is None else params),
            "response_format": labels_response_format(meta.labels),
        }
        notes.append(f"replies constrained to {', '.join(meta.labels)}")
    return ScoringPlan(cases, evaluator, float(threshold), params, meta, tuple(notes))


_KEYS = ("input", "expected")
#: The file formats ``load`` reads, by suffix.
FORMATS = (_SUFFIX, ".csv")


def _check_expected(cases: Iterable[TestCase], evaluator: PromptEvaluator | None) -> None:
    """Cases without an expected answer are fine unless the evaluator compares with it."""
    chosen = DefaultPromptEvaluator() if evaluator is None else evaluator  # the engine's default
    if not uses_expected(chosen):
        return
    missing = [case for case in cases if not case.expected.strip()]
    if missing:
        raise ConfigError(
            f"{len(missing)} case(s) have no expected answer (the first: input "
            f"{missing[0].input[:60]!r}), and the evaluator {chosen!r} compares each reply "
            "with it: give those cases an expected answer, or score with an evaluator that "
            "does not read it (LLMJudgeEvaluator(llm, template=...) without {expected}, or "
            "your own)"
        )


def dataset_dir() -> Path:
    """Where the shipped datasets are.

    In an installed wheel they are packaged as ``tnsai_eval/_datasets`` (see
    ``pyproject.toml``); in a source checkout (and an editable install) they
    are the repository's ``datasets/`` directory.
    """
    here = Path(__file__).resolve().parent
    for candidate in (here / "_datasets", here.parent / "datasets"):
        if candidate.is_dir():
            return candidate
    raise DatasetError(
        f"no shipped datasets found: neither {here / '_datasets'} nor {here.parent / 'datasets'} "
        "exists; the installation is incomplete"
    )


def names() -> list[str]:
    """The names of the shipped datasets, sorted (``load`` accepts each)."""
    return sorted(path.stem for path in dataset_dir().glob(f"*{_SUFFIX}"))


def meta_path(name_or_path: str | os.PathLike[str]) -> Path:
    """Where a dataset's sidecar is (or would be): ``NAME.meta.json`` beside ``NAME.jsonl``."""
    path = _resolve(name_or_path)
    stem = path.name[: -len(_SUFFIX)] if path.name.endswith(_SUFFIX) else path.stem
    return path.with_name(stem + _META_SUFFIX)


def load_meta(name_or_path: str | os.PathLike[str]) -> DatasetMeta:
    """The scoring declaration of a dataset: its ``NAME.meta.json``, checked.

    A dataset without a sidecar gets ``DatasetMeta()`` (the default evaluator,
    no labels, no threshold). A sidecar with an unknown key, an unknown
    evaluator, a ``"label"`` evaluator without labels, duplicate or empty
    labels, a threshold outside [0, 1] or a non-boolean ``constrain`` raises
    ``DatasetError`` listing every problem.

    >>> load_meta("sentiment").threshold
    1.0
    """
    path = meta_path(name_or_path)
    if not path.is_file():
        return DatasetMeta()
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise DatasetError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, too many digits
        raise DatasetError(f"{str(path)!r} is not valid JSON: {exc}") from exc
    except RecursionError:
        raise DatasetError(f"{str(path)!r} is not valid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise DatasetError(f"{str(path)!r} must hold a JSON object, got {type(data).__name__}")
    meta, problems = _parse_meta(data)
    if problems:
        raise _listed(f"{str(path)!r} has {len(problems)} problem(s)", problems)
    return dataclasses.replace(meta, path=path)


def _listed(head: str, problems: list[str]) -> DatasetError:
    listing = "\n  ".join(problems)
    return DatasetError(f"{head}:\n  {listing}", problems=tuple(problems))


def _parse_meta(data: Mapping[str, Any]) -> tuple[DatasetMeta, list[str]]:
    problems = [
        f"unknown key {key!r} (expected: {', '.join(sorted(_META_KEYS))})"
        for key in sorted(set(data) - _META_KEYS)
    ]
    evaluator = data.get("evaluator", "default")
    if evaluator not in EVALUATORS:
        problems.append(f"evaluator {evaluator!r} is not one of {', '.join(EVALUATORS)}")
        evaluator = "default"
    raw_labels = data.get("labels", [])
    labels: tuple[str, ...] = ()
    if not isinstance(raw_labels, list) or not all(
        isinstance(label, str) and label.strip() for label in raw_labels
    ):
        problems.append(f"labels must be a list of non-empty strings, got {raw_labels!r}")
    elif len(set(raw_labels)) != len(raw_labels):
        problems.append(f"labels must not repeat, got {raw_labels!r}")
    else:
        labels = tuple(raw_labels)
    if evaluator == "label" and len(labels) < 2 and not problems:
        problems.append(f"evaluator 'label' needs at least two labels, got {list(labels)!r}")
    threshold = data.get("threshold")
    if threshold is not None and not is_share(threshold):
        problems.append(f"threshold must be a number in [0, 1], got {threshold!r}")
        threshold = None
    constrain = data.get("constrain", False)
    if not isinstance(constrain, bool):
        problems.append(f"constrain must be true or false, got {constrain!r}")
        constrain = False
    elif constrain and not labels:
        problems.append("constrain is true but there are no labels to constrain replies to")
    description = data.get("description", "")
    if not isinstance(description, str):
        problems.append(f"description must be a string, got {type(description).__name__}")
    meta = DatasetMeta(
        evaluator=evaluator,
        labels=labels,
        threshold=None if threshold is None else float(threshold),
        constrain=constrain,
    )
    return meta, problems


def load(name_or_path: str | os.PathLike[str]) -> list[TestCase]:
    """The test cases of a shipped dataset (by name) or of a JSONL or CSV file (by path).

    A bare name without ``/`` or a suffix, such as ``"capitals"``, names a
    shipped dataset; anything else is a path (``.jsonl`` or ``.csv``). Raises ``DatasetError``
    for an unknown name, an unreadable file, a file with no cases, or bad lines
    (``problems`` holds one ``"line N: reason"`` per bad line). When the
    dataset's ``NAME.meta.json`` declares labels, a case whose ``expected`` is
    not one of them is a bad line too.
    """
    path = _resolve(name_or_path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise DatasetError(
            f"dataset {str(path)!r}: cannot read the format {suffix or '(no suffix)'!r}; "
            "expected .jsonl (one JSON object per line) or .csv (a header row with input "
            "and expected columns)"
        )
    labels = frozenset(load_meta(path).labels)
    try:
        # utf-8-sig: a byte-order mark (some Windows editors write one) is not part of line 1.
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DatasetError(f"cannot read dataset {str(path)!r}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"dataset {str(path)!r} is not UTF-8 text: {exc}") from exc
    cases: list[TestCase] = []
    problems: list[str] = []
    parsed = _csv_rows(text, path) if suffix == ".csv" else _jsonl_rows(text)
    for number, (case, problem) in parsed:
        if case is not None and labels and case.expected not in labels:
            problem = f"expected {case.expected!r} is not one of the labels {sorted(labels)!r}"
        if problem is not None:
            problems.append(f"line {number}: {problem}")
        elif case is not None:
            cases.append(case)
    if problems:
        raise _listed(f"dataset {str(path)!r} has {len(problems)} bad line(s)", problems)
    if not cases:
        raise DatasetError(f"dataset {str(path)!r} holds no test cases")
    return cases


def load_cases(source: CasesInput) -> list[TestCase]:
    """Test cases from anywhere a user may hold them: the library's one case loader.

    ``source`` is a dataset name or a JSONL or CSV path (read by ``load``), or
    an iterable of ``TestCase``s, ``(input, expected)`` pairs and mappings with
    ``input`` and (optionally) ``expected`` keys (checked like a JSONL line).
    Raises ``DatasetError`` naming the first bad item, or when there is no case.

    >>> load_cases([("2 + 2", "4"), {"input": "3 + 3", "expected": "6"}])
    [TestCase(input='2 + 2', expected='4'), TestCase(input='3 + 3', expected='6')]
    """
    if isinstance(source, str | os.PathLike):
        return load(source)
    cases: list[TestCase] = []
    for index, item in enumerate(source):
        if isinstance(item, TestCase):
            cases.append(item)
            continue
        if isinstance(item, tuple) and len(item) == 2:
            item = {"input": item[0], "expected": item[1]}
        if not isinstance(item, Mapping):
            raise DatasetError(
                f"case {index} must be a TestCase, an (input, expected) pair or a mapping "
                f"with 'input' (and 'expected'), got {item!r}"
            )
        case, problem = _case_from(item)
        if case is None:
            raise DatasetError(f"case {index}: {problem}: {item!r}")
        cases.append(case)
    if not cases:
        raise DatasetError("no test cases given (an empty list of cases)")
    return cases


def _resolve(name_or_path: str | os.PathLike[str]) -> Path:
    if not isinstance(name_or_path, str | os.PathLike):
        raise DatasetError(
            f"a dataset is named by a str or a path, got {type(name_or_path).__name__} "
            f"{name_or_path!r}"
        )
    raw = os.fspath(name_or_path)
    if not raw.strip():
        raise DatasetError("a dataset name or path is needed, got an empty string")
    is_name = isinstance(name_or_path, str) and "/" not in raw and os.sep not in raw
    if is_name and not Path(raw).suffix:  # "capitals"; "cases.csv" is a file
        path = dataset_dir() / f"{raw}{_SUFFIX}"
        if not path.is_file():
            raise DatasetError(
                f"unknown dataset {raw!r}; shipped datasets: {', '.join(names())} "
                "(or pass a path to a .jsonl or .csv file)"
            )
        return path
    path = Path(raw)
    if not path.is_file():
        raise DatasetError(f"dataset file {raw!r} does not exist")
    return path


_Parsed: TypeAlias = "Iterator[tuple[int, tuple[TestCase | None, str | None]]]"


def _jsonl_rows(text: str) -> _Parsed:
    """Each line's number and its case or what is wrong with it."""
    # A final newline ends the last line; it does not start an empty one.
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        yield number, _parse_line(line)


def _csv_rows(text: str, path: Path) -> _Parsed:
    """Each row's line number and its case or what is wrong with it (the header is line 1).

    A cell is always text: an empty ``id`` is no id, an empty ``expected`` none.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise DatasetError(f"dataset {str(path)!r}: line 1 is not CSV: {exc}") from None
    columns = [name.strip() for name in header or ()]
    if "input" not in columns:
        raise DatasetError(
            f"dataset {str(path)!r}: the CSV header must name an 'input' column (and "
            f"'expected' where the evaluator reads it), got {columns!r}"
        )
    wanted = [name for name in ("input", "expected", "id") if name in columns]
    try:
        for row in reader:
            number = reader.line_num
            if not row or row == [""]:
                yield number, (None, "blank line (every row must hold a case)")
            elif len(row) != len(columns):
                yield number, (None, f"{len(row)} cell(s), the header names {len(columns)}")
            else:
                cells = dict(zip(columns, row, strict=True))
                item: dict[str, Any] = {name: cells[name] for name in wanted}
                if not item.get("id", "").strip():
                    item.pop("id", None)
                yield number, _case_from(item)
    except csv.Error as exc:  # an unclosed quote, a NUL byte
        yield reader.line_num, (None, f"not CSV ({exc})")


def _parse_line(line: str) -> tuple[TestCase | None, str | None]:
    if not line.strip():
        return None, "blank line (every line must be a JSON object)"
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at column {exc.colno})"
    except ValueError as exc:  # an integer past the interpreter's digit limit
        return None, f"not valid JSON ({exc})"
    except RecursionError:
        return None, "not valid JSON (nested too deeply to decode)"
    if not isinstance(item, dict):
        return None, f"expected a JSON object, got {type(item).__name__}"
    return _case_from(item)


def _case_from(item: Mapping[str, Any]) -> tuple[TestCase | None, str | None]:
    """The case a JSONL object or a mapping given in code holds, or what is wrong with it."""
    if "input" not in item:
        return None, "missing key 'input'"
    # No expected answer: fine where the evaluator does not read it (scoring_plan checks).
    item = {"expected": "", **item}
    for key in _KEYS:
        if key in item and not isinstance(item[key], str):
            return None, f"{key!r} must be a string, got {type(item[key]).__name__}"
    if not item["input"].strip():
        return None, "'input' is empty"
    for key in _KEYS:
        if no_surrogates(item[key]) != item[key]:
            # JSON's "\\ud800" decodes to a lone surrogate: no request or file can
            # carry it as UTF-8, so it would fail only after the other calls were paid.
            return None, f"{key!r} holds a lone surrogate (\\ud800-\\udfff), which is not text"
    case_id = item.get("id")
    if case_id is not None and (not isinstance(case_id, str) or not case_id.strip()):
        return None, f"'id' must be a non-blank string, got {case_id!r}"
    state = item.get("state")
    if state is not None and not isinstance(state, Mapping):
        return None, f"'state' must be an object, got {type(state).__name__}"
    try:
        case = TestCase(
            item["input"],
            item.get("expected", ""),
            item.get("expected_tool_calls", ()),
            state,
            id=case_id,
        )
    except ConfigError as exc:  # a malformed expected_tool_calls, named by the error
        return None, str(exc)
    return case, None
