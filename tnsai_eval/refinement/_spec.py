"""Completion criteria from plain options: the one spec the marker, ``refine()``, the CLI use.

``CriteriaSpec.from_options(**options)`` reads keyword options (the names of
the builder's methods) into a frozen spec, checking only their *shape* (a str
or a list of str, a pair...); ``spec.build(llm)`` hands them to
``CompletionCriteria.builder()``, which checks their *values* and names the bad
one. A new criterion is one field, one line in ``CRITERIA_OPTIONS`` and one builder call
in ``build``.

>>> spec = CriteriaSpec.from_options(must_contain="id", valid_json=True)
>>> spec.must_contain, spec.valid_json
(('id',), True)
>>> [o.passed for o in spec.build().evaluate('{"id": 7}')]
[True, True]
>>> CriteriaSpec.from_options(must_contian="id")  # doctest: +ELLIPSIS
Traceback (most recent call last):
tnsai_eval.errors.ConfigError: unknown criteria option(s) must_contian (did you mean ...?); ...
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from tnsai_eval._util.hints import unknown_names
from tnsai_eval.errors import ConfigError
from tnsai_eval.refinement._commands import DEFAULT_COMMAND_TIMEOUT_S
from tnsai_eval.refinement._criteria import CompletionCriteria

if TYPE_CHECKING:
    from tnsai_eval.llm import Completion, LLMClient

__all__ = ["CRITERIA_OPTIONS", "CriteriaSpec"]

#: Every option ``from_options`` takes -> what it must be (the shape; values are the
#: builder's to check). The order is the order the checks run in.
CRITERIA_OPTIONS: Mapping[str, str] = MappingProxyType(
    {
        "must_contain": "a str or a list of str",
        "must_not_contain": "a str or a list of str",
        "matches_pattern": "a regex (str or compiled) or a list of them",
        "valid_json": "a bool",
        "json_schema": "a JSON schema (a dict)",
        "word_count": "an int (minimum) or a (min, max) pair",
        "min_lines": "an int",
        "compiler_check": "a shell command str or a list of them",
        "test_command": "a shell command str or a list of them",
        "lint_check": "a shell command str or a list of them",
        "llm_check": "a question str or a (question, threshold) pair",
        "command_timeout_s": "seconds (> 0) for each command check",
        "suffix": "the file suffix of the output given to command checks, e.g. '.py'",
        "check_env": "a mapping of variable names to str values, added to the command "
        "checks' minimal environment",
    }
)

# Options that tune other checks rather than adding one.
_SETTINGS = ("command_timeout_s", "suffix", "check_env")
# Options given as one str or a list of them.
_STR_LISTS = ("must_contain", "must_not_contain", "compiler_check", "test_command", "lint_check")


@dataclass(frozen=True, slots=True)
class CriteriaSpec:
    """Completion criteria as options, before any check is built (see the module docstring)."""

    must_contain: tuple[str, ...] = ()
    must_not_contain: tuple[str, ...] = ()
    matches_pattern: tuple[str | re.Pattern[str], ...] = ()
    valid_json: bool = False
    json_schema: Mapping[str, Any] | None = None
    word_count: tuple[int, int | None] | None = None
    min_lines: int | None = None
    compiler_check: tuple[str, ...] = ()
    test_command: tuple[str, ...] = ()
    lint_check: tuple[str, ...] = ()
    llm_check: tuple[str, float] | None = None
    command_timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S
    suffix: str = ".txt"
    check_env: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_options(cls, **options: Any) -> CriteriaSpec:
        """The spec of these options; ``None`` or an empty list means "not given"."""
        unknown = unknown_names(options, CRITERIA_OPTIONS)
        if unknown:
            raise ConfigError(
                f"unknown criteria option(s) {unknown}; expected some of "
                f"{', '.join(CRITERIA_OPTIONS)}"
            )
        given = {k: v for k, v in options.items() if v is not None}
        spec: dict[str, Any] = {}
        for name in _STR_LISTS:
            if name in given:
                spec[name] = _strs(name, given[name])
        if "matches_pattern" in given:
            value = given["matches_pattern"]
            spec["matches_pattern"] = (
                (value,) if isinstance(value, str | re.Pattern) else _seq("matches_pattern", value)
            )
        if "valid_json" in given:
            if not isinstance(given["valid_json"], bool):
                raise _bad("valid_json", given["valid_json"])
            spec["valid_json"] = given["valid_json"]
        if "json_schema" in given:
            if not isinstance(given["json_schema"], Mapping):
                raise _bad("json_schema", given["json_schema"])
            spec["json_schema"] = MappingProxyType(dict(given["json_schema"]))
        if "word_count" in given:
            spec["word_count"] = _pair("word_count", given["word_count"], int, None)
        if "llm_check" in given:
            spec["llm_check"] = _pair("llm_check", given["llm_check"], str, 0.7)
        for name in ("min_lines", "command_timeout_s", "suffix"):  # the builder checks these
            if name in given:
                spec[name] = given[name]
        if "check_env" in given:
            env = given["check_env"]
            if not isinstance(env, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items()
            ):
                raise _bad("check_env", env)
            spec["check_env"] = tuple(env.items())
        return cls(**spec)

    @property
    def has_checks(self) -> bool:
        """Whether any check is asked for (settings alone add none)."""
        # By identity: min_lines=0 is a (bad) check the builder must see and
        # refuse, not "nothing given" (0 == False).
        return any(
            not (value is None or value is False or value == ())
            for value in (getattr(self, f.name) for f in fields(self) if f.name not in _SETTINGS)
        )

    def build(self, llm: LLMClient | None = None) -> CompletionCriteria:
        """The criteria; ``llm`` judges ``llm_check`` (required when one is given).

        Raises ``ConfigError`` naming a bad value, or when no check is given.
        """
        builder = CompletionCriteria.builder()
        for text in self.must_contain:
            builder.must_contain(text)
        for text in self.must_not_contain:
            builder.must_not_contain(text)
        for pattern in self.matches_pattern:
            builder.matches_pattern(pattern)
        if self.valid_json:
            builder.valid_json()
        if self.json_schema is not None:
            builder.json_schema(dict(self.json_schema))
        if self.word_count is not None:
            builder.word_count(*self.word_count)
        if self.min_lines is not None:
            builder.min_lines(self.min_lines)
        timeout, suffix, env = self.command_timeout_s, self.suffix, dict(self.check_env)
        for command in self.compiler_check:
            builder.compiler_check(command, timeout_s=timeout, suffix=suffix, env=env)
        for command in self.test_command:
            builder.test_command(command, timeout_s=timeout, suffix=suffix, env=env)
        for command in self.lint_check:
            builder.lint_check(command, timeout_s=timeout, suffix=suffix, env=env)
        if self.llm_check is not None:
            if llm is not None:
                builder.with_llm(llm)
            builder.llm_check(*self.llm_check)
        return builder.build()

    def validate(self) -> None:
        """Build once without a judge model, so a bad value is reported before any call."""
        self.build(_NoJudge() if self.llm_check is not None else None)


class _NoJudge:
    """Stands in for the judge while validating; the criteria it is in are discarded."""

    def chat(self, messages: object, **params: Any) -> Completion:  # pragma: no cover
        raise AssertionError("a validation build never runs its checks")


def _bad(name: str, value: object) -> ConfigError:
    return ConfigError(f"{name}={value!r} is not valid; expected {CRITERIA_OPTIONS[name]}")


def _seq(name: str, value: object) -> tuple[Any, ...]:
    if not isinstance(value, list | tuple) or not value:
        raise _bad(name, value)
    return tuple(value)


def _strs(name: str, value: object) -> tuple[str, ...]:
    items = (value,) if isinstance(value, str) else _seq(name, value)
    if not all(isinstance(item, str) for item in items):
        raise _bad(name, value)
    return items


def _pair(name: str, value: object, first: type, default: Any) -> tuple[Any, Any]:
    """``value`` alone (then ``default`` second) or as a 2-item list/tuple."""
    if isinstance(value, first) and not isinstance(value, bool):
        return (value, default)
    if isinstance(value, list | tuple) and len(value) == 2 and isinstance(value[0], first):
        return (value[0], value[1])
    raise _bad(name, value)
