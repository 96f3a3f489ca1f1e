"""Check records and the in-process checks (string, regex, JSON, counts, custom).

A ``Check`` is a named function from an output to a ``Verdict``; the criteria
wrap each run into a frozen ``CheckOutcome`` with its timing. Command checks
live in ``_commands.py`` and model-judged checks in ``_judge.py``; they return
the same ``Check`` so the criteria treat every kind alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tnsai_eval.errors import ConfigError
from tnsai_eval.records import CheckKind

__all__ = [
    "Check",
    "Verdict",
    "custom",
    "json_schema",
    "matches_pattern",
    "min_lines",
    "must_contain",
    "must_not_contain",
    "valid_json",
    "word_count",
]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a check function returns: pass/fail, why, and for judges a score and reason."""

    passed: bool
    message: str = ""
    score: float | None = None
    tokens: int = 0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Check:
    """One named check. ``run(output)`` never raises for a bad output.

    ``raw``: the check reads the model's reply as it came, before the loop's
    ``reply_parser`` took a code block out of it: a check that asks for a fence
    (``must_contain("```python")``, a pattern with one) could never pass on the
    parsed text. ``must_not_contain("```")`` reads the parsed text, which is
    what the loop returns.
    """

    name: str
    kind: CheckKind
    source: str
    run: Callable[[str], Verdict]
    raw: bool = False


def _check(source: str, name: str, run: Callable[[str], Verdict], raw: bool = False) -> Check:
    """An in-process check made by the builder method ``source``."""
    return Check(name, CheckKind.DETERMINISTIC, source, run, raw=raw)


def _about_fences(text: str) -> bool:
    return "```" in text or "~~~" in text


def _quoted(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def must_contain(text: str) -> Check:
    if not isinstance(text, str) or not text:
        raise ConfigError(f"must_contain expects non-empty strings, got {text!r}")

    def run(output: str) -> Verdict:
        if text in output:
            return Verdict(True)
        return Verdict(False, f"the output does not contain {_quoted(text)}")

    return _check("must_contain", f"must_contain({_quoted(text)})", run, _about_fences(text))


def must_not_contain(text: str) -> Check:
    if not isinstance(text, str) or not text:
        raise ConfigError(f"must_not_contain expects non-empty strings, got {text!r}")

    def run(output: str) -> Verdict:
        count = output.count(text)
        if count == 0:
            return Verdict(True)
        return Verdict(False, f"the output contains {_quoted(text)} ({count} time(s)); remove it")

    return _check("must_not_contain", f"must_not_contain({_quoted(text)})", run)


def matches_pattern(pattern: str | re.Pattern[str]) -> Check:
    if isinstance(pattern, re.Pattern):
        compiled = pattern
    elif isinstance(pattern, str):
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"matches_pattern: {pattern!r} is not a valid regex: {exc}") from exc
    else:
        raise ConfigError(f"matches_pattern expects a regex string, got {pattern!r}")

    def run(output: str) -> Verdict:
        # search, not fullmatch: the pattern says what must appear somewhere;
        # anchor it with ^...$ to constrain the whole output.
        if compiled.search(output):
            return Verdict(True)
        return Verdict(False, f"no match for the regular expression /{compiled.pattern}/")

    shown = compiled.pattern if len(compiled.pattern) <= 60 else compiled.pattern[:60] + "..."
    raw = _about_fences(compiled.pattern)
    return _check("matches_pattern", f"matches_pattern(/{shown}/)", run, raw)


def word_count(min_words: int = 0, max_words: int | None = None) -> Check:
    if not isinstance(min_words, int) or min_words < 0:
        raise ConfigError(f"word_count: min must be an int >= 0, got {min_words!r}")
    if max_words is not None and (not isinstance(max_words, int) or max_words < min_words):
        raise ConfigError(
            f"word_count: max must be an int >= min ({min_words}) or None, got {max_words!r}"
        )
    bounds = f"{min_words}..{'' if max_words is None else max_words}"

    def run(output: str) -> Verdict:
        # Whitespace-separated words, the usual meaning of a word limit.
        words = len(output.split())
        if words < min_words:
            return Verdict(False, f"{words} words; at least {min_words} are required")
        if max_words is not None and words > max_words:
            return Verdict(False, f"{words} words; at most {max_words} are allowed")
        return Verdict(True, f"{words} words")

    return _check("word_count", f"word_count({bounds})", run)


def min_lines(count: int) -> Check:
    if not isinstance(count, int) or count < 1:
        raise ConfigError(f"min_lines expects an int >= 1, got {count!r}")

    def run(output: str) -> Verdict:
        lines = len(output.splitlines())
        if lines >= count:
            return Verdict(True, f"{lines} lines")
        return Verdict(False, f"{lines} line(s); at least {count} are required")

    return _check("min_lines", f"min_lines({count})", run)


# A reply nested past the decoder's (or the validator's) depth is a failed
# check the model can fix, not an error that ends the loop.
_TOO_DEEP = (
    "not valid JSON: nested too deeply to decode; the output must be a JSON document "
    "and nothing else"
)


def _not_json(exc: json.JSONDecodeError) -> Verdict:
    return Verdict(
        False,
        f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}; "
        "the output must be a JSON document and nothing else",
    )


def valid_json() -> Check:
    def run(output: str) -> Verdict:
        try:
            json.loads(output)
        except json.JSONDecodeError as exc:
            return _not_json(exc)
        except RecursionError:
            return Verdict(False, _TOO_DEEP)
        return Verdict(True)

    return _check("valid_json", "valid_json", run)


def json_schema(schema: Mapping[str, Any]) -> Check:
    """The output is JSON valid against ``schema`` (checked with ``jsonschema``).

    The schema itself is checked first: an invalid schema is a ``ConfigError``.
    A failure lists up to three violations, each with its JSON path.
    """
    import jsonschema

    if not isinstance(schema, Mapping):
        raise ConfigError(f"json_schema expects a JSON schema (a mapping), got {schema!r}")
    schema = dict(schema)
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigError(f"json_schema: the schema is not valid: {exc.message}") from exc
    validator = validator_class(schema)
    title = schema.get("title")
    shown = title if isinstance(title, str) and title else _schema_summary(schema)

    def run(output: str) -> Verdict:
        try:
            value = json.loads(output)
            errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        except json.JSONDecodeError as exc:
            return _not_json(exc)
        except RecursionError:  # from the decoder or the validator
            return Verdict(False, _TOO_DEEP)
        if not errors:
            return Verdict(True)
        listed = "; ".join(f"{e.json_path}: {e.message}" for e in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        return Verdict(False, f"the JSON does not match the schema: {listed}{more}")

    return _check("json_schema", f"json_schema({shown})", run)


def _schema_summary(schema: Mapping[str, Any]) -> str:
    required = schema.get("required")
    if isinstance(required, list) and required:
        return (
            "required: " + ", ".join(map(str, required[:4])) + ("..." if len(required) > 4 else "")
        )
    return str(schema.get("type", "any"))


def custom(name: str, predicate: Callable[[str], bool], fail_message: str | None) -> Check:
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"custom_check needs a non-empty name, got {name!r}")
    if not callable(predicate):
        raise ConfigError(f"custom_check {name!r}: predicate must be callable, got {predicate!r}")
    message = fail_message or f"custom check {name!r} failed"

    def run(output: str) -> Verdict:
        # A predicate that raises is the user's bug, but it must not end the
        # loop: it fails this check and says why.
        try:
            ok = predicate(output)
        except Exception as exc:
            return Verdict(False, f"{message} (the predicate raised {type(exc).__name__}: {exc})")
        return Verdict(True) if ok else Verdict(False, message)

    return Check(name, CheckKind.CUSTOM, "custom_check", run)
