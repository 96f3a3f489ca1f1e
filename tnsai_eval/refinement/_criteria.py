"""``CompletionCriteria`` and its fluent builder."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tnsai_eval._util.secrets import mask
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LLMClient, json_schema_format
from tnsai_eval.records import CheckKind, CheckOutcome
from tnsai_eval.refinement import _checks
from tnsai_eval.refinement._checks import Check, Verdict
from tnsai_eval.refinement._commands import DEFAULT_COMMAND_TIMEOUT_S, command_check
from tnsai_eval.refinement._judge import judge_check

__all__ = ["CompletionCriteria", "CompletionCriteriaBuilder", "share_passed"]


def share_passed(outcomes: Sequence[CheckOutcome]) -> float:
    """The score of a list of outcomes: the share that passed (1.0 for none)."""
    if not outcomes:
        return 1.0
    return sum(1 for outcome in outcomes if outcome.passed) / len(outcomes)


class CompletionCriteria:
    """The checks an output must pass for the refinement loop to succeed.

    Build one with the fluent builder::

        criteria = (
            CompletionCriteria.builder()
            .valid_json()
            .must_contain('"name"')
            .compiler_check("python -m py_compile $OUTPUT", suffix=".py")
            .build()
        )
        outcomes = criteria.evaluate('{"name": "x"}')
        criteria.score(outcomes)          # share of checks passed, in [0, 1]

    Checks run cheapest first: string, regex, JSON and count checks, then custom
    predicates, then commands, then judge-model checks (``CheckKind`` order;
    declaration order within a kind). ``evaluate`` returns the outcomes in
    declaration order. While any cheaper check fails, ``llm_check`` checks are not
    run: each is reported as failed with ``skipped=True`` and a message saying
    so, which saves judge tokens on outputs that must change anyway. Set
    ``llm_checks_always()`` on the builder to run them regardless.

    ``response_format`` is what revision calls may be constrained with (set
    by ``json_schema(schema)``: the loop passes it where the client takes it).
    """

    def __init__(
        self,
        checks: Iterable[Check],
        *,
        llm_checks_always: bool = False,
        response_format: Mapping[str, Any] | None = None,
    ) -> None:
        self._checks = tuple(checks)
        self.response_format = dict(response_format) if response_format is not None else None
        if not self._checks:
            raise ConfigError("CompletionCriteria needs at least one check; none was added")
        seen: set[str] = set()
        for check in self._checks:
            if check.name in seen:
                raise ConfigError(
                    f"two checks are named {check.name!r}; pass name=... to tell them apart"
                )
            seen.add(check.name)
        self.llm_checks_always = llm_checks_always

    @staticmethod
    def builder() -> CompletionCriteriaBuilder:
        """A new, empty ``CompletionCriteriaBuilder``."""
        return CompletionCriteriaBuilder()

    @property
    def checks(self) -> tuple[Check, ...]:
        """The checks, in declaration order."""
        return self._checks

    def __repr__(self) -> str:
        names = ", ".join(check.name for check in self._checks)
        return f"CompletionCriteria([{names}], llm_checks_always={self.llm_checks_always})"

    @property
    def wants_json(self) -> bool:
        """Whether a check asks for JSON (``valid_json`` or ``json_schema``)."""
        return any(check.source in ("valid_json", "json_schema") for check in self._checks)

    def evaluate(self, output: str, *, raw: str | None = None) -> list[CheckOutcome]:
        """Run every check on ``output``; outcomes in declaration order.

        ``raw`` is the reply before a reply parser extracted ``output`` from it;
        the checks that ask for fences (``Check.raw``) read it instead.
        """
        if not isinstance(output, str):
            raise ConfigError(f"evaluate expects the output as a str, got {type(output).__name__}")
        if raw is None:
            raw = output
        order = sorted(range(len(self._checks)), key=lambda i: self._checks[i].kind.cost_rank)
        outcomes: dict[int, CheckOutcome] = {}
        for index in order:
            check = self._checks[index]
            if check.kind is CheckKind.LLM and not self.llm_checks_always:
                failing = [
                    o.name
                    for o in outcomes.values()
                    if not o.passed and o.kind is not CheckKind.LLM
                ]
                if failing:
                    outcomes[index] = _skipped(check, failing)
                    continue
            outcomes[index] = _run(check, raw if check.raw else output)
        return [outcomes[i] for i in range(len(self._checks))]

    def score(self, output_or_outcomes: str | Sequence[CheckOutcome]) -> float:
        """Share of checks passed, for an output (evaluated now) or a list of outcomes."""
        if isinstance(output_or_outcomes, str):
            return share_passed(self.evaluate(output_or_outcomes))
        return share_passed(output_or_outcomes)


def _run(check: Check, output: str) -> CheckOutcome:
    started = time.perf_counter()
    try:
        verdict = check.run(output)
    except Exception as exc:
        # Built-in checks do not raise; this guards checks made by hand so that
        # one broken check never loses the others' outcomes.
        verdict = Verdict(False, f"the check raised {type(exc).__name__}: {exc}")
    return CheckOutcome(
        name=check.name,
        passed=verdict.passed,
        # Whatever a check says (a command's output, a predicate's exception)
        # reaches the revision prompt, frames and recordings: no secret may.
        message=mask(verdict.message),
        kind=check.kind,
        source=check.source,
        duration_s=time.perf_counter() - started,
        score=verdict.score,
        tokens=verdict.tokens,
        reason=mask(verdict.reason),
    )


def _skipped(check: Check, failing: list[str]) -> CheckOutcome:
    return CheckOutcome(
        name=check.name,
        passed=False,
        message=(
            f"skipped (counted as failed): the judge runs once the cheaper checks pass; "
            f"failing: {', '.join(failing)}"
        ),
        kind=check.kind,
        source=check.source,
        skipped=True,
    )


class CompletionCriteriaBuilder:
    """Fluent builder for ``CompletionCriteria``; every method returns the builder.

    >>> criteria = CompletionCriteria.builder().must_contain("a", "b").min_lines(1).build()
    >>> [o.passed for o in criteria.evaluate("a")]
    [True, False, True]
    """

    def __init__(self) -> None:
        self._checks: list[Check] = []
        self._llm: LLMClient | None = None
        self._llm_checks_always = False
        self._response_format: dict[str, Any] | None = None

    def _add(self, check: Check) -> CompletionCriteriaBuilder:
        self._checks.append(check)
        return self

    # Commands. $OUTPUT in the command becomes the quoted path of a temp file
    # holding the output; see _commands.py for the whole contract.
    def compiler_check(
        self,
        command: str,
        *,
        name: str | None = None,
        timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S,
        suffix: str = ".txt",
        env: Mapping[str, str] | None = None,
    ) -> CompletionCriteriaBuilder:
        """Passes when ``command`` exits 0, e.g. ``"python -m py_compile $OUTPUT"``.

        The command sees only ``PATH``, ``HOME``, ``LANG``, ``LC_*``, ``TMPDIR``,
        ``OUTPUT`` and ``env`` (e.g. ``env={"CC": "clang"}``); see ``_commands.py``.
        """
        return self._add(command_check("compiler_check", command, name, timeout_s, suffix, env))

    def test_command(
        self,
        command: str,
        *,
        name: str | None = None,
        timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S,
        suffix: str = ".txt",
        env: Mapping[str, str] | None = None,
    ) -> CompletionCriteriaBuilder:
        """Passes when the test command exits 0 (in the environment ``compiler_check`` gives)."""
        return self._add(command_check("test_command", command, name, timeout_s, suffix, env))

    def lint_check(
        self,
        command: str,
        *,
        name: str | None = None,
        timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S,
        suffix: str = ".txt",
        env: Mapping[str, str] | None = None,
    ) -> CompletionCriteriaBuilder:
        """Passes when the linter exits 0 (in the environment ``compiler_check`` gives)."""
        return self._add(command_check("lint_check", command, name, timeout_s, suffix, env))

    # In-process checks.
    def must_contain(self, *texts: str) -> CompletionCriteriaBuilder:
        """One check per text: the output contains it (case-sensitive)."""
        if not texts:
            raise ConfigError("must_contain needs at least one string")
        for text in texts:
            self._add(_checks.must_contain(text))
        return self

    def must_not_contain(self, *texts: str) -> CompletionCriteriaBuilder:
        """One check per text: the output does not contain it (case-sensitive)."""
        if not texts:
            raise ConfigError("must_not_contain needs at least one string")
        for text in texts:
            self._add(_checks.must_not_contain(text))
        return self

    def matches_pattern(self, pattern: str | re.Pattern[str]) -> CompletionCriteriaBuilder:
        """``re.search(pattern, output)`` finds a match."""
        return self._add(_checks.matches_pattern(pattern))

    def word_count(
        self, min_words: int = 0, max_words: int | None = None
    ) -> CompletionCriteriaBuilder:
        """Whitespace-separated word count within [min_words, max_words]."""
        return self._add(_checks.word_count(min_words, max_words))

    def min_lines(self, count: int) -> CompletionCriteriaBuilder:
        """At least ``count`` lines (``str.splitlines``; blank lines count)."""
        return self._add(_checks.min_lines(count))

    def valid_json(self) -> CompletionCriteriaBuilder:
        """The whole output parses as JSON (surrounding whitespace allowed)."""
        return self._add(_checks.valid_json())

    def json_schema(self, schema: Mapping[str, Any]) -> CompletionCriteriaBuilder:
        """The output is JSON valid against ``schema`` (validated with ``jsonschema``).

        Revision calls are also constrained to the schema (``response_format``)
        where the client supports it (``LocalLLM``, ``OpenAIClient``), so even
        a small model can only reply with JSON of that shape.

        >>> schema = {"type": "object", "required": ["name"]}
        >>> criteria = CompletionCriteria.builder().json_schema(schema).build()
        >>> criteria.evaluate('{"age": 3}')[0].message
        "the JSON does not match the schema: $: 'name' is a required property"
        """
        self._add(_checks.json_schema(schema))
        if self._response_format is None:
            self._response_format = json_schema_format(schema, "output")
        return self

    def custom_check(
        self, name: str, predicate: Callable[[str], bool], fail_message: str | None = None
    ) -> CompletionCriteriaBuilder:
        """``predicate(output)`` is true; ``fail_message`` is what the model is told."""
        return self._add(_checks.custom(name, predicate, fail_message))

    # Judge-model checks.
    def with_llm(self, client: LLMClient) -> CompletionCriteriaBuilder:
        """The judge model for the ``llm_check`` checks that follow."""
        if not callable(getattr(client, "chat", None)):
            raise ConfigError(f"with_llm expects an LLM client with chat(), got {client!r}")
        self._llm = client
        return self

    def llm_check(
        self,
        question: str,
        threshold: float = 0.7,
        *,
        good: Sequence[str] = (),
        bad: Sequence[str] = (),
    ) -> CompletionCriteriaBuilder:
        """The judge scores the output in [0, 1] against ``question``; passes at >= threshold.

        With ``good=`` and ``bad=`` example texts the threshold is calibrated
        instead: set where the judge's scores best separate them (graded once,
        on first use). The score comes from the judge's Yes/No log-probabilities
        where the client has them, else a JSON score, else a ``SCORE:`` line;
        the check message says which.

        >>> from tnsai_eval.testing import ScriptedLLM
        >>> criteria = (CompletionCriteria.builder().with_llm(ScriptedLLM(default="SCORE: 90"))
        ...             .llm_check("Is it polite?", 0.8).build())
        >>> criteria.evaluate("Thank you!")[0].message
        'judge score 0.90 >= threshold 0.80 [score_line]'
        """
        if self._llm is None:
            raise ConfigError(
                f"llm_check({question!r}) needs a judge model: call .with_llm(client) "
                "before .llm_check(...)"
            )
        return self._add(judge_check(self._llm, question, threshold, good=good, bad=bad))

    def llm_checks_always(self, enabled: bool = True) -> CompletionCriteriaBuilder:
        """Run ``llm_check`` checks even while a cheaper check fails (default: skip them)."""
        self._llm_checks_always = enabled
        return self

    def build(self) -> CompletionCriteria:
        """The criteria with the checks added so far (at least one)."""
        return CompletionCriteria(
            self._checks,
            llm_checks_always=self._llm_checks_always,
            response_format=self._response_format,
        )
