"""The shipped datasets (``datasets/*.jsonl``) and any JSONL file of test cases.

Each line is one JSON object ``{"input": "...", "expected": "..."}`` (other
keys are allowed and ignored). ``load`` checks every line and raises one
``DatasetError`` listing each bad line by number and reason; it never skips a
line silently.

>>> from tnsai_eval import datasets
>>> "capitals" in datasets.names()
True
>>> datasets.load("capitals")[0]
TestCase(input='What is the capital of France?', expected='Paris')
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeAlias

from tnsai_eval.errors import DatasetError
from tnsai_eval.optimizer import TestCase

__all__ = ["CasesInput", "dataset_dir", "load", "load_cases", "names"]

#: What ``load_cases`` accepts: a dataset name or JSONL path, or cases given in code.
CasesInput: TypeAlias = (
    "str | os.PathLike[str] | Iterable[TestCase | tuple[str, str] | Mapping[str, Any]]"
)

_SUFFIX = ".jsonl"
_KEYS = ("input", "expected")


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


def load(name_or_path: str | os.PathLike[str]) -> list[TestCase]:
    """The test cases of a shipped dataset (by name) or of a JSONL file (by path).

    A bare name without ``/`` or a ``.jsonl`` suffix, such as ``"capitals"``,
    names a shipped dataset; anything else is a path. Raises ``DatasetError``
    for an unknown name, an unreadable file, a file with no cases, or bad lines
    (``problems`` holds one ``"line N: reason"`` per bad line).
    """
    path = _resolve(name_or_path)
    try:
        # utf-8-sig: a byte-order mark (some Windows editors write one) is not part of line 1.
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DatasetError(f"cannot read dataset {str(path)!r}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"dataset {str(path)!r} is not UTF-8 text: {exc}") from exc
    cases: list[TestCase] = []
    problems: list[str] = []
    # A final newline ends the last line; it does not start an empty one.
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        case, problem = _parse_line(line)
        if problem is not None:
            problems.append(f"line {number}: {problem}")
        elif case is not None:
            cases.append(case)
    if problems:
        listing = "\n  ".join(problems)
        raise DatasetError(
            f"dataset {str(path)!r} has {len(problems)} bad line(s):\n  {listing}",
            problems=tuple(problems),
        )
    if not cases:
        raise DatasetError(f"dataset {str(path)!r} holds no test cases")
    return cases


def load_cases(source: CasesInput) -> list[TestCase]:
    """Test cases from anywhere a user may hold them: the library's one case loader.

    ``source`` is a dataset name or a JSONL path (read by ``load``), or an
    iterable of ``TestCase``s, ``(input, expected)`` pairs and mappings with
    ``input`` and ``expected`` keys (checked like a JSONL line). Raises
    ``DatasetError`` naming the first bad item, or when there is no case.

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
                f"with 'input' and 'expected', got {item!r}"
            )
        case, problem = _case_from(item)
        if case is None:
            raise DatasetError(f"case {index}: {problem}: {item!r}")
        cases.append(case)
    if not cases:
        raise DatasetError("no test cases given (an empty list of cases)")
    return cases


def _resolve(name_or_path: str | os.PathLike[str]) -> Path:
    raw = os.fspath(name_or_path)
    is_name = isinstance(name_or_path, str) and "/" not in raw and os.sep not in raw
    if is_name and not raw.endswith(_SUFFIX):
        path = dataset_dir() / f"{raw}{_SUFFIX}"
        if not path.is_file():
            raise DatasetError(
                f"unknown dataset {raw!r}; shipped datasets: {', '.join(names())} "
                "(or pass a path to a .jsonl file)"
            )
        return path
    path = Path(raw)
    if not path.is_file():
        raise DatasetError(f"dataset file {raw!r} does not exist")
    return path


def _parse_line(line: str) -> tuple[TestCase | None, str | None]:
    if not line.strip():
        return None, "blank line (every line must be a JSON object)"
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(item, dict):
        return None, f"expected a JSON object, got {type(item).__name__}"
    return _case_from(item)


def _case_from(item: Mapping[str, Any]) -> tuple[TestCase | None, str | None]:
    """The case a JSONL object or a mapping given in code holds, or what is wrong with it."""
    missing = [key for key in _KEYS if key not in item]
    if missing:
        return None, f"missing key(s) {', '.join(map(repr, missing))}"
    for key in _KEYS:
        if not isinstance(item[key], str):
            return None, f"{key!r} must be a string, got {type(item[key]).__name__}"
    if not item["input"].strip():
        return None, "'input' is empty"
    return TestCase(item["input"], item["expected"]), None
